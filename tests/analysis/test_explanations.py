"""A Diff-ResNet's prediction is an exact sum over the items: the shares and the bias add up to the network's
own logits in float64, for every class and for the margin; the rows of ``A^r`` are those of the dense matrix
power (rows, not columns, on a graph whose ``A`` is not symmetric); a network without diffusion shares
nothing; a network that is not a sum over the items is refused; cutting a node out of the graph removes
every edge it has, in every layout."""

import pytest
import torch

from pdenets.analysis.explanations import (
    diffusion_columns,
    diffusion_rows,
    explain_diffusion,
    isolate_nodes,
)
from pdenets.models import DiffResNet, no_diff_resnet
from pdenets.models.gnn import GCN
from pdenets.operators import DiffusionOperator


def _graph(n=24, seed=0, symmetric=True):
    generator = torch.Generator().manual_seed(seed)
    weights = torch.rand(n, n, generator=generator, dtype=torch.float64)
    weights = weights * (torch.rand(n, n, generator=generator, dtype=torch.float64) < 0.2)
    weights.fill_diagonal_(0)
    return (weights + weights.T) / 2 if symmetric else weights


def _network(weights, **settings):
    torch.manual_seed(1)
    defaults = dict(num_steps=6, step_size=0.15, block="graph", dropout=0.3, weights=weights)
    return DiffResNet(5, 4, **{**defaults, **settings}).double()


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("settings", [{}, {"hidden_features": 7}, {"num_blocks": 2}, {"num_steps": 1}])
def test_the_shares_and_the_bias_add_up_to_the_networks_logits(layout, settings):
    weights = _graph()
    network = _network(weights if layout == "dense" else weights.to_sparse_csr(), **settings)
    x = torch.randn(24, 5, dtype=torch.float64)
    items = torch.tensor([0, 5, 23, 5])
    network.train()  # the shares are of the evaluation logits, and the mode is restored
    shares = explain_diffusion(network, x, items)
    assert network.training
    network.eval()
    with torch.no_grad():
        logits = network(x)[items]
    assert torch.allclose(shares.logits(), logits, atol=1e-12, rtol=0)
    for c in range(4):
        per_class = shares.class_shares(torch.full((4,), c)).sum(1) + shares.bias[c]
        assert torch.allclose(per_class, logits[:, c], atol=1e-12, rtol=0)
    first, second = shares.predictions().T
    margin = shares.margin_shares(first, second).sum(1) + shares.bias[first] - shares.bias[second]
    assert torch.allclose(
        margin, logits.gather(1, first[:, None]).flatten() - logits.gather(1, second[:, None]).flatten()
    )
    assert (logits.gather(1, first[:, None]) >= logits).all()


def test_the_rows_are_those_of_the_matrix_power_not_its_columns():
    weights = _graph(symmetric=False)
    operator = DiffusionOperator(weights, step_size=0.1)
    power = torch.linalg.matrix_power(operator.matrix(), 4)
    assert not torch.allclose(power, power.T)
    items = torch.tensor([3, 0, 11])
    assert torch.allclose(diffusion_rows(operator, items, 4), power[items], atol=1e-14)
    assert torch.allclose(diffusion_columns(operator, items, 4), power[:, items], atol=1e-14)
    sparse = DiffusionOperator(weights.to_sparse_csr(), step_size=0.1)
    assert torch.allclose(diffusion_rows(sparse, items, 4), power[items], atol=1e-12)
    assert torch.equal(diffusion_rows(operator, items, 0), torch.eye(24, dtype=torch.float64)[items])


def test_the_normalized_laplacian_rows_are_its_power_too():
    operator = DiffusionOperator(_graph(), step_size=0.7, laplacian="normalized")
    power = torch.linalg.matrix_power(operator.matrix(), 3)
    assert torch.allclose(diffusion_rows(operator, torch.tensor([2, 9]), 3), power[[2, 9]], atol=1e-14)


def test_without_diffusion_an_item_carries_its_own_prediction_alone():
    network = no_diff_resnet(5, 3, block="graph").double()
    x = torch.randn(10, 5, dtype=torch.float64)
    shares = explain_diffusion(network, x, torch.tensor([4]))
    assert torch.equal(shares.rows, torch.eye(10, dtype=torch.float64)[[4]])
    network.eval()
    assert torch.allclose(shares.logits(), network(x)[[4]].detach(), atol=1e-12)


def test_a_network_that_is_not_a_sum_over_the_items_is_refused():
    with pytest.raises(ValueError, match="GCN is not a sum over the items"):
        explain_diffusion(GCN(5, 3), torch.randn(4, 5), torch.tensor([0]))


def test_an_item_out_of_the_graph_and_a_negative_step_count_are_refused():
    operator = DiffusionOperator(_graph(), step_size=0.1)
    with pytest.raises(ValueError, match=r"node numbers in \[0, 24\)"):
        diffusion_rows(operator, torch.tensor([24]), 2)
    with pytest.raises(ValueError, match="num_steps must be a whole number ≥ 0"):
        diffusion_rows(operator, torch.tensor([1]), -1)


def test_isolating_nodes_removes_every_edge_they_have_in_every_layout():
    weights = _graph()
    removed = torch.tensor([2, 7])
    dense = isolate_nodes(weights, removed)
    assert dense[removed].abs().sum() == 0 and dense[:, removed].abs().sum() == 0
    keep = torch.ones(24, dtype=torch.bool)
    keep[removed] = False
    assert torch.equal(dense[keep][:, keep], weights[keep][:, keep])
    assert torch.equal(isolate_nodes(weights.to_sparse(), removed).to_dense(), dense)
    csr = isolate_nodes(weights.to_sparse_csr(), removed)
    assert csr.layout == torch.sparse_csr and torch.equal(csr.to_dense(), dense)
