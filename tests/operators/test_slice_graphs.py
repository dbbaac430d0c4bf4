"""SliceGraphs: one graph per slice, stored once per distinct graph; equal to the block-diagonal reference."""

import pytest
import torch

from pdenets.operators import SliceGraphs, chebyshev_propagation_matrix, gcn_propagation_matrix


def _random_graph(nodes, seed, density=0.4, self_loops=False, device="cpu"):
    generator = torch.Generator().manual_seed(seed)
    weights = (torch.rand(nodes, nodes, generator=generator) < density).double() * torch.rand(
        nodes, nodes, generator=generator, dtype=torch.float64
    )
    if not self_loops:
        weights.fill_diagonal_(0)
    return weights.to(device)


def _reference(graphs_per_slice, x):
    return torch.stack([graph @ x[index] for index, graph in enumerate(graphs_per_slice)])


@pytest.mark.parametrize("ids", [[0, 0, 0, 0], [0, 1, 0, 2], [2, 1, 1, 0]])
def test_propagate_equals_each_slice_times_its_own_graph(ids, device):
    # device: needs SliceGraphs.block_diagonal to build its index arithmetic on the graphs' device (its
    # aranges and offsets are CPU tensors)
    graphs = [_random_graph(6, seed, device=device) for seed in range(3)]
    collection = SliceGraphs(graphs, 6, ids=torch.tensor(ids))  # the ids: an index kept on the CPU
    x = torch.randn(4, 6, 3, dtype=torch.float64).to(device)
    torch.testing.assert_close(collection.propagate(x), _reference([graphs[i] for i in ids], x))
    # the block-diagonal matrix itself, entry by entry
    dense = torch.block_diag(*[graphs[i] for i in ids])
    torch.testing.assert_close(collection.block_diagonal().to_dense(), dense)
    # a subset in any order keeps each slice's graph
    order = torch.tensor([3, 0, 2])
    torch.testing.assert_close(
        collection.subset(order).propagate(x[order]),
        _reference([graphs[ids[i]] for i in order.tolist()], x[order]),
    )


def test_repeated_objects_are_stored_once_and_lists_give_one_graph_per_slice(device):
    # device: needs SliceGraphs.block_diagonal to build its index arithmetic on the graphs' device (its
    # aranges and offsets are CPU tensors)
    static, other = _random_graph(5, 0, device=device), _random_graph(5, 1, device=device)
    collection = SliceGraphs([static, static, other, static], 5)
    assert collection.num_graphs == 2 and collection.ids.tolist() == [0, 0, 1, 0]
    x = torch.randn(4, 5, 2, dtype=torch.float64).to(device)
    torch.testing.assert_close(collection.propagate(x), _reference([static, static, other, static], x))
    torch.testing.assert_close(collection.row_sums()[2], other.sum(1))


def test_gradient_with_respect_to_the_input(device):
    # device: needs SliceGraphs.block_diagonal to build its index arithmetic on the graphs' device (its
    # aranges and offsets are CPU tensors)
    graphs = [_random_graph(5, 0, device=device), _random_graph(5, 1, device=device)]
    for ids in ([0, 0, 0], [0, 1, 1]):
        collection = SliceGraphs(graphs, 5, ids=torch.tensor(ids))
        x = torch.randn(3, 5, 2, dtype=torch.float64).to(device).requires_grad_()
        assert torch.autograd.gradcheck(collection.propagate, (x,))


def test_normalizations_run_once_per_distinct_graph_and_are_shared_by_subsets(device):
    # device: needs SliceGraphs.block_diagonal to build its index arithmetic on the graphs' device (its
    # aranges and offsets are CPU tensors)
    calls = []

    def normalize(weights):
        calls.append(1)
        return weights * 2

    collection = SliceGraphs(
        [_random_graph(4, 0, device=device), _random_graph(4, 1, device=device)],
        4,
        ids=torch.tensor([0, 1, 1, 0, 1]),
    )
    first = collection.normalized("double", normalize)
    collection.subset(torch.tensor([1, 2])).normalized("double", normalize)
    assert len(calls) == 2 and collection.normalized("double", normalize) is first
    x = torch.randn(5, 4, 1, dtype=torch.float64).to(device)
    torch.testing.assert_close(first.propagate(x), 2 * collection.propagate(x))


def test_pyg_propagation_matrices_match_a_direct_computation(device):
    # device: needs gcn_propagation_matrix and chebyshev_propagation_matrix to build their self-loop,
    # degree and diagonal tensors (torch.ones / zeros / arange / full) on the weights' device
    weights = _random_graph(6, 3, self_loops=True, device=device)
    weights[4] = 0  # a node without out-edges
    loops = torch.diagonal(weights)
    with_loops = weights.clone().fill_diagonal_(0) + torch.diag(
        torch.where(loops > 0, loops, torch.ones(6, device=device))
    )
    degree = with_loops.sum(0)
    expected = torch.diag(degree.rsqrt()) @ with_loops.T @ torch.diag(degree.rsqrt())
    torch.testing.assert_close(gcn_propagation_matrix(weights.to_sparse()).to_dense(), expected)
    plain = weights.clone().fill_diagonal_(0)
    out_degree = plain.sum(1)
    scale = torch.where(
        out_degree > 0, out_degree.rsqrt(), torch.zeros(6, dtype=torch.float64, device=device)
    )
    expected = -torch.diag(scale) @ plain.T @ torch.diag(scale)
    torch.testing.assert_close(chebyshev_propagation_matrix(weights.to_sparse()).to_dense(), expected)
    torch.testing.assert_close(
        chebyshev_propagation_matrix(weights.to_sparse(), lambda_max=4.0).to_dense(),
        expected / 2 - torch.eye(6, dtype=torch.float64, device=device) / 2,
    )


def test_bad_input_is_refused_with_a_clear_message(device):
    graph = _random_graph(4, 0, device=device)
    with pytest.raises(ValueError, match="at least one graph"):
        SliceGraphs([], 4)
    with pytest.raises(ValueError, match=r"ids must lie in 0…0"):
        SliceGraphs([graph], 4, ids=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="graph 1"):
        SliceGraphs([graph, _random_graph(5, 0, device=device)], 4)
    with pytest.raises(ValueError, match=r"expected input of shape \(2, 4, C\)"):
        SliceGraphs([graph], 4, ids=torch.tensor([0, 0])).propagate(
            torch.randn(3, 4, 2, dtype=torch.float64).to(device)
        )
