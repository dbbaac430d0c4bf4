"""CIFAR ResNet v1 / PreResNet v2: blocks against NumPy in float64, parameter formulas, identity limits."""

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from pdenets.models.cifar_resnets import CifarPreResNet, CifarResNet


def _conv(x, weight, stride=1):
    """Zero-padded ``k × k`` cross-correlation (``k`` odd, padding ``k // 2``, no bias) in NumPy."""
    k = weight.shape[-1]
    pad = k // 2
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    height, width = x.shape[2:]
    out = np.zeros((x.shape[0], weight.shape[0], height, width))
    for di in range(k):
        for dj in range(k):
            out += np.einsum(
                "bchw,oc->bohw", padded[:, :, di : di + height, dj : dj + width], weight[:, :, di, dj]
            )
    return out[:, :, ::stride, ::stride]


def _bn(x, module):
    """Evaluation-mode BatchNorm from its running statistics."""
    scale = module.weight.detach().numpy() / np.sqrt(module.running_var.numpy() + module.eps)
    shift = module.bias.detach().numpy() - module.running_mean.numpy() * scale
    return x * scale[None, :, None, None] + shift[None, :, None, None]


def _randomize_batchnorms(model, generator):
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                size = module.num_features
                module.running_mean.copy_(torch.randn(size, generator=generator, dtype=torch.float64))
                module.running_var.copy_(torch.rand(size, generator=generator, dtype=torch.float64) + 0.5)
                module.weight.copy_(torch.randn(size, generator=generator, dtype=torch.float64))
                module.bias.copy_(torch.randn(size, generator=generator, dtype=torch.float64))


def _weight(conv):
    return conv.weight.detach().numpy()


def test_basic_blocks_match_a_numpy_reference_with_identity_and_projection_shortcuts(device):
    generator = torch.Generator().manual_seed(0)
    net = CifarResNet(2, 3, depth=8, widths=(3, 5, 4)).double().eval()
    _randomize_batchnorms(net, generator)
    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
    x = torch.randn(2, 3, 6, 6, generator=generator, dtype=torch.float64)
    identity, projected = net.body[0], net.body[1]  # 3 → 3 (stride 1), 3 → 5 (stride 2)
    for block, stride in ((identity, 1), (projected, 2)):
        inputs = x.numpy() if stride == 1 else relu(x.numpy())
        branch = relu(_bn(_conv(inputs, _weight(block.conv1), stride), block.bn1))
        branch = _bn(_conv(branch, _weight(block.conv2)), block.bn2)
        if stride == 1:
            shortcut = inputs
        else:
            shortcut = _bn(_conv(inputs, _weight(block.shortcut[0]), 2), block.shortcut[1])
        expected = relu(branch + shortcut)
        out = copy.deepcopy(block).to(device)(torch.from_numpy(inputs).to(device))
        np.testing.assert_allclose(out.detach().cpu().numpy(), expected, rtol=1e-11, atol=1e-12)
    assert isinstance(identity.shortcut, nn.Identity)


def test_bottleneck_matches_a_numpy_reference_and_is_the_identity_with_a_zero_last_convolution(device):
    generator = torch.Generator().manual_seed(1)
    net = CifarPreResNet(3, 4, depth=11, widths=(4, 6, 8), middles=(2, 3, 2)).double().eval()
    _randomize_batchnorms(net, generator)
    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
    x = torch.randn(2, 6, 6, 6, generator=generator, dtype=torch.float64)
    block = net.body[1]  # 4 → 6 at stride 2, projection without BatchNorm (pre-activation)
    out = _conv(relu(_bn(x.numpy()[:, :4], block.bn1)), _weight(block.conv1))
    out = _conv(relu(_bn(out, block.bn2)), _weight(block.conv2), 2)
    expected = _conv(relu(_bn(out, block.bn3)), _weight(block.conv3)) + _conv(
        x.numpy()[:, :4], _weight(block.shortcut), 2
    )
    out = copy.deepcopy(block).to(device)(x[:, :4].to(device)).detach().cpu()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-11, atol=1e-12)
    wide = CifarPreResNet(3, 4, depth=20, widths=(4, 6, 8), middles=(2, 3, 2)).double().eval()
    second = wide.body[1].to(device)  # 4 → 4, identity shortcut
    with torch.no_grad():
        second.conv3.weight.zero_()
    h = torch.randn(2, 4, 5, 5, generator=generator, dtype=torch.float64).to(device)
    assert torch.equal(second(h), h)


