"""Hamiltonian-74 family and CIFAR ResNets: the paper's parameter counts, FLOPs by hand, penalties, DDP."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pdenets.models.hamiltonian import HamiltonianNet
from pdenets.models.image_networks import (
    PAPER_ARCHITECTURE,
    build_image_model,
    count_flops,
    model_architecture,
    nonlocal_spectra,
)
from pdenets.models.registry import create_model
from pdenets.nn import HamiltonianBlock, NonlocalBlock
from pdenets.tasks.image_classification.task import paper_learning_rate

HELPERS = Path(__file__).resolve().parents[1] / "helpers"


@pytest.mark.parametrize(
    "name, parameters",
    [
        ("hamiltonian-74", 508_954),  # the reference code's Hamiltonian-74 (0.51 M)
        ("hamiltonian-74-diffusion", 563_402),
        ("hamiltonian-74-fractional", 563_402),
        ("hamiltonian-74-log", 563_402),
        ("resnet-44", 661_338),  # 0.66 M (He et al. 2016a)
        ("preresnet-20", 568_410),  # 0.57 M
    ],
)
def test_paper_scale_parameter_counts(name, parameters, device):
    assert sum(p.numel() for p in create_model(name).to(device).parameters()) == parameters


def test_flops_of_one_block_by_hand(device):
    # Verlet step: K1, K1ᵀ, K2, K2ᵀ, each 3×3 (C/2 → C/2) at every pixel (counted on the module's device)
    assert count_flops(HamiltonianBlock(8).to(device), (8, 6, 5)) == 4 * 9 * 4 * 4 * 30
    n, m, c, e = 24, 6, 8, 4  # 6×4 map, keys pooled 2×2 to 3×2, embeddings C/2
    embeddings = 2 * n * c * e  # θ, φ 1×1 convolutions at full resolution
    dot_stage = e * m * c + n * e * c + n * e + n * c * c  # ΦᵀV, θ(ΦᵀV), θ Σφ, 𝒦 (1×1)
    assert (
        count_flops(NonlocalBlock(8, operator="diffusion-dot", stages=2).to(device), (8, 6, 4))
        == embeddings + 2 * dot_stage
    )
    kernel_stage = n * m * e + n * m * c + n * c * c  # θφᵀ for distances, ωV, 𝒦
    assert (
        count_flops(NonlocalBlock(8, operator="fractional", stages=2).to(device), (8, 6, 4))
        == embeddings + 2 * kernel_stage
    )


def test_penalties_are_exact(device):
    net = HamiltonianNet(3, 2, units=(3,), widths=(4,), step_size=0.5, image_size=8).double().to(device)
    blocks = net.hamiltonian_blocks()
    for index, block in enumerate(blocks):
        for conv in (block.conv1, block.conv2):
            conv.weight.data.fill_(float(index))
    with torch.no_grad():
        # consecutive blocks differ by 1 in every entry of 2 kernels of 2·2·3·3 = 36 entries: (2 pairs · 2 ·
        # 36) / h
        assert float(net.smoothness_penalty()) == pytest.approx(2 * 2 * 36 / 0.5)
        # every convolution kernel (the stem's and the blocks'; the head is linear): Σ ‖K‖²
        stem = float(net.stem[0].weight.square().sum())
        assert float(net.l2_penalty()) == pytest.approx(stem + 2 * 36 * (0 + 1 + 4), rel=1e-12)


def test_heads_and_nonlocal_placement(device):
    seg = create_model(
        "hamiltonian-74-fractional",
        in_channels=1,
        num_classes=11,
        units=(2, 2),
        widths=(4, 8),
        image_size=12,
        head="segmentation",
    ).to(device)
    assert seg(torch.randn(2, 1, 12, 12).to(device)).shape == (2, 11, 12, 12)
    assert len(seg.nonlocal_blocks()) == 2  # one per unit, after its second Hamiltonian block
    pooled = create_model(
        "hamiltonian-74", in_channels=3, num_classes=10, units=(1, 1, 1), widths=(4, 6, 8)
    ).to(device)
    assert pooled(torch.randn(2, 3, 32, 32).to(device)).shape == (2, 10) and not pooled.nonlocal_blocks()
    with pytest.raises(ValueError, match="even"):
        create_model("hamiltonian-74", widths=(4, 5, 8))


@pytest.mark.parametrize("name", ["hamiltonian-74-fractional", "hamiltonian-74-inverse-fractional"])
def test_fractional_networks_are_built_with_their_order_s_and_key_it(name, device):
    architecture = dataclasses.replace(PAPER_ARCHITECTURE, units=(1, 1), widths=(4, 4), s=0.3)
    assert model_architecture(name, architecture).s == 0.3  # the job key holds s
    assert model_architecture("hamiltonian-74-diffusion", architecture).s is None
    model = build_image_model(name, architecture, channels=1, classes=3, size=8, segmentation=False)
    model = model.to(device)
    assert {block.s for block in model.modules() if isinstance(block, NonlocalBlock)} == {
        0.3
    }  # not the default 0.5


def test_nonlocal_spectra_of_a_non_symmetric_kernel(device):
    block = NonlocalBlock(2, operator="fractional", stages=1).to(device)
    with torch.no_grad():
        kernel = torch.tensor([[1.0, 4.0], [0.0, 1.0]], device=device)
        block.outer[0][0].weight.copy_(kernel[:, :, None, None])
    (entry,) = nonlocal_spectra(block)
    assert (entry["unit"], entry["stage"]) == (1, 1)
    assert entry["real"] == pytest.approx([1.0, 1.0]) and entry["imag"] == pytest.approx([0.0, 0.0])
    assert entry["positive_fraction"] == 1.0
    # the symmetric part [[1, 2], [2, 1]] has eigenvalues -1 and 3 (K itself has 1 twice)
    assert entry["symmetric"] == pytest.approx([-1.0, 3.0]) and entry["symmetric_positive_fraction"] == 0.5


def test_learning_rate_schedule_is_the_papers_scaled(device):
    steps = 10  # per epoch
    assert paper_learning_rate(0, steps, 200) == pytest.approx(0.01)  # warm-up epoch
    assert paper_learning_rate(10, steps, 200) == pytest.approx(0.1)
    assert paper_learning_rate(799, steps, 200) == pytest.approx(0.1)
    assert paper_learning_rate(800, steps, 200) == pytest.approx(0.01)  # epoch 80
    assert paper_learning_rate(1800, steps, 200) == pytest.approx(1e-5)  # epoch 180
    assert (
        paper_learning_rate(5, steps, 20) == pytest.approx(0.01) and paper_learning_rate(80, steps, 20) < 0.1
    )


@pytest.mark.cpu_only(
    "tests/helpers/ddp_train.py trains in subprocesses (torch.distributed.run, gloo) on the CPU"
)
def test_two_process_ddp_training_follows_the_single_process_trajectory():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("WORLD_SIZE", None)
    script = str(HELPERS / "ddp_train.py")
    alone = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env, timeout=300)
    assert alone.returncode == 0, alone.stderr
    pair = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert pair.returncode == 0, pair.stderr[-3000:]
    single = json.loads(alone.stdout.strip().splitlines()[-1])
    double = json.loads(pair.stdout.strip().splitlines()[-1])
    assert single[-1] < single[0]  # it trains
    assert double == pytest.approx(single, rel=1e-12, abs=1e-14)


EXPECTED_SETTINGS = {
    "hamiltonian-74": {"units", "widths", "step_size"},
    "hamiltonian-74-diffusion": {"units", "widths", "step_size", "lam", "subsample", "stages"},
    "hamiltonian-74-gaussian": {"units", "widths", "step_size", "lam", "subsample", "stages"},
    "hamiltonian-74-log": {"units", "widths", "step_size", "lam", "subsample", "stages"},
    "hamiltonian-74-fractional": {"units", "widths", "step_size", "lam", "subsample", "stages", "s"},
    "hamiltonian-74-inverse-fractional": {"units", "widths", "step_size", "lam", "subsample", "stages", "s"},
    "resnet-44": {"resnet_depth", "resnet_widths"},
    "preresnet-20": set(),
}


def test_each_image_network_keeps_the_architecture_settings_its_registry_entry_declares(device):
    from pdenets.models import list_models

    assert set(list_models("image")) == set(EXPECTED_SETTINGS)
    for name, expected in EXPECTED_SETTINGS.items():
        kept = dataclasses.asdict(model_architecture(name, PAPER_ARCHITECTURE))
        assert {key for key, value in kept.items() if value is not None} == expected, name


def test_an_image_network_is_built_from_its_declared_settings_and_nothing_else(device):
    architecture = dataclasses.replace(
        PAPER_ARCHITECTURE, units=[2, 1], widths=[4, 6], step_size=0.2, lam=0.3, subsample=1, stages=1
    )
    net = build_image_model(
        "hamiltonian-74-diffusion", architecture, channels=1, classes=3, size=8, segmentation=False
    ).to(device)
    assert net.units_spec == (2, 1) and net.widths == (4, 6) and net.step_size == 0.2
    blocks = [m for m in net.modules() if isinstance(m, NonlocalBlock)]
    assert blocks and {(b.lam, b.stages) for b in blocks} == {(0.3, 1)}
    resnet = build_image_model(
        "resnet-44", architecture, channels=1, classes=3, size=8, segmentation=True
    ).to(device)
    # segmentation reaches every family
    assert resnet(torch.zeros(1, 1, 8, 8, device=device)).shape == (1, 3, 8, 8)
    ham = build_image_model(
        "hamiltonian-74", architecture, channels=1, classes=3, size=8, segmentation=True
    ).to(device)
    assert ham(torch.zeros(1, 1, 8, 8, device=device)).shape == (1, 3, 8, 8)
