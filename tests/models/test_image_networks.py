"""Image networks from their declared settings; multiply-adds by hand, the FLOPs table, nonlocal spectra."""

import dataclasses

import pytest
import torch

from pdenets.models.image_networks import (
    PAPER_ARCHITECTURE,
    build_image_model,
    model_architecture,
)
from pdenets.models.registry import create_model
from pdenets.nn import NonlocalBlock


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


def test_count_flops_counts_the_multiply_adds_of_convolutions_and_linear_maps_by_hand(device):
    from pdenets.models.image_networks import count_flops

    model = (
        torch.nn.Sequential(
            torch.nn.Conv2d(2, 3, 3, padding=1, bias=False),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(3 * 4 * 5, 6, bias=False),
        )
        .train()
        .to(device)
    )  # the input is drawn where the parameters are
    # every output pixel of the convolution: 2 · 3 · 3 multiply-adds per channel; then a 60 × 6 product
    assert count_flops(model, (2, 4, 5)) == 3 * 4 * 5 * 2 * 9 + 60 * 6
    assert not model.training
    strided = torch.nn.Conv2d(1, 4, 3, stride=2, padding=1, bias=False)
    assert count_flops(strided, (1, 8, 8)) == 4 * 4 * 4 * 9
    assert count_flops(torch.nn.Linear(7, 1, bias=False), (7,)) == 7


def test_the_flops_table_builds_every_model_at_every_scale_for_32_by_32_rgb():
    from pdenets.models.image_networks import NetworkCost, count_flops, flops_table

    small = dataclasses.replace(PAPER_ARCHITECTURE, units=(1, 1, 1), widths=(2, 4, 4), resnet_depth=8)
    smaller = dataclasses.replace(small, widths=(2, 2, 2), resnet_widths=(2, 2, 2))
    table = flops_table(["resnet-44", "hamiltonian-74"], {"small": small, "smaller": smaller})
    assert list(table) == ["small", "smaller"] and all(
        list(row) == ["resnet-44", "hamiltonian-74"] for row in table.values()
    )
    for label, architecture in (("small", small), ("smaller", smaller)):
        for name in ("resnet-44", "hamiltonian-74"):
            torch.manual_seed(0)
            network = build_image_model(
                name, architecture, channels=3, classes=10, size=32, segmentation=False
            )
            expected = NetworkCost(
                count_flops(network, (3, 32, 32)) / 1e6, sum(p.numel() for p in network.parameters())
            )
            assert table[label][name] == expected
    assert table["smaller"]["resnet-44"].parameters < table["small"]["resnet-44"].parameters
    assert table["smaller"]["resnet-44"].mflops < table["small"]["resnet-44"].mflops


def test_nonlocal_spectra_are_the_eigenvalues_of_each_stages_one_by_one_kernel(device):
    from pdenets.models.image_networks import nonlocal_spectra

    architecture = dataclasses.replace(PAPER_ARCHITECTURE, units=(2, 2), widths=(2, 2), stages=2)
    net = build_image_model(
        "hamiltonian-74-diffusion", architecture, channels=1, classes=3, size=8, segmentation=False
    )
    blocks = [m for m in net.modules() if isinstance(m, NonlocalBlock)]
    assert len(blocks) == 2
    kernels = {
        (0, 0): [[1.0, 2.0], [0.0, -3.0]],  # eigenvalues 1, −3; symmetric part (1 1; 1 −3): −1 ± √5
        (0, 1): [[0.0, -1.0], [1.0, 0.0]],  # a rotation: ±i, symmetric part 0
        (1, 0): [[2.0, 0.0], [0.0, 0.5]],
        (1, 1): [[-1.0, 0.0], [0.0, -2.0]],
    }
    with torch.no_grad():
        for (unit, stage), matrix in kernels.items():
            blocks[unit].outer[stage][0].weight.copy_(torch.tensor(matrix)[:, :, None, None])
    spectra = nonlocal_spectra(net.to(device))
    assert [(s["unit"], s["stage"]) for s in spectra] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    first, rotation, positive, negative = spectra
    assert sorted(first["real"]) == pytest.approx([-3.0, 1.0]) and first["imag"] == pytest.approx([0.0, 0.0])
    assert first["symmetric"] == pytest.approx([-1 - 5**0.5, -1 + 5**0.5])
    assert (first["positive_fraction"], first["symmetric_positive_fraction"]) == (0.5, 0.5)
    assert rotation["real"] == pytest.approx([0.0, 0.0], abs=1e-12)
    assert sorted(rotation["imag"]) == pytest.approx([-1.0, 1.0])
    assert rotation["symmetric"] == pytest.approx([0.0, 0.0], abs=1e-12)
    assert (positive["positive_fraction"], negative["positive_fraction"]) == (1.0, 0.0)
    assert nonlocal_spectra(create_model("hamiltonian-74", units=(1, 1, 1), widths=(2, 2, 2))) == []
