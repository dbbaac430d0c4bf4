import pytest
import torch

from pdenets.analysis import distance_diameter
from pdenets.nn import DiffusionLayer
from pdenets.operators import KnnGaussianWeights, UnstableStepSizeError, diffuse, knn_gaussian_weights

from ..conftest import cycle_weights


def test_fixed_graph_layer_equals_pure_function(device):
    weights = cycle_weights(12, device=device).to_sparse()
    layer = DiffusionLayer(step_size=0.3, num_steps=5, weights=weights).to(device)
    features = torch.randn(12, 4, dtype=torch.float64).to(device)
    assert torch.allclose(layer(features), diffuse(features, weights, step_size=0.3, num_steps=5))


def test_graph_given_at_forward_and_edge_list(device):
    weights = cycle_weights(8, device=device)
    edge_index = weights.nonzero().T
    layer = DiffusionLayer(step_size=0.4, num_steps=3).to(device)
    features = torch.randn(8, 2, dtype=torch.float64).to(device)
    expected = diffuse(features, weights, step_size=0.4, num_steps=3)
    assert torch.allclose(layer(features, weights), expected)
    assert torch.allclose(
        layer(features, (edge_index, torch.ones(edge_index.shape[1], dtype=torch.float64, device=device))),
        expected,
    )


def test_per_batch_builder_uses_detached_input_graph(device):
    builder = KnnGaussianWeights(n_top=5, sigma=1.0, normalization="row")
    layer = DiffusionLayer(step_size=1.0, num_steps=2, weights=builder).to(device)
    features = torch.randn(30, 3, dtype=torch.float64).to(device).requires_grad_()
    out = layer(features)
    expected = diffuse(features.detach(), builder(features.detach()), step_size=1.0, num_steps=2)
    assert torch.allclose(out, expected)
    out.sum().backward()  # gradient flows through the features, not the (constant) weights
    assert features.grad is not None


def test_same_weights_tensor_reuses_operator(device):
    weights = cycle_weights(6, device=device).to_sparse()
    layer = DiffusionLayer(step_size=0.25, num_steps=1).to(device)
    layer(torch.randn(6, 1, dtype=torch.float64).to(device), weights)
    first = layer._recent[2]
    layer(torch.randn(6, 1, dtype=torch.float64).to(device), weights)
    assert layer._recent[2] is first


def test_zero_steps_is_identity_and_dropout_only_in_training(device):
    features = torch.randn(10, 3).to(device)
    assert DiffusionLayer(step_size=0.5, num_steps=0).to(device)(features) is features
    weights = cycle_weights(10, torch.float32, device=device)
    layer = DiffusionLayer(step_size=0.25, num_steps=4, weights=weights, dropout=0.5).to(device)
    layer.eval()
    assert torch.allclose(layer(features), diffuse(features, weights, step_size=0.25, num_steps=4))
    layer.train()
    out = layer(torch.ones(10, 200, device=device))
    assert (out == 0).float().mean() > 0.3  # dropout zeroed entries after the steps


def test_unstable_step_is_refused_with_clear_error(device):
    with pytest.raises(UnstableStepSizeError, match=r"stability bound 2/lambda_max\(L\) = 0.5"):
        DiffusionLayer(step_size=0.6, weights=cycle_weights(6, device=device))
    DiffusionLayer(step_size=0.6, weights=cycle_weights(6, device=device), check_stability=False)
    layer = DiffusionLayer(step_size=0.6).to(device)
    with pytest.raises(UnstableStepSizeError):
        layer(torch.randn(6, 1, dtype=torch.float64).to(device), cycle_weights(6, device=device))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"step_size": 0.0}, "step_size"),
        ({"step_size": 0.1, "num_steps": -2}, "num_steps"),
        ({"step_size": 0.1, "dropout": 1.0}, "dropout"),
    ],
)
def test_bad_construction(kwargs, message, device):  # sizes and rates: refused before any tensor exists
    with pytest.raises(ValueError, match=message):
        DiffusionLayer(**kwargs)


def test_missing_graph_and_bad_features(device):
    with pytest.raises(ValueError, match="no graph"):
        DiffusionLayer(step_size=0.1).to(device)(torch.randn(4, 2).to(device))
    layer = DiffusionLayer(step_size=0.25, weights=cycle_weights(4, device=device)).to(device)
    with pytest.raises(ValueError, match="NaN/inf"):
        layer(torch.tensor([[float("inf")], [0.0], [0.0], [0.0]], dtype=torch.float64, device=device))


def test_gradcheck_through_layer(device):
    layer = DiffusionLayer(step_size=0.3, num_steps=3, weights=cycle_weights(7, device=device).to_sparse())
    layer = layer.to(device)
    features = torch.randn(7, 2, dtype=torch.float64).to(device).requires_grad_()
    assert torch.autograd.gradcheck(layer, (features,))


def test_distance_diameter_ratio_grows_on_separated_clusters(device):
    """Prop. 1: clusters that are components of the graph shrink exponentially; L does not decrease."""
    generator = torch.Generator().manual_seed(0)
    centres = torch.tensor([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]], dtype=torch.float64)
    groups = torch.arange(3).repeat_interleave(40)
    points = (centres[groups] + torch.rand(120, 2, generator=generator, dtype=torch.float64) * 2 - 1).to(
        device
    )
    groups = groups.to(device)
    weights = knn_gaussian_weights(points, 8, sigma=1.0, normalization="symmetric", symmetrize_weights=True)
    row, col = weights.indices()
    assert torch.all(groups[row] == groups[col])  # the assumption: no edges between clusters
    layer = DiffusionLayer(step_size=0.5, num_steps=10, weights=weights).to(device)
    measures = [distance_diameter(points, groups)]
    current = points
    for _ in range(5):
        current = layer(current)
        measures.append(distance_diameter(current, groups))
    ratios = [m.ratio for m in measures]
    assert all(b > a for a, b in zip(ratios, ratios[1:]))
    assert all(m.distance >= measures[0].distance - 1e-12 for m in measures)
    shrink = [measures[i + 1].diameter / measures[i].diameter for i in range(1, 5)]
    assert max(shrink) < 0.9  # geometric (exponential) decay of D


def test_repr_names_hyperparameters(device):
    text = repr(
        DiffusionLayer(step_size=0.25, num_steps=7, weights=cycle_weights(5, device=device), dropout=0.1)
    )
    assert "step_size=0.25" in text and "num_steps=7" in text and "dropout=0.1" in text and "N=5" in text


def test_dropout_before_and_after_each_step(device):
    """'before' drops the input of every step (the paper's code), 'after' the output (its text)."""
    weights = cycle_weights(10, torch.float32, device=device)
    features = torch.ones(10, 500, device=device)
    before = DiffusionLayer(
        step_size=0.25, num_steps=1, weights=weights, dropout=0.5, dropout_position="before"
    ).to(device)
    after = DiffusionLayer(
        step_size=0.25, num_steps=1, weights=weights, dropout=0.5, dropout_position="after"
    ).to(device)
    out_after = after(features)
    assert (out_after == 0).float().mean() > 0.4  # the step's output was dropped
    out_before = before(features)
    assert (out_before == 0).float().mean() < 0.2  # averaging after the drop leaves few exact zeros
    assert torch.allclose(out_before.mean(), torch.tensor(1.0, device=device), atol=0.05)  # unbiased
    with pytest.raises(ValueError, match="dropout_position"):
        DiffusionLayer(step_size=0.1, dropout_position="middle")
