"""Diff-ResNet training on graphs: pdenets vs reference implementations, in one run.

    python benchmarks/graph.py            # Cora + synthetic graphs up to 1M nodes, memory trials (~25 min)
    python benchmarks/graph.py --quick    # Cora + a 10k-node graph, under two minutes
    python benchmarks/graph.py --steps-memory --skip-timings # peak memory vs r, adjoint vs autograd backward
    python benchmarks/graph.py --roofline # bandwidth, bytes per epoch, epoch on 1 and 2 cores
    (graph_scale.py) python benchmarks/graph.py --distributed 2 # the epoch over 2 processes: equal
    loss/gradients, memory per rank

Per epoch = one training step (forward, backward, Adam) + one evaluation pass, the unit
of the node-classification protocol. Three implementations of the same network
(``x + ReLU(FC1 x)``, then ``r`` × [dropout, ``x − γ L x``], then the classifier):

* ``pdenets``: :class:`pdenets.models.DiffResNet` (sparse input features, SciPy/CSR diffusion
  with a precomputed transpose, byte-mask dropout, classifier-first evaluation);
* ``official-style``: what the paper's code does — dense features, ``F.dropout``, and
  ``(Λ − W) x`` with torch sparse COO tensors rebuilt every step;
* ``dense``: the same with a dense ``N×N`` Laplacian (only where it fits in memory).

The largest graph each handles is found by doubling N in child processes limited with
``RLIMIT_AS``. Times are medians; ratios are reference / pdenets.

``--steps-memory``: the peak memory of one training epoch at ``r`` = 5, 20, 80 on one block
graph, with the diffusion's adjoint backward (the default: per-step seeds, transposed
steps backward) and with autograd through the stored steps (one mask kept per step).

The memory trials build their graphs with :func:`block_graph_csr` (chunked, CSR with 32-bit
indices), so that the largest epoch measures the network, not the graph generator; one epoch at a
given size: ``python benchmarks/graph.py --trial pdenets 20000000 20 [block|knn]`` (prints the peak, the
epoch's time and the time to build the model, its operator's node order included).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import torch
from torch.nn import functional as F

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph_scale  # noqa: E402
import pdenets  # noqa: E402,F401
from _common import largest_size, median_time, peak_memory_gib, run_trial  # noqa: E402
from _graphs import block_graph_csr, knn_graph_csr  # noqa: E402
from pdenets.models import DiffResNet  # noqa: E402
from pdenets.operators import gcn_normalize  # noqa: E402

STEP_SIZE, NUM_STEPS, DROPOUT = 0.25, 20, 0.25


class ReferenceDiffResNet(torch.nn.Module):
    """The paper code's forward pass, with a COO (official-style) or dense Laplacian."""

    def __init__(self, source: DiffResNet, weights: torch.Tensor, dense: bool):
        super().__init__()
        self.fc1 = torch.nn.Linear(source.in_features, source.in_features)
        self.classifier = torch.nn.Linear(source.in_features, source.num_classes)
        self.fc1.load_state_dict(source.blocks[0].fc1.state_dict())
        self.classifier.load_state_dict(source.classifier.state_dict())
        weights = weights.coalesce()
        degrees = torch.sparse.sum(weights, 1).to_dense()
        index = torch.arange(weights.shape[0])
        self.diagonal = torch.sparse_coo_tensor(torch.stack([index, index]), degrees, weights.shape)
        self.adjacency = weights
        self.laplacian = (torch.diag(degrees) - weights.to_dense()) if dense else None

    def forward(self, x):
        x = x + F.relu(self.fc1(x))
        for _ in range(NUM_STEPS):
            x = F.dropout(x, DROPOUT, self.training)
            if self.laplacian is not None:
                x = x - STEP_SIZE * (self.laplacian @ x)
            else:
                x = x - STEP_SIZE * torch.sparse.mm(self.diagonal - self.adjacency, x)
        return self.classifier(x)


def block_graph(num_nodes: int, num_classes: int, degree: int, features: int, seed: int = 0):
    """A stochastic-block-like graph in O(N·degree): 80 % of each node's edges inside its block."""
    generator = np.random.default_rng(seed)
    labels = generator.integers(0, num_classes, num_nodes)
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(num_classes))
    sizes = np.bincount(labels, minlength=num_classes)
    half = max(1, degree // 2)
    rows = np.repeat(np.arange(num_nodes), half)
    inside = generator.random(rows.size) < 0.8
    same_block = order[
        starts[labels[rows]] + (generator.random(rows.size) * sizes[labels[rows]]).astype(np.int64)
    ]
    anywhere = generator.integers(0, num_nodes, rows.size)
    cols = np.where(inside, same_block, anywhere)
    keep = rows != cols
    edge_index = torch.from_numpy(np.vstack([rows[keep], cols[keep]]))
    edge_index = torch.cat([edge_index, edge_index.flip(0)], 1)
    centres = generator.random((num_classes, features)) < 0.1
    noise = generator.random((num_nodes, features)) < 0.03
    bag = noise | (centres[labels] & (generator.random((num_nodes, features)) < 0.3))
    bag[:, 0] |= ~bag.any(1)
    x = torch.from_numpy(bag.astype(np.float32))
    x = x / x.sum(1, keepdim=True)
    return x, torch.from_numpy(labels), edge_index


def make_problem(name: str, num_nodes: int = 0, features: int = 64):
    if name == "cora":
        from pdenets.data.transforms import prepared_graph

        graph = prepared_graph("cora", None)
        x, labels, edge_index = graph.x, graph.y, graph.edge_index
    else:
        x, labels, edge_index = block_graph(num_nodes, 5, 10, features)
    weights = gcn_normalize((edge_index, None), x.shape[0])
    train = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(0))[
        : 20 * (int(labels.max()) + 1)
    ]
    return x, labels, weights, train


