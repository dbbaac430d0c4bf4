import math

import pytest
import torch

from pdenets.operators import faiss_available, knn, knn_search


def _brute_reference(points, queries, k, exclude_self):
    distances = torch.cdist(queries, points, compute_mode="donot_use_mm_for_euclid_dist") ** 2
    if exclude_self:
        distances.fill_diagonal_(math.inf)
    values, indices = torch.sort(distances, dim=1, stable=True)
    return indices[:, :k], values[:, :k]


@pytest.mark.parametrize("chunk_size", [1, 7, 64, None])
def test_chunked_equals_brute_force(chunk_size, device):
    points = torch.randn(300, 5, dtype=torch.float64).to(device)
    chunked = knn_search(points, 8, backend="chunked", chunk_size=chunk_size)
    indices, distances = _brute_reference(points, points, 8, exclude_self=True)
    assert torch.equal(chunked.indices, indices)
    assert torch.allclose(chunked.sq_distances, distances, atol=1e-10)


def test_brute_backend_equals_reference_with_queries(device):
    points = torch.randn(200, 3, dtype=torch.float64).to(device)
    queries = torch.randn(50, 3, dtype=torch.float64).to(device)
    result = knn_search(points, 5, queries=queries, backend="brute")
    indices, distances = _brute_reference(points, queries, 5, exclude_self=False)
    assert torch.equal(result.indices, indices)
    assert torch.allclose(result.sq_distances, distances, atol=1e-10)


def test_include_self_puts_self_first_then_k_minus_one_others(device):
    points = torch.randn(100, 4, dtype=torch.float64).to(device)
    with_self = knn_search(points, 6, include_self=True)
    without = knn_search(points, 5)
    assert torch.equal(with_self.indices[:, 0], torch.arange(100, device=device))
    assert torch.all(with_self.sq_distances[:, 0] == 0)
    assert torch.equal(with_self.indices[:, 1:], without.indices)


def test_duplicate_points_are_neighbours_at_distance_zero(device):
    points = torch.tensor([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0]], dtype=torch.float64, device=device)
    result = knn_search(points, 1)
    assert result.indices[:2, 0].tolist() == [1, 0]  # row 2 has a tie between 0 and 1
    assert result.sq_distances[0, 0] == 0


def test_auto_never_builds_full_matrix_above_threshold(monkeypatch, device):
    """Above the threshold the exact search works in row blocks of at most chunk_size rows."""
    monkeypatch.setattr(knn, "BRUTE_FORCE_MAX_ENTRIES", 100)
    monkeypatch.setattr(knn, "CHUNK_MEMORY_BYTES", 40 * 8 * 2 * 10)  # 10 rows of 40 float64 distances
    seen_rows = []
    original = knn.pairwise_sq_distances

    def spy(queries, points):
        seen_rows.append(queries.shape[0])
        return original(queries, points)

    monkeypatch.setattr(knn, "pairwise_sq_distances", spy)
    points = torch.randn(40, 2, dtype=torch.float64).to(device)
    result = knn_search(points, 3)
    assert max(seen_rows) == 10 and sum(seen_rows) == 40
    indices, _ = _brute_reference(points, points, 3, exclude_self=True)
    assert torch.equal(result.indices, indices)


def test_auto_searches_approximately_only_above_the_threshold(monkeypatch):
    """At the threshold the search is exact, one point above it approximate (where faiss is installed)."""
    monkeypatch.setattr(knn, "BRUTE_FORCE_MAX_ENTRIES", 0)
    monkeypatch.setattr(knn, "APPROXIMATE_THRESHOLD", 30)
    monkeypatch.setattr(knn, "faiss_available", lambda: True)
    chosen = []

    def approximate(points, k, queries, exclude_self):
        chosen.append(len(points))
        return knn._exact_search(points, k, queries, exclude_self, None)

    monkeypatch.setattr(knn, "_faiss_search", approximate)
    knn_search(torch.randn(30, 2, dtype=torch.float64), 3)
    assert chosen == []
    knn_search(torch.randn(31, 2, dtype=torch.float64), 3)
    assert chosen == [31]


def test_the_approximate_threshold_is_the_devices():
    assert knn.approximate_threshold(torch.device("cpu")) == knn.APPROXIMATE_THRESHOLD == 50_000
    assert knn.approximate_threshold(torch.device("cuda")) == knn.APPROXIMATE_THRESHOLD_ACCELERATOR == 200_000


@pytest.mark.skipif(not faiss_available(), reason="faiss-cpu not installed")
def test_approximate_backend_recall(device):
    generator = torch.Generator().manual_seed(1)
    points = torch.randn(5000, 16, generator=generator).to(device)
    approximate = knn_search(points, 10, backend="faiss")
    exact = knn_search(points, 10, backend="chunked")
    hits = sum(
        len(set(a.tolist()) & set(e.tolist())) for a, e in zip(approximate.indices.cpu(), exact.indices.cpu())
    )
    recall = hits / exact.indices.numel()
    assert recall >= 0.95
    assert not torch.any(approximate.indices == torch.arange(5000, device=device)[:, None])  # self excluded


