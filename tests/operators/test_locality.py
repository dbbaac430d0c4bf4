"""Node orders for locality: the measure, when RCM is taken, and operators stored in it that compute the
same thing in the nodes' own order."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.spatial import cKDTree

from pdenets.nn.adjoint_diffusion import adjoint_diffusion
from pdenets.nn.dropout import fast_dropout
from pdenets.operators import DiffusionOperator, locality, partition_graph

pytestmark = pytest.mark.cpu_only("node orders are computed with SciPy on CPU operators")


def knn_graph(num_nodes: int, seed: int = 0, neighbours: int = 6) -> sp.csr_matrix:
    """A symmetric k-NN graph of uniform 2-D points, the nodes in random order (no locality in the ids)."""
    points = np.random.default_rng(seed).random((num_nodes, 2))
    _, found = cKDTree(points).query(points, k=neighbours + 1)
    rows = np.repeat(np.arange(num_nodes), neighbours)
    graph = sp.csr_matrix((np.ones(rows.size), (rows, found[:, 1:].ravel())), shape=(num_nodes,) * 2)
    graph = ((graph + graph.T) > 0).astype(np.float64).tocsr()
    graph.sort_indices()
    return graph


def random_graph(num_nodes: int, seed: int = 0, degree: int = 6) -> sp.csr_matrix:
    generator = np.random.default_rng(seed)
    rows = np.repeat(np.arange(num_nodes), degree)
    cols = generator.integers(0, num_nodes, rows.size)
    graph = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(num_nodes,) * 2)
    graph = ((graph + graph.T) > 0).astype(np.float64).tocsr()
    graph.setdiag(0)
    graph.eliminate_zeros()
    return graph


def as_tensor(graph: sp.csr_matrix) -> torch.Tensor:
    return torch.sparse_csr_tensor(
        torch.from_numpy(graph.indptr),
        torch.from_numpy(graph.indices),
        torch.from_numpy(graph.data),
        graph.shape,
    )


@pytest.fixture
def small_thresholds(monkeypatch):
    """``auto`` on graphs of a few thousand nodes: a window of 200 rows, 1,000 nodes at least."""
    monkeypatch.setattr(locality, "LOCALITY_MIN_NODES", 1000)
    monkeypatch.setattr(locality, "LOCALITY_WINDOW", 200)


def test_locality_counts_entries_within_the_window():
    # rows 0..3; entries (0,0) (0,3) (1,2) (3,0) (3,3): |i-j| = 0, 3, 1, 3, 0
    matrix = sp.csr_matrix(([1.0] * 5, ([0, 0, 1, 3, 3], [0, 3, 2, 0, 3])), shape=(4, 4))
    assert locality.locality(matrix.indptr, matrix.indices, window=1) == pytest.approx(3 / 5)
    assert locality.locality(matrix.indptr, matrix.indices, window=2) == pytest.approx(3 / 5)  # boundary
    assert locality.locality(matrix.indptr, matrix.indices, window=3) == 1.0
    assert locality.locality(np.zeros(3, np.int64), np.zeros(0, np.int64)) == 1.0


def test_auto_takes_rcm_where_it_pays_and_only_there(small_thresholds):
    knn, scrambled = knn_graph(3000), random_graph(3000)
    order = locality.locality_order(knn, "auto")
    assert order is not None and np.array_equal(np.sort(order), np.arange(3000))
    before = locality.locality(knn.indptr, knn.indices, 200)
    stored = locality.permuted(knn, order)
    after = locality.locality(stored.indptr, stored.indices, 200)
    assert before < 0.2 and after > 0.7
    assert locality.locality_order(scrambled, "auto") is None  # random edges: nothing to find
    assert locality.locality_order(scrambled, "rcm") is not None  # asked for: given anyway
    assert locality.locality_order(knn, "given") is None
    assert locality.locality_order(stored, "auto") is None  # already local: kept


def test_auto_leaves_small_graphs_alone(monkeypatch):
    monkeypatch.setattr(locality, "LOCALITY_WINDOW", 200)
    knn = knn_graph(3000)
    monkeypatch.setattr(locality, "LOCALITY_MIN_NODES", 3001)
    assert locality.locality_order(knn, "auto") is None
    monkeypatch.setattr(locality, "LOCALITY_MIN_NODES", 3000)  # the boundary: taken
    assert locality.locality_order(knn, "auto") is not None


def test_permuted_is_p_m_p_transposed():
    matrix = sp.random(30, 30, density=0.2, format="csr", random_state=1)
    order = np.random.default_rng(2).permutation(30)
    dense = matrix.toarray()
    stored = locality.permuted(matrix, order)
    np.testing.assert_array_equal(stored.toarray(), dense[order][:, order])
    assert stored.has_sorted_indices and stored.indices.dtype == matrix.indices.dtype


def test_an_operator_in_rcm_order_computes_what_the_given_one_does(small_thresholds):
    weights = as_tensor(knn_graph(2500))
    stored = DiffusionOperator(weights, 0.1)
    given = DiffusionOperator(weights, 0.1, node_order="given")
    assert stored.order is not None and given.order is None
    assert "RCM" in repr(stored) and "RCM" not in repr(given)
    assert torch.equal(stored.order[stored.position.long()], torch.arange(2500, dtype=stored.order.dtype))
    features = torch.randn(2500, 3, 2, dtype=torch.float64)
    torch.testing.assert_close(stored.apply(features, 7), given.apply(features, 7), rtol=0, atol=1e-13)
    flat = features.reshape(2500, -1)
    for transpose in (False, True):
        torch.testing.assert_close(
            stored.product(flat, transpose), given.product(flat, transpose), rtol=0, atol=1e-14
        )
    assert torch.equal(stored.matrix().to_dense(), given.matrix().to_dense())
    torch.testing.assert_close(stored.to_nodes(stored.to_stored(flat)), flat, rtol=0, atol=0)


def test_the_adjoint_steps_in_rcm_order_are_the_autograd_steps(small_thresholds):
    # both backward passes draw the masks on the stored order: the same numbers, value and gradient
    operator = DiffusionOperator(as_tensor(knn_graph(2000)), 0.1)
    assert operator.order is not None
    features = torch.randn(2000, 5, dtype=torch.float64)
    results = []
    for adjoint in (True, False):
        torch.manual_seed(3)
        x = features.clone().requires_grad_()
        if adjoint:
            out = adjoint_diffusion(operator, x, 4, dropout=0.25, dropout_position="before")
        else:
            out = operator.apply(x, 4, before_step=lambda f: fast_dropout(f, 0.25))
        (out * torch.arange(5, dtype=torch.float64)).square().sum().backward()
        results.append((out.detach(), x.grad))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_gradients_through_a_reordered_operator(small_thresholds):
    operator = DiffusionOperator(as_tensor(knn_graph(1200)), 0.1)
    assert operator.order is not None
    x = torch.randn(1200, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: operator.apply(v, 2)[:40], (x,), fast_mode=True)


def test_a_bad_node_order_is_refused():
    with pytest.raises(ValueError, match="node_order"):
        DiffusionOperator(torch.eye(3), 0.1, node_order="metis")


def test_metis_parts_keep_their_nodes_and_list_them_in_rcm_order(small_thresholds, monkeypatch):
    pytest.importorskip("pymetis")
    weights = as_tensor(knn_graph(4000))
    partition = partition_graph(weights, 2, method="metis")
    monkeypatch.setattr(locality, "LOCALITY_MIN_NODES", 10**9)  # the order without RCM inside the parts
    plain = partition_graph(weights, 2, method="metis")
    assert torch.equal(partition.offsets, plain.offsets)
    graph = knn_graph(4000)
    for part in range(2):
        assert set(partition.nodes(part).tolist()) == set(plain.nodes(part).tolist())
    for ordered, expected in ((partition, 0.5), (plain, None)):
        renumbered = locality.permuted(graph, ordered.order.numpy())
        share = locality.locality(renumbered.indptr, renumbered.indices, 200)
        if expected is not None:
            assert share > expected
        else:
            assert share < 0.3


@pytest.mark.parametrize(
    "given, found, taken",
    [
        (0.25, 0.5, True),  # 0.25 better and good: at both boundaries, taken
        (0.2500001, 0.5, False),  # a gain just under 0.25
        (0.0, 0.4999999, False),  # a large gain to an order that is still not good
        (0.5, 1.0, None),  # the given order is good already: RCM is not even computed
    ],
)
def test_the_rule_of_auto_at_its_boundaries(given, found, taken, small_thresholds, monkeypatch):
    answers = iter([given, found])
    monkeypatch.setattr(locality, "locality", lambda indptr, indices, window: next(answers))
    order = locality.locality_order(knn_graph(1500), "auto")
    assert (order is not None) == bool(taken)
    assert next(answers, "drawn") == ("drawn" if taken is not None else found)