def epoch_function(model, inputs, labels, train):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

    def epoch():
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(inputs)[train], labels[train]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            model(inputs)

    return epoch


def bench(label, x, labels, weights, train, *, dense_ok: bool, repeats: int):
    torch.manual_seed(0)
    ours = DiffResNet(
        x.shape[1],
        int(labels.max()) + 1,
        block="graph",
        num_steps=NUM_STEPS,
        step_size=STEP_SIZE,
        dropout=DROPOUT,
        dropout_position="before",
        weights=weights,
        check_stability=False,
    )
    sparse_x = x.to_sparse_csr()
    result = {"graph": label, "N": int(x.shape[0]), "features": int(x.shape[1]), "nnz_W": int(weights._nnz())}
    result["pdenets_s"] = median_time(epoch_function(ours, sparse_x, labels, train), repeats)
    official = ReferenceDiffResNet(ours, weights, dense=False)
    ours.eval()
    official.eval()
    with torch.no_grad():  # same function: the references compute what pdenets computes
        assert torch.allclose(ours(sparse_x), official(x), atol=1e-4)
    result["official_style_s"] = median_time(epoch_function(official, x, labels, train), max(1, repeats // 2))
    if dense_ok:
        dense = ReferenceDiffResNet(ours, weights, dense=True)
        result["dense_s"] = median_time(epoch_function(dense, x, labels, train), 1)
    dense_s = result.get("dense_s", float("nan"))
    print(
        f"{label:>16} {result['N']:>9,} {result['features']:>5} {result['pdenets_s']:>10.3f} "
        f"{result['official_style_s']:>14.3f} {dense_s:>9.2f} "
        f"{result['official_style_s'] / result['pdenets_s']:>13.1f}x {dense_s / result['pdenets_s']:>9.1f}x"
    )
    return result


def trial(kind: str, num_nodes: int, num_steps: int = NUM_STEPS, graph: str = "block") -> None:
    """Child process: one training epoch at size N, features 64.

    ``kind``: ``pdenets`` (adjoint backward), ``autograd`` (pdenets, backward through the
    stored steps) or ``dense``; ``graph``: ``block`` or ``knn`` (:mod:`_graphs`).
    """
    if kind == "dense":
        x, labels, weights, train = make_problem("block", num_nodes)
    else:  # built in CSR with 32-bit indices: at tens of millions of nodes the edge list is the memory
        build = knn_graph_csr if graph == "knn" else block_graph_csr
        x, labels, weights = build(num_nodes, 5, 10, 64)
        train = torch.randperm(num_nodes, generator=torch.Generator().manual_seed(0))[:100]
    built = time.perf_counter()
    torch.manual_seed(0)
    model = DiffResNet(
        x.shape[1],
        5,
        block="graph",
        num_steps=num_steps,
        step_size=STEP_SIZE,
        dropout=DROPOUT,
        dropout_position="before",
        weights=weights,
        check_stability=False,
    )
    if kind == "autograd":
        model.diffusion.backward = "autograd"
    if kind == "dense":
        model = ReferenceDiffResNet(model, weights, dense=True)
        inputs = x
    else:
        inputs = x
        del x, weights  # the model holds the operator
    start = time.perf_counter()
    epoch_function(model, inputs, labels, train)()
    print(
        json.dumps(
            {"peak_gib": peak_memory_gib(), "epoch_s": time.perf_counter() - start, "model_s": start - built}
        )
    )


def main() -> None:
    if len(sys.argv) in (4, 5, 6) and sys.argv[1] == "--trial":
        trial(sys.argv[2], *map(int, sys.argv[3:5]), *sys.argv[5:])
        return
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":  # a process of --distributed
        graph_scale.worker(sys.argv[2], sys.argv[3], whole=sys.argv[4] == "whole")
        return
    parser = argparse.ArgumentParser(
        allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--memory-cap-gib", type=float, default=16.0)
    parser.add_argument("--json", default=None)
    parser.add_argument("--skip-memory", action="store_true", help="timings only, no largest-N trials")
    parser.add_argument("--skip-timings", action="store_true", help="no epoch timings (memory studies only)")
    parser.add_argument(
        "--steps-memory",
        action="store_true",
        help="peak memory of one epoch at r = 5, 20, 80, adjoint vs autograd backward",
    )
    parser.add_argument("--steps-memory-nodes", type=int, default=2**20, help="N of the --steps-memory graph")
    parser.add_argument(
        "--roofline",
        action="store_true",
        help="memory bandwidth, bytes per epoch and epoch time on 1 and 2 cores (N = 1,048,576)",
    )
    parser.add_argument(
        "--distributed",
        type=int,
        default=0,
        metavar="K",
        help="the N = 1,048,576 epoch on K processes (METIS parts) against one process",
    )
    parser.add_argument(
        "--partitioner",
        default="metis",
        choices=("metis", "contiguous"),
        help="how --distributed splits the graph (default: metis)",
    )
    parser.add_argument(
        "--graph",
        choices=("knn", "block", "both"),
        default="both",
        help="--roofline / --distributed: the k-NN graph of data points, the block graph of random edges, "
        "or both (default)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="--roofline: timed epochs per thread count")
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="halo of METIS parts (K = 2, 8, 32, 128) of the N = 1,048,576 graph, and the epoch of an "
        "ogbn-papers100M-sized graph on K machines from it (reads --roofline's --json)",
    )
    parser.add_argument(
        "--roofline-json", default=None, help="--estimate: the --json file of a --roofline run"
    )
    args = parser.parse_args()
    if args.estimate:
        graph_scale.print_estimate(args.roofline_json)
        return
    if args.roofline or args.distributed:
        if args.distributed and args.distributed < 2:
            parser.error("--distributed needs K >= 2 processes")
        result: dict = {"roofline": {}, "distributed": {}}
        graphs = graph_scale.GRAPHS if args.graph == "both" else (args.graph,)
        for graph in graphs:
            if args.roofline:
                result["roofline"][graph] = graph_scale.roofline(max(1, args.repeats), graph)
            if args.distributed:
                result["distributed"][graph] = graph_scale.distributed(
                    args.distributed, args.partitioner, graph
                )
        if args.json:
            with open(args.json, "x", encoding="utf-8") as handle:
                json.dump(result, handle, indent=2, default=str)
        return
    torch.set_num_threads(1)
    print(
        f"torch {torch.__version__}, 1 thread (as in the protocol's worker processes); r = {NUM_STEPS}, "
        f"gamma = {STEP_SIZE}, dropout = {DROPOUT}"
    )
    print(
        f"\n{'graph':>16} {'N':>9} {'F':>5} {'pdenets s':>10} {'official-style':>14} {'dense s':>9} "
        f"{'official/ours':>14} {'dense/ours':>10}"
    )
    rows = [] if args.skip_timings else [bench("cora", *make_problem("cora"), dense_ok=True, repeats=5)]
    sizes = [] if args.skip_timings else [10_000] if args.quick else [10_000, 100_000, 1_000_000]
    for size in sizes:
        rows.append(
            bench(
                "block graph",
                *make_problem("block", size),
                dense_ok=size <= 10_000,
                repeats=3 if size <= 100_000 else 1,
            )
        )
    cap = 4.0 if args.quick else args.memory_cap_gib
    largest = {}
    if args.skip_memory:
        kinds = ()
    else:
        kinds = (("dense", 8192, 2**17), ("pdenets", 2**18 if args.quick else 2**20, 2**25))
        print(f"\n## Largest block graph (64 features) for one training epoch under a {cap:g} GiB memory cap")
    for kind, start, limit in kinds:
        best, reason = largest_size(__file__, kind, start, cap, 120 if args.quick else 600, limit)
        if best:
            print(
                f"{kind:>8}: N = {best[0]:>10,} (peak {best[1]['peak_gib']:.2f} GiB, "
                f"epoch {best[1]['epoch_s']:.1f} s);"
                f" next size: {reason}"
            )
            largest[kind] = {"N": best[0], **best[1], "next_failure": reason}
        else:
            print(f"{kind:>8}: even N = {start:,} failed ({reason})")
    steps_memory = (
        steps_memory_study(args.steps_memory_nodes, args.memory_cap_gib) if args.steps_memory else []
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"epochs": rows, "largest": largest, "steps_memory": steps_memory}, handle, indent=2)


def steps_memory_study(num_nodes: int, cap_gib: float):
    """Peak memory of one epoch against r, for both backward passes of the diffusion."""
    print(
        f"\n## Peak memory of one training epoch vs r (block graph, N = {num_nodes:,}, 64 features, "
        f"dropout {DROPOUT} before each step)"
    )
    print(f"{'r':>4} {'adjoint GiB':>12} {'adjoint s':>10} {'autograd GiB':>13} {'autograd s':>11}")
    rows = []
    for num_steps in (5, 20, 80):
        row = {"r": num_steps}
        for kind, label in (("pdenets", "adjoint"), ("autograd", "autograd")):
            result, failure = run_trial(__file__, [kind, num_nodes, num_steps], cap_gib, 1800)
            row[label] = result if result else {"failure": failure}
        cells = [
            f"{row[label]['peak_gib']:>12.2f} {row[label]['epoch_s']:>10.1f}"
            if "peak_gib" in row[label]
            else f"{row[label]['failure']:>23}"
            for label in ("adjoint", "autograd")
        ]
        print(f"{num_steps:>4} {cells[0]} {cells[1]}")
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
