"""The diffusion operator family: ``BatchedDiffusion`` (a batch of dense graphs) and ``SliceDiffusion`` (one
graph per slice of a ``SliceGraphs``) against the update formula written out, against ``DiffusionOperator``
graph by graph, and with its stability check and step hooks."""

import pytest
import torch

from pdenets.operators import (
    BatchedDiffusion,
    DiffusionOperator,
    SliceDiffusion,
    SliceGraphs,
    UnstableStepSizeError,
)

from ..conftest import cycle_weights, random_symmetric_weights

# a weighted path 0 – 1 – 2 (weights 1 and 2) and a triangle of weights 1/2
PATH = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 2.0], [0.0, 2.0, 0.0]], dtype=torch.float64)
TRIANGLE = 0.5 * (torch.ones(3, 3, dtype=torch.float64) - torch.eye(3, dtype=torch.float64))


def explicit_steps(weights, features, step_size, num_steps, normalized=False):
    """``x_i ← x_i + γ Σ_j w_ij (x_j − x_i)`` (or ``x_i ← x_i − γ (x_i − Σ_j w_ij x_j / √(d_i d_j))``) node by
    node, in Python loops over one graph's entries."""
    weights, out = weights.tolist(), features.clone()
    degrees = [sum(row) for row in weights]
    nodes = len(weights)
    for _ in range(num_steps):
        previous = out.clone()
        for i in range(nodes):
            if normalized:
                mean = sum(
                    weights[i][j] / (degrees[i] * degrees[j]) ** 0.5 * previous[j]
                    for j in range(nodes)
                    if weights[i][j]
                )
                out[i] = previous[i] - step_size * (previous[i] - mean)
            else:
                out[i] = previous[i] + step_size * sum(
                    weights[i][j] * (previous[j] - previous[i]) for j in range(nodes)
                )
    return out


def slices_of(graphs, ids):
    """The graphs (on their device) as a SliceGraphs; the slices' graph ids are an index kept on the CPU."""
    return SliceGraphs([graph.to_sparse() for graph in graphs], graphs[0].shape[0], ids=torch.tensor(ids))


def test_batched_steps_pin_the_numbers_of_the_update_formula(device):
    weights = torch.stack([PATH, TRIANGLE]).to(device)
    features = torch.tensor(
        [[[1.0], [2.0], [4.0]], [[3.0], [0.0], [0.0]]], dtype=torch.float64, device=device
    )
    op = BatchedDiffusion(weights, 0.25)
    # by hand: path 1.25, 2.75, 3 then 1.625, 2.5, 2.875;
    # triangle 2.25, .375, .375 then 1.78125, .609375, .609375
    expected = torch.tensor(
        [[[1.625], [2.5], [2.875]], [[1.78125], [0.609375], [0.609375]]], dtype=torch.float64, device=device
    )
    assert torch.equal(op.apply(features, 2), expected)
    assert torch.equal(
        op.apply(features, 1)[0].flatten(),
        torch.tensor([1.25, 2.75, 3.0], dtype=torch.float64, device=device),
    )
    assert torch.equal(op.apply(features, 0), features)
    assert op.bound == pytest.approx(1 / 3)  # the path's row 1: 1 + 2


def test_slice_steps_pin_the_numbers_of_the_update_formula(device):
    # device: needs SliceGraphs.block_diagonal to build its index arithmetic on the graphs' device (its
    # aranges and offsets are CPU tensors; slices on different graphs multiply by the block-diagonal matrix)
    graphs = slices_of([PATH.to(device), TRIANGLE.to(device)], [1, 0, 1])
    features = torch.tensor(
        [[3.0, 0.0, 0.0], [1.0, 2.0, 4.0], [0.0, 3.0, 0.0]], dtype=torch.float64, device=device
    )[..., None]
    out = SliceDiffusion(graphs, 0.25).apply(features, 2)
    expected = [[1.78125, 0.609375, 0.609375], [1.625, 2.5, 2.875], [0.609375, 1.78125, 0.609375]]
    for index, row in enumerate(expected):
        assert torch.equal(out[index].flatten(), torch.tensor(row, dtype=torch.float64, device=device))