@pytest.mark.skipif(not faiss_available(), reason="faiss-cpu not installed")
def test_approximate_backend_include_self(device):
    points = torch.randn(500, 8).to(device)
    result = knn_search(points, 4, backend="faiss", include_self=True)
    assert torch.equal(result.indices[:, 0], torch.arange(500, device=device))


@pytest.mark.parametrize(
    "points, k, kwargs, message",
    [
        (torch.randn(10, 2), 10, {}, "only 9 other points"),
        (torch.randn(10, 2), 11, {"include_self": True}, "only 10 points"),
        (torch.randn(10, 2), 0, {}, ">= 1"),
        (torch.randn(10), 2, {}, "shape \\(N, D\\)"),
        (torch.tensor([[0.0, float("nan")], [1.0, 1.0], [2.0, 2.0]]), 1, {}, "NaN/inf"),
        (torch.randn(10, 2), 2, {"backend": "kd-tree"}, "unknown knn backend"),
        (torch.randn(10, 2), 2, {"queries": torch.randn(3, 5)}, "dimension"),
        (torch.randn(10, 2), 2, {"queries": torch.randn(3, 2), "include_self": True}, "include_self"),
    ],
)
def test_bad_inputs_raise_clear_errors(points, k, kwargs, message, device):
    kwargs = {key: value.to(device) if key == "queries" else value for key, value in kwargs.items()}
    with pytest.raises(ValueError, match=message):
        knn_search(points.to(device), k, **kwargs)


def test_integer_points_refused(device):
    with pytest.raises(TypeError, match="float32 or float64, got torch.int64"):
        knn_search(torch.arange(10, device=device).reshape(5, 2), 1)


def test_num_neighbors_is_a_deprecated_name_of_n_top(device):
    points = torch.randn(12, 3, generator=torch.Generator().manual_seed(0)).to(device)
    found = knn_search(points, n_top=3)
    with pytest.warns(DeprecationWarning, match="use n_top"):
        old = knn_search(points, num_neighbors=3)
    assert torch.equal(old.indices, found.indices) and found.n_top == 3
    with pytest.warns(DeprecationWarning, match="Neighbors.n_top"):
        assert found.num_neighbors == 3
    with pytest.raises(TypeError, match="not both"):
        knn_search(points, 3, num_neighbors=3)
    with pytest.raises(TypeError, match="needs n_top"):
        knn_search(points)


def test_a_neighbour_index_answers_as_knn_search_below_the_threshold():
    generator = torch.Generator().manual_seed(5)
    points, queries = torch.randn(200, 3, generator=generator), torch.randn(40, 3, generator=generator)
    found, expected = knn.NeighbourIndex(points).search(queries, 4), knn_search(points, 4, queries=queries)
    assert torch.equal(found.indices, expected.indices) and torch.equal(
        found.sq_distances, expected.sq_distances
    )
    with pytest.raises(ValueError, match="queries have dimension 2 but points have dimension 3"):
        knn.NeighbourIndex(points).search(torch.zeros(1, 2), 1)


@pytest.mark.skipif(not faiss_available(), reason="faiss-cpu not installed")
def test_a_neighbour_index_above_the_threshold_is_built_once_and_finds_the_exact_neighbours(monkeypatch):
    """Above the threshold the HNSW index is built at the first search only; on 300 points (where HNSW is
    exact) its neighbours and distances are the exact search's; the wrong width or too many neighbours are
    refused by name."""
    monkeypatch.setattr(knn, "BRUTE_FORCE_MAX_ENTRIES", 0)
    monkeypatch.setattr(knn, "APPROXIMATE_THRESHOLD", 100)
    built = []
    original = knn._hnsw_index
    monkeypatch.setattr(knn, "_hnsw_index", lambda points: built.append(len(points)) or original(points))
    generator = torch.Generator().manual_seed(6)
    points = torch.randn(300, 4, generator=generator, dtype=torch.float64) + 50.0
    index = knn.NeighbourIndex(points)
    for _ in range(2):
        queries = torch.randn(30, 4, generator=generator, dtype=torch.float64) + 50.0
        found = index.search(queries, 5)
        expected = knn_search(points, 5, queries=queries, backend="chunked")
        assert torch.equal(found.indices, expected.indices)
        assert torch.allclose(found.sq_distances, expected.sq_distances, rtol=0, atol=1e-9)
    assert built == [300]
    with pytest.raises(ValueError, match="n_top"):
        index.search(queries, 301)
