"""Receptive fields measured by gradient support: exact windows of stacked convolutions, whole images for
nonlocal blocks, the model left as it was, bad input."""

import pytest
import torch
from torch import nn

from pdenets.analysis import receptive_field, receptive_field_mask
from pdenets.models import create_model
from pdenets.nn import NonlocalBlock


def _stack(kernels, dilation=1):
    layers = []
    for kernel in kernels:
        layers += [nn.Conv2d(2, 2, kernel, padding=dilation * (kernel // 2), dilation=dilation), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


@pytest.mark.parametrize(
    "kernels, dilation, side", [([3], 1, 3), ([3, 3], 1, 5), ([3, 5, 3], 1, 9), ([3, 3], 2, 9)]
)
def test_stacked_convolutions_have_the_textbook_window(kernels, dilation, side, device):
    # 1 + Σ dilation·(k − 1), measured where the network is
    assert receptive_field(_stack(kernels, dilation).to(device), (2, 33, 33)) == (side, side)


def test_pooling_doubles_the_later_layers_reach_and_the_window_sits_at_the_position(device):
    net = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.AvgPool2d(2), nn.Conv2d(2, 2, 3, padding=1))
    net = net.to(device)
    assert receptive_field(net, (1, 32, 32)) == (8, 8)  # 3 + 2·(3 − 1) + 1 (the pooling cell)
    mask = receptive_field_mask(net, (1, 32, 32), position=(0, 0))
    assert mask[:5, :5].all() and not mask[5:].any() and not mask[:, 5:].any()


def test_a_nonlocal_block_sees_the_whole_image_and_a_local_network_does_not(device):
    nonlocal_block = NonlocalBlock(4, operator="diffusion-dot", subsample=1).to(device)
    assert receptive_field(nonlocal_block, (4, 16, 16)) == (16, 16)
    local = create_model(
        "hamiltonian-74",
        in_channels=1,
        num_classes=2,
        units=(1, 1),
        widths=(4, 8),
        step_size=0.06,
        image_size=64,
        head="global",
    ).to(device)
    rows, cols = receptive_field(local, (1, 64, 64), forward=lambda m, x: m.features(x))
    assert rows == cols and 10 < rows < 64


def test_the_measured_model_is_left_unchanged(device):
    net = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2)).to(device)
    net.train()
    before = {name: value.clone() for name, value in net.state_dict().items()}
    receptive_field(net, (1, 8, 8))
    assert net.training and next(net.parameters()).dtype == torch.float32
    assert next(net.parameters()).device.type == device.type  # and where it was
    assert all(torch.equal(before[name], value) for name, value in net.state_dict().items())


def test_bad_input_is_named(device):
    net = _stack([3]).to(device)
    with pytest.raises(ValueError, match="input_shape"):
        receptive_field(net, (8, 8))
    with pytest.raises(ValueError, match="outside"):
        receptive_field(net, (2, 8, 8), position=(8, 0))
    with pytest.raises(ValueError, match="feature map"):
        receptive_field(nn.Sequential(net, nn.Flatten()), (2, 8, 8))
    with pytest.raises(ValueError, match="draws"):
        receptive_field(net, (2, 8, 8), draws=0)
