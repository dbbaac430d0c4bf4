"""Hamiltonian-74 family and CIFAR ResNets: the paper's parameter counts, FLOPs by hand, penalties, DDP."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pdenets.models.hamiltonian import HamiltonianNet
from pdenets.models.image_networks import (
    count_flops,
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
