"""A graph split over processes diffuses, trains and evaluates as the whole graph in one process."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from pdenets.models import DiffResNet
from pdenets.nn.adjoint_diffusion import apply_dropout_mask_
from pdenets.operators import (
    DiffusionOperator,
    PartitionedDiffusion,
    UnstableStepSizeError,
    check_step_size,
    gcn_normalize,
    load_part,
    partition_graph,
    save_partition,
    spmm_kernel,
    stability_bound,
)
from pdenets.operators.partitioned import _PartitionedStep

HELPERS = Path(__file__).resolve().parents[1] / "helpers"


def _graph(num_nodes=120, seed=0):
    """A random planted graph (3 blocks), GCN-normalized weights (float64), features and labels."""
    generator = np.random.default_rng(seed)
    labels = generator.integers(0, 3, num_nodes)
    probability = np.where(labels[:, None] == labels[None, :], 0.12, 0.02)
    upper = np.triu(generator.random((num_nodes, num_nodes)) < probability, 1)
    rows, cols = np.nonzero(upper | upper.T)
    edge_index = torch.from_numpy(np.vstack([rows, cols]))
    weights = gcn_normalize((edge_index, None), num_nodes).to(torch.float64)
    features = torch.from_numpy(generator.random((num_nodes, 6)))
    return weights, features, torch.from_numpy(labels)


def _dense(matrix):
    return matrix.to_dense() if matrix.layout != torch.strided else matrix


@pytest.mark.cpu_only("partition_graph: METIS and SciPy on the CPU (scipy_graph reads W with .numpy())")
def test_partition_orders_parts_contiguously_and_metis_cuts_fewer_edges():
    weights, _, labels = _graph()
    contiguous = partition_graph(weights, 3, method="contiguous")
    metis = partition_graph(weights, 3, method="metis")
    for partition in (contiguous, metis):
        assert sorted(partition.order.tolist()) == list(range(120))
        assert partition.offsets[0] == 0 and partition.offsets[-1] == 120
        assert int(torch.diff(partition.offsets).min()) >= 1
        assert torch.equal(partition.new_ids()[partition.order], torch.arange(120))
    assert contiguous.offsets.tolist() == [0, 40, 80, 120]
    # the contiguous cut keeps the numbering (the single process's dropout draws and keys): pinned here, fast
    assert torch.equal(contiguous.order, torch.arange(120))
    uneven = partition_graph(_graph(7)[0], 3, method="contiguous")
    assert uneven.order.tolist() == list(range(7)) and uneven.offsets.tolist() == [0, 3, 5, 7]
    assert metis.cut_fraction < contiguous.cut_fraction  # the planted blocks are found
    # the cut fraction is the share of off-diagonal entries between parts, counted by hand
    dense = _dense(weights).numpy()
    parts = contiguous.part_of(torch.arange(120)).numpy()
    i, j = np.nonzero(dense)
    off = i != j
    assert contiguous.cut_fraction == pytest.approx(float((parts[i] != parts[j])[off].mean()))


@pytest.mark.cpu_only("partition_graph: METIS and SciPy on the CPU (scipy_graph reads W with .numpy())")
def test_partition_refuses_bad_requests():
    weights, _, _ = _graph(10)
    with pytest.raises(ValueError, match="10 nodes into 11 parts"):
        partition_graph(weights, 11)
    with pytest.raises(ValueError, match="method"):
        partition_graph(weights, 2, method="spectral")


@pytest.mark.cpu_only("partition_graph, save_partition and load_part: METIS, SciPy and files on the CPU")
def test_saved_parts_hold_their_rows_renumbered_and_refuse_overwriting(tmp_path):
    weights, features, labels = _graph()
    partition = partition_graph(weights, 2, method="metis")
    save_partition(tmp_path / "p", partition, weights, features=features, labels=labels)
    dense = _dense(weights)
    renumbered = dense[partition.order][:, partition.order]
    for k in range(2):
        part = load_part(tmp_path / "p", k)
        first, end = partition.rows(k)
        assert part.first == first and part.num_parts == 2 and part.num_nodes == 120
        assert torch.equal(part.weights.to_dense(), renumbered[first:end])
        assert torch.equal(part.features, features[partition.order[first:end]])
        assert torch.equal(part.labels, labels[partition.order[first:end]])
    with pytest.raises(FileExistsError, match="not an empty folder"):
        save_partition(tmp_path / "p", partition, weights)
    with pytest.raises(ValueError, match="has 2 parts"):
        load_part(tmp_path / "p", 2)
    with pytest.raises(FileNotFoundError, match="partition.json"):
        load_part(tmp_path, 0)


def test_one_process_operator_is_the_whole_graphs_operator(device):
    weights, features, _ = _graph()
    weights, features = weights.to(device), features.to(device)
    whole = DiffusionOperator(weights, 0.4)
    rows = PartitionedDiffusion(weights.to_sparse_csr(), 0, 0.4)
    assert rows.halo_size == 0 and rows.bound == pytest.approx(whole.bound)
    matrix = _dense(whole.matrix())
    torch.testing.assert_close(rows.product(features), matrix @ features, rtol=0, atol=1e-12)
    torch.testing.assert_close(
        rows.product(features, transpose=True), matrix.T @ features, rtol=0, atol=1e-12
    )
    x = features.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda f: _PartitionedStep.apply(f, rows), (x,))
    with pytest.raises(UnstableStepSizeError):
        PartitionedDiffusion(weights.to_sparse_csr(), 0, 5.0)
    with pytest.raises(ValueError, match="tile the graph"):
        PartitionedDiffusion(_rows(weights, 0, 10), 3, 0.4)


def _rows(weights, first, end):
    dense = _dense(weights)[first:end]
    return dense.to_sparse_csr()


def test_halo_of_a_part_is_the_outside_nodes_its_rows_reach(device):
    weights, _, _ = _graph()
    weights = weights.to(device)
    dense = _dense(weights)
    # one process cannot hold a part alone (the ranges must tile), so read the halo off the construction rule
    reached = torch.nonzero(dense[:60].abs().sum(0)).ravel()
    outside = reached[reached >= 60]
    assert outside.numel() > 0  # the test graph has edges across the cut
    with pytest.raises(ValueError, match="tile the graph"):
        PartitionedDiffusion(_rows(weights, 0, 60), 0, 0.4)


@pytest.mark.cpu_only("apply_dropout_mask_ with a row_offset: the NumPy PCG64 masks of a row block, CPU only")
def test_masks_of_a_row_block_are_the_rows_of_the_whole_mask():
    for p, columns in ((0.25, 64), (0.35, 5), (0.999, 3)):
        whole = apply_dropout_mask_(torch.ones(100, columns), 11, p)
        for offset in (1, 3, 37):
            assert torch.equal(
                apply_dropout_mask_(torch.ones(100 - offset, columns), 11, p, offset), whole[offset:]
            )


@pytest.mark.cpu_only("apply_dropout_mask_ with a row_offset: the NumPy PCG64 masks of a row block, CPU only")
@pytest.mark.parametrize("p", [0.25, 0.3337])  # one-byte and two-byte thresholds
def test_a_row_block_starting_at_a_word_boundary_or_one_byte_off_draws_the_whole_masks_rows(p, monkeypatch):
    """Row blocks whose first byte is exactly one 8-byte word in, one byte before or after it, or several
    words
    in, with chunks of a few rows so that every chunk boundary falls inside a word too."""
    import pdenets.nn.adjoint_diffusion as adjoint

    itemsize = np.dtype(adjoint.keep_threshold(p)[0]).itemsize
    monkeypatch.setattr(adjoint, "MASK_CHUNK_ENTRIES", 24)  # chunks of 8 rows at most 3 columns
    for columns in (1, 3, 8):
        whole = apply_dropout_mask_(torch.ones(64, columns), 7, p)
        for first_byte in (7, 8, 9, 16, 24, 40):
            if first_byte % (columns * itemsize):
                continue
            offset = first_byte // (columns * itemsize)
            block = apply_dropout_mask_(torch.ones(64 - offset, columns), 7, p, offset)
            assert torch.equal(block, whole[offset:]), (columns, first_byte)


def _run_pair(tmp_path, partition_method, settings, weights=None):
    graph_weights, features, labels = _graph()
    weights = graph_weights if weights is None else weights
    partition = partition_graph(weights, 2, method=partition_method)
    save_partition(tmp_path / "parts", partition, weights, features=features.float(), labels=labels)
    (tmp_path / "out").mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("WORLD_SIZE", None)
    pair = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node=2",
            "--standalone",
            str(HELPERS / "partitioned_step.py"),
            str(tmp_path / "parts"),
            str(tmp_path / "out"),
            json.dumps(settings),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert pair.returncode == 0, pair.stderr[-3000:]
    ranks = [torch.load(tmp_path / "out" / f"rank-{k}.pt") for k in range(2)]
    return weights, features, labels, partition, ranks


def _single(weights, features, labels, partition, settings):
    """The same three Adam steps on the whole renumbered graph in this process, with the plain model."""
    order = partition.order
    graph = _dense(weights)[order][:, order].float().to_sparse_csr()
    x, y = features.float()[order], labels[order]
    settings = dict(settings)
    torch.manual_seed(settings.pop("seed"))
    num_classes = settings.pop("num_classes")
    model = DiffResNet(6, num_classes, weights=graph, **settings)
    train = torch.cat([torch.arange(*partition.rows(k))[::3] for k in range(2)])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses, gradients = [], None
    for _ in range(3):
        model.train()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x)[train], y[train])
        loss.backward()
        if gradients is None:
            gradients = {name: parameter.grad.clone() for name, parameter in model.named_parameters()}
        optimizer.step()
        losses.append(float(loss.detach()))
    model.eval()
    with torch.no_grad():
        logits = model(x)
    return losses, gradients, logits, _dense(DiffusionOperator(graph, settings["step_size"]).matrix()), x


@pytest.mark.cpu_only("two torch.distributed processes over gloo (a subprocess), compared on the CPU")
@pytest.mark.parametrize("method", ["metis", "contiguous"])
def test_two_processes_give_the_single_process_loss_gradients_and_logits(tmp_path, method):
    settings = {
        "seed": 3,
        "num_classes": 3,
        "block": "graph",
        "num_steps": 4,
        "step_size": 0.25,
        "dropout": 0.25,
        "dropout_position": "before",
    }
    weights, features, labels, partition, ranks = _run_pair(tmp_path, method, settings)
    losses, gradients, logits, matrix, x = _single(weights, features, labels, partition, settings)
    assert ranks[0]["halo"] > 0 and ranks[1]["halo"] > 0  # the parts do exchange rows
    for rank in ranks:
        assert rank["losses"] == pytest.approx(losses, abs=1e-6)
        for name, gradient in gradients.items():
            torch.testing.assert_close(rank["gradients"][name], gradient, rtol=0, atol=1e-6)
    first = ranks[1]["first"]
    torch.testing.assert_close(torch.cat([ranks[0]["logits"], ranks[1]["logits"]]), logits, rtol=0, atol=1e-5)
    # the raw steps: A X and the transposed exchange Aᵀ X, row blocks of the whole products
    torch.testing.assert_close(torch.cat([r["forward"] for r in ranks]), matrix @ x, rtol=0, atol=1e-6)
    torch.testing.assert_close(torch.cat([r["transposed"] for r in ranks]), matrix.T @ x, rtol=0, atol=1e-6)
    assert 0 < first < 120


@pytest.mark.cpu_only("two torch.distributed processes over gloo (a subprocess), compared on the CPU")
@pytest.mark.parametrize("compiled", [False, True])
def test_two_processes_on_a_directed_graph_give_its_products_and_gradients(tmp_path, compiled):
    """``W`` not symmetric: the own blocks are not their own transposes and a halo entry has no mirror, so
    the transposed step must use the stored transposes of both blocks; ``compiled``: every product through
    the compiled kernel, writing into the spare arrays the steps pass."""
    if compiled and not spmm_kernel.available():
        pytest.skip("the compiled kernel needs numba")
    weights, _, _ = _graph()
    dense = _dense(weights).clone()
    upper = torch.triu(torch.ones_like(dense), 1).bool()
    dense[upper] *= 1.5  # each edge i < j weighs more from i than from j
    dense[torch.triu(dense > 0, 1) & (torch.arange(120)[None, :] % 7 == 0)] = 0.0  # some edges one way only
    directed = dense.to_sparse()
    settings = {
        "seed": 2,
        "num_classes": 3,
        "block": "graph",
        "num_steps": 3,
        "step_size": 0.1,
        "dropout": 0.2,
        "dropout_position": "after",
        "compiled": compiled,
    }
    _, features, labels, partition, ranks = _run_pair(tmp_path, "contiguous", settings, directed)
    settings.pop("compiled")
    losses, gradients, _, matrix, x = _single(directed, features, labels, partition, settings)
    assert not torch.equal(matrix, matrix.T) and ranks[0]["halo"] > 0 and ranks[1]["halo"] > 0
    assert ranks[0]["losses"] == pytest.approx(losses, abs=1e-6)
    for name, gradient in gradients.items():
        torch.testing.assert_close(ranks[1]["gradients"][name], gradient, rtol=0, atol=1e-6)
    torch.testing.assert_close(torch.cat([r["forward"] for r in ranks]), matrix @ x, rtol=0, atol=1e-6)
    torch.testing.assert_close(torch.cat([r["transposed"] for r in ranks]), matrix.T @ x, rtol=0, atol=1e-6)


@pytest.mark.cpu_only("two torch.distributed processes over gloo (a subprocess), compared on the CPU")
def test_dropout_after_each_step_matches_too(tmp_path):
    settings = {
        "seed": 5,
        "num_classes": 3,
        "block": "mlp",
        "num_steps": 3,
        "step_size": 0.3,
        "dropout": 0.35,
        "dropout_position": "after",
        "hidden_features": 8,
    }
    weights, features, labels, partition, ranks = _run_pair(tmp_path, "metis", settings)
    losses, gradients, _, _, _ = _single(weights, features, labels, partition, settings)
    assert ranks[0]["losses"] == pytest.approx(losses, abs=1e-6)
    for name, gradient in gradients.items():
        torch.testing.assert_close(ranks[1]["gradients"][name], gradient, rtol=0, atol=1e-6)


def _hub_graph(num_nodes=60, seed=1):
    """A planted graph with a hub among the last nodes (so in the second of two contiguous parts): its
    GCN-normalized weights put the largest weighted degree, and so the Gershgorin bound, in one part only."""
    weights, features, labels = _graph(num_nodes, seed)
    dense = (_dense(weights) > 0).double()
    dense[-1, : num_nodes // 2] = dense[: num_nodes // 2, -1] = 1.0  # the hub
    dense.fill_diagonal_(0.0)
    edge_index = dense.nonzero().T
    return gcn_normalize((edge_index, None), num_nodes).to(torch.float64), features, labels


@pytest.mark.cpu_only("two torch.distributed processes over gloo (a subprocess), compared on the CPU")
def test_two_processes_admit_the_step_sizes_one_process_admits_with_its_spectral_bound(tmp_path):
    """The ranks disagree on their own rows' Gershgorin bound (the hub is in one part); both must end with
    the single process's bound: Gershgorin's over all rows, and beyond it ``2 / λ_max(L)`` (Lanczos over
    the ranks against the dense eigenvalues), and refuse past it naming both bounds."""
    weights, features, labels = _hub_graph()
    gershgorin = stability_bound(weights)
    spectral = stability_bound(weights, method="spectral")
    assert spectral > 1.2 * gershgorin  # a step size between the two is admitted by the spectral bound only
    between, beyond = (gershgorin + spectral) / 2, 1.05 * spectral
    partition = partition_graph(weights, 2, method="contiguous")
    save_partition(tmp_path / "parts", partition, weights, features=features.float(), labels=labels)
    (tmp_path / "out").mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("WORLD_SIZE", None)
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone"]
        + [str(HELPERS / "partitioned_bound.py"), str(tmp_path / "parts"), str(tmp_path / "out")]
        + [json.dumps([0.5 * gershgorin, between, beyond])],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    ranks = [json.loads((tmp_path / "out" / f"rank-{k}.json").read_text()) for k in range(2)]
    alone = [rank["alone"] for rank in ranks]
    assert abs(alone[0] - alone[1]) > 0.1 * gershgorin and min(alone) == pytest.approx(gershgorin)
    assert check_step_size(between, weights) == pytest.approx(spectral, rel=1e-12)  # one process admits it
    for rank in ranks:
        small, middle, large = (rank["answers"][str(step)] for step in (0.5 * gershgorin, between, beyond))
        assert small["bound"] == pytest.approx(gershgorin, rel=1e-12)
        assert middle["gershgorin"] == pytest.approx(gershgorin, rel=1e-12)
        assert middle["bound"] == pytest.approx(
            spectral, rel=1e-7
        )  # Lanczos, raised by 1e-8 as one process's
        assert "exceeds the stability bound 2/lambda_max(L)" in large["error"]
        named = re.search(r"2/lambda_max\(L\) = ([0-9.e+-]+)", large["error"])
        assert float(named.group(1)) == pytest.approx(spectral, rel=1e-5)
        assert f"{gershgorin:.6g}" in large["error"] and "step_size <=" in large["error"]
    with pytest.raises(UnstableStepSizeError):
        check_step_size(beyond, weights)


def test_layer_refuses_an_operator_of_another_step_size(device):
    weights, _, _ = _graph(20)
    weights = weights.to(device)
    from pdenets.nn import DiffusionLayer

    with pytest.raises(ValueError, match="build them alike"):
        DiffusionLayer(step_size=0.3, weights=PartitionedDiffusion(weights.to_sparse_csr(), 0, 0.2))
    layer = DiffusionLayer(
        step_size=0.2, num_steps=2, weights=PartitionedDiffusion(weights.to_sparse_csr(), 0, 0.2)
    )
    x = torch.rand(20, 4, dtype=torch.float64).to(device)
    expected = DiffusionOperator(weights, 0.2).apply(x, 2)
    torch.testing.assert_close(layer(x), expected, rtol=0, atol=1e-12)


def test_the_lanczos_bound_of_a_graph_under_ten_nodes_comes_from_its_last_step():
    """A 7-node weighted path: Lanczos' last β stays above its 1e-14 cut, so the only Ritz value is the one
    taken at the last step (a graph of fewer than 10 nodes never reaches the every-10-steps check). A step
    size between Gershgorin's bound and ``2 / λ_max`` is admitted with the spectral bound."""
    from pdenets.operators.partitioned import PartitionedDiffusion

    nodes = 7
    dense = torch.zeros(nodes, nodes, dtype=torch.float64)
    for i in range(nodes - 1):
        dense[i, i + 1] = dense[i + 1, i] = 1.0 + 0.3 * i
    gershgorin = stability_bound(dense)
    spectral = stability_bound(dense, method="spectral")
    assert spectral > 1.05 * gershgorin
    operator = PartitionedDiffusion(dense.to_sparse_csr(), 0, (gershgorin + spectral) / 2)
    assert operator.bound == pytest.approx(spectral, rel=1e-7)
