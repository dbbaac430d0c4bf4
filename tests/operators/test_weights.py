import math

import pytest
import torch

from pdenets.operators import (
    KnnGaussianWeights,
    batched_knn_gaussian_weights,
    gaussian_kernel,
    knn_gaussian_weights,
)


def _dense_reference(points, n_top, sigma, include_self):
    """Algorithm 1 literally: the full Gaussian matrix, then keep the n_top largest entries per row."""
    sq = torch.cdist(points, points, compute_mode="donot_use_mm_for_euclid_dist") ** 2
    full = torch.exp(-sq / sigma**2)
    if not include_self:
        full.fill_diagonal_(0.0)
    values, indices = torch.topk(full, n_top, dim=1)
    sparse = torch.zeros_like(full)
    sparse.scatter_(1, indices, values)
    return sparse


@pytest.mark.parametrize("include_self", [False, True])
def test_fixed_sigma_weights_equal_dense_algorithm(include_self, device):
    points = torch.randn(150, 3, dtype=torch.float64).to(device)
    reference = _dense_reference(points, 9, 0.7, include_self)
    ours = knn_gaussian_weights(points, 9, sigma=0.7, include_self=include_self, normalization="none")
    assert torch.allclose(ours.to_dense(), reference, atol=1e-14)
    row = reference.sum(1, keepdim=True)
    ours_row = knn_gaussian_weights(points, 9, sigma=0.7, include_self=include_self, normalization="row")
    assert torch.allclose(ours_row.to_dense(), reference / row, atol=1e-14)


def test_official_fewshot_convention(device):
    """Self in the list, adaptive sigma = 4th entry, symmetric normalization, then (W + Wᵀ)/2.

    The reference follows the recipe of the paper's few-shot code: keep entries strictly closer
    than the n_top-th smallest distance (self included), so its n_top = 8 keeps 7 entries.
    """
    points = torch.randn(80, 6, dtype=torch.float64).to(device)
    distance = torch.cdist(points, points, compute_mode="donot_use_mm_for_euclid_dist")
    kth_top = torch.kthvalue(distance, 8, dim=1, keepdim=True).values
    kth_sigma = torch.kthvalue(distance, 4, dim=1, keepdim=True).values
    truncated = distance.where(distance < kth_top, torch.tensor(math.inf, dtype=torch.float64, device=device))
    weight = torch.exp(-((truncated / kth_sigma) ** 2))
    inv_sqrt = weight.sum(1).rsqrt()
    weight = inv_sqrt[:, None] * weight * inv_sqrt[None, :]
    reference = (weight + weight.T) / 2

    ours = knn_gaussian_weights(
        points, 7, sigma_neighbor=4, include_self=True, normalization="symmetric", symmetrize_weights=True
    )
    assert torch.allclose(ours.to_dense(), reference, atol=1e-14)


def test_adaptive_sigma_uses_kth_neighbour_distance(device):
    points = torch.tensor([[0.0], [1.0], [3.0], [7.0]], dtype=torch.float64, device=device)
    weights = knn_gaussian_weights(points, 1, sigma_neighbor=2, normalization="none").to_dense()
    # point 0: nearest 1 (d=1), 2nd nearest 2 (d=3): w = exp(-1/9)
    assert weights[0, 1].item() == pytest.approx(math.exp(-1 / 9))
    # point 3: nearest 2 (d=4), 2nd nearest 1 (d=6): w = exp(-16/36)
    assert weights[3, 2].item() == pytest.approx(math.exp(-16 / 36))


def test_builder_equals_function_and_sparsity(device):
    points = torch.randn(64, 5).to(device)
    builder = KnnGaussianWeights(n_top=6, sigma=1.5, normalization="symmetric", symmetrize_weights=True)
    weights = builder(points)
    assert torch.allclose(
        weights.to_dense(),
        knn_gaussian_weights(
            points, 6, sigma=1.5, normalization="symmetric", symmetrize_weights=True
        ).to_dense(),
    )
    assert weights._nnz() <= 2 * 64 * 6
    assert torch.allclose(weights.to_dense(), weights.to_dense().T)


def test_gaussian_kernel_limits(device):
    sq = torch.tensor([0.0, 1.0, 1e6], device=device)
    values = gaussian_kernel(sq, 1.0)
    assert values.device == sq.device
    at_zero, at_one, far = values.tolist()
    assert at_zero == 1 and at_one == pytest.approx(math.exp(-1)) and far == 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "exactly one"),
        ({"sigma": 1.0, "sigma_neighbor": 2}, "exactly one"),
        ({"sigma": -1.0}, "> 0"),
        ({"sigma": 1.0, "normalization": "l1"}, "normalization"),
        ({"sigma_neighbor": 0}, "sigma_neighbor"),
    ],
)
def test_bad_options(kwargs, message, device):
    with pytest.raises(ValueError, match=message):
        knn_gaussian_weights(torch.randn(20, 2).to(device), 3, **kwargs)


