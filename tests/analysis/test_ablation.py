"""Unit ablation against a NumPy re-implementation of appendix 7.1; ties, empty counts, restored state."""

import copy

import pytest
import torch
from torch import nn

from pdenets.analysis.ablation import important_units, unit_ablation


def _net(seed=0):
    generator = torch.Generator().manual_seed(seed)
    net = nn.Sequential(nn.Linear(3, 5), nn.Linear(5, 5), nn.Linear(5, 3)).double()
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=torch.float64))
    return net


def _reference_curve(net, reference, reference_labels, x, y, counts, classes):
    """Appendix 7.1 by hand: class means of x^(1) on the reference points rank the units; a point of class
    c gets x^(1)_u := x^(0)_u on the first k units of c, then the head runs."""
    (w0, b0), (w1, b1), (w2, b2) = (
        (layer.weight.detach().numpy(), layer.bias.detach().numpy()) for layer in net
    )
    ref_in = reference.numpy() @ w0.T + b0
    ref_out = ref_in @ w1.T + b1
    h_in = x.numpy() @ w0.T + b0
    h_out = h_in @ w1.T + b1
    curve = []
    for k in counts:
        ablated = h_out.copy()
        for i, c in enumerate(classes):
            members = reference_labels.numpy() == c
            means = ref_out[members].mean(0) if members.any() else ref_out.mean(0)
            order = sorted(range(5), key=lambda u: (-means[u], u))[:k]
            ablated[i, order] = h_in[i, order]
        predicted = (ablated @ w2.T + b2).argmax(1)
        curve.append(float((predicted == y.numpy()).mean()))
    return curve


def test_the_curve_is_the_hand_computed_ablation_for_either_class_source(device):
    net = _net(seed=3)
    generator = torch.Generator().manual_seed(1)
    reference = torch.randn(30, 3, generator=generator, dtype=torch.float64)
    reference_labels = torch.randint(0, 3, (30,), generator=generator)
    x = torch.randn(25, 3, generator=generator, dtype=torch.float64)
    y = torch.randint(0, 3, (25,), generator=generator)
    counts = [0, 1, 2, 3, 4, 5]
    predicted_classes = net(x).argmax(1).numpy()
    on_device = [t.to(device) for t in (reference, reference_labels, x, y)]
    moved = copy.deepcopy(net).to(device)
    by_prediction = unit_ablation(moved, "1", *on_device, counts)
    by_label = unit_ablation(moved, "1", *on_device, counts, class_source="label")
    expected_prediction = _reference_curve(net, reference, reference_labels, x, y, counts, predicted_classes)
    expected_label = _reference_curve(net, reference, reference_labels, x, y, counts, y.numpy())
    assert by_prediction["accuracy"] == expected_prediction
    assert by_label["accuracy"] == expected_label
    # the two sources pick different units somewhere, and k changes the answer: the comparison can fail
    assert expected_prediction != expected_label
    assert len(set(expected_prediction)) > 1


def test_batches_do_not_change_the_curve_and_the_model_is_left_as_found(device):
    net = _net(seed=5).train().to(device)
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(23, 3, generator=generator, dtype=torch.float64).to(device)
    y = torch.randint(0, 3, (23,), generator=generator).to(device)
    before = net(x).detach().clone()
    whole = unit_ablation(net, "1", x, y, x, y, [0, 2, 5])
    pieces = unit_ablation(net, "1", x, y, x, y, [0, 2, 5], batch_size=4)
    assert whole == pieces
    assert net.training and all(not module._forward_hooks for module in net.modules())
    assert torch.equal(net(x), before)


def test_unit_ablation_refuses_mismatched_points_and_unknown_blocks():
    net = _net()
    x, y = torch.randn(6, 3, dtype=torch.float64), torch.randint(0, 3, (6,))
    with pytest.raises(ValueError, match="same number of points"):
        unit_ablation(net, "1", x, y, x, y[:5], [0])
    with pytest.raises(ValueError, match="same number of points"):
        unit_ablation(net, "1", x, y[:4], x, y, [0])
    with pytest.raises(ValueError, match="no module named 'head'"):
        unit_ablation(net, "head", x, y, x, y, [0])
    with pytest.raises(ValueError, match="counts must lie in 0..5"):
        unit_ablation(net, "1", x, y, x, y, [-1])
    assert all(not module._forward_hooks for module in net.modules())


def test_important_units_keep_the_unit_order_on_ties_and_allow_no_unit():
    reps = torch.tensor([[1.0, 2.0, 2.0, 1.0], [1.0, 2.0, 2.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    labels = torch.tensor([0, 0, 1])
    # class 0 means (1, 2, 2, 1): the tied units 1, 2 in their order, then 0, 3; class 1 is all zeros
    assert important_units(reps, labels, 2, 4).tolist() == [[1, 2, 0, 3], [0, 1, 2, 3]]
    empty = important_units(reps, labels, 2, 0)
    assert empty.shape == (2, 0) and empty.dtype == torch.int64
    # a class mean, not a sum: one large point of class 1 against two of class 0
    unequal = torch.tensor([[3.0, 0.0], [3.0, 0.0], [0.0, 5.0]])
    assert important_units(unequal, torch.tensor([0, 0, 1]), 2, 1).tolist() == [[0], [1]]
    with pytest.raises(ValueError, match=r"must be \(m, d\) with labels \(m,\)"):
        important_units(reps, labels[:2], 2, 1)
    with pytest.raises(ValueError, match=r"must be \(m, d\)"):
        important_units(reps[0], labels, 2, 1)
