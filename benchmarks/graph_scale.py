"""One Diff-ResNet epoch on a large graph: how far from the memory roofline, and split over processes.

    python benchmarks/graph.py --roofline [--graph knn|block]   # bandwidth, bytes per epoch, node orders,
                                                                # epoch time on 1 and 2 cores
    python benchmarks/graph.py --distributed 2 [--graph knn|block] # the same epoch on 2 processes vs 1:
                                                  # equal loss and gradients, peak memory per process

Two graphs of 1,048,576 nodes, 64 features, both by default (``--graph`` picks one): ``knn``, the graph
Diff-ResNet builds on data (each point of a 5-component Gaussian mixture in 3-D linked to its 10 nearest
points, symmetrized; the nodes in the random order of the points, as a user's ids come), and ``block``
(``block_graph_csr``: 5 blocks, average degree ~10, 80 % of the edges inside a block, at random: no
order gives its rows locality, the worst case). ``r = 20`` diffusion steps with dropout 0.25 before each,
``γ = 0.25``; an epoch is one training step (forward, adjoint backward, Adam) and one evaluation pass, as in
``benchmarks/graph.py``. The model's operator keeps its default ``node_order="auto"``: the k-NN graph is
stored in reverse Cuthill–McKee order, the block graph as given.

**Bytes an epoch must move** (the roofline's numerator), per diffusion step on ``C`` columns: the stored
entries of ``A`` and their column indices (``nnz × (4 + 4)``), the row pointers (``(N + 1) × 4``), one
gathered row of ``X`` per stored entry (``nnz × C × 4``: the rows an entry points at are anywhere in memory on
this graph) and the output (``N × C × 4``). Training runs ``r`` steps forward and ``r`` transposed steps
backward on ``C = 64``; evaluation ``r`` steps on ``C = 5`` (the classifier goes first). The memory bound is
these bytes over the bandwidth of a STREAM triad ``a = b + s·c`` on arrays far larger than the caches (3
arrays × 4 bytes per element counted, as STREAM counts).
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from torch.nn import functional as F

NODES = int(os.environ.get("PDENETS_BENCH_NODES", 2**20))  # a smaller graph for a smoke run
STEPS = 20
STEP_SIZE = 0.25
DROPOUT = 0.25
FEATURES = 64
CLASSES = 5


def triad_bandwidth(threads: int, elements: int = 1 << 26, repeats: int = 7) -> float:
    """STREAM triad ``a = b + 3c`` in torch on ``threads`` threads: bytes (3 arrays × 4) per second,
    median."""
    torch.set_num_threads(threads)
    a, b, c = torch.empty(elements), torch.rand(elements), torch.rand(elements)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        torch.add(b, c, alpha=3.0, out=a)
        times.append(time.perf_counter() - start)
    return 3 * 4 * elements / float(np.median(times))


def gather_bandwidth(threads: int, rows: int = NODES, columns: int = FEATURES, count: int = 1 << 22) -> float:
    """Rows of 64 float32 read at random (``index_select``): bytes read per second, median of 5."""
    torch.set_num_threads(threads)
    table = torch.rand(rows, columns)
    index = torch.randint(0, rows, (count,), generator=torch.Generator().manual_seed(0))
    out = torch.empty(count, columns)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        torch.index_select(table, 0, index, out=out)
        times.append(time.perf_counter() - start)
    return count * columns * 4 / float(np.median(times))


def epoch_bytes(
    nnz: int, nodes: int, columns: int = FEATURES, classes: int = CLASSES, steps: int = STEPS
) -> dict:
    """The bytes of one epoch's diffusion steps (see the module), by phase."""

    def step(width: int) -> int:
        return nnz * 8 + (nodes + 1) * 4 + nnz * width * 4 + nodes * width * 4

    return {
        "forward": steps * step(columns),
        "backward": steps * step(columns),
        "evaluation": steps * step(classes),
    }


