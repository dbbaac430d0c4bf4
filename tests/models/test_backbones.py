"""Conv-4 against a NumPy block and its parameter count, base-class training, features, backbone files."""

import math

import numpy as np
import pytest
import torch

from pdenets.data import DatasetError
from pdenets.models.backbones import BackboneTraining, Conv4, extract_features, train_backbone


def test_backbone_files_are_checked_against_the_budget_before_they_are_used(tmp_path, monkeypatch):
    from pdenets.features.embeddings import load_backbone, save_backbone
    from pdenets.models.backbones import BackboneTraining, Conv4

    path = save_backbone(
        Conv4(1, 5, image_size=28),
        tmp_path / "backbone.pt",
        classes=list("abcde"),
        settings=BackboneTraining(),
        image_size=28,
        channels=1,
    )
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "4M")
    assert type(load_backbone(path)[0]).__name__ == "Conv4"
    tensor = torch.zeros(16384, dtype=torch.float64)  # 128 KiB, stored once, named 100 times
    torch.save({"state_dict": {str(key): tensor for key in range(100)}}, tmp_path / "shared.pt")
    with pytest.raises(
        DatasetError,
        match="shared.pt: its data, with every shared reference counted as a copy, "
        "would need 12.5 MiB, more than the memory budget 4.0 MiB",
    ):
        load_backbone(tmp_path / "shared.pt")
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1K")
    with pytest.raises(
        DatasetError,
        match=r"backbone.pt: the file would need \d+\.\d KiB, more than the memory "
        "budget 1.0 KiB",
    ):
        load_backbone(path)


def _conv3x3(x, weight, bias):
    """Zero-padded 3×3 cross-correlation of ``(B, C, H, W)`` by ``(O, C, 3, 3)``, written out in NumPy."""
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    height, width = x.shape[2:]
    out = np.zeros((x.shape[0], weight.shape[0], height, width))
    for di in range(3):
        for dj in range(3):
            window = padded[:, :, di : di + height, dj : dj + width]
            out += np.einsum("bchw,oc->bohw", window, weight[:, :, di, dj])
    return out + bias[None, :, None, None]


def test_a_conv4_block_is_conv_batchnorm_relu_maxpool_in_evaluation_mode():
    generator = torch.Generator().manual_seed(0)
    net = Conv4(2, 0, width=3, image_size=16).double().eval()
    block = net.encoder[0]
    with torch.no_grad():
        block[1].running_mean.copy_(torch.randn(3, generator=generator, dtype=torch.float64))
        block[1].running_var.copy_(torch.rand(3, generator=generator, dtype=torch.float64) + 0.5)
        block[1].weight.copy_(torch.randn(3, generator=generator, dtype=torch.float64))
        block[1].bias.copy_(torch.randn(3, generator=generator, dtype=torch.float64))
    x = torch.randn(2, 2, 6, 6, generator=generator, dtype=torch.float64)
    conv = _conv3x3(x.numpy(), block[0].weight.detach().numpy(), block[0].bias.detach().numpy())
    bn = block[1]
    scale = bn.weight.detach().numpy() / np.sqrt(bn.running_var.numpy() + bn.eps)
    normalized = (conv - bn.running_mean.numpy()[None, :, None, None]) * scale[None, :, None, None]
    activated = np.maximum(normalized + bn.bias.detach().numpy()[None, :, None, None], 0.0)
    pooled = activated.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_allclose(block(x).detach().numpy(), pooled, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("channels, classes, width, size", [(1, 5, 8, 28), (3, 7, 4, 35), (2, 0, 6, 16)])
def test_conv4_parameters_and_embedding_width_follow_the_architecture(channels, classes, width, size):
    net = Conv4(channels, classes, width=width, image_size=size)

    def block(inputs):  # 3×3 convolution with bias, then BatchNorm's scale and shift
        return 9 * inputs * width + width + 2 * width

    embedding = width * (size // 16) ** 2
    head = embedding * classes + classes if classes else 0
    assert sum(p.numel() for p in net.parameters()) == block(channels) + 3 * block(width) + head
    assert net.embedding_dim == embedding
    assert net.embed(torch.zeros(2, channels, size, size)).shape == (2, embedding)
    if classes:
        logits = net(torch.randn(2, channels, size, size))
        assert logits.shape == (2, classes)
        logits.square().sum().backward()
        assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in net.parameters())


def test_conv4_without_a_head_and_bad_sizes_are_refused():
    with pytest.raises(RuntimeError, match="no classification head"):
        Conv4(1, 0, width=2, image_size=16)(torch.zeros(1, 1, 16, 16))
    with pytest.raises(ValueError, match="image_size must be an integer >= 16, got 15"):
        Conv4(1, 3, image_size=15)
    with pytest.raises(ValueError, match="width must be an integer >= 1"):
        Conv4(1, 3, width=0)
    with pytest.raises(TypeError, match="in_channels must be an integer"):
        Conv4(1.0, 3)


def _tiny_images(classes=3, per_class=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    images = torch.rand(classes * per_class, 1, 16, 16, generator=generator)
    return images, torch.arange(classes).repeat_interleave(per_class)


def test_training_with_rotations_makes_four_classes_per_class_and_returns_an_evaluation_model():
    images, labels = _tiny_images(classes=2, per_class=2)
    seen = []
    settings = BackboneTraining(epochs=2, batch_size=8, validation_fraction=0.2, seed=3)
    model, history = train_backbone(images, labels, settings, progress=lambda e, m: seen.append((e, m)))
    assert model.head.out_features == 8 and not model.training
    assert len(history.train_loss) == len(history.train_accuracy) == len(history.validation_accuracy) == 2
    # one of the two images of each of the 8 rotated classes is held out: both accuracies in eighths
    assert all(float(a * 8).is_integer() and 0 <= a <= 1 for a in history.validation_accuracy)
    assert all(float(a * 8).is_integer() for a in history.train_accuracy)
    assert [epoch for epoch, _ in seen] == [1, 2] and seen[-1][1]["loss"] == history.train_loss[-1]
    plain, plain_history = train_backbone(
        images, labels, BackboneTraining(epochs=1, batch_size=8, rotations=False, validation_fraction=0.0)
    )
    assert plain.head.out_features == 2 and math.isnan(plain_history.validation_accuracy[0])
    assert float(plain_history.train_accuracy[0] * 4).is_integer()  # every image trains: accuracy in quarters


def test_features_are_the_evaluation_mode_embeddings_in_any_batch_size(device):
    images, _ = _tiny_images()
    net = Conv4(1, 0, width=4, image_size=16).to(device)
    net.train()
    net.embed(images.to(device))  # moves BatchNorm's running statistics away from their start
    features = extract_features(net, images, batch_size=5, device=str(device))
    assert not net.training and features.device.type == "cpu"
    with torch.no_grad():
        torch.testing.assert_close(features, net.embed(images.to(device)).cpu())
    torch.testing.assert_close(extract_features(net, images, batch_size=100, device=str(device)), features)
