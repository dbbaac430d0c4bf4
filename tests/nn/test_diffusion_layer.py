import pytest
import torch

from pdenets.analysis import distance_diameter
from pdenets.nn import DiffusionLayer
from pdenets.operators import KnnGaussianWeights, UnstableStepSizeError, diffuse, knn_gaussian_weights

from ..conftest import cycle_weights


def test_fixed_graph_layer_equals_pure_function():
    weights = cycle_weights(12).to_sparse()
    layer = DiffusionLayer(step_size=0.3, num_steps=5, weights=weights)
    features = torch.randn(12, 4, dtype=torch.float64)
    assert torch.allclose(layer(features), diffuse(features, weights, step_size=0.3, num_steps=5))


def test_graph_given_at_forward_and_edge_list():
    weights = cycle_weights(8)
    edge_index = weights.nonzero().T
    layer = DiffusionLayer(step_size=0.4, num_steps=3)
    features = torch.randn(8, 2, dtype=torch.float64)
    expected = diffuse(features, weights, step_size=0.4, num_steps=3)
    assert torch.allclose(layer(features, weights), expected)
    assert torch.allclose(
        layer(features, (edge_index, torch.ones(edge_index.shape[1], dtype=torch.float64))), expected
    )


def test_per_batch_builder_uses_detached_input_graph():
    builder = KnnGaussianWeights(n_top=5, sigma=1.0, normalization="row")
    layer = DiffusionLayer(step_size=1.0, num_steps=2, weights=builder)
    features = torch.randn(30, 3, dtype=torch.float64, requires_grad=True)
    out = layer(features)
    expected = diffuse(features.detach(), builder(features.detach()), step_size=1.0, num_steps=2)
    assert torch.allclose(out, expected)
    out.sum().backward()  # gradient flows through the features, not the (constant) weights
    assert features.grad is not None


def test_same_weights_tensor_reuses_operator():
    weights = cycle_weights(6).to_sparse()
    layer = DiffusionLayer(step_size=0.25, num_steps=1)
    layer(torch.randn(6, 1, dtype=torch.float64), weights)
    first = layer._recent[2]
    layer(torch.randn(6, 1, dtype=torch.float64), weights)
    assert layer._recent[2] is first


def test_zero_steps_is_identity_and_dropout_only_in_training():
    features = torch.randn(10, 3)
    assert DiffusionLayer(step_size=0.5, num_steps=0)(features) is features
    layer = DiffusionLayer(step_size=0.25, num_steps=4, weights=cycle_weights(10, torch.float32), dropout=0.5)
    layer.eval()
    assert torch.allclose(
        layer(features), diffuse(features, cycle_weights(10, torch.float32), step_size=0.25, num_steps=4)
    )
    layer.train()
    out = layer(torch.ones(10, 200))
    assert (out == 0).float().mean() > 0.3  # dropout zeroed entries after the steps


def test_unstable_step_is_refused_with_clear_error():
    with pytest.raises(UnstableStepSizeError, match=r"stability bound 2/lambda_max\(L\) = 0.5"):
        DiffusionLayer(step_size=0.6, weights=cycle_weights(6))
    DiffusionLayer(step_size=0.6, weights=cycle_weights(6), check_stability=False)
    layer = DiffusionLayer(step_size=0.6)
    with pytest.raises(UnstableStepSizeError):
        layer(torch.randn(6, 1, dtype=torch.float64), cycle_weights(6))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"step_size": 0.0}, "step_size"),
        ({"step_size": 0.1, "num_steps": -2}, "num_steps"),
        ({"step_size": 0.1, "dropout": 1.0}, "dropout"),
    ],
)
def test_bad_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DiffusionLayer(**kwargs)


def test_missing_graph_and_bad_features():
    with pytest.raises(ValueError, match="no graph"):
        DiffusionLayer(step_size=0.1)(torch.randn(4, 2))
    layer = DiffusionLayer(step_size=0.25, weights=cycle_weights(4))
    with pytest.raises(ValueError, match="NaN/inf"):
        layer(torch.tensor([[float("inf")], [0.0], [0.0], [0.0]], dtype=torch.float64))


def test_gradcheck_through_layer():
    layer = DiffusionLayer(step_size=0.3, num_steps=3, weights=cycle_weights(7).to_sparse())
    features = torch.randn(7, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(layer, (features,))


def test_distance_diameter_ratio_grows_on_separated_clusters():
    """Prop. 1: clusters that are components of the graph shrink exponentially; L does not decrease."""
    generator = torch.Generator().manual_seed(0)
    centres = torch.tensor([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]], dtype=torch.float64)
    groups = torch.arange(3).repeat_interleave(40)
    points = centres[groups] + torch.rand(120, 2, generator=generator, dtype=torch.float64) * 2 - 1
    weights = knn_gaussian_weights(points, 8, sigma=1.0, normalization="symmetric", symmetrize_weights=True)
    row, col = weights.indices()
    assert torch.all(groups[row] == groups[col])  # the assumption: no edges between clusters
    layer = DiffusionLayer(step_size=0.5, num_steps=10, weights=weights)
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


def test_repr_names_hyperparameters():
    text = repr(DiffusionLayer(step_size=0.25, num_steps=7, weights=cycle_weights(5), dropout=0.1))
    assert "step_size=0.25" in text and "num_steps=7" in text and "dropout=0.1" in text and "N=5" in text


def test_dropout_before_and_after_each_step():
    """'before' drops the input of every step (the paper's code), 'after' the output (its text)."""
    weights = cycle_weights(10, torch.float32)
    features = torch.ones(10, 500)
    before = DiffusionLayer(
        step_size=0.25, num_steps=1, weights=weights, dropout=0.5, dropout_position="before"
    )
    after = DiffusionLayer(
        step_size=0.25, num_steps=1, weights=weights, dropout=0.5, dropout_position="after"
    )
    out_after = after(features)
    assert (out_after == 0).float().mean() > 0.4  # the step's output was dropped
    out_before = before(features)
    assert (out_before == 0).float().mean() < 0.2  # averaging after the drop leaves few exact zeros
    assert torch.allclose(out_before.mean(), torch.tensor(1.0), atol=0.05)  # unbiased
    with pytest.raises(ValueError, match="dropout_position"):
        DiffusionLayer(step_size=0.1, dropout_position="middle")
