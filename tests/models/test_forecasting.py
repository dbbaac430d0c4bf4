"""Forecasters on SliceGraphs: equal to PyTorch Geometric's layers and to the per-origin computation.

The region graphs stay on the CPU where a SliceGraphs is built from them (its products follow the input to its
device); PyTorch Geometric's layers get their edges on the device.
"""

import pytest
import torch
from torch import nn

from pdenets.models import COIN
from pdenets.models.forecasting import ChebGraphConv, GCNGraphConv, GraphConvGRU, WindowGCN, slice_graphs
from pdenets.operators import SliceGraphs

pyg = pytest.importorskip("torch_geometric.nn")


def _graph(nodes, seed, self_loops=True):
    generator = torch.Generator().manual_seed(seed)
    weights = (torch.rand(nodes, nodes, generator=generator) < 0.4).double() * torch.rand(
        nodes, nodes, generator=generator, dtype=torch.float64
    )
    if not self_loops:
        weights.fill_diagonal_(0)
    return weights


def _edges(weights, device="cpu"):
    sparse = weights.to_sparse()
    return sparse.indices().to(device), sparse.values().to(device)


@pytest.mark.parametrize("ids", [[0, 0, 0], [0, 1, 0]])
def test_gcn_convolution_equals_pyg_gcnconv_on_every_origin(ids, device):
    graphs = [_graph(7, 0), _graph(7, 1)]
    collection = SliceGraphs(graphs, 7, ids=torch.tensor(ids))
    x = torch.randn(3, 7, 4, dtype=torch.float64).to(device)
    for width in (2, 9):  # propagation before (in < out) and after the linear map
        reference = pyg.GCNConv(4, width).double()
        ours = GCNGraphConv(4, width).double()
        ours.linear.weight.data.copy_(reference.lin.weight.data)
        reference.bias.data.normal_()  # drawn on the CPU, then both layers move
        ours.bias.data.copy_(reference.bias.data)
        reference, ours = reference.to(device), ours.to(device)
        expected = torch.stack([reference(x[s], *_edges(graphs[ids[s]], device)) for s in range(3)])
        torch.testing.assert_close(ours(x, collection), expected)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_chebyshev_convolution_equals_pyg_chebconv(order, device):
    graphs = [_graph(6, 2), _graph(6, 3)]
    graphs[1][2] = 0  # a region without out-edges
    collection = SliceGraphs(graphs, 6, ids=torch.tensor([1, 0]))
    x = torch.randn(2, 6, 3, dtype=torch.float64).to(device)
    reference = pyg.ChebConv(3, 5, K=order).double()
    ours = ChebGraphConv(3, 5, order).double()
    for mine, theirs in zip(ours.lins, reference.lins):
        mine.weight.data.copy_(theirs.weight.data)
    reference.bias.data.normal_()  # drawn on the CPU, then both layers move
    ours.bias.data.copy_(reference.bias.data)
    reference, ours = reference.to(device), ours.to(device)
    expected = torch.stack(
        [
            reference(x[0], *_edges(graphs[1], device), lambda_max=2.0),
            reference(x[1], *_edges(graphs[0], device), lambda_max=2.0),
        ]
    )
    torch.testing.assert_close(ours(x, collection), expected)


def test_gconv_gru_equals_the_recurrence_written_with_pyg_chebconv(device):
    torch.manual_seed(0)
    lags, hidden = 4, 5
    model = GraphConvGRU(lags, 2, hidden_features=hidden).double()
    convs = {
        name: pyg.ChebConv(i, o, K=2, bias=bias).double()
        for name, i, o, bias in (
            ("x", 1, 3 * hidden, True),
            ("h", hidden, 2 * hidden, False),
            ("c", hidden, hidden, False),
        )
    }
    for name, ours in (("x", model.input_gates), ("h", model.update_gates), ("c", model.candidate)):
        for mine, theirs in zip(ours.lins, convs[name].lins):
            theirs.weight.data.copy_(mine.weight.data)
        if ours.bias is not None:
            ours.bias.data.normal_()  # drawn on the CPU, then both move
            convs[name].bias.data.copy_(ours.bias.data)
    model = model.to(device)
    convs = {name: conv.to(device) for name, conv in convs.items()}
    graphs = [_graph(6, 4, self_loops=False), _graph(6, 5, self_loops=False)]
    x = torch.randn(2, 6, lags, dtype=torch.float64).to(device)
    expected = []
    for origin, weights in enumerate(graphs):
        edges = _edges(weights, device)
        state = torch.zeros(6, hidden, dtype=torch.float64, device=device)
        for step in range(lags):
            x_z, x_r, x_h = convs["x"](x[origin, :, step : step + 1], *edges, lambda_max=2.0).split(hidden, 1)
            h_z, h_r = convs["h"](state, *edges, lambda_max=2.0).split(hidden, 1)
            update, reset = torch.sigmoid(x_z + h_z), torch.sigmoid(x_r + h_r)
            candidate = torch.tanh(x_h + convs["c"](reset * state, *edges, lambda_max=2.0))
            state = update * state + (1 - update) * candidate
        expected.append(model.readout(state))
    torch.testing.assert_close(model(x, graphs), torch.stack(expected))
    # rows (M, L) are one origin of M regions
    torch.testing.assert_close(model(x[1], graphs[1]), expected[1])


def test_window_gcn_accepts_one_graph_a_list_or_slice_graphs_alike(device):
    model = WindowGCN(3, 2, hidden_features=4).double().to(device)
    graphs = [_graph(5, 6), _graph(5, 7)]
    x = torch.randn(2, 5, 3, dtype=torch.float64).to(device)
    per_origin = torch.stack([model(x[s : s + 1], graphs[s])[0] for s in range(2)])
    torch.testing.assert_close(model(x, graphs), per_origin)
    torch.testing.assert_close(model(x, SliceGraphs(graphs, 5)), per_origin)
    with pytest.raises(ValueError, match="3 graphs for 2 forecast origins"):
        model(x, graphs + graphs[:1])
    with pytest.raises(ValueError, match="cover 3 origins"):
        model(x, SliceGraphs(graphs, 5, ids=torch.tensor([0, 1, 1])))
    with pytest.raises(ValueError, match="needs the region graph"):
        slice_graphs(None, 2, 5)


@pytest.mark.parametrize("laplacian", ["combinatorial", "normalized"])
@pytest.mark.parametrize("learned", [False, True])
def test_coin_over_slice_graphs_equals_coin_over_the_list_of_graphs(laplacian, learned, device):
    torch.manual_seed(1)
    graphs = [_graph(6, 8, self_loops=False) / 4, _graph(6, 9, self_loops=False) / 4]
    graphs = [(g + g.T) / 2 for g in graphs]
    backbone = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 4)).double()
    model = COIN(
        backbone,
        step_size=0.3,
        num_steps=3,
        laplacian=laplacian,
        learn_step_size=learned,
        head=nn.Linear(4, 2).double(),
    ).to(device)
    x = torch.randn(3, 6, 3, dtype=torch.float64).to(device).requires_grad_(True)
    per_slice = [graphs[0].to(device), graphs[1].to(device), graphs[0].to(device)]
    expected = model(x, graph=per_slice)
    got = model(x, graph=SliceGraphs(graphs, 6, ids=torch.tensor([0, 1, 0])))
    torch.testing.assert_close(got, expected)
    (gradient,) = torch.autograd.grad(got.sum(), x)
    (expected_gradient,) = torch.autograd.grad(expected.sum(), x)
    torch.testing.assert_close(gradient, expected_gradient)
