"""Plain/ResNet pairs differ by the skip; blocks against NumPy in float64, parameter counts, zero limit."""

import numpy as np
import pytest
import torch
from torch import nn

from pdenets.models import create_model
from pdenets.models.transport_pairs import TransportBlock, TransportCNN, TransportMLP, initialize


def test_plain_and_resnet_pairs_share_parameters_and_differ_by_the_identity(device):
    for name in ("mlp", "cnn-k1", "cnn-k4"):
        kwargs = {"width": 9, "num_blocks": 2} if name == "mlp" else {"blocks": 2}
        if name == "cnn-k4":
            kwargs["widths"] = (4, 6)
        plain, res = (create_model(f"{kind}-{name}", **kwargs).to(device) for kind in ("plain", "resnet"))
        assert [(k, v.shape) for k, v in plain.state_dict().items()] == [
            (k, v.shape) for k, v in res.state_dict().items()
        ]
        res.load_state_dict(plain.state_dict())
        blocks = [(p, r) for p, r in zip(plain.modules(), res.modules()) if isinstance(p, TransportBlock)]
        x = torch.randn(3, 9) if name == "mlp" else torch.randn(3, blocks[0][0].first.in_channels, 5, 5)
        x = x.to(device)
        for block_plain, block_res in blocks[:1]:
            torch.testing.assert_close(block_res(x) - block_plain(x), x)
    full = create_model("resnet-mlp")
    assert full.input.out_features == 1000 and len(full.blocks) == 5 and full.head.out_features == 10
    k4 = create_model("resnet-cnn-k4")
    assert [m.out_channels for m in k4.body if isinstance(m, nn.Conv2d)] == [128, 256, 512]


def test_initialization_keeps_each_members_signal_and_the_heads_fit_the_paper_shapes(device):
    torch.manual_seed(0)
    plain, res = (
        TransportMLP(400, 10, width=400, num_blocks=2, residual=False).to(device),
        TransportMLP(400, 10, width=400, num_blocks=2, residual=True).to(device),
    )
    # auto: He normal (std √(2/fan_in)) for the plain network, PyTorch's uniform bound 1/√fan_in for the
    # ResNet
    assert abs(float(plain.blocks[0].first.weight.detach().std()) - (2 / 400) ** 0.5) < 2e-3
    assert float(plain.blocks[0].first.bias.detach().abs().max()) == 0
    assert float(res.blocks[0].first.weight.detach().abs().max()) <= 1 / 400**0.5
    explicit = TransportMLP(400, 10, width=400, num_blocks=2, residual=True, init="kaiming").to(device)
    assert abs(float(explicit.blocks[0].first.weight.detach().std()) - (2 / 400) ** 0.5) < 2e-3
    with pytest.raises(ValueError, match="init must be one of"):
        initialize(plain, "xavier", residual=False)
    k1 = TransportCNN(3, 10, widths=(32,), blocks=1).to(device)
    assert k1.head.in_features == 32 * 16 * 16 and k1(torch.randn(2, 3, 32, 32).to(device)).shape == (2, 10)
    k4 = TransportCNN(3, 10, widths=(4, 5, 6, 7), blocks=1, stem_stride=1).to(device)
    assert k4.head.in_features == 7 * 4 * 4 and k4(torch.randn(2, 3, 32, 32).to(device)).shape == (2, 10)
    pooled = TransportCNN(3, 10, widths=(4, 5), blocks=1, head="pool").to(device)
    assert pooled.head.in_features == 5 and pooled(torch.randn(2, 3, 32, 32).to(device)).shape == (2, 10)
    with pytest.raises(ValueError, match="head must be"):
        TransportCNN(3, 10, head="mean")


def _conv3x3(x, weight, bias, stride=1):
    """Zero-padded 3×3 cross-correlation with bias in NumPy (stride: every ``stride``-th output)."""
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    height, width = x.shape[2:]
    out = np.zeros((x.shape[0], weight.shape[0], height, width))
    for di in range(3):
        for dj in range(3):
            out += np.einsum(
                "bchw,oc->bohw", padded[:, :, di : di + height, dj : dj + width], weight[:, :, di, dj]
            )
    return (out + bias[None, :, None, None])[:, :, ::stride, ::stride]


def _numpy(layer):
    return layer.weight.detach().numpy(), layer.bias.detach().numpy()


