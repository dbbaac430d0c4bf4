"""COIN: convection by any backbone, diffusion on a graph of samples (given, per batch, fixed,
time-varying)."""

import pytest
import torch
from torch import nn

from pdenets.models import COIN, DiffResNet, block_diagonal_graph, create_model
from pdenets.nn import ConvectionBlock
from pdenets.operators import KnnGaussianWeights, UnstableStepSizeError, diffuse

from ..conftest import cycle_weights, random_symmetric_weights


def _coin(device="cpu", **kwargs):
    """COIN over a small float64 MLP backbone (drawn on the CPU, seeded as always), moved to ``device``."""
    backbone = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 6)).double()
    return COIN(backbone, **kwargs).to(device)


def test_output_is_backbone_then_explicit_diffusion_then_head(device):
    weights = random_symmetric_weights(10, density=0.3, device=device)
    head = nn.Linear(6, 3).double()
    model = _coin(device, step_size=0.1, num_steps=4, graph=weights, head=head)
    x = torch.randn(10, 4, dtype=torch.float64).to(device)
    features = model.backbone(x)
    manual = features.clone()
    laplacian = torch.diag(weights.sum(1)) - weights
    for _ in range(4):
        manual = manual - 0.1 * laplacian @ manual
    torch.testing.assert_close(model(x), head(manual))
    torch.testing.assert_close(model(x), head(diffuse(features, weights, step_size=0.1, num_steps=4)))


def test_diff_resnet_is_coin_over_one_residual_block(device):
    builder = KnnGaussianWeights(n_top=5, sigma=1.0, include_self=True, normalization="row")
    reference = (
        DiffResNet(5, 3, num_blocks=1, num_steps=7, step_size=0.5, weights=builder).double().to(device)
    )
    model = (
        COIN(
            nn.Sequential(ConvectionBlock(5)), step_size=0.5, num_steps=7, graph=builder, head=nn.Linear(5, 3)
        )
        .double()
        .to(device)
    )
    model.backbone[0].load_state_dict(reference.blocks[0].state_dict())
    model.head.load_state_dict(reference.classifier.state_dict())
    x = torch.randn(40, 5, dtype=torch.float64).to(device)
    for mode in (True, False):
        reference.train(mode), model.train(mode)
        assert torch.equal(model(x), reference(x)) or torch.allclose(
            model(x), reference(x), atol=1e-12, rtol=0
        )
    # with a hidden input map too
    reference = (
        DiffResNet(
            5,
            3,
            num_blocks=1,
            hidden_features=8,
            num_steps=3,
            step_size=0.25,
            weights=cycle_weights(40, device=device),
        )
        .double()
        .to(device)
    )
    model = COIN(
        nn.Sequential(reference.input_map, reference.blocks[0]),
        step_size=0.25,
        num_steps=3,
        graph=cycle_weights(40, device=device),
        head=reference.classifier,
    )
    torch.testing.assert_close(model(x), reference(x), atol=1e-12, rtol=0)


def test_graph_forms_give_the_same_answer(device):
    weights = cycle_weights(6, device=device)
    edge_index = weights.nonzero().T
    model = _coin(device, step_size=0.25, num_steps=3)
    x = torch.randn(6, 4, dtype=torch.float64).to(device)
    dense = model(x, graph=weights)
    torch.testing.assert_close(model(x, graph=(edge_index, None)), dense)
    torch.testing.assert_close(model(x, graph=weights.to_sparse()), dense)
    torch.testing.assert_close(model(x, graph=weights.to_sparse_csr()), dense)
    ones = torch.ones(edge_index.shape[1], dtype=torch.float64, device=device)
    fixed = _coin(device, step_size=0.25, num_steps=3, graph=(edge_index, ones))
    fixed.backbone.load_state_dict(model.backbone.state_dict())
    torch.testing.assert_close(fixed(x), dense)