@pytest.mark.parametrize("normalized", [False, True])
def test_both_forms_follow_the_formula_on_random_graphs(normalized, device):
    # device: needs SliceGraphs.block_diagonal to build its index arithmetic on the graphs' device (its
    # aranges and offsets are CPU tensors; slices on different graphs multiply by the block-diagonal matrix)
    graphs = [random_symmetric_weights(7, 0.5, seed=seed, device=device) for seed in range(3)]
    step_size = 0.9 if normalized else 0.5 / max(float(graph.sum(1).max()) for graph in graphs)
    features = torch.randn(3, 7, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).to(
        device
    )
    expected = torch.stack([explicit_steps(g, x, step_size, 4, normalized) for g, x in zip(graphs, features)])
    laplacian = "normalized" if normalized else "combinatorial"
    sliced = SliceDiffusion(slices_of(graphs, [0, 1, 2]), step_size, laplacian=laplacian).apply(features, 4)
    torch.testing.assert_close(sliced, expected, rtol=0, atol=1e-13)
    if not normalized:
        batched = BatchedDiffusion(torch.stack(graphs), step_size).apply(features, 4)
        torch.testing.assert_close(batched, expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("laplacian", ["combinatorial", "normalized"])
def test_equal_to_the_diffusion_operator_graph_by_graph(dtype, laplacian, device):
    # device: needs SliceGraphs.block_diagonal to build its index arithmetic on the graphs' device (its
    # aranges and offsets are CPU tensors; slices on different graphs multiply by the block-diagonal matrix)
    graphs = [random_symmetric_weights(12, 0.3, seed=seed, device=device) for seed in range(4)]
    step_size = 0.8 if laplacian == "normalized" else 0.8 / max(float(g.sum(1).max()) for g in graphs)
    ids = [2, 0, 3, 3, 1]
    features = torch.randn(len(ids), 12, 3, dtype=dtype, generator=torch.Generator().manual_seed(1)).to(
        device
    )
    expected = torch.stack(
        [
            DiffusionOperator(graphs[i].to(dtype), step_size, laplacian=laplacian).apply(x, 6)
            for i, x in zip(ids, features)
        ]
    )
    tolerance = dict(rtol=0, atol=1e-5 if dtype == torch.float32 else 1e-13)
    sliced = SliceDiffusion(slices_of(graphs, ids), step_size, laplacian=laplacian).apply(features, 6)
    assert sliced.dtype == dtype
    torch.testing.assert_close(sliced, expected, **tolerance)
    if laplacian == "combinatorial":
        weights = torch.stack([graphs[i] for i in ids]).to(dtype)
        torch.testing.assert_close(
            BatchedDiffusion(weights, step_size).apply(features, 6), expected, **tolerance
        )


def test_a_directed_row_normalized_graph_diffuses_along_its_rows(device):
    """The forecasts' graphs: no symmetry, rows summing to one (stable for ``γ ≤ 1``)."""
    # device: needs SliceGraphs.block_diagonal to build its index arithmetic on the graphs' device (its
    # aranges and offsets are CPU tensors; slices on different graphs multiply by the block-diagonal matrix)
    generator = torch.Generator().manual_seed(3)
    graphs = torch.rand(3, 6, 6, dtype=torch.float64, generator=generator)
    graphs = (
        graphs * (torch.rand(3, 6, 6, generator=generator) < 0.5) * (1 - torch.eye(6, dtype=torch.float64))
    )
    graphs = (graphs / graphs.sum(2, keepdim=True).clamp_min(1e-12)).to(device)
    features = torch.randn(3, 6, 2, dtype=torch.float64, generator=generator).to(device)
    expected = torch.stack([explicit_steps(g, x, 0.7, 3) for g, x in zip(graphs, features)])
    batched = BatchedDiffusion(graphs, 0.7).apply(features, 3)
    sliced = SliceDiffusion(slices_of(list(graphs), [0, 1, 2]), 0.7).apply(features, 3)
    torch.testing.assert_close(batched, expected, rtol=0, atol=1e-13)
    torch.testing.assert_close(sliced, expected, rtol=0, atol=1e-13)


def test_a_scaled_step_is_the_step_times_the_scale_and_carries_its_gradient(device):
    # device: needs SliceGraphs.block_diagonal to build its index arithmetic on the graphs' device (its
    # aranges and offsets are CPU tensors; slices on different graphs multiply by the block-diagonal matrix)
    graphs = slices_of([PATH.to(device), TRIANGLE.to(device)], [0, 1])
    features = torch.randn(2, 3, 2, dtype=torch.float64).to(device)
    scale = torch.tensor(0.4, dtype=torch.float64, device=device, requires_grad=True)
    out = SliceDiffusion(graphs, 0.25).apply(features, 3, step_scale=scale)
    torch.testing.assert_close(out, SliceDiffusion(graphs, 0.1).apply(features, 3), rtol=0, atol=1e-15)
    assert torch.autograd.gradcheck(
        lambda s, x: SliceDiffusion(graphs, 0.25).apply(x, 3, step_scale=s),
        (scale, features.clone().requires_grad_()),
    )


@pytest.mark.parametrize("layout", ["dense", "sparse", "csr"])
def test_the_one_operator_takes_the_same_scaled_step_as_the_slices(layout, device):
    """``DiffusionOperator.apply(step_scale=ρ)``: ``r`` steps of ``γρ`` written out node by node, on a dense,
    a sparse and a CSR graph, with ρ's gradient (COIN's learned diffusion time goes through it)."""
    path = PATH.to(device)
    weights = {"dense": path, "sparse": path.to_sparse(), "csr": path.to_sparse_csr()}[layout]
    features = torch.randn(3, 2, dtype=torch.float64).to(device)
    scale = torch.tensor(0.4, dtype=torch.float64, device=device, requires_grad=True)
    operator = DiffusionOperator(weights, 0.25)
    out = operator.apply(features, 3, step_scale=scale)
    torch.testing.assert_close(out, explicit_steps(path, features, 0.1, 3), rtol=0, atol=1e-14)
    torch.testing.assert_close(out, operator.apply(features, 3, step_scale=0.4), rtol=0, atol=0)
    assert torch.autograd.gradcheck(
        lambda s, x: operator.apply(x, 3, step_scale=s), (scale, features.clone().requires_grad_())
    )


def test_gradcheck_of_the_batched_form_in_features_and_weights(device):
    weights = (torch.rand(2, 4, 4, dtype=torch.float64) + 0.1) / 4
    weights = ((weights + weights.transpose(1, 2)) / 2).to(device).requires_grad_()
    features = torch.randn(2, 4, 2, dtype=torch.float64).to(device).requires_grad_()
    assert torch.autograd.gradcheck(lambda w, x: BatchedDiffusion(w, 0.5).apply(x, 3), (weights, features))
    assert torch.autograd.gradcheck(lambda w: BatchedDiffusion(w, 0.5).matrix(2, slice(0, 2)), (weights,))


def test_the_hooks_run_around_every_step_as_the_diffusion_operators_do(device):
    calls = []
    path = PATH.to(device)

    def before(x):
        calls.append("before")
        return 2 * x

    def after(x):
        calls.append("after")
        return x - 1

    features = torch.randn(3, 2, dtype=torch.float64).to(device)
    expected = DiffusionOperator(path, 0.25).apply(features, 3, before_step=before, after_step=after)
    assert calls == ["before", "after"] * 3
    calls.clear()
    batched = BatchedDiffusion(path[None], 0.25).apply(
        features[None], 3, before_step=before, after_step=after
    )
    assert calls == ["before", "after"] * 3
    calls.clear()
    sliced = SliceDiffusion(slices_of([path], [0]), 0.25).apply(
        features[None], 3, before_step=before, after_step=after
    )
    assert calls == ["before", "after"] * 3
    torch.testing.assert_close(batched[0], expected, rtol=0, atol=1e-14)
    torch.testing.assert_close(sliced[0], expected, rtol=0, atol=1e-14)


def test_the_stability_check_refuses_a_step_beyond_any_graphs_bound(device):
    cycle = cycle_weights(6, device=device)  # bipartite, degree 2: λ_max(L) = 4, stable for γ ≤ 1/2 exactly
    triangle = torch.ones(3, 3, dtype=torch.float64, device=device) - torch.eye(
        3, dtype=torch.float64, device=device
    )  # λ_max(L) = 3
    with pytest.raises(UnstableStepSizeError, match="graph 1 of 2"):
        BatchedDiffusion(torch.stack([cycle / 4, cycle]), 0.6)  # the first is stable up to 2
    with pytest.raises(UnstableStepSizeError):
        SliceDiffusion(slices_of([cycle], [0]), 0.6)
    assert BatchedDiffusion(cycle[None], 0.5).bound == pytest.approx(0.5)
    assert BatchedDiffusion(cycle[None], 0.6, check_stability=False).apply(
        torch.ones(1, 6, 1, device=device), 1
    ).shape == (
        1,
        6,
        1,
    )
    # beyond Gershgorin's 1/2, within the spectral 2/3: the triangle admits it, as in DiffusionOperator
    assert BatchedDiffusion(triangle[None], 0.6).bound == pytest.approx(
        DiffusionOperator(triangle, 0.6).bound
    )
    assert SliceDiffusion(slices_of([triangle], [0]), 0.6).bound == pytest.approx(2 / 3)
    # only the graphs the slices use count
    padded = torch.zeros(6, 6, dtype=torch.float64, device=device)
    padded[:3, :3] = triangle
    assert SliceDiffusion(slices_of([cycle, padded], [1, 1]), 0.6).bound == pytest.approx(2 / 3)
    with pytest.raises(UnstableStepSizeError):
        SliceDiffusion(slices_of([cycle, padded], [1, 0]), 0.6)
    # a non-symmetric graph beyond Gershgorin has no spectral bound to fall back on
    directed = torch.tensor([[0.0, 1.0], [0.0, 0.0]], dtype=torch.float64, device=device)
    with pytest.raises(UnstableStepSizeError, match="not symmetric"):
        BatchedDiffusion(directed[None], 1.5)
    with pytest.raises(UnstableStepSizeError, match="normalized"):
        SliceDiffusion(slices_of([triangle], [0]), 1.2, laplacian="normalized")


def test_bad_arguments_are_refused(device):
    path = PATH.to(device)
    with pytest.raises(TypeError, match="SliceGraphs"):
        SliceDiffusion([path], 0.1)
    with pytest.raises(ValueError, match="step_size"):
        SliceDiffusion(slices_of([path], [0]), 0.0)
    with pytest.raises(ValueError, match="laplacian"):
        SliceDiffusion(slices_of([path], [0]), 0.1, laplacian="random-walk")
    with pytest.raises(ValueError, match=r"\(T, N, F\)"):
        BatchedDiffusion(path[None], 0.1).apply(torch.ones(3, 1, device=device), 1)
    with pytest.raises(ValueError, match="negative"):
        BatchedDiffusion(-path[None], 0.1)
