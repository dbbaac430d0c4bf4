import pytest
import torch

from pdenets.models import DiffResNet, create_model, no_diff_resnet
from pdenets.operators import KnnGaussianWeights, diffuse

from ..conftest import cycle_weights


def test_paper_synthetic_net_has_18_parameters(device):
    net = DiffResNet(2, 2, num_steps=60, step_size=1.0).to(device)
    assert sum(p.numel() for p in net.parameters()) == 18


def test_forward_equals_manual_composition(device):
    weights = cycle_weights(10, device=device)
    net = DiffResNet(3, 4, num_blocks=2, num_steps=3, step_size=0.25, weights=weights).double().to(device)
    x = torch.randn(10, 3, dtype=torch.float64).to(device)
    out = x
    for block in net.blocks:
        out = diffuse(block(out), weights, step_size=0.25, num_steps=3)
    assert torch.allclose(net(x), net.classifier(out))


def test_no_diffusion_is_plain_resnet(device):
    net = no_diff_resnet(2, 2).to(device)
    x = torch.randn(7, 2).to(device)
    assert net.num_steps == 0
    assert torch.allclose(net(x), net.classifier(net.blocks[0](x)))
    registered = create_model("no-diff-resnet", in_features=2, num_classes=2).to(device)
    assert registered.num_steps == 0 and sum(p.numel() for p in registered.parameters()) == 18


def test_builder_is_called_once_per_forward(device):
    calls = []
    builder = KnnGaussianWeights(n_top=4, sigma=1.0, normalization="row")

    def counting(points):
        calls.append(points.shape)
        return builder(points)

    net = DiffResNet(2, 2, num_blocks=3, num_steps=2, step_size=1.0, weights=counting).to(device)
    net(torch.randn(20, 2).to(device))
    assert len(calls) == 1


def test_hidden_width_and_graph_block(device):
    net = DiffResNet(
        5,
        3,
        hidden_features=8,
        block="graph",
        num_steps=2,
        step_size=0.25,
        dropout=0.2,
        weights=cycle_weights(6, torch.float32, device=device),
    ).to(device)
    assert net(torch.randn(6, 5).to(device)).shape == (6, 3)
    assert net.features(torch.randn(6, 5).to(device)).shape == (6, 8)


def test_gradients_reach_every_parameter(device):
    weights = cycle_weights(12, torch.float32, device=device)
    net = DiffResNet(2, 2, num_steps=5, step_size=0.25, weights=weights).to(device)
    net(torch.randn(12, 2).to(device)).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())


def test_bad_inputs(device):
    with pytest.raises(ValueError, match="shape \\(N, 2\\)"):
        DiffResNet(2, 2, num_steps=0).to(device)(torch.randn(4, 3).to(device))
    with pytest.raises(ValueError, match="num_blocks"):
        DiffResNet(2, 2, num_blocks=0)
    with pytest.raises(ValueError, match="no graph"):
        DiffResNet(2, 2, num_steps=3).to(device)(torch.randn(4, 2).to(device))


def test_evaluation_reassociates_classifier_exactly(device):
    """Without dropout the last diffusion commutes with the classifier (rows of I − γL sum to 1)."""
    weights = cycle_weights(30, device=device)
    net = (
        DiffResNet(
            12, 3, num_blocks=2, num_steps=6, step_size=0.3, block="graph", dropout=0.5, weights=weights
        )
        .double()
        .to(device)
    )
    x = torch.randn(30, 12, dtype=torch.float64).to(device)
    net.eval()
    assert torch.allclose(net(x), net.classifier(net.features(x)), atol=1e-12)


def test_with_dropout_active_the_classifier_comes_after_diffusion(device):
    """Dropout is not linear: while it is active the classifier must not be moved before the diffusion."""
    weights = cycle_weights(30, device=device)
    net = (
        DiffResNet(
            12, 3, num_blocks=1, num_steps=6, step_size=0.3, block="graph", dropout=0.5, weights=weights
        )
        .double()
        .train()
        .to(device)
    )
    x = torch.randn(30, 12, dtype=torch.float64).to(device)
    torch.manual_seed(7)
    out = net(x)
    torch.manual_seed(7)
    expected = net.classifier(net.diffusion(net.blocks[0](x)))  # the same dropout masks, classifier last
    assert torch.equal(out, expected)
    torch.manual_seed(7)
    reassociated = (
        net.diffusion(torch.nn.functional.linear(net.blocks[0](x), net.classifier.weight))
        + net.classifier.bias
    )
    assert not torch.allclose(out, reassociated, atol=1e-3)


def test_sparse_bag_of_words_input(device):
    weights = cycle_weights(25, torch.float32, device=device)
    net = DiffResNet(40, 4, num_steps=3, step_size=0.3, block="graph", weights=weights).eval().to(device)
    x = (torch.rand(25, 40) * (torch.rand(25, 40) < 0.05)).to(device)
    assert torch.allclose(net(x.to_sparse_csr()), net(x), atol=1e-6)