def _basic(cin, cout, stride=1):
    projection = cin * cout + 2 * cout if cin != cout or stride != 1 else 0
    return 9 * cin * cout + 2 * cout + 9 * cout * cout + 2 * cout + projection


def _bottleneck(cin, cout, middle, stride=1):
    projection = cin * cout if cin != cout or stride != 1 else 0
    return 2 * cin + cin * middle + 2 * middle + 9 * middle * middle + 2 * middle + middle * cout + projection


def _count(model):
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "depth, widths, channels, classes", [(44, (16, 32, 64), 3, 10), (14, (3, 5, 7), 1, 4), (8, (4, 4), 2, 3)]
)
def test_resnet_v1_has_the_parameters_of_its_formula(depth, widths, channels, classes):
    n = (depth - 2) // 6
    expected = 9 * channels * widths[0] + 2 * widths[0] + widths[-1] * classes + classes
    previous = widths[0]
    for stage, width in enumerate(widths):  # a stage after the first opens with a stride-2 block
        expected += _basic(previous, width, 2 if stage else 1) + (n - 1) * _basic(width, width)
        previous = width
    assert _count(CifarResNet(channels, classes, depth=depth, widths=widths)) == expected
    assert _count(CifarResNet()) == 661_338  # ResNet-44 for CIFAR-10, "0.66 M"


@pytest.mark.parametrize("depth, channels, classes", [(20, 3, 10), (29, 1, 5)])
def test_preresnet_v2_has_the_parameters_of_its_formula(depth, channels, classes):
    n = (depth - 2) // 9
    widths, middles = (64, 128, 256), (16, 64, 128)
    expected = 9 * channels * 16 + 2 * widths[-1] + widths[-1] * classes + classes
    previous = 16
    for stage, (width, middle) in enumerate(zip(widths, middles)):
        first = _bottleneck(previous, width, middle, 2 if stage else 1)
        expected += first + (n - 1) * _bottleneck(width, width, middle)
        previous = width
    model = CifarPreResNet(channels, classes, depth=depth)
    assert _count(model) == expected
    if depth == 20:
        assert round(expected / 1e6, 2) == 0.57  # PreResNet-20, "0.57 M"


def test_depths_and_class_counts_are_checked():
    with pytest.raises(ValueError, match="depth 6n \\+ 2 .* got 10"):
        CifarResNet(depth=10)
    with pytest.raises(ValueError, match="got 2"):
        CifarResNet(depth=2)
    with pytest.raises(ValueError, match="depth 9n \\+ 2 .* got 12"):
        CifarPreResNet(depth=12)
    with pytest.raises(ValueError, match="num_classes must be an integer >= 1"):
        CifarResNet(num_classes=0, depth=8)


def test_segmentation_keeps_the_resolution_and_the_l2_penalty_sums_every_convolution():
    torch.manual_seed(0)
    for model in (
        CifarResNet(2, 3, depth=8, widths=(3, 4, 5), segmentation=True),
        CifarPreResNet(2, 3, depth=11, widths=(3, 4, 5), middles=(2, 2, 2), segmentation=True),
    ):
        assert all(m.stride == (1, 1) for m in model.modules() if isinstance(m, nn.Conv2d))
        out = model(torch.randn(2, 2, 7, 9))
        assert out.shape == (2, 3, 7, 9)
        out.square().mean().backward()
        assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in model.parameters())
        expected = sum(float(p.detach().square().sum()) for p in model.parameters() if p.dim() == 4)
        assert float(model.l2_penalty().detach()) == pytest.approx(expected, rel=1e-6)
    pooled = CifarResNet(3, 10, depth=8)
    head = pooled.head[2]
    assert float(pooled.l2_penalty().detach()) == pytest.approx(
        sum(float(p.detach().square().sum()) for p in pooled.parameters() if p.dim() == 4), rel=1e-6
    )
    assert head.weight.dim() == 2  # the linear head carries no penalty
    # He-normal convolutions: std √(2 / fan_in), here the 64 · 9 inputs of the last stage
    weight = pooled.body[-1].conv2.weight.detach()
    assert float(weight.std()) == pytest.approx(math.sqrt(2 / (64 * 9)), rel=0.03)
    assert pooled(torch.randn(2, 3, 8, 8)).shape == (2, 10)
