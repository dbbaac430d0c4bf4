"""Few-shot heads: all tasks trained together vs one task at a time, and against BD-CSPN, side by side in one
run.

    python benchmarks/fewshot.py                  # 1,000 tasks at M = 64 and M = 512
    python benchmarks/fewshot.py --quick          # 100 tasks
    python benchmarks/fewshot.py --epochs 100     # the paper's 100 SGD steps per task

Method (5), internal convection-diffusion (the Diff-ResNet head), 5-way 1-shot, 15 queries,
r = 10, γ = 0.5, 10 SGD steps per task (the default; ``--epochs``), on features drawn around
random class centres:

* ``loop``: the reference — a :class:`~pdenets.models.DiffResNet` and an optimizer per task,
  trained in a Python loop with ``r`` sequential diffusion steps per forward pass (the way
  the paper's code runs episodes);
* ``batched``: :func:`pdenets.models.fewshot.train_heads` — the parameters of all tasks
  stacked, one batched product per layer, ``(I − γL)^r`` formed once per task.

Both start from the same parameters and must give the same predictions. Times are medians
of ``--repeats`` runs; the ratio is loop time / batched time. Beside them ``bd-cspn``
(:class:`~pdenets.models.fewshot.BDCSPN`, closed form, batched) on the same tasks: the cheapest
transductive method, and what the trained head costs against it (batched time / BD-CSPN time), and
LaplacianShot (:class:`~pdenets.models.fewshot.LaplacianShot`) likewise, and the default method
(:class:`~pdenets.models.fewshot.Ensemble`: LaplacianShot and the head together) against LaplacianShot.
``--dims`` picks the widths
(default ``64,512``; ``384`` is the width of the sentence embeddings).

Roofline: the matrix-product FLOPs of one task's training (``torch.utils.flop_counter``,
forward and backward, 100 steps), the GFLOP/s each path achieves, and the machine's peak
measured the same way on one large float32 product. A path far below the peak at the same
FLOPs is bound by per-operation overhead (Python, dispatch, small products), not arithmetic. The floor
(FLOPs / peak) is the time no implementation of the same products beats: against LaplacianShot's time it
says how close to LaplacianShot the head can come at that width.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pdenets.models.fewshot import BDCSPN, Ensemble, Internal, LaplacianShot, classify  # noqa: E402


def tasks(count: int, dim: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(count, 5, dim, generator=generator) * (3.0 / dim**0.5)
    support = centres + torch.randn(count, 5, dim, generator=generator) / dim**0.5
    query = centres.repeat_interleave(15, 1) + torch.randn(count, 75, dim, generator=generator) / dim**0.5
    return (
        support,
        torch.arange(5).expand(count, -1),
        query,
        torch.arange(5).repeat_interleave(15).expand(count, -1),
    )


def timed(function, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def task_flops(settings, support, support_labels, query) -> float:
    """Matrix-product FLOPs of training one task's head (forward + backward, every step)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        classify(support[:1], support_labels[:1], query[:1], 5, settings, seeds=[0])
    return float(counter.get_total_flops())


