"""GNN propagation is diffusion: GCN = one step with γ = 1 on the self-looped normalized Laplacian; SGC,
APPNP."""

import pytest
import torch
from torch_geometric.nn import APPNP, GCNConv, SGConv

from pdenets.nn import DiffusionLayer
from pdenets.operators import (
    UnstableStepSizeError,
    appnp_propagate,
    diffuse,
    gcn_normalize,
    gcn_propagate,
    sgc_propagate,
)

from ..conftest import random_symmetric_weights


def _graph(n=12, seed=0, device="cpu"):
    weights = random_symmetric_weights(n, density=0.3, seed=seed, device=device)
    edge_index = weights.nonzero().T
    return weights, edge_index, weights[edge_index[0], edge_index[1]]


def _identity_linear(layer, width):
    lin = layer.lin if hasattr(layer, "lin") else layer
    with torch.no_grad():
        lin.weight.copy_(torch.eye(width, dtype=lin.weight.dtype))
        if getattr(lin, "bias", None) is not None:
            lin.bias.zero_()
    if getattr(layer, "bias", None) is not None and layer.bias is not lin.bias:
        with torch.no_grad():
            layer.bias.zero_()


def test_gcn_step_is_one_normalized_diffusion_step_with_unit_step_size(device):
    weights, edge_index, edge_weight = _graph(device=device)
    x = torch.randn(12, 5, dtype=torch.float64).to(device)
    conv = GCNConv(5, 5).double().to(device)
    _identity_linear(conv, 5)
    expected = conv(x, edge_index, edge_weight)
    torch.testing.assert_close(gcn_propagate(x, (edge_index, edge_weight), num_nodes=12), expected)
    # the same as a DiffusionLayer (γ = 1, normalized Laplacian) on W + I, and as Â X
    self_looped = weights + torch.eye(12, dtype=torch.float64, device=device)
    layer = DiffusionLayer(step_size=1.0, num_steps=1, laplacian="normalized", weights=self_looped).to(device)
    torch.testing.assert_close(layer(x), expected)
    torch.testing.assert_close(gcn_normalize(weights) @ x, expected)
    # and not the combinatorial Laplacian's step
    assert not torch.allclose(
        diffuse(x, gcn_normalize(weights), step_size=1.0, check_stability=False), expected
    )


@pytest.mark.parametrize("hops", [1, 2, 5])
def test_sgc_is_repeated_diffusion(hops, device):
    _, edge_index, edge_weight = _graph(seed=1, device=device)
    x = torch.randn(12, 4, dtype=torch.float64).to(device)
    conv = SGConv(4, 4, K=hops).double().to(device)
    _identity_linear(conv, 4)
    torch.testing.assert_close(
        sgc_propagate(x, (edge_index, edge_weight), hops, num_nodes=12), conv(x, edge_index, edge_weight)
    )


@pytest.mark.parametrize("alpha,hops", [(0.1, 10), (0.5, 3), (0.0, 4)])
def test_appnp_is_diffusion_relaxed_towards_the_input(alpha, hops, device):
    _, edge_index, edge_weight = _graph(seed=2, device=device)
    x = torch.randn(12, 3, dtype=torch.float64).to(device)
    expected = APPNP(K=hops, alpha=alpha).to(device)(x, edge_index, edge_weight)
    torch.testing.assert_close(
        appnp_propagate(x, (edge_index, edge_weight), hops, alpha, num_nodes=12), expected
    )
    if alpha == 0:
        torch.testing.assert_close(expected, sgc_propagate(x, (edge_index, edge_weight), hops, num_nodes=12))


def test_appnp_converges_to_the_personalized_pagerank_fixed_point(device):
    weights, _, _ = _graph(seed=3, device=device)
    x = torch.randn(12, 2, dtype=torch.float64).to(device)
    alpha = 0.2
    fixed_point = alpha * torch.linalg.solve(
        torch.eye(12, dtype=torch.float64, device=device) - (1 - alpha) * gcn_normalize(weights), x
    )
    torch.testing.assert_close(appnp_propagate(x, weights, 200, alpha), fixed_point)


def test_normalized_laplacian_step_size_bound(device):
    weights, _, _ = _graph(device=device)
    with pytest.raises(UnstableStepSizeError, match="exceeds 1"):
        diffuse(
            torch.randn(12, 2, dtype=torch.float64).to(device), weights, step_size=1.5, laplacian="normalized"
        )
    with pytest.raises(ValueError, match="laplacian must be one of"):
        diffuse(
            torch.randn(12, 2, dtype=torch.float64).to(device), weights, step_size=0.5, laplacian="random"
        )
    with pytest.raises(ValueError, match="alpha"):
        appnp_propagate(torch.randn(12, 2, dtype=torch.float64).to(device), weights, 2, alpha=1.5)