#: the graphs measured: a k-NN graph of data points (Diff-ResNet's own kind; nodes in random order), and the
#: block graph of random edges (the worst case: no order gives its rows locality)
GRAPHS = ("knn", "block")


def _problem(graph: str = "block", nodes: int = 0):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _graphs import block_graph_csr, knn_graph_csr

    build = knn_graph_csr if graph == "knn" else block_graph_csr
    return build(nodes or NODES, CLASSES, 10, FEATURES)


def compare_orders(weights, graph: str) -> dict:
    """One step ``A X`` (64 columns, the compiled kernel, 2 threads) in each node order, side by side: the
    given order, reverse Cuthill–McKee (what ``node_order="auto"`` picks where it pays), METIS parts of
    4,096 nodes one after another, and (the k-NN graph, whose points are known) a Morton space-filling
    order of the points."""
    import scipy.sparse as sp

    from pdenets.operators import spmm_kernel
    from pdenets.operators.locality import locality, locality_order, permuted

    matrix = sp.csr_matrix(
        (weights.values().numpy(), weights.col_indices().numpy(), weights.crow_indices().numpy()),
        shape=tuple(weights.shape),
    )
    nodes = matrix.shape[0]
    orders = {"given": (lambda: None)}
    orders["RCM"] = lambda: locality_order(matrix, "rcm")

    def metis_parts():
        import pymetis

        _, membership = pymetis.part_graph(max(2, nodes // 4096), xadj=matrix.indptr, adjncy=matrix.indices)
        return np.argsort(np.asarray(membership), kind="stable")

    orders["METIS parts of 4,096"] = metis_parts
    if graph == "knn":
        from _graphs import mixture_points

        orders["Morton (the points)"] = lambda: morton_order(mixture_points(nodes, CLASSES)[0])
    torch.set_num_threads(2)
    features = np.random.default_rng(0).random((nodes, FEATURES), dtype=np.float32)
    rows = {}
    print(f"\nnode orders of the {graph} graph: one step A X (64 columns, 2 threads, median of 3):")
    print("| order | locality (entries within 32,768 rows) | step s | finding the order s |")
    print("|---|---:|---:|---:|")
    for name, find in orders.items():
        start = time.perf_counter()
        try:
            order = find()
        except ImportError as error:
            print(f"| {name} | — | — | ({error}) |")
            continue
        seconds = time.perf_counter() - start
        stored = matrix if order is None else permuted(matrix, order)
        spmm_kernel.csr_product(stored.indptr, stored.indices, stored.data, features)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            spmm_kernel.csr_product(stored.indptr, stored.indices, stored.data, features)
            times.append(time.perf_counter() - start)
        rows[name] = {
            "locality": locality(stored.indptr, stored.indices),
            "step_s": float(np.median(times)),
            "order_s": seconds,
        }
        print(f"| {name} | {rows[name]['locality']:.3f} | {rows[name]['step_s']:.3f} | {seconds:.1f} |")
    return rows


def morton_order(points: np.ndarray, bits: int = 10) -> np.ndarray:
    """The points sorted along a Z-order (Morton) curve of ``bits`` bits per axis."""
    low, span = points.min(0), np.ptp(points, 0) + 1e-12
    grid = np.clip((points - low) / span * (2**bits - 1), 0, 2**bits - 1).astype(np.uint64)
    code = np.zeros(len(points), dtype=np.uint64)
    for bit in range(bits):
        for axis in range(points.shape[1]):
            code |= ((grid[:, axis] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(
                points.shape[1] * bit + axis
            )
    return np.argsort(code, kind="stable")


def _epoch(model, inputs, labels, train, optimizer, loss_function=None):
    model.train()
    optimizer.zero_grad()
    logits = model(inputs)
    loss = loss_function(logits) if loss_function else F.cross_entropy(logits[train], labels[train])
    loss.backward()
    return loss


def compare_kernels(weights, step_bytes: float, bandwidth: float) -> dict:
    """One step ``A X`` (64 columns) with torch's CSR kernel, SciPy's and the compiled one, 1 and 2
    threads."""
    import scipy.sparse as sp

    from pdenets.operators import DiffusionOperator, spmm_kernel

    nodes = int(weights.shape[0])
    operator = DiffusionOperator(weights, STEP_SIZE, check_stability=False)
    features = torch.rand(nodes, FEATURES)
    crow, col, values = operator.propagation._parts()
    scipy_matrix = sp.csr_matrix((values, col, crow), shape=(nodes, nodes))
    torch_matrix = operator.propagation.torch_csr("cpu", torch.float32)
    kernels = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        candidates = {"torch CSR": lambda: torch_matrix @ features}
        if threads == 1:  # SciPy's product is single-threaded
            candidates["SciPy csr_matvecs"] = lambda: scipy_matrix @ features.numpy()
        if spmm_kernel.available():
            spmm_kernel.csr_product(crow, col, values, features.numpy())  # compile once
            candidates["compiled (pdenets)"] = lambda: spmm_kernel.csr_product(
                crow, col, values, features.numpy()
            )
        for name, function in candidates.items():
            times = []
            for _ in range(3):
                start = time.perf_counter()
                function()
                times.append(time.perf_counter() - start)
            kernels[f"{name}, {threads} thread(s)"] = float(np.median(times))
    print(
        f"\none step A X (64 columns; its bytes {step_bytes / 1e9:.2f} GB, bound at 2 threads "
        f"{step_bytes / bandwidth:.3f} s):"
    )
    for name, seconds in kernels.items():
        print(f"  {name:<32} {seconds:7.3f} s")
    return kernels


def roofline(repeats: int = 1, graph: str = "block") -> dict:
    from pdenets.models import DiffResNet
    from pdenets.operators import spmm_kernel

    print(f"torch {torch.__version__}; compiled CSR kernel (numba): {spmm_kernel.available()}")
    bandwidth = {threads: triad_bandwidth(threads) for threads in (1, 2)}
    gather = {threads: gather_bandwidth(threads) for threads in (1, 2)}
    for threads in (1, 2):
        print(
            f"{threads} thread(s): triad {bandwidth[threads] / 1e9:.2f} GB/s, random 256-byte rows "
            f"{gather[threads] / 1e9:.2f} GB/s"
        )
    x, labels, weights = _problem(graph)
    nnz, nodes = int(weights._nnz()), int(weights.shape[0])
    phases = epoch_bytes(nnz, nodes)
    total = sum(phases.values())
    print(f"\n{graph} graph: N = {nodes:,}, stored entries of A = {nnz:,}, {FEATURES} features, r = {STEPS}")
    print(
        "bytes per epoch: "
        + ", ".join(f"{name} {value / 1e9:.1f} GB" for name, value in phases.items())
        + f"; total {total / 1e9:.1f} GB"
    )

    kernels = compare_kernels(weights, phases["forward"] / STEPS, bandwidth[2])
    orders = compare_orders(weights, graph)

    torch.manual_seed(0)
    train = torch.randperm(nodes, generator=torch.Generator().manual_seed(0))[:100]
    model = DiffResNet(
        FEATURES,
        CLASSES,
        block="graph",
        num_steps=STEPS,
        step_size=STEP_SIZE,
        dropout=DROPOUT,
        dropout_position="before",
        weights=weights,
        check_stability=False,
    )
    del weights
    stored = model.diffusion.operator_for(x).order is not None
    print(f"\nthe model's operator: {model.diffusion.operator_for(x)!r}")
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

    def epoch():
        _epoch(model, x, labels, train, optimizer)
        optimizer.step()
        model.eval()
        with torch.no_grad():
            model(x)

    times = {}
    torch.set_num_threads(2)
    epoch()  # warm-up: the compiled kernels of each width
    for threads in (2, 1):
        torch.set_num_threads(threads)
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            epoch()
            samples.append(time.perf_counter() - start)
        times[threads] = float(np.median(samples))
    torch.set_num_threads(2)
    profile = cProfile.Profile()
    profile.enable()
    epoch()
    profile.disable()
    stats = pstats.Stats(profile)
    spent = {"products (compiled kernel)": 0.0, "products (torch CSR, 5 columns)": 0.0, "dropout masks": 0.0}
    for (filename, _, function), row in stats.stats.items():
        tottime = row[2]
        if filename.endswith("spmm_kernel.py") and function == "product":
            spent["products (compiled kernel)"] += tottime
        elif filename.endswith("sparse.py") and function == "product":
            spent["products (torch CSR, 5 columns)"] += tottime
        elif function == "apply_dropout_mask_":
            spent["dropout masks"] += row[3]
    profiled = sum(row[2] for row in stats.stats.values())
    spent["everything else"] = profiled - sum(spent.values())
    print(f"\nwhere one epoch's time goes (2 threads, profiled, {profiled:.1f} s):")
    for name, seconds in spent.items():
        print(f"  {name:<34} {seconds:6.1f} s ({100 * seconds / profiled:4.1f} %)")
    bound = {threads: total / bandwidth[threads] for threads in (1, 2)}
    gather_bound = {threads: total / gather[threads] for threads in (1, 2)}
    print(
        "\n| threads | triad GB/s | bytes/epoch GB | epoch T s | bound B s | R = T/B | T / (bytes / gather "
        "rate) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for threads in (1, 2):
        print(
            f"| {threads} | {bandwidth[threads] / 1e9:.2f} | {total / 1e9:.1f} | {times[threads]:.1f} | "
            f"{bound[threads]:.1f} | {times[threads] / bound[threads]:.2f} | "
            f"{times[threads] / gather_bound[threads]:.2f} |"
        )
    result = {
        "graph": graph,
        "stored_in_rcm_order": stored,
        "orders": orders,
        "nodes": nodes,
        "nnz": nnz,
        "bytes": phases,
        "triad_bytes_per_s": bandwidth,
        "random_rows_bytes_per_s": gather,
        "epoch_s": times,
        "bound_s": bound,
        "kernels_s": kernels,
        "profile_s": spent,
    }
    print(
        f"roofline: graph {graph}, nodes {nodes}, epoch {times[2]:.1f} s, memory bound {bound[2]:.1f} s, "
        f"ratio {times[2] / bound[2]:.2f}"
    )
    return result


# -- distributed
# ---------------------------------------------------------------------------------------------------


def _peak_gib() -> float:
    from _common import peak_memory_gib  # graph.py, which runs the workers, puts benchmarks/ on the path

    return peak_memory_gib()  # VmHWM: a worker's ru_maxrss would count this benchmark's graph too


def _compile_kernels() -> None:
    """Compile the products an epoch runs (numba's compiler and code take ~0.13 GiB of a process) on tiny
    operands, so that a worker's fixed memory counts them."""
    from pdenets.operators import spmm_kernel

    if not spmm_kernel.available():
        return
    indptr, indices = np.array([0, 1], dtype=np.int32), np.array([0], dtype=np.int32)
    values, dense = np.ones(1, dtype=np.float32), np.ones((1, FEATURES), dtype=np.float32)
    spmm_kernel.csr_product(indptr, indices, values, dense)
    spmm_kernel.masked_csr_product(indptr, indices, values, dense, (1, 0, 1, 1, 1.0))


def worker(folder: str, out: str, whole: bool) -> None:
    """One process: the epoch on its part (under torchrun) or, ``whole``, on the whole graph from all
    parts."""
    import torch.distributed as dist

    from pdenets.models import DiffResNet
    from pdenets.models.partitioned import (
        all_reduce_gradients,
        global_count,
        partitioned_cross_entropy,
        partitioned_diff_resnet,
    )
    from pdenets.operators import DiffusionOperator, load_part

    torch.set_num_threads(1)
    if not whole:
        dist.init_process_group("gloo")
    _compile_kernels()
    # the process before any data: interpreter, torch, pdenets, the process group, the compiled kernels
    fixed = _peak_gib()
    rank = dist.get_rank() if dist.is_initialized() else 0
    settings = {
        "block": "graph",
        "num_steps": STEPS,
        "step_size": STEP_SIZE,
        "dropout": DROPOUT,
        "dropout_position": "before",
        "check_stability": False,
    }
    if whole:
        manifest = json.load(open(os.path.join(folder, "partition.json"), encoding="utf-8"))
        parts = [load_part(folder, k) for k in range(manifest["num_parts"])]
        import scipy.sparse as sp

        rows = sp.vstack(
            [
                sp.csr_matrix(
                    (
                        p.weights.values().numpy(),
                        p.weights.col_indices().numpy(),
                        p.weights.crow_indices().numpy(),
                    ),
                    shape=tuple(p.weights.shape),
                )
                for p in parts
            ],
            format="csr",
        )
        weights = torch.sparse_csr_tensor(
            torch.from_numpy(rows.indptr),
            torch.from_numpy(rows.indices),
            torch.from_numpy(rows.data),
            rows.shape,
            check_invariants=False,
        )
        features = torch.cat([p.features for p in parts])
        labels = torch.cat([p.labels for p in parts])
        train = torch.cat(
            [torch.arange(p.first, p.first + p.labels.numel())[p.labels >= 0][::10000] for p in parts]
        )
        del parts, rows
        # in the partition's order, as the processes hold it: the same dropout masks on the same rows
        operator = DiffusionOperator(weights, STEP_SIZE, check_stability=False, node_order="given")
        del weights
        torch.manual_seed(0)
        model = DiffResNet(FEATURES, CLASSES, weights=operator, **settings)
        del operator
        loss_function = None
    else:
        part = load_part(folder, rank)
        features, labels = part.features, part.labels
        train = torch.arange(part.labels.numel())[part.labels >= 0][::10000]
        total = global_count(train.numel())
        torch.manual_seed(0)
        model = partitioned_diff_resnet(part, CLASSES, **settings)
        del part

        def loss_function(logits):
            return partitioned_cross_entropy(logits, labels, train, total)

    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    start = time.perf_counter()
    loss = _epoch(model, features, labels, train, optimizer, loss_function)
    if not whole:
        all_reduce_gradients(model)
    gradients = {name: parameter.grad.clone() for name, parameter in model.named_parameters()}
    optimizer.step()
    model.eval()
    with torch.no_grad():
        model(features)
    seconds = time.perf_counter() - start
    halo = 0 if whole else model.diffusion.operator_for(features).halo_size
    torch.save(
        {
            "loss": float(loss.detach()),
            "gradients": gradients,
            "peak_gib": _peak_gib(),
            "fixed_gib": fixed,
            "epoch_s": seconds,
            "halo": halo,
        },
        os.path.join(out, f"{'whole' if whole else f'rank-{rank}'}.pt"),
    )
    if dist.is_initialized():
        dist.destroy_process_group()


def distributed(ranks: int, method: str = "metis", graph: str = "block") -> dict:
    from pdenets.operators import partition_graph, save_partition

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "graph.py")  # its --worker mode
    with tempfile.TemporaryDirectory() as scratch:
        x, labels, weights = _problem(graph)
        start = time.perf_counter()
        partition = partition_graph(weights, ranks, method=method)
        partition_s = time.perf_counter() - start
        save_partition(
            os.path.join(scratch, "parts"), partition, weights, features=x.to_dense(), labels=labels
        )
        nodes = int(weights.shape[0])
        del x, labels, weights
        print(
            f"{graph} graph: partitioned {nodes:,} nodes into {ranks} parts with {method} in "
            f"{partition_s:.1f} s "
            f"(cut: {100 * partition.cut_fraction:.1f} % of the edges)"
        )
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        env.pop("WORLD_SIZE", None)
        folder = os.path.join(scratch, "parts")
        single = subprocess.run(
            [sys.executable, here, "--worker", folder, scratch, "whole"],
            env=env,
            capture_output=True,
            text=True,
        )
        if single.returncode:
            raise RuntimeError(single.stderr[-3000:])
        pair = subprocess.run(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                f"--nproc_per_node={ranks}",
                "--standalone",
                here,
                "--worker",
                folder,
                scratch,
                "parts",
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        if pair.returncode:
            raise RuntimeError(pair.stderr[-3000:])
        whole = torch.load(os.path.join(scratch, "whole.pt"))
        parts = [torch.load(os.path.join(scratch, f"rank-{k}.pt")) for k in range(ranks)]
    loss_error = max(abs(part["loss"] - whole["loss"]) for part in parts)
    grad_error = max(
        float((part["gradients"][name] - gradient).abs().max())
        for part in parts
        for name, gradient in whole["gradients"].items()
    )
    peak = max(part["peak_gib"] for part in parts)
    halo = 100 * sum(part["halo"] for part in parts) / nodes
    epoch = max(part["epoch_s"] for part in parts)
    print(f"single process: epoch {whole['epoch_s']:.1f} s, peak {whole['peak_gib']:.2f} GiB (1 thread)")
    for rank, part in enumerate(parts):
        print(
            f"rank {rank}: epoch {part['epoch_s']:.1f} s, peak {part['peak_gib']:.2f} GiB, halo "
            f"{part['halo']:,} "
            f"rows (1 thread)"
        )
    fixed = max(part["fixed_gib"] for part in parts)
    # a rank that held exactly 1/K of everything a process holds beyond its fixed memory
    halved = fixed + (whole["peak_gib"] - whole["fixed_gib"]) / ranks
    print(
        f"fixed memory per process (before any data, kernels compiled) {fixed:.2f} GiB; with the rest split "
        "exactly "
        f"{ranks} ways a rank would peak at {halved:.2f} GiB, {halved / whole['peak_gib']:.2f}x one process"
    )
    print(
        f"distributed: graph {graph}, ranks {ranks}, max |loss - single| {loss_error:.2e}, "
        f"max |grad - single| {grad_error:.2e}, "
        f"peak per rank {peak:.2f} GiB, single {whole['peak_gib']:.2f} GiB, halo {halo:.1f} % of nodes, "
        f"epoch {epoch:.1f} s"
    )
    return {
        "graph": graph,
        "ranks": ranks,
        "loss_error": loss_error,
        "grad_error": grad_error,
        "peak_per_rank_gib": peak,
        "single_peak_gib": whole["peak_gib"],
        "fixed_per_process_gib": fixed,
        "exact_split_peak_gib": halved,
        "halo_percent": halo,
        "epoch_s": epoch,
        "single_epoch_s": whole["epoch_s"],
        "partition_s": partition_s,
        "cut_fraction": partition.cut_fraction,
    }


# -- on paper, to internet scale
# ------------------------------------------------------------------------------------

#: ogbn-papers100M (OGB): nodes, directed edges, feature width
PAPERS_NODES, PAPERS_EDGES, PAPERS_FEATURES = 111_059_956, 1_615_685_872, 128


def halo_fractions(parts=(2, 8, 32, 128), method: str = "metis") -> dict:
    """Per part count ``K``: the mean halo of a part as a fraction of ``N`` and the cut, on the block
    graph."""
    from pdenets.models.partitioned import rows_of_part
    from pdenets.operators import partition_graph

    _, _, weights = _problem()
    coo = weights.to_sparse_coo()
    measured = {}
    for count in parts:
        start = time.perf_counter()
        partition = partition_graph(coo, count, method=method)
        seconds = time.perf_counter() - start
        halos = []
        for part in range(count):
            first, end = partition.rows(part)
            rows = rows_of_part(coo, partition, part)
            columns = rows.col_indices()
            halos.append(int(torch.unique(columns[(columns < first) | (columns >= end)]).numel()))
        measured[count] = {
            "halo_per_part": float(np.mean(halos)) / partition.num_nodes,
            "halo_total": float(np.sum(halos)) / partition.num_nodes,
            "cut": partition.cut_fraction,
            "partition_s": seconds,
        }
        print(
            f"K = {count:>3}: mean halo of a part {100 * measured[count]['halo_per_part']:5.1f} % of N, "
            f"all halos {100 * measured[count]['halo_total']:6.1f} % of N, cut "
            f"{100 * partition.cut_fraction:.1f} %"
            f" ({method}, {seconds:.1f} s)"
        )
    return measured


def estimate(
    halos: dict,
    bandwidth: float,
    ratio: float,
    network: float = 12.5e9,
    steps: int = STEPS,
    width: int = PAPERS_FEATURES,
) -> list:
    """Per-step exchange and epoch time of an ogbn-papers100M-sized graph on K machines (see docs).

    ``halos``: K → measured mean halo fraction of a part (of N); ``bandwidth``: one machine's triad bytes/s;
    ``ratio``: the measured epoch time over its memory bound (R); ``network``: bytes/s per machine each way.
    """
    nnz = 2 * PAPERS_EDGES + PAPERS_NODES  # symmetrized, with self-loops
    rows = []
    for count, halo in halos.items():
        local_nodes, local_nnz = PAPERS_NODES / count, nnz / count
        halo_rows = min(halo * PAPERS_NODES, PAPERS_NODES - local_nodes)
        exchange = halo_rows * width * 4  # bytes in per step (and as many out)
        step_bytes = local_nnz * 8 + local_nodes * 4 + local_nnz * width * 4 + local_nodes * width * 4
        compute = ratio * 2 * steps * step_bytes / bandwidth  # forward + backward at the measured R
        communicate = 2 * steps * exchange / network
        memory = local_nnz * 8 + (local_nodes * 5 + halo_rows) * width * 4
        rows.append(
            {
                "K": count,
                "halo_rows": halo_rows,
                "exchange_gb_per_step": exchange / 1e9,
                "compute_s": compute,
                "communication_s": communicate,
                "epoch_s": compute + communicate,
                "memory_gib": memory / 2**30,
            }
        )
    return rows


def print_estimate(roofline_json=None, network_gbit: float = 100.0) -> None:
    """Measure the halos, then print the ogbn-papers100M table (the machine's figures from a --roofline
    run)."""
    if roofline_json:
        with open(roofline_json, encoding="utf-8") as handle:
            measured = json.load(handle)["roofline"]
        measured = measured.get("block", measured)  # the block graph's figures (older files: the only ones)
        bandwidth = float(measured["triad_bytes_per_s"]["2"])
        ratio = float(measured["epoch_s"]["2"]) / float(measured["bound_s"]["2"])
    else:
        bandwidth, ratio = triad_bandwidth(2), 4.0
    halos = halo_fractions()
    print(
        f"\nogbn-papers100M-sized graph ({PAPERS_NODES:,} nodes, {PAPERS_EDGES:,} edges symmetrized, "
        f"{PAPERS_FEATURES} features, r = {STEPS}); per machine: triad {bandwidth / 1e9:.1f} GB/s at the "
        "measured "
        f"R = {ratio:.2f}, network {network_gbit:g} Gbit/s each way"
    )
    print(
        "| K | halo rows per machine | exchanged per step (in) | compute s | network s | epoch s | memory "
        "GiB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in estimate(
        {count: value["halo_per_part"] for count, value in halos.items() if count > 2},
        bandwidth,
        ratio,
        network=network_gbit * 1e9 / 8,
    ):
        print(
            f"| {row['K']} | {row['halo_rows'] / 1e6:.1f} M | {row['exchange_gb_per_step']:.1f} GB | "
            f"{row['compute_s']:.0f} | {row['communication_s']:.0f} | {row['epoch_s']:.0f} | "
            f"{row['memory_gib']:.0f} |"
        )