def test_adaptive_sigma_zero_for_duplicates_is_refused(device):
    points = torch.zeros(5, 2, device=device)
    with pytest.raises(ValueError, match="duplicate"):
        knn_gaussian_weights(points, 2, sigma_neighbor=2)


def test_a_zero_width_links_a_point_to_its_copies_as_the_kernels_limit(device):
    """``coincident="link"``: the limit σ → 0⁺ of exp(−d²/σ²) — 1 at distance 0, 0 beyond — where a point's
    width-setting neighbour is its copy; every other row is the plain kernel."""
    sq = torch.tensor([[0.0, 0.0, 2.0], [0.0, 1.0, 4.0]], dtype=torch.float64, device=device)
    sigma = torch.tensor([[0.0], [2.0]], dtype=torch.float64, device=device)
    values = gaussian_kernel(sq, sigma, coincident="link")
    assert values[0].tolist() == [1.0, 1.0, 0.0]
    torch.testing.assert_close(values[1], torch.exp(-sq[1] / 4))
    tiny = gaussian_kernel(sq[:1], torch.full((1, 1), 1e-150, dtype=torch.float64, device=device))
    assert torch.equal(values[:1], tiny)  # the limit, reached
    with pytest.raises(ValueError, match="duplicate"):
        gaussian_kernel(sq, sigma)
    with pytest.raises(ValueError, match="coincident must be one of"):
        gaussian_kernel(sq, sigma, coincident="ignore")
    # a cloud with one duplicated point: its two copies are linked to each other only, the rest is unchanged
    generator = torch.Generator().manual_seed(0)
    cloud = torch.randn(1, 8, 3, generator=generator, dtype=torch.float64).to(device)
    copied = torch.cat([cloud, cloud[:, :1]], 1)
    options = dict(sigma_neighbor=2, include_self=True, normalization="none")
    with pytest.raises(ValueError, match="duplicate"):
        batched_knn_gaussian_weights(copied, 3, **options)
    weights = batched_knn_gaussian_weights(copied, 3, coincident="link", **options)[0]
    expected = torch.zeros(9, dtype=torch.float64, device=device)
    expected[[0, 8]] = 1.0
    assert torch.equal(weights[0], expected) and torch.equal(weights[8], expected)
    plain = batched_knn_gaussian_weights(cloud, 3, **options)[0]
    untouched = [i for i in range(1, 8) if not bool(weights[i, 8]) and not bool(plain[i, 0])]
    assert len(untouched) >= 4
    torch.testing.assert_close(weights[untouched, :8], plain[untouched])


@pytest.mark.parametrize(
    "options", [dict(sigma=1e20), dict(sigma_neighbor=3)], ids=["fixed sigma", "adaptive sigma"]
)
def test_coordinates_too_large_for_the_dtype_are_named_not_the_kernel_width(options, device):
    """float32 points near 1e20: every squared distance overflows to inf whatever sigma is."""
    from pdenets.operators import batched_knn_gaussian_weights

    points = torch.tensor([[0.0, 0.0], [1.0, 0.5], [0.2, 1.0], [1.0, 1.0], [0.5, 0.1]], device=device) * 2e20
    expected = (
        "the squared distances between points overflow float32 (coordinates reach 2e+20, float32 holds at "
        "most 3.4e+38): the coordinates are too large for the dtype; rescale the points (e.g. standardize "
        "them) or use float64"
    )
    for build in (
        lambda: knn_gaussian_weights(points, 3, **options),
        lambda: batched_knn_gaussian_weights(points[None], 3, **options),
    ):
        with pytest.raises(ValueError) as caught:
            build()
        assert str(caught.value) == expected
    weights = knn_gaussian_weights(points.double(), 3, **options)  # float64 holds them
    assert bool((weights.coalesce().values() > 0).any())


def test_weights_from_a_neighbour_index_are_the_weights_of_its_search(monkeypatch):
    """Given an index of the points, the graph is built from its search (here the approximate one, which is
    exact on 300 points where faiss is installed, else the exact one): the same graph; an index cannot
    count the point itself among its neighbours."""
    from pdenets.operators import knn

    monkeypatch.setattr(knn, "APPROXIMATE_THRESHOLD", 100)
    generator = torch.Generator().manual_seed(8)
    points = torch.randn(300, 3, generator=generator, dtype=torch.float64)
    index = knn.NeighbourIndex(points)
    ours = knn_gaussian_weights(points, 6, sigma_neighbor=3, normalization="row", index=index)
    reference = knn_gaussian_weights(points, 6, sigma_neighbor=3, normalization="row", backend="chunked")
    assert torch.equal(ours.indices(), reference.indices())
    assert torch.allclose(ours.values(), reference.values(), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="include_self=False"):
        knn_gaussian_weights(points, 6, sigma_neighbor=3, include_self=True, index=index)
