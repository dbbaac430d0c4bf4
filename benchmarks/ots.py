"""Exact optimal assignment for OTS: each available solver, side by side, time and peak memory.

    python benchmarks/ots.py                       # m = 1,000 / 5,000 / 10,000 points of dimension 1,000
    python benchmarks/ots.py --sizes 1000 --repeat 3

Inputs: ``m`` standard normal points ``x`` in ``R^1000`` and ``y = x + 0.5·ξ`` (a network-like map
that keeps most points near their optimal partner; ``--mapping independent``: ``y`` unrelated to ``x``,
the hard case for the solvers). Each measurement builds the squared-distance
matrix (:func:`pdenets.analysis.transport.squared_distances`) and solves the assignment
(:func:`~pdenets.analysis.transport.optimal_assignment`), in a fresh process so that the peak resident
memory (``ru_maxrss``) belongs to that solver alone. Solvers: ``scipy`` (always), ``pot``
(``pip install pot``) and ``lapjv`` (``pip install lap``) where installed. Every solver must return
the same optimal cost; times are medians, ratios are ``scipy time / solver time``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import time

DIMENSION = 1000


def _measure(solver: str, size: int, seed: int, mapping: str, queue) -> None:
    import numpy as np
    import torch

    from pdenets.analysis.transport import optimal_assignment, squared_distances

    torch.set_num_threads(2)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(size, DIMENSION, generator=generator)
    noise = torch.randn(size, DIMENSION, generator=generator)
    y = x + 0.5 * noise if mapping == "near" else noise  # "independent": a hard, unstructured assignment
    start = time.perf_counter()
    cost = squared_distances(x, y).numpy()
    built = time.perf_counter()
    assignment = optimal_assignment(cost, solver)
    done = time.perf_counter()
    queue.put(
        {
            "solver": solver,
            "m": size,
            "mapping": mapping,
            "cost_seconds": built - start,
            "solve_seconds": done - built,
            "seconds": done - start,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "optimal_cost": float(cost[np.arange(size), assignment].mean()),
            "ots": float(np.mean(assignment == np.arange(size))),
        }
    )


def _available() -> list:
    solvers = ["scipy"]
    for module, name in (("ot", "pot"), ("lap", "lapjv")):
        try:
            __import__(module)
            solvers.append(name)
        except ImportError:
            pass
    return solvers


def main() -> None:
    parser = argparse.ArgumentParser(
        allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell (the median is reported)")
    parser.add_argument(
        "--mapping",
        choices=("near", "independent"),
        default="near",
        help="y = x + 0.5ξ (network-like, default) or y independent of x (hard)",
    )
    parser.add_argument("--json", help="also write the measurements here")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    rows = []
    for size in args.sizes:
        for solver in _available():
            runs = []
            for repeat in range(args.repeat):
                queue = context.Queue()
                process = context.Process(target=_measure, args=(solver, size, repeat, args.mapping, queue))
                process.start()
                runs.append(queue.get())
                process.join()
            runs.sort(key=lambda r: r["seconds"])
            rows.append(runs[len(runs) // 2])
            row = rows[-1]
            print(
                f"m={size:>6} {solver:>6}: {row['seconds']:7.2f} s (distances {row['cost_seconds']:.2f} s, "
                f"assignment {row['solve_seconds']:.2f} s), peak {row['peak_mib']:8.0f} MiB, "
                f"cost {row['optimal_cost']:.6f}, OTS {row['ots']:.4f}",
                flush=True,
            )
    print("\nratios (scipy time / solver time, same m):")
    for size in args.sizes:
        cells = {r["solver"]: r for r in rows if r["m"] == size}
        reference = cells["scipy"]
        for solver, row in cells.items():
            same = abs(row["optimal_cost"] - reference["optimal_cost"]) <= 1e-9 * max(
                1.0, reference["optimal_cost"]
            )
            print(
                f"  m={size:>6} {solver:>6}: {reference['seconds'] / row['seconds']:.2f}x, "
                f"memory {row['peak_mib'] / reference['peak_mib']:.2f}x of scipy, same optimum: {same}"
            )
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(rows, stream, indent=2)


if __name__ == "__main__":
    main()
