import numpy as np
import pytest
import scipy.sparse as sp
import torch

from pdenets.operators import (
    add_self_loops,
    as_weight_matrix,
    gcn_normalize,
    remove_self_loops,
    row_normalize,
    row_sums,
    symmetric_normalize,
    symmetrize,
)

from ..conftest import random_symmetric_weights


def _dense(matrix):
    return matrix if matrix.layout == torch.strided else matrix.to_dense()


def test_all_graph_forms_give_the_same_matrix(device):
    dense = random_symmetric_weights(30, 0.2, device=device)
    edge_index = dense.nonzero().T
    forms = [
        dense,
        dense.to_sparse(),
        dense.to_sparse_csr(),
        (edge_index, dense[edge_index[0], edge_index[1]]),
    ]
    if device.type == "cpu":  # a SciPy matrix becomes a CPU tensor
        forms.append(sp.csr_matrix(dense.numpy()))
    for form in forms:
        matrix = as_weight_matrix(form, 30)
        assert torch.allclose(_dense(matrix), dense)


def test_edge_list_without_weights_means_unit_weights(device):
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]], device=device)
    matrix = as_weight_matrix((edge_index, None))
    assert _dense(matrix).tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]


@pytest.mark.parametrize(
    "graph, num_nodes, message",
    [
        (torch.ones(3, 4), None, "square"),
        (-torch.ones(3, 3), None, "negative"),
        (torch.tensor([[0.0, float("inf")], [1.0, 0.0]]), None, "NaN/inf"),
        ((torch.tensor([[0, 5], [1, 0]]), None), 3, "outside"),
        ((torch.tensor([0, 1]), None), None, "shape \\(2, \\*\\)"),
        ((torch.tensor([[0, 1], [1, 0]]), torch.ones(3)), None, "edge_weight"),
        (torch.ones(3, 3), 4, "num_nodes=4"),
    ],
)
def test_bad_graphs_are_refused(graph, num_nodes, message, device):
    if isinstance(graph, tuple):  # an edge list: (edge_index, edge_weight or None)
        graph = tuple(None if part is None else part.to(device) for part in graph)
    else:
        graph = graph.to(device)
    with pytest.raises(ValueError, match=message):
        as_weight_matrix(graph, num_nodes)


def test_unsupported_type_is_refused(device):  # a nested Python list: refused alike whatever the device
    with pytest.raises(TypeError, match="graph must be"):
        as_weight_matrix([[0, 1], [1, 0]])


@pytest.mark.parametrize("sparse", [False, True])
def test_normalizations_match_dense_formulas(sparse, device):
    dense = random_symmetric_weights(40, 0.2, device=device) + torch.diag(
        torch.rand(40, dtype=torch.float64)
    ).to(device)
    dense[3] = 0.0  # an isolated row stays zero, no division by zero
    dense[:, 3] = 0.0
    weights = dense.to_sparse() if sparse else dense
    degrees = dense.sum(1)
    inv_sqrt = torch.where(degrees > 0, degrees.clamp_min(1e-300).rsqrt(), torch.zeros_like(degrees))
    inv = torch.where(degrees > 0, 1 / degrees.clamp_min(1e-300), torch.zeros_like(degrees))
    assert torch.allclose(_dense(symmetric_normalize(weights)), inv_sqrt[:, None] * dense * inv_sqrt[None, :])
    assert torch.allclose(_dense(row_normalize(weights)), inv[:, None] * dense)
    rows = row_sums(row_normalize(weights))
    assert torch.allclose(rows[degrees > 0], torch.ones_like(rows[degrees > 0]))
    assert rows[3] == 0


@pytest.mark.parametrize("sparse", [False, True])
def test_symmetrize_and_self_loops(sparse, device):
    dense = torch.rand(10, 10, dtype=torch.float64).to(device)
    weights = dense.to_sparse() if sparse else dense
    assert torch.allclose(_dense(symmetrize(weights)), (dense + dense.T) / 2)
    no_loops = _dense(remove_self_loops(weights))
    assert torch.all(torch.diagonal(no_loops) == 0)
    with_loops = _dense(add_self_loops(remove_self_loops(weights)))
    assert torch.allclose(with_loops, no_loops + torch.eye(10, dtype=dense.dtype, device=device))


def test_gcn_normalization_formula_and_existing_self_loops(device):
    adjacency = (random_symmetric_weights(25, 0.2, device=device) > 0).double()
    expected_a = adjacency + torch.eye(25, dtype=torch.float64, device=device)
    d = expected_a.sum(1).rsqrt()
    expected = d[:, None] * expected_a * d[None, :]
    assert torch.allclose(_dense(gcn_normalize(adjacency.to_sparse())), expected)
    with_loops = adjacency.clone()
    with_loops[0, 0] = 1.0  # a pre-existing self-loop is replaced, not doubled
    assert torch.allclose(_dense(gcn_normalize(with_loops)), expected)


def test_normalized_laplacian_eigenvalues_lie_in_zero_two(device):
    """Symmetric normalization: spectrum of I − D^{-1/2} W D^{-1/2} ⊂ [0, 2], 2 for a bipartite graph."""
    from ..conftest import cycle_weights

    for weights, bipartite in (
        (random_symmetric_weights(60, 0.15, seed=3, device=device), False),
        (cycle_weights(12, device=device), True),
    ):
        normalized = symmetric_normalize(weights)
        eigenvalues = torch.linalg.eigvalsh(
            torch.eye(weights.shape[0], dtype=torch.float64, device=device) - normalized
        )
        assert eigenvalues.min() > -1e-12 and eigenvalues.max() < 2 + 1e-12
        if bipartite:
            assert abs(float(eigenvalues.max()) - 2.0) < 1e-12


@pytest.mark.cpu_only("a SciPy matrix: as_weight_matrix reads it into a CPU tensor")
def test_scipy_input_keeps_float_values():
    matrix = sp.coo_matrix((np.array([0.5, 0.5]), (np.array([0, 1]), np.array([1, 0]))), shape=(2, 2))
    result = as_weight_matrix(matrix)
    assert result.dtype == torch.float64 and _dense(result)[0, 1] == 0.5
