"""Sparse vs dense diffusion and chunked vs dense kNN, measured side by side in one run.

    python benchmarks/diffusion.py            # full (about 25 minutes on 2 cores)
    python benchmarks/diffusion.py --quick    # small sizes, under a minute

Part 1 — diffusion, forward + backward of ``r`` explicit steps ``X ← (I − γL)X`` on a kNN
graph (k = 10, C = 16 features):

* ``dense``: the reference implementation of the paper's code (dense ``L``, ``x − γ L x``);
* ``torch COO``: ``torch.sparse.mm`` with torch's generic sparse backward;
* ``pdenets``: :class:`pdenets.operators.DiffusionOperator` (CSR ``I − γL``, precomputed
  transpose for the backward pass).

Part 2 — k-nearest neighbours (k = 10, D = 16): one dense ``N×N`` distance matrix + top-k
vs :func:`pdenets.operators.knn_search` (chunked exact; faiss HNSW approximate).

Part 3 — the largest N each approach handles under a memory cap: every trial runs in a
child process limited with ``RLIMIT_AS``; N doubles until the child fails.

Times are medians over repeats; ratios are ``reference time / pdenets time``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import largest_size, median_time, peak_memory_gib  # noqa: E402

warnings.filterwarnings("ignore")
import pdenets  # noqa: E402,F401  (silences torch's sparse beta warnings)
from pdenets.operators import DiffusionOperator, knn_gaussian_weights, knn_search  # noqa: E402
from pdenets.operators.knn import faiss_available  # noqa: E402

FEATURES = 16
NEIGHBOURS = 10


def random_graph(num_nodes: int, seed: int = 0) -> torch.Tensor:
    """A kNN-like sparse graph without the cost of a neighbour search: k random neighbours per node."""
    generator = torch.Generator().manual_seed(seed)
    rows = torch.arange(num_nodes).repeat_interleave(NEIGHBOURS)
    cols = torch.randint(0, num_nodes, (num_nodes * NEIGHBOURS,), generator=generator)
    values = torch.full((num_nodes * NEIGHBOURS,), 1.0 / (2 * NEIGHBOURS))
    weights = torch.sparse_coo_tensor(torch.stack([rows, cols]), values, (num_nodes, num_nodes))
    return (weights + weights.transpose(0, 1)).coalesce()


def bench_diffusion(sizes, steps, repeats):
    print(
        f"\n## Diffusion: forward + backward, r = {steps} steps, kNN graph k = {NEIGHBOURS}, C = {FEATURES}"
    )
    print(
        f"{'N':>8} {'dense s':>10} {'torch COO s':>12} {'pdenets s':>10} {'dense/ours':>11} {'COO/ours':>9}"
    )
    rows = []
    for num_nodes in sizes:
        points = torch.randn(num_nodes, 8)
        weights = knn_gaussian_weights(
            points, NEIGHBOURS, sigma_neighbor=4, normalization="symmetric", symmetrize_weights=True
        )
        step_size = 0.5
        operator = DiffusionOperator(weights, step_size)
        features = torch.randn(num_nodes, FEATURES, requires_grad=True)
        degrees = torch.sparse.sum(weights, 1).to_dense()
        laplacian_coo = (
            torch.sparse_coo_tensor(torch.arange(num_nodes).repeat(2, 1), degrees, weights.shape) - weights
        ).coalesce()

        def ours():
            operator.apply(features, steps).sum().backward()

        def coo():
            out = features
            for _ in range(steps):
                out = out - step_size * torch.sparse.mm(laplacian_coo, out)
            out.sum().backward()

        result = {"N": num_nodes, "pdenets_s": median_time(ours, repeats), "coo_s": median_time(coo, repeats)}
        if num_nodes <= 16384:
            laplacian_dense = laplacian_coo.to_dense()

            def dense():
                out = features
                for _ in range(steps):
                    out = out - step_size * (laplacian_dense @ out)
                out.sum().backward()

            result["dense_s"] = median_time(dense, max(1, repeats // 2))
            del laplacian_dense
        dense_s = result.get("dense_s")
        print(
            f"{num_nodes:>8} {dense_s if dense_s else float('nan'):>10.4f} {result['coo_s']:>12.4f} "
            f"{result['pdenets_s']:>10.4f} {(dense_s or float('nan')) / result['pdenets_s']:>10.1f}x "
            f"{result['coo_s'] / result['pdenets_s']:>8.1f}x"
        )
        rows.append(result)
    return rows


def bench_knn(sizes, repeats):
    print(f"\n## kNN: k = {NEIGHBOURS}, D = {FEATURES}")
    print(
        f"{'N':>8} {'dense s':>10} {'chunked s':>10} {'faiss s':>9} {'dense/chunked':>14} "
        f"{'faiss recall':>13}"
    )
    rows = []
    for num_nodes in sizes:
        points = torch.randn(num_nodes, FEATURES)
        result = {"N": num_nodes}
        result["chunked_s"] = median_time(lambda: knn_search(points, NEIGHBOURS, backend="chunked"), repeats)
        if num_nodes <= 32768:

            def dense():
                distances = torch.cdist(points, points)
                distances.fill_diagonal_(float("inf"))
                return torch.topk(distances, NEIGHBOURS, largest=False)

            result["dense_s"] = median_time(dense, repeats)
        if faiss_available():
            result["faiss_s"] = median_time(lambda: knn_search(points, NEIGHBOURS, backend="faiss"), 1)
            exact = knn_search(points, NEIGHBOURS, backend="chunked").indices
            approx = knn_search(points, NEIGHBOURS, backend="faiss").indices
            hits = (approx[:, :, None] == exact[:, None, :]).any(-1).sum().item()
            result["faiss_recall"] = hits / exact.numel()
        dense_s = result.get("dense_s", float("nan"))
        faiss_s = result.get("faiss_s", float("nan"))
        print(
            f"{num_nodes:>8} {dense_s:>10.4f} {result['chunked_s']:>10.4f} {faiss_s:>9.3f} "
            f"{dense_s / result['chunked_s']:>13.2f}x {result.get('faiss_recall', float('nan')):>13.3f}"
        )
        rows.append(result)
    return rows


# --------------------------------------------------------------------------- memory trials


def trial(kind: str, num_nodes: int) -> None:
    """Run in a child process: one forward + backward diffusion step or one kNN search at size N."""
    torch.manual_seed(0)
    if kind == "dense-diffusion":
        laplacian = torch.zeros(num_nodes, num_nodes)
        laplacian.diagonal().fill_(1.0)
        features = torch.randn(num_nodes, FEATURES, requires_grad=True)
        (features - 0.5 * (laplacian @ features)).sum().backward()
    elif kind == "sparse-diffusion":
        operator = DiffusionOperator(random_graph(num_nodes), 0.5, check_stability=False)  # memory only
        features = torch.randn(num_nodes, FEATURES, requires_grad=True)
        operator.apply(features, 2).sum().backward()
    elif kind == "dense-knn":
        points = torch.randn(num_nodes, FEATURES)
        torch.topk(torch.cdist(points, points), NEIGHBOURS, largest=False)
    elif kind == "faiss-knn":
        knn_search(torch.randn(num_nodes, FEATURES), NEIGHBOURS, backend="faiss")
    else:
        raise ValueError(kind)
    print(json.dumps({"peak_gib": peak_memory_gib()}))


def largest_sizes(kinds, start_sizes, cap_gib, timeout, max_size):
    print(
        f"\n## Largest N under a {cap_gib:g} GiB memory cap "
        f"(N doubles until a trial fails or takes over {timeout:g} s)"
    )
    found = {}
    for kind in kinds:
        best, reason = largest_size(__file__, kind, start_sizes[kind], cap_gib, timeout, max_size)
        if best:
            print(
                f"{kind:>17}: N = {best[0]:>10,}  (peak {best[1]['peak_gib']:.2f} GiB); next size failed: "
                f"{reason}"
            )
            found[kind] = {"largest_N": best[0], "peak_gib": best[1]["peak_gib"], "next_failure": str(reason)}
        else:
            print(f"{kind:>17}: even N = {start_sizes[kind]} failed ({reason})")
    return found


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--trial":
        trial(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(
        allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--memory-cap-gib", type=float, default=16.0)
    parser.add_argument("--json", type=str, default=None, help="also write the measurements to this file")
    parser.add_argument(
        "--part",
        choices=["all", "speed", "memory"],
        default="all",
        help="speed: timings only; memory: largest-N trials only",
    )
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs")
    if args.part == "memory":
        results = {
            "largest": largest_sizes(
                ["dense-diffusion", "sparse-diffusion", "dense-knn", "faiss-knn"],
                {"dense-diffusion": 8192, "sparse-diffusion": 2**20, "dense-knn": 8192, "faiss-knn": 2**18},
                args.memory_cap_gib,
                300,
                2**26,
            )
        }
    elif args.part == "speed":
        results = {
            "diffusion": bench_diffusion([1000, 2000, 4000, 8000, 16000, 64000, 256000], steps=10, repeats=5),
            "knn": bench_knn([2000, 8000, 32000, 128000], repeats=3),
        }
    elif args.quick:
        results = {
            "diffusion": bench_diffusion([1000, 4000], steps=10, repeats=3),
            "knn": bench_knn([2000, 8000], repeats=2),
            "largest": largest_sizes(
                ["dense-diffusion", "sparse-diffusion"],
                {"dense-diffusion": 4096, "sparse-diffusion": 65536},
                2.0,
                60,
                2**20,
            ),
        }
    else:
        results = {
            "diffusion": bench_diffusion([1000, 2000, 4000, 8000, 16000, 64000, 256000], steps=10, repeats=5),
            "knn": bench_knn([2000, 8000, 32000, 128000], repeats=3),
            "largest": largest_sizes(
                ["dense-diffusion", "sparse-diffusion", "dense-knn", "faiss-knn"],
                {"dense-diffusion": 8192, "sparse-diffusion": 2**20, "dense-knn": 8192, "faiss-knn": 2**18},
                args.memory_cap_gib,
                300,
                2**26,
            ),
        }
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
