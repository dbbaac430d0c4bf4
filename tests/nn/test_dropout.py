import pytest
import torch

from pdenets.nn.dropout import fast_dropout, keep_threshold


@pytest.mark.parametrize("p", [0.25, 0.35, 0.5, 0.9])
def test_drop_rate_and_unbiasedness(p, device):
    torch.manual_seed(0)
    features = torch.ones(400, 500, dtype=torch.float64, device=device)
    out = fast_dropout(features, p)
    dropped = (out == 0).double().mean().item()
    assert abs(dropped - p) < 0.01
    _, _, keep = keep_threshold(p)  # the NumPy masks' keep probability, on the CPU
    if device.type != "cpu":  # elsewhere fast_dropout is F.dropout: it keeps with probability 1 − p
        keep = 1 - p
    assert torch.allclose(out[out != 0], torch.full_like(out[out != 0], 1 / keep))
    assert abs(out.mean().item() - 1.0) < 0.02


def test_keep_probability_resolution(device):  # integer thresholds: the same on every device
    assert keep_threshold(0.25)[2] == 0.75  # exact with one byte
    dtype, threshold, keep = keep_threshold(0.35)
    assert threshold == 42598 and abs(keep - 0.65) < 1e-5


def test_reproducible_with_torch_seed_and_gradient_is_mask(device):
    features = torch.randn(50, 40).to(device).requires_grad_()
    torch.manual_seed(3)
    first = fast_dropout(features, 0.3)
    torch.manual_seed(3)
    second = fast_dropout(features, 0.3)
    assert torch.equal(first, second)
    first.sum().backward()
    kept = first != 0
    _, _, keep = keep_threshold(0.3)  # the NumPy masks' keep probability, on the CPU
    if device.type != "cpu":  # elsewhere fast_dropout is F.dropout: it keeps with probability 1 − p
        keep = 1 - 0.3
    assert torch.allclose(features.grad[kept], torch.full_like(features.grad[kept], 1 / keep))
    assert torch.all(features.grad[~kept] == 0)


def test_identity_when_not_training_and_bad_rate(device):
    features = torch.randn(5, 5).to(device)
    assert fast_dropout(features, 0.5, training=False) is features
    assert fast_dropout(features, 0.0) is features
    with pytest.raises(ValueError, match="dropout probability"):
        fast_dropout(features, 1.0)


@pytest.mark.parametrize("p", [0.25, 0.35])
def test_masks_are_independent_between_neighbouring_entries(p, device):
    """P(both of two adjacent entries dropped) = p² (bytes of one random word are independent)."""
    torch.manual_seed(1)
    dropped = fast_dropout(torch.ones(300, 1000, device=device), p) == 0
    both_in_row = (dropped[:, 1:] & dropped[:, :-1]).double().mean().item()
    both_in_column = (dropped[1:] & dropped[:-1]).double().mean().item()
    assert abs(both_in_row - p * p) < 0.004 and abs(both_in_column - p * p) < 0.004


def test_backward_multiplies_by_the_same_scaled_mask(device):
    features = torch.randn(30, 17, dtype=torch.float64).to(device).requires_grad_()
    torch.manual_seed(5)
    out = fast_dropout(features, 0.5)
    weights = torch.randn(out.shape, dtype=out.dtype).to(device)
    (out * weights).sum().backward()
    assert torch.allclose(features.grad, weights * out.detach() / features.detach())
