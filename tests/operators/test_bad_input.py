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
    ("knn on a list", lambda device: knn_search([[0.0, 1.0]], 1), TypeError, "points must be a torch.Tensor"),
    (
        "knn 1-D points",
        lambda device: knn_search(torch.randn(5).to(device), 1),
        ValueError,
        "must have shape (N, D)",
    ),
    (
        "knn empty cloud",
        lambda device: knn_search(torch.randn(0, 2).to(device), 1),
        ValueError,
        "is empty (N = 0)",
    ),
    (
        "knn no coordinates",
        lambda device: knn_search(torch.randn(4, 0).to(device), 1),
        ValueError,
        "has no coordinates (D = 0)",
    ),
    (
        "knn integer points",
        lambda device: knn_search(torch.arange(10, device=device).reshape(5, 2), 1),
        TypeError,
        "float32 or float64, got torch.int64",
    ),
    (
        "knn float16 points",
        lambda device: knn_search(torch.randn(5, 2).to(device).half(), 1),
        TypeError,
        "half precision is not supported",
    ),
    (
        "knn bfloat16 points",
        lambda device: knn_search(torch.randn(5, 2).to(device).bfloat16(), 1),
        TypeError,
        "torch.bfloat16: half precision",
    ),
    (
        "knn NaN",
        lambda device: knn_search(torch.tensor([[0.0, math.nan], [1.0, 1.0]], device=device), 1),
        ValueError,
        "contains 1 NaN/inf",
    ),
    (
        "knn k = N",
        lambda device: knn_search(torch.randn(5, 2).to(device), 5),
        ValueError,
        "only 4 other points exist",
    ),
    (
        "knn k = 0",
        lambda device: knn_search(torch.randn(5, 2).to(device), 0),
        ValueError,
        "n_top must be an integer >= 1",
    ),
    (
        "knn k = 2.0",
        lambda device: knn_search(torch.randn(5, 2).to(device), 2.0),
        TypeError,
        "n_top must be an integer",
    ),
    (
        "knn k = True",
        lambda device: knn_search(torch.randn(5, 2).to(device), True),
        TypeError,
        "n_top must be an integer",
    ),
    (
        "knn query width",
        lambda device: knn_search(torch.randn(5, 2).to(device), 1, queries=torch.randn(3, 4).to(device)),
        ValueError,
        "queries have dimension 4 but points have dimension 2",
    ),
    (
        "knn backend",
        lambda device: knn_search(torch.randn(5, 2).to(device), 1, backend="kdtree"),
        ValueError,
        "unknown knn backend 'kdtree'",
    ),
    # weights
    (
        "weights both widths",
        lambda device: knn_gaussian_weights(X.to(device), 3, sigma=1.0, sigma_neighbor=2),
        ValueError,
        "exactly one of sigma",
    ),
    (
        "weights no width",
        lambda device: knn_gaussian_weights(X.to(device), 3),
        ValueError,
        "exactly one of sigma",
    ),
    (
        "weights sigma 0",
        lambda device: knn_gaussian_weights(X.to(device), 3, sigma=0.0),
        ValueError,
        "sigma must be > 0",
    ),
    (
        "weights sigma inf",
        lambda device: knn_gaussian_weights(X.to(device), 3, sigma=math.inf),
        ValueError,
        "sigma must be finite",
    ),
    (
        "weights sigma string",
        lambda device: knn_gaussian_weights(X.to(device), 3, sigma="1"),
        TypeError,
        "sigma must be a real number",
    ),
    (
        "weights sigma so small the graph is empty",
        lambda device: knn_gaussian_weights(X.to(device), 3, sigma=1e-30),
        ValueError,
        "every weight exp(-d^2/sigma^2) between distinct points underflows to 0",
    ),
    (
        "weights normalization",
        lambda device: knn_gaussian_weights(X.to(device), 3, sigma=1.0, normalization="l1"),
        ValueError,
        "normalization must be one of ('symmetric', 'row', 'none'), got 'l1'",
    ),
    (
        "weights n_top 0",
        lambda device: knn_gaussian_weights(X.to(device), 0, sigma=1.0),
        ValueError,
        "n_top must be an integer >= 1",
    ),
    (
        "weights sigma_neighbor 0",
        lambda device: knn_gaussian_weights(X.to(device), 3, sigma_neighbor=0),
        ValueError,
        "sigma_neighbor must be an integer >= 1",
    ),
    (
        "builder checked when built",
        lambda device: KnnGaussianWeights(n_top=3),
        ValueError,
        "exactly one of sigma",
    ),
    (
        "builder bad normalization",
        lambda device: KnnGaussianWeights(n_top=3, sigma=1.0, normalization="max"),
        ValueError,
        "normalization must be one of",
    ),
    (
        "duplicate points, adaptive sigma",
        lambda device: knn_gaussian_weights(torch.zeros(6, 2, device=device), 3, sigma_neighbor=2),
        ValueError,
        "adaptive sigma is zero for some points",
    ),
    (
        "kernel on integers",
        lambda device: gaussian_kernel(torch.arange(4, device=device), 1.0),
        TypeError,
        "sq_distances must be float32",
    ),
    # graphs
    (
        "graph float edge_index",
        lambda device: as_weight_matrix((torch.tensor([[0.0, 1.0], [1.0, 0.0]], device=device), None)),
        TypeError,
        "edge_index must hold integers",
    ),
    (
        "graph negative edge_index",
        lambda device: as_weight_matrix((torch.tensor([[0, -1], [1, 0]], device=device), None)),
        ValueError,
        "edge_index holds negative entries",
    ),
    (
        "graph edge_index beyond num_nodes",
        lambda device: as_weight_matrix((torch.tensor([[0, 5], [1, 0]], device=device), None), 3),
        ValueError,
        "edge_index refers to 5, outside [0, 3)",
    ),
    (
        "graph edge_index shape",
        lambda device: as_weight_matrix((torch.tensor([0, 1, 2], device=device), None)),
        ValueError,
        "edge_index must have shape (2, *)",
    ),
    (
        "graph edge weights shape",
        lambda device: as_weight_matrix(
            (torch.tensor([[0, 1], [1, 0]], device=device), torch.ones(3, device=device))
        ),
        ValueError,
        "edge_weight must have shape (E,) = (2,)",
    ),
    (
        "graph not square",
        lambda device: as_weight_matrix(torch.ones(3, 4, device=device)),
        ValueError,
        "square (N, N) matrix",
    ),
    ("graph negative weight", lambda device: as_weight_matrix(-W.to(device)), ValueError, "negative entries"),
    (
        "graph NaN weight",
        lambda device: as_weight_matrix(torch.full((2, 2), math.nan, device=device)),
        ValueError,
        "contains 4 NaN/inf",
    ),
    (
        "graph complex weights",
        lambda device: as_weight_matrix(torch.ones(2, 2, dtype=torch.complex64, device=device)),
        TypeError,
        "weight matrix must be real",
    ),
    (
        "graph of a string",
        lambda device: as_weight_matrix("cora"),
        TypeError,
        "graph must be a dense/sparse torch.Tensor",
    ),
    (
        "num_nodes mismatch",
        lambda device: as_weight_matrix(W.to(device), 7),
        ValueError,
        "weight matrix is 6x6 but num_nodes=7",
    ),
    (
        "gcn_normalize float index",
        lambda device: gcn_normalize((torch.tensor([[0.5], [1.0]], device=device), None)),
        TypeError,
        "edge_index must hold integers",
    ),
    (
        "stability method",
        lambda device: stability_bound(W.to(device), method="power"),
        ValueError,
        "'gershgorin' or 'spectral'",
    ),
    (
        "spectral bound of a directed graph",
        lambda device: stability_bound(
            torch.tensor([[0.0, 1.0], [0.0, 0.0]], device=device), method="spectral"
        ),
        ValueError,
        "needs a symmetric weight matrix",
    ),
    # diffusion
    (
        "diffuse integer features",
        lambda device: diffuse(
            torch.ones(6, 2, dtype=torch.int64, device=device), W.to(device), step_size=0.25
        ),
        TypeError,
        "features must be float32 or float64, got torch.int64",
    ),
    (
        "diffuse float16 features on a sparse graph",
        lambda device: diffuse(
            torch.ones(6, 2, device=device).half(), W.to(device).to_sparse(), step_size=0.25
        ),
        TypeError,
        "half precision",
    ),
    (
        "diffuse NaN features",
        lambda device: diffuse(torch.full((6, 2), math.nan, device=device), W.to(device), step_size=0.25),
        ValueError,
        "features contains 12 NaN/inf",
    ),
    (
        "diffuse wrong rows",
        lambda device: diffuse(torch.ones(5, 2, device=device), W.to(device), step_size=0.25),
        ValueError,
        "features have 5 rows but the graph has 6 nodes",
    ),
    (
        "diffuse unstable step",
        lambda device: diffuse(torch.ones(6, 2, device=device), W.to(device), step_size=0.9),
        ValueError,
        "exceeds the stability bound",
    ),
    (
        "diffuse zero step",
        lambda device: diffuse(torch.ones(6, 2, device=device), W.to(device), step_size=0.0),
        ValueError,
        "step_size must be > 0",
    ),
    (
        "diffuse negative steps",
        lambda device: diffuse(torch.ones(6, 2, device=device), W.to(device), step_size=0.25, num_steps=-1),
        ValueError,
        "num_steps must be an integer >= 0",
    ),
    (
        "diffuse fractional steps",
        lambda device: diffuse(torch.ones(6, 2, device=device), W.to(device), step_size=0.25, num_steps=2.5),
        TypeError,
        "num_steps must be an integer",
    ),
    (
        "heat on a directed graph",
        lambda device: heat_semigroup(
            torch.ones(2, 1, device=device), torch.tensor([[0.0, 1.0], [0.0, 0.0]], device=device), 1.0
        ),
        ValueError,
        "needs a symmetric weight matrix",
    ),
    (
        "heat on integers",
        lambda device: heat_semigroup(torch.ones(6, 1, dtype=torch.int32, device=device), W.to(device), 1.0),
        TypeError,
        "features must be float32 or float64",
    ),
]