def test_per_batch_graph_is_rebuilt_from_each_batch_and_can_be_fixed(device):
    calls = []
    builder = KnnGaussianWeights(n_top=3, sigma=1.0, normalization="row")

    def counting(points):
        calls.append(points.shape[0])
        return builder(points)

    model = _coin(device, step_size=0.5, num_steps=2, graph=counting)
    first, second = torch.randn(12, 4, dtype=torch.float64), torch.randn(9, 4, dtype=torch.float64)
    first, second = first.to(device), second.to(device)
    model(first), model(second)
    assert calls == [12, 9]
    torch.testing.assert_close(
        model(second), diffuse(model.backbone(second), builder(second), step_size=0.5, num_steps=2)
    )
    model.fix_graph(first)
    calls.clear()
    out = model(first + 0.5)  # the fixed graph of `first`, not one of the shifted batch
    assert calls == []
    torch.testing.assert_close(
        out, diffuse(model.backbone(first + 0.5), builder(first), step_size=0.5, num_steps=2)
    )
    model.release_graph()
    model(first)
    assert calls == [12]


def test_graph_from_features_uses_the_backbone_output(device):
    builder = KnnGaussianWeights(n_top=3, sigma=1.0, normalization="row")
    model = _coin(device, step_size=0.5, num_steps=2, graph=builder, graph_from="features")
    x = torch.randn(15, 4, dtype=torch.float64).to(device)
    features = model.backbone(x)
    torch.testing.assert_close(
        model(x), diffuse(features, builder(features.detach()), step_size=0.5, num_steps=2)
    )
    assert not torch.allclose(model(x), diffuse(features, builder(x), step_size=0.5, num_steps=2))


def test_time_varying_graph_diffuses_each_slice_on_its_own_graph(device):
    graphs = [
        cycle_weights(5, device=device),
        random_symmetric_weights(5, density=0.6, seed=1, device=device) / 4,
        torch.zeros(5, 5, dtype=torch.float64, device=device),
    ]
    model = _coin(device, step_size=0.25, num_steps=3)
    x = torch.randn(3, 5, 4, dtype=torch.float64).to(device)
    out = model(x, graph=graphs)
    assert out.shape == (3, 5, 6)
    for index, graph in enumerate(graphs):
        expected = (
            diffuse(model.backbone(x[index]), graph, step_size=0.25, num_steps=3)
            if index < 2
            else model.backbone(x[index])
        )
        torch.testing.assert_close(out[index], expected)
    with pytest.raises(ValueError, match="3 graphs needs input of shape"):
        model(x[:2], graph=graphs)
    big = block_diagonal_graph(graphs, 5)
    assert big.shape == (15, 15) and big._nnz() == sum(int((g != 0).sum()) for g in graphs)


def test_gradients_flow_through_the_diffusion_and_num_steps_zero_is_the_backbone(device):
    model = _coin(
        device,
        step_size=0.5,
        num_steps=3,
        graph=cycle_weights(7, device=device),
        head=nn.Linear(6, 2).double(),
    )
    x = torch.randn(7, 4, dtype=torch.float64).to(device).requires_grad_(True)
    torch.autograd.gradcheck(lambda inputs: model(inputs), (x,))
    plain = _coin(device, step_size=0.5, num_steps=0)
    torch.testing.assert_close(plain(x), plain.backbone(x))