def test_blocks_are_w2_relu_w1_relu_plus_the_skip_in_float64(device):
    generator = torch.Generator().manual_seed(0)
    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
    for residual in (False, True):
        block = TransportBlock(4, residual=residual).double()
        x = torch.randn(5, 4, generator=generator, dtype=torch.float64)
        (w1, b1), (w2, b2) = _numpy(block.first), _numpy(block.second)
        velocity = relu(relu(x.numpy()) @ w1.T + b1) @ w2.T + b2
        block, on_device = block.to(device), x.to(device)
        np.testing.assert_allclose(block.velocity(on_device).detach().cpu().numpy(), velocity, rtol=1e-12)
        expected = x.numpy() + velocity if residual else velocity
        np.testing.assert_allclose(block(on_device).detach().cpu().numpy(), expected, rtol=1e-12)
        conv = TransportBlock(3, residual=residual, convolutional=True).double()
        images = torch.randn(2, 3, 5, 4, generator=generator, dtype=torch.float64)
        inner = relu(_conv3x3(relu(images.numpy()), *_numpy(conv.first)))
        velocity = _conv3x3(inner, *_numpy(conv.second))
        expected = images.numpy() + velocity if residual else velocity
        out = conv.to(device)(images.to(device)).detach().cpu().numpy()
        np.testing.assert_allclose(out, expected, rtol=1e-11, atol=1e-12)
    assert "residual=True" in repr(TransportBlock(2, residual=True))


def _count(model):
    return sum(p.numel() for p in model.parameters())


def test_parameter_counts_follow_the_architecture_and_the_flattened_head_rounds_the_side_up():
    # MLP: in → width, blocks of two width × width affine maps, → classes
    mlp = TransportMLP(6, 4, width=5, num_blocks=3)
    assert _count(mlp) == (6 * 5 + 5) + 3 * 2 * (5 * 5 + 5) + (5 * 4 + 4)
    assert _count(create_model("resnet-mlp")) == 785_000 + 5 * 2 * 1_001_000 + 10_010

    def conv_block(width):
        return 2 * (9 * width * width + width)

    # stem 3×3 stride 2 on 9 × 9: side ⌈9/2⌉ = 5; a stride-2 1×1 projection to the next stage: ⌈5/2⌉ = 3
    cnn = TransportCNN(2, 7, widths=(3, 4), blocks=2, image_size=9)
    stem, projection = 9 * 2 * 3 + 3, 3 * 4 + 4
    expected = stem + 2 * conv_block(3) + projection + 2 * conv_block(4) + (4 * 3 * 3 * 7 + 7)
    assert _count(cnn) == expected and cnn.head.in_features == 4 * 3 * 3
    assert cnn(torch.randn(2, 2, 9, 9)).shape == (2, 7)
    pooled = TransportCNN(2, 7, widths=(3, 4), blocks=2, image_size=9, head="pool")
    assert _count(pooled) == expected - 4 * 3 * 3 * 7 + 4 * 7
    # the pooled head reads the channel means of the last stage
    images = torch.randn(2, 2, 9, 9)
    features = pooled.body(pooled.stem(images))
    assert features.shape == (2, 4, 3, 3)
    torch.testing.assert_close(pooled(images), pooled.head(features.mean(dim=(2, 3))))
    with pytest.raises(ValueError, match="widths must name at least one stage"):
        TransportCNN(3, 10, widths=())
    with pytest.raises(ValueError, match="init must be one of"):
        TransportMLP(4, 2, width=3, num_blocks=1, init="xavier")
    with pytest.raises(ValueError, match="num_blocks must be an integer >= 1"):
        TransportMLP(4, 2, width=3, num_blocks=0)


def test_zero_velocity_makes_the_resnet_the_identity_and_the_plain_network_constant():
    torch.manual_seed(0)
    res = TransportMLP(4, 3, width=6, num_blocks=3, residual=True).double()
    plain = TransportMLP(4, 3, width=6, num_blocks=3, residual=False).double()
    with torch.no_grad():
        for block in res.blocks:
            block.second.weight.zero_()
            block.second.bias.zero_()
    plain.load_state_dict(res.state_dict())
    x = torch.randn(5, 4, dtype=torch.float64)
    torch.testing.assert_close(res(x), res.head(res.input(x)))  # every block is x + 0
    torch.testing.assert_close(plain(x), res.head.bias.expand(5, 3))  # every block outputs 0
    # gradients reach every parameter of a two-stage convolutional ResNet with fresh weights
    fresh = TransportCNN(2, 3, widths=(3, 4), blocks=2, image_size=6)
    fresh(torch.randn(2, 2, 6, 6)).square().sum().backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in fresh.parameters())