@pytest.mark.parametrize("what, call, error, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_to_operators(what, call, error, message, device):
    with pytest.raises(error) as caught:
        call(device)
    assert message in str(caught.value), str(caught.value)


def test_a_partly_cut_off_graph_warns_with_the_count(device):
    points = torch.cat([torch.randn(30, 2) * 0.01, torch.tensor([[100.0, 100.0]])]).to(device)
    with pytest.warns(RuntimeWarning, match="1 of 31 points have no neighbour with a non-zero weight"):
        knn_gaussian_weights(points, 3, sigma=0.1)


def test_an_edgeless_graph_warns_that_diffusion_does_nothing(device):
    with pytest.warns(RuntimeWarning, match="has no edges"):
        DiffusionOperator(torch.eye(4, device=device), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DiffusionOperator(W.to(device), 0.25)  # a graph with edges: silent


def test_integer_and_boolean_adjacency_are_promoted_as_documented(device):
    weights = W.to(device)
    adjacency = weights > 0
    graphs = [adjacency, adjacency.long()]
    if device.type == "cpu":  # a SciPy matrix becomes a CPU tensor
        graphs.append(sp.csr_matrix(adjacency.numpy().astype(np.int64)))
    for graph in graphs:
        matrix = as_weight_matrix(graph)
        assert matrix.dtype == torch.get_default_dtype()
        assert torch.equal(matrix.to_dense() if matrix.layout != torch.strided else matrix, weights)
    assert as_weight_matrix(weights.half()).dtype == torch.float32


def test_regression_integer_features_on_a_dense_graph_used_to_come_back_zero(device):
    from pdenets.nn import DiffusionLayer

    layer = DiffusionLayer(step_size=0.25, num_steps=2, weights=W.to(device)).to(device)
    with pytest.raises(
        TypeError, match="input to DiffusionLayer must be float32 or float64, got torch.int64"
    ):
        layer(torch.ones(6, 3, dtype=torch.int64, device=device))
    assert torch.allclose(layer(torch.ones(6, 3, device=device)), torch.ones(6, 3, device=device))


def _sparse_matrix(device):
    from pdenets.operators.sparse import SparseMatrix

    return SparseMatrix(torch.tensor([[0.0, 2.0], [1.0, 0.0]], device=device).to_sparse())


def _huge_sparse_matrix(device):
    from pdenets.operators.sparse import SparseMatrix

    side = 2**31 + 10  # one stored entry: cheap to build, impossible to index with 32-bit integers
    return SparseMatrix(
        torch.sparse_coo_tensor(
            torch.tensor([[0], [0]], device=device), torch.tensor([1.0], device=device), (side, side)
        )
    )


def _chebyshev(lambda_max, device):
    from pdenets.operators import chebyshev_propagation_matrix

    return chebyshev_propagation_matrix(W.to(device).to_sparse(), lambda_max=lambda_max)


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
        lambda device: _sparse_matrix(device).matmul(torch.ones(2, 2, device=device).half()),
        TypeError,
        "the dense operand of SparseMatrix.matmul " + HALF.format("torch.float16"),
    ),
    (
        "SparseMatrix.matmul bfloat16",
        lambda device: _sparse_matrix(device).matmul(torch.ones(2, 2, device=device).bfloat16()),
        TypeError,
        "the dense operand of SparseMatrix.matmul " + HALF.format("torch.bfloat16"),
    ),
    (
        "SparseMatrix.matmul int64",
        lambda device: _sparse_matrix(device).matmul(torch.ones(2, 2, dtype=torch.int64, device=device)),
        TypeError,
        "the dense operand of SparseMatrix.matmul must be float32 or float64, got torch.int64; convert with "
        ".float()",
    ),
    (
        "SparseMatrix.product int32",
        lambda device: _sparse_matrix(device).product(torch.ones(2, 2, dtype=torch.int32, device=device)),
        TypeError,
        "the dense operand of SparseMatrix.product must be float32 or float64, got torch.int32; convert with "
        ".float()",
    ),
    (
        "SparseMatrix of a hybrid tensor",
        lambda device: _sparse_matrix(device).__class__(HYBRID_ROWS.to(device)),
        ValueError,
        "the matrix of SparseMatrix is a hybrid sparse tensor (sparse_dim=1, dense_dim=1, shape (2, 2)): "
        "give one "
        "scalar per entry, a sparse (N, N) matrix with sparse_dim=2 and dense_dim=0",
    ),
    (
        "edge id 2^62",
        lambda device: as_weight_matrix(
            (torch.tensor([[0, 2**62], [1, 0]], device=device), torch.ones(2, device=device))
        ),
        ValueError,
        "edge_index refers to node 4611686018427387904: more than 2^31 − 1 nodes is not supported; renumber "
        "or pass "
        "num_nodes",
    ),
    (
        "edge id 2^31 - 1",
        lambda device: as_weight_matrix((torch.tensor([[0, 2**31 - 1], [1, 0]], device=device), None)),
        ValueError,
        "edge_index refers to node 2147483647: more than 2^31 − 1 nodes is not supported; renumber or pass "
        "num_nodes",
    ),
    (
        "hybrid COO, one sparse dimension",
        lambda device: as_weight_matrix(HYBRID_ROWS.to(device)),
        ValueError,
        "weight matrix is a hybrid sparse tensor (sparse_dim=1, dense_dim=1, shape (2, 2)): give one scalar "
        "per entry, "
        "a sparse (N, N) matrix with sparse_dim=2 and dense_dim=0",
    ),
    (
        "hybrid COO, vector entries",
        lambda device: DiffusionOperator(HYBRID_ENTRIES.to(device), 0.1),
        ValueError,
        "weight matrix is a hybrid sparse tensor (sparse_dim=2, dense_dim=1, shape (2, 2, 3)): give one "
        "scalar per "
        "entry, a sparse (N, N) matrix with sparse_dim=2 and dense_dim=0",
    ),
    (
        "chebyshev lambda_max 0",
        lambda device: _chebyshev(0, device),
        ValueError,
        "lambda_max must be > 0, got 0.0",
    ),
    (
        "chebyshev lambda_max -1",
        lambda device: _chebyshev(-1, device),
        ValueError,
        "lambda_max must be > 0, got -1.0",
    ),
    (
        "chebyshev lambda_max nan",
        lambda device: _chebyshev(math.nan, device),
        ValueError,
        "lambda_max must be finite, got nan",
    ),
    (
        "diffusion of no nodes, dense",
        lambda device: DiffusionOperator(torch.zeros(0, 0, device=device), 0.1),
        ValueError,
        "the graph has no nodes (N = 0): a diffusion operator needs at least one node",
    ),
    (
        "diffusion of no nodes, edge list",
        lambda device: DiffusionOperator((torch.zeros(2, 0, dtype=torch.long, device=device), None), 0.1),
        ValueError,
        "the graph has no nodes (N = 0): a diffusion operator needs at least one node",
    ),
    (
        "diffusion of no nodes, CSR",
        lambda device: DiffusionOperator(torch.zeros(0, 0, device=device).to_sparse_csr(), 0.1),
        ValueError,
        "the graph has no nodes (N = 0): a diffusion operator needs at least one node",
    ),
    (
        "diffuse sparse features",
        lambda device: DiffusionOperator(W.to(device), 0.25).apply(torch.eye(6, device=device).to_sparse()),
        TypeError,
        "features is a sparse tensor (torch.sparse_coo): DiffusionOperator.apply needs dense features: pass "
        "x.to_dense()",
    ),
]


@pytest.mark.parametrize("what, call, error, message", EXACT, ids=[c[0] for c in EXACT])
def test_bad_input_to_operators_gets_exactly_one_line(what, call, error, message, device):
    with pytest.raises(error) as caught:
        call(device)
    assert str(caught.value) == message