def test_registry_model_and_bad_inputs(device):
    graph = cycle_weights(8, torch.float32, device=device)
    model = create_model("coin-mlp", in_features=4, num_classes=3, graph=graph).to(device)
    assert model(torch.randn(8, 4).to(device)).shape == (8, 3)
    with pytest.raises(ValueError, match="no graph of samples"):
        _coin(device, step_size=0.5, num_steps=2)(torch.randn(6, 4, dtype=torch.float64).to(device))
    with pytest.raises(ValueError, match="rows but the graph has 6 nodes"):
        _coin(device, step_size=0.5, num_steps=2, graph=cycle_weights(6, device=device))(
            torch.randn(5, 4, dtype=torch.float64).to(device)
        )
    with pytest.raises(UnstableStepSizeError):
        _coin(device, step_size=0.9, num_steps=2, graph=cycle_weights(6, device=device))(
            torch.randn(6, 4, dtype=torch.float64).to(device)
        )
    with pytest.raises(TypeError, match="backbone must be an nn.Module"):
        COIN(lambda x: x)
    with pytest.raises(TypeError, match="graph must be an adjacency"):
        _coin(device, step_size=0.5, graph="cora")
    with pytest.raises(ValueError, match="graph_from"):
        _coin(device, graph_from="labels")
    with pytest.raises(ValueError, match="negative entries"):
        _coin(device, step_size=0.1, num_steps=1)(
            torch.randn(6, 4, dtype=torch.float64).to(device), graph=-cycle_weights(6, device=device)
        )
    with pytest.raises(ValueError, match="non-finite|NaN|finite"):
        _coin(device, step_size=0.1, num_steps=1, graph=cycle_weights(6, device=device))(
            torch.full((6, 4), float("nan"), dtype=torch.float64, device=device)
        )
    with pytest.raises(ValueError, match="one row per sample"):
        COIN(nn.Flatten(0), step_size=0.1, num_steps=1, graph=cycle_weights(6, device=device))(
            torch.randn(6, 4).to(device)
        )
    with pytest.raises(ValueError, match="graph 1 of the sequence"):
        _coin(device, step_size=0.1)(
            torch.randn(2, 4, 4, dtype=torch.float64).to(device),
            graph=[cycle_weights(4, device=device), cycle_weights(5, device=device)],
        )


def test_images_through_a_convolutional_backbone_with_a_graph_of_its_features(device):
    backbone = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
    builder = KnnGaussianWeights(n_top=4, sigma_neighbor=2, normalization="row")
    model = COIN(
        backbone, step_size=0.5, num_steps=3, graph=builder, graph_from="features", head=nn.Linear(16, 3)
    ).to(device)  # the backbone moves with it
    images = torch.randn(20, 1, 8, 8).to(device)
    out = model(images)
    assert out.shape == (20, 3)
    features = backbone(images)
    torch.testing.assert_close(
        out, model.head(diffuse(features, builder(features.detach()), step_size=0.5, num_steps=3))
    )


def test_node_classification_with_a_given_edge_index_trains(device):
    torch.manual_seed(0)
    labels = torch.arange(40) % 2
    features = torch.randn(40, 6) + 1.5 * labels[:, None]
    same = (labels[:, None] == labels[None, :]) & (torch.rand(40, 40) < 0.2)
    edge_index = (same | same.T).fill_diagonal_(False).nonzero().T
    labels, features, edge_index = labels.to(device), features.to(device), edge_index.to(device)
    model = COIN(
        nn.Sequential(nn.Linear(6, 16), nn.ReLU()),
        step_size=0.1,
        num_steps=4,
        head=nn.Linear(16, 2),
        laplacian="normalized",
    ).to(device)
    train = torch.arange(0, 40, 3, device=device)  # both classes
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(40):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(features, graph=(edge_index, None))[train], labels[train])
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    accuracy = float((model(features, graph=(edge_index, None)).argmax(1) == labels).float().mean())
    assert losses[-1] < 0.5 * losses[0] and accuracy > 0.85


def test_learned_step_size_is_a_convex_combination_within_the_bound(device):
    weights = cycle_weights(6, device=device) / 2  # rows sum to 1: γ_max = 1
    model = _coin(device, step_size=0.3, num_steps=2, graph=weights, learn_step_size=True, max_step_size=1.0)
    assert model.step_size == pytest.approx(0.3)
    x = torch.randn(6, 4, dtype=torch.float64).to(device)
    torch.testing.assert_close(model(x), diffuse(model.backbone(x), weights, step_size=0.3, num_steps=2))
    model(x).sum().backward()
    assert model.step_logit.grad is not None and model.step_logit.grad != 0
    with torch.no_grad():
        model.step_logit.fill_(40.0)  # γ → γ_max: still the stable operator I − L
    torch.testing.assert_close(model(x), diffuse(model.backbone(x), weights, step_size=1.0, num_steps=2))
    with pytest.raises(ValueError, match="starts below max_step_size"):
        _coin(device, step_size=1.0, learn_step_size=True, max_step_size=1.0)


