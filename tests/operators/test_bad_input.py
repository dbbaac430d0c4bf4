"""Operators given bad input: the exception type and a message that names the problem; never a silent wrong
number."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from pdenets.operators import (
    DiffusionOperator,
    KnnGaussianWeights,
    as_weight_matrix,
    diffuse,
    gaussian_kernel,
    gcn_normalize,
    heat_semigroup,
    knn_gaussian_weights,
    knn_search,
    stability_bound,
)

from ..conftest import cycle_weights

X = torch.randn(20, 3)
W = cycle_weights(6, torch.float32)

CASES = [
    # neighbour search
    ("knn on a list", lambda: knn_search([[0.0, 1.0]], 1), TypeError, "points must be a torch.Tensor"),
    ("knn 1-D points", lambda: knn_search(torch.randn(5), 1), ValueError, "must have shape (N, D)"),
    ("knn empty cloud", lambda: knn_search(torch.randn(0, 2), 1), ValueError, "is empty (N = 0)"),
    (
        "knn no coordinates",
        lambda: knn_search(torch.randn(4, 0), 1),
        ValueError,
        "has no coordinates (D = 0)",
    ),
    (
        "knn integer points",
        lambda: knn_search(torch.arange(10).reshape(5, 2), 1),
        TypeError,
        "float32 or float64, got torch.int64",
    ),
    (
        "knn float16 points",
        lambda: knn_search(torch.randn(5, 2).half(), 1),
        TypeError,
        "half precision is not supported",
    ),
    (
        "knn bfloat16 points",
        lambda: knn_search(torch.randn(5, 2).bfloat16(), 1),
        TypeError,
        "torch.bfloat16: half precision",
    ),
    (
        "knn NaN",
        lambda: knn_search(torch.tensor([[0.0, math.nan], [1.0, 1.0]]), 1),
        ValueError,
        "contains 1 NaN/inf",
    ),
    ("knn k = N", lambda: knn_search(torch.randn(5, 2), 5), ValueError, "only 4 other points exist"),
    ("knn k = 0", lambda: knn_search(torch.randn(5, 2), 0), ValueError, "n_top must be an integer >= 1"),
    ("knn k = 2.0", lambda: knn_search(torch.randn(5, 2), 2.0), TypeError, "n_top must be an integer"),
    ("knn k = True", lambda: knn_search(torch.randn(5, 2), True), TypeError, "n_top must be an integer"),
    (
        "knn query width",
        lambda: knn_search(torch.randn(5, 2), 1, queries=torch.randn(3, 4)),
        ValueError,
        "queries have dimension 4 but points have dimension 2",
    ),
    (
        "knn backend",
        lambda: knn_search(torch.randn(5, 2), 1, backend="kdtree"),
        ValueError,
        "unknown knn backend 'kdtree'",
    ),
    # weights
    (
        "weights both widths",
        lambda: knn_gaussian_weights(X, 3, sigma=1.0, sigma_neighbor=2),
        ValueError,
        "exactly one of sigma",
    ),
    ("weights no width", lambda: knn_gaussian_weights(X, 3), ValueError, "exactly one of sigma"),
    ("weights sigma 0", lambda: knn_gaussian_weights(X, 3, sigma=0.0), ValueError, "sigma must be > 0"),
    (
        "weights sigma inf",
        lambda: knn_gaussian_weights(X, 3, sigma=math.inf),
        ValueError,
        "sigma must be finite",
    ),
    (
        "weights sigma string",
        lambda: knn_gaussian_weights(X, 3, sigma="1"),
        TypeError,
        "sigma must be a real number",
    ),
    (
        "weights sigma so small the graph is empty",
        lambda: knn_gaussian_weights(X, 3, sigma=1e-30),
        ValueError,
        "every weight exp(-d^2/sigma^2) between distinct points underflows to 0",
    ),
    (
        "weights normalization",
        lambda: knn_gaussian_weights(X, 3, sigma=1.0, normalization="l1"),
        ValueError,
        "normalization must be one of ('symmetric', 'row', 'none'), got 'l1'",
    ),
    (
        "weights n_top 0",
        lambda: knn_gaussian_weights(X, 0, sigma=1.0),
        ValueError,
        "n_top must be an integer >= 1",
    ),
    (
        "weights sigma_neighbor 0",
        lambda: knn_gaussian_weights(X, 3, sigma_neighbor=0),
        ValueError,
        "sigma_neighbor must be an integer >= 1",
    ),
    ("builder checked when built", lambda: KnnGaussianWeights(n_top=3), ValueError, "exactly one of sigma"),
    (
        "builder bad normalization",
        lambda: KnnGaussianWeights(n_top=3, sigma=1.0, normalization="max"),
        ValueError,
        "normalization must be one of",
    ),
    (
        "duplicate points, adaptive sigma",
        lambda: knn_gaussian_weights(torch.zeros(6, 2), 3, sigma_neighbor=2),
        ValueError,
        "adaptive sigma is zero for some points",
    ),
    (
        "kernel on integers",
        lambda: gaussian_kernel(torch.arange(4), 1.0),
        TypeError,
        "sq_distances must be float32",
    ),
    # graphs
    (
        "graph float edge_index",
        lambda: as_weight_matrix((torch.tensor([[0.0, 1.0], [1.0, 0.0]]), None)),
        TypeError,
        "edge_index must hold integers",
    ),
    (
        "graph negative edge_index",
        lambda: as_weight_matrix((torch.tensor([[0, -1], [1, 0]]), None)),
        ValueError,
        "edge_index holds negative entries",
    ),
    (
        "graph edge_index beyond num_nodes",
        lambda: as_weight_matrix((torch.tensor([[0, 5], [1, 0]]), None), 3),
        ValueError,
        "edge_index refers to 5, outside [0, 3)",
    ),
    (
        "graph edge_index shape",
        lambda: as_weight_matrix((torch.tensor([0, 1, 2]), None)),
        ValueError,
        "edge_index must have shape (2, *)",
    ),
    (
        "graph edge weights shape",
        lambda: as_weight_matrix((torch.tensor([[0, 1], [1, 0]]), torch.ones(3))),
        ValueError,
        "edge_weight must have shape (E,) = (2,)",
    ),
    ("graph not square", lambda: as_weight_matrix(torch.ones(3, 4)), ValueError, "square (N, N) matrix"),
    ("graph negative weight", lambda: as_weight_matrix(-W), ValueError, "negative entries"),
    (
        "graph NaN weight",
        lambda: as_weight_matrix(torch.full((2, 2), math.nan)),
        ValueError,
        "contains 4 NaN/inf",
    ),
    (
        "graph complex weights",
        lambda: as_weight_matrix(torch.ones(2, 2, dtype=torch.complex64)),
        TypeError,
        "weight matrix must be real",
    ),
    (
        "graph of a string",
        lambda: as_weight_matrix("cora"),
        TypeError,
        "graph must be a dense/sparse torch.Tensor",
    ),
    (
        "num_nodes mismatch",
        lambda: as_weight_matrix(W, 7),
        ValueError,
        "weight matrix is 6x6 but num_nodes=7",
    ),
    (
        "gcn_normalize float index",
        lambda: gcn_normalize((torch.tensor([[0.5], [1.0]]), None)),
        TypeError,
        "edge_index must hold integers",
    ),
    (
        "stability method",
        lambda: stability_bound(W, method="power"),
        ValueError,
        "'gershgorin' or 'spectral'",
    ),
    (
        "spectral bound of a directed graph",
        lambda: stability_bound(torch.tensor([[0.0, 1.0], [0.0, 0.0]]), method="spectral"),
        ValueError,
        "needs a symmetric weight matrix",
    ),
    # diffusion
    (
        "diffuse integer features",
        lambda: diffuse(torch.ones(6, 2, dtype=torch.int64), W, step_size=0.25),
        TypeError,
        "features must be float32 or float64, got torch.int64",
    ),
    (
        "diffuse float16 features on a sparse graph",
        lambda: diffuse(torch.ones(6, 2).half(), W.to_sparse(), step_size=0.25),
        TypeError,
        "half precision",
    ),
    (
        "diffuse NaN features",
        lambda: diffuse(torch.full((6, 2), math.nan), W, step_size=0.25),
        ValueError,
        "features contains 12 NaN/inf",
    ),
    (
        "diffuse wrong rows",
        lambda: diffuse(torch.ones(5, 2), W, step_size=0.25),
        ValueError,
        "features have 5 rows but the graph has 6 nodes",
    ),
    (
        "diffuse unstable step",
        lambda: diffuse(torch.ones(6, 2), W, step_size=0.9),
        ValueError,
        "exceeds the stability bound",
    ),
    (
        "diffuse zero step",
        lambda: diffuse(torch.ones(6, 2), W, step_size=0.0),
        ValueError,
        "step_size must be > 0",
    ),
    (
        "diffuse negative steps",
        lambda: diffuse(torch.ones(6, 2), W, step_size=0.25, num_steps=-1),
        ValueError,
        "num_steps must be an integer >= 0",
    ),
    (
        "diffuse fractional steps",
        lambda: diffuse(torch.ones(6, 2), W, step_size=0.25, num_steps=2.5),
        TypeError,
        "num_steps must be an integer",
    ),
    (
        "heat on a directed graph",
        lambda: heat_semigroup(torch.ones(2, 1), torch.tensor([[0.0, 1.0], [0.0, 0.0]]), 1.0),
        ValueError,
        "needs a symmetric weight matrix",
    ),
    (
        "heat on integers",
        lambda: heat_semigroup(torch.ones(6, 1, dtype=torch.int32), W, 1.0),
        TypeError,
        "features must be float32 or float64",
    ),
]


@pytest.mark.parametrize("what, call, error, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_to_operators(what, call, error, message):
    with pytest.raises(error) as caught:
        call()
    assert message in str(caught.value), str(caught.value)


def test_a_partly_cut_off_graph_warns_with_the_count():
    points = torch.cat([torch.randn(30, 2) * 0.01, torch.tensor([[100.0, 100.0]])])
    with pytest.warns(RuntimeWarning, match="1 of 31 points have no neighbour with a non-zero weight"):
        knn_gaussian_weights(points, 3, sigma=0.1)


def test_an_edgeless_graph_warns_that_diffusion_does_nothing():
    with pytest.warns(RuntimeWarning, match="has no edges"):
        DiffusionOperator(torch.eye(4), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DiffusionOperator(W, 0.25)  # a graph with edges: silent


def test_integer_and_boolean_adjacency_are_promoted_as_documented():
    adjacency = W > 0
    for graph in (adjacency, adjacency.long(), sp.csr_matrix(adjacency.numpy().astype(np.int64))):
        matrix = as_weight_matrix(graph)
        assert matrix.dtype == torch.get_default_dtype()
        assert torch.equal(matrix.to_dense() if matrix.layout != torch.strided else matrix, W)
    assert as_weight_matrix(W.half()).dtype == torch.float32


def test_regression_integer_features_on_a_dense_graph_used_to_come_back_zero():
    from pdenets.nn import DiffusionLayer

    layer = DiffusionLayer(step_size=0.25, num_steps=2, weights=W)
    with pytest.raises(
        TypeError, match="input to DiffusionLayer must be float32 or float64, got torch.int64"
    ):
        layer(torch.ones(6, 3, dtype=torch.int64))
    assert torch.allclose(layer(torch.ones(6, 3)), torch.ones(6, 3))


def _sparse_matrix():
    from pdenets.operators.sparse import SparseMatrix

    return SparseMatrix(torch.tensor([[0.0, 2.0], [1.0, 0.0]]).to_sparse())


def _huge_sparse_matrix():
    from pdenets.operators.sparse import SparseMatrix

    side = 2**31 + 10  # one stored entry: cheap to build, impossible to index with 32-bit integers
    return SparseMatrix(torch.sparse_coo_tensor(torch.tensor([[0], [0]]), torch.tensor([1.0]), (side, side)))


def _chebyshev(lambda_max):
    from pdenets.operators import chebyshev_propagation_matrix

    return chebyshev_propagation_matrix(W.to_sparse(), lambda_max=lambda_max)


HYBRID_ROWS = torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.tensor([[0.0, 1.0], [1.0, 0.0]]), (2, 2))
HYBRID_ENTRIES = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.ones(2, 3), (2, 2, 3))
HALF = (
    "has dtype {}: half precision is not supported (the sparse products, neighbour search and stability "
    "bounds "
    "need float32 or float64); convert with .float()"
)

EXACT = [
    (
        "SparseMatrix side above 2^31 - 1",
        _huge_sparse_matrix,
        ValueError,
        "SparseMatrix of shape (2147483658, 2147483658): more than 2^31 − 1 nodes is not supported",
    ),
    (
        "SparseMatrix.matmul float16",
        lambda: _sparse_matrix().matmul(torch.ones(2, 2).half()),
        TypeError,
        "the dense operand of SparseMatrix.matmul " + HALF.format("torch.float16"),
    ),
    (
        "SparseMatrix.matmul bfloat16",
        lambda: _sparse_matrix().matmul(torch.ones(2, 2).bfloat16()),
        TypeError,
        "the dense operand of SparseMatrix.matmul " + HALF.format("torch.bfloat16"),
    ),
    (
        "SparseMatrix.matmul int64",
        lambda: _sparse_matrix().matmul(torch.ones(2, 2, dtype=torch.int64)),
        TypeError,
        "the dense operand of SparseMatrix.matmul must be float32 or float64, got torch.int64; convert with "
        ".float()",
    ),
    (
        "SparseMatrix.product int32",
        lambda: _sparse_matrix().product(torch.ones(2, 2, dtype=torch.int32)),
        TypeError,
        "the dense operand of SparseMatrix.product must be float32 or float64, got torch.int32; convert with "
        ".float()",
    ),
    (
        "SparseMatrix of a hybrid tensor",
        lambda: _sparse_matrix().__class__(HYBRID_ROWS),
        ValueError,
        "the matrix of SparseMatrix is a hybrid sparse tensor (sparse_dim=1, dense_dim=1, shape (2, 2)): "
        "give one "
        "scalar per entry, a sparse (N, N) matrix with sparse_dim=2 and dense_dim=0",
    ),
    (
        "edge id 2^62",
        lambda: as_weight_matrix((torch.tensor([[0, 2**62], [1, 0]]), torch.ones(2))),
        ValueError,
        "edge_index refers to node 4611686018427387904: more than 2^31 − 1 nodes is not supported; renumber "
        "or pass "
        "num_nodes",
    ),
    (
        "edge id 2^31 - 1",
        lambda: as_weight_matrix((torch.tensor([[0, 2**31 - 1], [1, 0]]), None)),
        ValueError,
        "edge_index refers to node 2147483647: more than 2^31 − 1 nodes is not supported; renumber or pass "
        "num_nodes",
    ),
    (
        "hybrid COO, one sparse dimension",
        lambda: as_weight_matrix(HYBRID_ROWS),
        ValueError,
        "weight matrix is a hybrid sparse tensor (sparse_dim=1, dense_dim=1, shape (2, 2)): give one scalar "
        "per entry, "
        "a sparse (N, N) matrix with sparse_dim=2 and dense_dim=0",
    ),
    (
        "hybrid COO, vector entries",
        lambda: DiffusionOperator(HYBRID_ENTRIES, 0.1),
        ValueError,
        "weight matrix is a hybrid sparse tensor (sparse_dim=2, dense_dim=1, shape (2, 2, 3)): give one "
        "scalar per "
        "entry, a sparse (N, N) matrix with sparse_dim=2 and dense_dim=0",
    ),
    ("chebyshev lambda_max 0", lambda: _chebyshev(0), ValueError, "lambda_max must be > 0, got 0.0"),
    ("chebyshev lambda_max -1", lambda: _chebyshev(-1), ValueError, "lambda_max must be > 0, got -1.0"),
    (
        "chebyshev lambda_max nan",
        lambda: _chebyshev(math.nan),
        ValueError,
        "lambda_max must be finite, got nan",
    ),
    (
        "diffusion of no nodes, dense",
        lambda: DiffusionOperator(torch.zeros(0, 0), 0.1),
        ValueError,
        "the graph has no nodes (N = 0): a diffusion operator needs at least one node",
    ),
    (
        "diffusion of no nodes, edge list",
        lambda: DiffusionOperator((torch.zeros(2, 0, dtype=torch.long), None), 0.1),
        ValueError,
        "the graph has no nodes (N = 0): a diffusion operator needs at least one node",
    ),
    (
        "diffusion of no nodes, CSR",
        lambda: DiffusionOperator(torch.zeros(0, 0).to_sparse_csr(), 0.1),
        ValueError,
        "the graph has no nodes (N = 0): a diffusion operator needs at least one node",
    ),
    (
        "diffuse sparse features",
        lambda: DiffusionOperator(W, 0.25).apply(torch.eye(6).to_sparse()),
        TypeError,
        "features is a sparse tensor (torch.sparse_coo): DiffusionOperator.apply needs dense features: pass "
        "x.to_dense()",
    ),
]


@pytest.mark.parametrize("what, call, error, message", EXACT, ids=[c[0] for c in EXACT])
def test_bad_input_to_operators_gets_exactly_one_line(what, call, error, message):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == message