def peak_gflops(size: int = 2048, repeats: int = 5) -> float:
    a, b = torch.randn(size, size), torch.randn(size, size)
    seconds, _ = timed(lambda: a @ b, repeats)
    return 2 * size**3 / seconds / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tasks", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--epochs", type=int, default=None, help="SGD steps per task (default: the head's, 10)"
    )
    parser.add_argument("--dims", default="64,512", help="feature widths M, comma-separated")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    count = args.tasks or (100 if args.quick else 1000)
    settings = Internal(num_steps=10, step_size=0.5, **({"epochs": args.epochs} if args.epochs else {}))
    rows = []
    peak = peak_gflops()
    print(
        f"machine peak (one 2048 x 2048 float32 product, {torch.get_num_threads()} threads): {peak:.1f} "
        "GFLOP/s"
    )
    print(
        f"{'M':>5} {'tasks':>6} {'loop s':>9} {'batched s':>10} {'loop ms/task':>13} {'batched ms/task':>16} "
        f"{'ratio':>7} {'acc loop':>9} {'acc batched':>12} {'same predictions':>17} {'MFLOP/task':>11} "
        f"{'loop GFLOP/s':>13} {'batched GFLOP/s':>16} {'bd-cspn ms/task':>16} {'batched/bd-cspn':>16} "
        f"{'laplacianshot ms/task':>22} {'batched/laplacianshot':>22} {'floor ms/task':>14} "
        f"{'floor/laplacianshot':>20} {'ensemble ms/task':>17} {'ensemble/laplacianshot':>23}"
    )
    for dim in (int(width) for width in args.dims.split(",")):
        support, support_labels, query, query_labels = tasks(count, dim)
        seeds = list(range(count))
        classify(support[:2], support_labels[:2], query[:2], 5, settings, seeds=seeds[:2])  # warm-up
        loop_s, looped = timed(
            lambda: classify(support, support_labels, query, 5, settings, seeds=seeds, batched=False),
            args.repeats,
        )
        batched_s, batched = timed(
            lambda: classify(support, support_labels, query, 5, settings, seeds=seeds),
            args.repeats,
        )
        row = {
            "M": dim,
            "tasks": count,
            "loop_s": loop_s,
            "batched_s": batched_s,
            "ratio": loop_s / batched_s,
            "accuracy_loop": float((looped.argmax(2) == query_labels).double().mean()),
            "accuracy_batched": float((batched.argmax(2) == query_labels).double().mean()),
            "same_predictions": bool(torch.equal(looped.argmax(2), batched.argmax(2))),
        }
        bdcspn_s, _ = timed(
            lambda: classify(support, support_labels, query, 5, BDCSPN()), max(args.repeats, 5)
        )
        laplacian_s, _ = timed(
            lambda: classify(support, support_labels, query, 5, LaplacianShot()), max(args.repeats, 5)
        )
        # the default method: LaplacianShot and the head with its own settings (10 SGD steps), averaged
        ensemble_s, _ = timed(
            lambda: classify(support, support_labels, query, 5, Ensemble(), seeds=seeds), args.repeats
        )
        row.update(
            ensemble_s=ensemble_s,
            ensemble_over_laplacianshot=ensemble_s / laplacian_s,
            bdcspn_s=bdcspn_s,
            batched_over_bdcspn=batched_s / bdcspn_s,
            laplacianshot_s=laplacian_s,
            batched_over_laplacianshot=batched_s / laplacian_s,
        )
        flops = task_flops(settings, support, support_labels, query)
        row.update(
            flops_per_task=flops,
            loop_gflops=flops * count / loop_s / 1e9,
            batched_gflops=flops * count / batched_s / 1e9,
            peak_gflops=peak,
            # the head's products alone, run at the machine's peak: no implementation of these FLOPs is faster
            floor_ms_per_task=1000 * flops / (peak * 1e9),
        )
        rows.append(row)
        print(
            f"{dim:>5} {count:>6} {loop_s:>9.2f} {batched_s:>10.2f} {1000 * loop_s / count:>13.2f} "
            f"{1000 * batched_s / count:>16.2f} {row['ratio']:>6.1f}x {row['accuracy_loop']:>9.4f} "
            f"{row['accuracy_batched']:>12.4f} {str(row['same_predictions']):>17} {flops / 1e6:>11.1f} "
            f"{row['loop_gflops']:>13.2f} {row['batched_gflops']:>16.2f} {1000 * bdcspn_s / count:>16.3f} "
            f"{row['batched_over_bdcspn']:>15.1f}x {1000 * laplacian_s / count:>22.3f} "
            f"{row['batched_over_laplacianshot']:>21.1f}x {row['floor_ms_per_task']:>14.2f} "
            f"{row['floor_ms_per_task'] / (1000 * laplacian_s / count):>19.1f}x "
            f"{1000 * ensemble_s / count:>17.2f} {row['ensemble_over_laplacianshot']:>22.1f}x",
            flush=True,
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