def test_learned_step_size_is_recorded_in_units_of_its_bound(device):
    """``step_size`` (what a run records) is ``γ_max · sigmoid(ρ)``, the γ the forward pass diffuses with."""
    # rows sum to 1/2: stable up to γ = 2, learned below γ_max = 0.5
    weights = cycle_weights(6, device=device) / 4
    model = _coin(device, step_size=0.3, num_steps=2, graph=weights, learn_step_size=True, max_step_size=0.5)
    assert model.step_size == pytest.approx(0.3)  # sigmoid(ρ) = 0.6
    x = torch.randn(6, 4, dtype=torch.float64).to(device)
    torch.testing.assert_close(model(x), diffuse(model.backbone(x), weights, step_size=0.3, num_steps=2))
    with torch.no_grad():
        model.step_logit.fill_(0.0)  # sigmoid = 1/2: γ = γ_max / 2
    assert model.step_size == pytest.approx(0.25)
    torch.testing.assert_close(model(x), diffuse(model.backbone(x), weights, step_size=0.25, num_steps=2))


def _reference(model, x, weights, laplacian="combinatorial"):
    """head((I − γL)^r backbone(x)) with dense matrices: the order COIN's definition states."""
    degrees = weights.sum(1)
    if laplacian == "combinatorial":
        matrix = torch.diag(degrees) - weights
    else:
        scale = degrees.rsqrt()
        matrix = (
            torch.eye(len(weights), dtype=weights.dtype, device=weights.device)
            - scale[:, None] * weights * scale
        )
    features = model.backbone(x)
    for _ in range(model.num_steps):
        features = features - model.step_size * matrix @ features
    return model.head(features)


@pytest.mark.parametrize("backbone_kind", ["sequential ending in a linear map", "any module"])
def test_the_head_first_order_gives_the_definitions_outputs_and_gradients(device, backbone_kind):
    """A combinatorial Laplacian keeps constants ((I − γL) 1 = 1, for weights of any row sums): the head is
    applied before the diffusion (its 3 columns diffused, not the features' 6) and, on a Sequential that ends
    in a linear map, folded into it; outputs and every parameter's gradient are the definition's."""
    weights = random_symmetric_weights(12, density=0.4, device=device)  # rows do not sum to one
    model = _coin(
        device, step_size=0.05, num_steps=5, graph=weights, head=nn.Linear(6, 3).double().to(device)
    )
    if backbone_kind == "any module":
        model.backbone = _Wrapped(model.backbone)
    assert model.commutes_with_head()
    x = torch.randn(12, 4, dtype=torch.float64).to(device)
    ours = model(x)
    reference = _reference(model, x, weights)
    torch.testing.assert_close(ours, reference, rtol=1e-12, atol=1e-12)
    grads = torch.autograd.grad(ours.square().sum(), list(model.parameters()))
    expected = torch.autograd.grad(reference.square().sum(), list(model.parameters()))
    for mine, theirs in zip(grads, expected):
        torch.testing.assert_close(mine, theirs, rtol=1e-10, atol=1e-12)


class _Wrapped(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


def test_the_head_waits_for_the_diffusion_where_they_do_not_commute(device):
    """The normalized Laplacian moves constants, dropout between the steps acts on the features, a head as
    wide as its input gains nothing: the definition's order is kept (and its numbers)."""
    weights = random_symmetric_weights(12, density=0.4, device=device)
    x = torch.randn(12, 4, dtype=torch.float64).to(device)
    head = nn.Linear(6, 3).double().to(device)
    normalized = _coin(device, step_size=0.05, num_steps=5, graph=weights, head=head, laplacian="normalized")
    assert not normalized.commutes_with_head()
    torch.testing.assert_close(normalized(x), _reference(normalized, x, weights, "normalized"))
    dropped = _coin(device, step_size=0.05, num_steps=5, graph=weights, head=head, dropout=0.5)
    assert not dropped.commutes_with_head()  # training: dropout between the steps
    assert dropped.eval().commutes_with_head()  # evaluation: no dropout, the order is free again
    wide = _coin(device, step_size=0.05, num_steps=5, graph=weights, head=nn.Linear(6, 6).double().to(device))
    assert not wide.commutes_with_head()
