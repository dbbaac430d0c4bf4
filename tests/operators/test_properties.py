"""Property tests: kNN against float64 brute force on shifted/scaled clouds; r diffusion steps == (I − γL)^r
X."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdenets.operators import diffuse, graph_laplacian, knn_search, stability_bound


def _brute_force(points: torch.Tensor, k: int):
    as64 = points.double()
    distances = torch.cdist(as64, as64, compute_mode="donot_use_mm_for_euclid_dist").square()
    distances.fill_diagonal_(float("inf"))
    return torch.sort(distances, dim=1).values[:, :k]


clouds = st.fixed_dictionaries(
    {
        "n": st.integers(8, 120),
        "d": st.integers(1, 12),
        "seed": st.integers(0, 2**31 - 1),
        "shift": st.sampled_from([0.0, 1.0, 1e3, -1e4, 1e5]),
        "scale": st.sampled_from([1e-3, 0.1, 1.0, 50.0]),
        "dtype": st.sampled_from([torch.float32, torch.float64]),
        "backend": st.sampled_from(["brute", "chunked"]),
    }
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(cloud=clouds, k=st.integers(1, 6))
def test_knn_agrees_with_float64_brute_force_on_shifted_and_scaled_clouds(cloud, k, device):
    generator = torch.Generator().manual_seed(cloud["seed"])
    base = torch.randn(cloud["n"], cloud["d"], generator=generator, dtype=torch.float64)
    points = (cloud["shift"] + cloud["scale"] * base).to(cloud["dtype"]).to(device)
    k = min(k, cloud["n"] - 1)
    found = knn_search(points, k, backend=cloud["backend"], chunk_size=16)
    expected = _brute_force(points, k)
    # the distances of the neighbours found are the k smallest, to the precision of the input dtype
    tolerance = 1e-5 if cloud["dtype"] == torch.float32 else 1e-11
    scale = expected[:, -1:].clamp_min(1e-300)
    assert torch.all((found.sq_distances.double() - expected).abs() <= tolerance * scale + 1e-300)
    true_distances = torch.gather(
        torch.cdist(points.double(), points.double(), compute_mode="donot_use_mm_for_euclid_dist").square(),
        1,
        found.indices,
    )
    assert torch.allclose(true_distances, found.sq_distances.double(), rtol=tolerance, atol=0)
    if cloud["dtype"] == torch.float64:  # and in float64 the very neighbours, ties aside
        ties = (expected[:, 1:] - expected[:, :-1]).abs().min() if k > 1 else torch.tensor(1.0)
        if float(ties) > 1e-9 * float(expected.max()):
            brute_indices = torch.topk(
                torch.cdist(points, points, compute_mode="donot_use_mm_for_euclid_dist").fill_diagonal_(
                    float("inf")
                ),
                k,
                largest=False,
            ).indices
            assert all(set(a) == set(b) for a, b in zip(found.indices.tolist(), brute_indices.tolist()))


def test_the_reported_case_float32_offset_1000(device):
    points = (1000 + 0.1 * torch.randn(500, 8, generator=torch.Generator().manual_seed(0))).to(device)
    found = knn_search(points, 5)
    reference = knn_search(points.double(), 5)
    assert all(set(a) == set(b) for a, b in zip(found.indices.tolist(), reference.indices.tolist()))
    assert bool((found.sq_distances > 0).all())
    assert torch.allclose(found.sq_distances.double(), reference.sq_distances, rtol=1e-5)


graphs = st.fixed_dictionaries(
    {
        "n": st.integers(2, 40),
        "density": st.floats(0.05, 0.9),
        "seed": st.integers(0, 2**31 - 1),
        "symmetric": st.booleans(),
        "sparse": st.booleans(),
        "steps": st.integers(0, 6),
        "dtype": st.sampled_from([torch.float32, torch.float64]),
        "fraction": st.floats(0.05, 1.0),
        "columns": st.integers(1, 4),
    }
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(graph=graphs)
def test_r_steps_equal_the_matrix_power(graph, device):
    rng = np.random.default_rng(graph["seed"])
    weights = rng.random((graph["n"], graph["n"])) * (rng.random((graph["n"], graph["n"])) < graph["density"])
    np.fill_diagonal(weights, 0)
    if graph["symmetric"]:
        weights = (weights + weights.T) / 2
    dense = torch.from_numpy(weights).to(device)
    bound = stability_bound(dense)
    step = graph["fraction"] * (bound if np.isfinite(bound) else 1.0)
    features = torch.from_numpy(rng.standard_normal((graph["n"], graph["columns"]))).to(device)
    given_weights = dense.to_sparse() if graph["sparse"] else dense
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an edgeless random graph is allowed here
            out = diffuse(
                features.to(graph["dtype"]),
                given_weights.to(graph["dtype"]),
                step_size=step,
                num_steps=graph["steps"],
            )
    operator = torch.eye(graph["n"], dtype=torch.float64, device=device) - step * graph_laplacian(
        dense, sparse=False
    )
    expected = torch.linalg.matrix_power(operator, graph["steps"]) @ features
    assert out.dtype == graph["dtype"]
    tolerance = 1e-4 if graph["dtype"] == torch.float32 else 1e-10
    assert torch.allclose(
        out.double(), expected, rtol=tolerance, atol=tolerance * float(features.abs().max())
    )


@pytest.mark.parametrize("n", [5, 17])
def test_laplacian_of_a_directed_graph_uses_row_sums(n, device):
    rng = np.random.default_rng(n)
    weights = torch.from_numpy(rng.random((n, n)) * (rng.random((n, n)) < 0.5)).to(device)
    weights.fill_diagonal_(0)
    assert not torch.equal(weights, weights.T)
    laplacian = graph_laplacian(weights, sparse=False)
    rows = laplacian.sum(1)
    assert torch.allclose(rows, torch.zeros(n, dtype=torch.float64, device=device), atol=1e-12)  # sum to 0
    assert torch.allclose(torch.diagonal(laplacian), weights.sum(1))  # degree from row sums, not column sums
    assert not torch.allclose(torch.diagonal(laplacian), weights.sum(0))
    assert torch.equal(laplacian - torch.diag(torch.diagonal(laplacian)), -weights)
    sparse = graph_laplacian(weights.to_sparse()).to_dense()
    assert torch.allclose(sparse, laplacian)
