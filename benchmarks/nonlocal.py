"""Nonlocal PIDE blocks: the naive N × M kernel vs the fast exact paths, side by side in one run.

    python benchmarks/nonlocal.py # table at 32×32 and 96×96 + largest resolutions (~30 min on 2 cores) python
    benchmarks/nonlocal.py --quick # 32×32 and 64×64, no search (~2 min) python benchmarks/nonlocal.py
    --skip-search

Two levels per operator (C = 64, batch 8, keys and values max-pooled 2 × 2 as in the paper's
CIFAR networks, float32, 2 threads), forward + backward with a fixed upstream gradient (drawn before the
measurement, so the peak counts what the path holds, not a loss's own temporaries): one application of the
operator ``T`` (what the path changes), and a whole :class:`pdenets.nn.NonlocalBlock` (1×1
embeddings, 2 stages, 1×1 conv/BN/ReLU — activations of size ``N × C`` both paths share). The fast
paths: the dot-product kernel reassociated, the embedded Gaussian with row sums through
``scaled_dot_product_attention``, the singular kernels (fractional, inverse fractional, log) in
cache-sized blocks of rows recomputed in the backward pass.

Every measurement runs in a fresh child process (memory-capped with ``RLIMIT_AS``): the peak
is the growth of the child's resident set (``ru_maxrss``) during the timed passes, so the
numbers count everything the pass allocates, whatever torch's CPU allocator does. Times are
medians. Ratios: ``naive / fast``. The search for the largest trainable resolution grows the
side until a child fails (out of memory under the cap) or exceeds the time limit.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import run_trial  # noqa: E402

OPERATORS = ("diffusion-dot", "diffusion-gaussian", "fractional", "inverse-fractional", "log")
CHANNELS, BATCH = 64, 8


def trial(level: str, operator: str, path: str, side: int, repeats: int) -> None:
    import torch

    from pdenets.nn import NonlocalBlock
    from pdenets.operators.nonlocal_ops import nonlocal_apply

    torch.set_num_threads(2)
    torch.manual_seed(0)
    normalizer = "row-sum" if operator == "diffusion-gaussian" else "count"
    if level == "block":
        block = NonlocalBlock(CHANNELS, operator=operator, subsample=2, normalizer=normalizer, path=path)
        inputs = [torch.randn(BATCH, CHANNELS, side, side, requires_grad=True)]
        upstream = torch.randn(BATCH, CHANNELS, side, side)

        def step():
            block(*inputs).backward(upstream)
    else:  # one application of the operator: θ (N, C/2), φ (M, C/2), V (M, C), X (N, C)
        pixels, keys = side * side, (side // 2) ** 2
        inputs = [
            torch.randn(BATCH, rows, width, requires_grad=True)
            for rows, width in (
                (pixels, CHANNELS // 2),
                (keys, CHANNELS // 2),
                (keys, CHANNELS),
                (pixels, CHANNELS),
            )
        ]
        upstream = torch.randn(BATCH, pixels, CHANNELS)

        def step():
            nonlocal_apply(*inputs, operator, normalizer=normalizer, path=path).backward(upstream)

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
        for tensor in inputs:
            tensor.grad = None
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 2**20
    times.sort()
    print(json.dumps({"pass_seconds": times[len(times) // 2], "peak_gib": peak}))


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--cap-gib", type=float, default=20.0, help="address-space cap of each child (GiB)")
    parser.add_argument(
        "--timeout", type=float, default=240.0, help="seconds before a search trial is given up"
    )
    parser.add_argument("--json", help="also write the measurements to this file")
    parser.add_argument("--trial", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trial:
        level, operator, path, side, repeats = args.trial
        trial(level, operator, path, int(side), int(repeats))
        return
    script = os.path.abspath(__file__)
    sides = (32, 64) if args.quick else (32, 96)
    measurements = {"table": [], "largest": []}
    for level in ("operator", "block"):
        what = (
            "one operator application T (theta, phi: C/2 wide; V, X: C wide; keys pooled 2x2)"
            if level == "operator"
            else "NonlocalBlock (1x1 embeddings, 2 stages of T + 1x1 conv/BN/ReLU)"
        )
        print(f"\n{what}: C={CHANNELS}, batch {BATCH}, float32, 2 threads; forward + backward")
        print(
            f"{'operator':<20}{'side':>6}{'naive s':>10}{'fast s':>10}{'time n/f':>10}"
            f"{'naive GiB':>11}{'fast GiB':>10}{'mem n/f':>9}"
        )
        for operator in OPERATORS:
            for side in sides:
                repeats = 5 if side <= 32 else 3
                result = {}
                for path in ("naive", "fast"):
                    result[path], failure = run_trial(
                        script, [level, operator, path, side, repeats], args.cap_gib, 1800
                    )
                    if failure:
                        raise SystemExit(f"{level} {operator} {path} {side}: {failure}")
                naive, fast = result["naive"], result["fast"]
                row = {
                    "level": level,
                    "operator": operator,
                    "side": side,
                    "naive_seconds": naive["pass_seconds"],
                    "fast_seconds": fast["pass_seconds"],
                    "naive_gib": naive["peak_gib"],
                    "fast_gib": fast["peak_gib"],
                }
                measurements["table"].append(row)
                print(
                    f"{operator:<20}{side:>6}{row['naive_seconds']:>10.3f}{row['fast_seconds']:>10.3f}"
                    f"{row['naive_seconds'] / row['fast_seconds']:>9.2f}×{naive['peak_gib']:>11.3f}"
                    f"{fast['peak_gib']:>10.3f}{naive['peak_gib'] / max(fast['peak_gib'], 1e-3):>8.1f}×",
                    flush=True,
                )
    if not (args.quick or args.skip_search):
        print(
            f"\nlargest side trained (forward + backward) under a {args.cap_gib:g} GiB cap, "
            f"{args.timeout:g} s per pass at most"
        )
        steps = (96, 128, 160, 192, 224, 256, 320, 384)
        for operator in ("diffusion-dot", "diffusion-gaussian", "fractional"):
            for path in ("naive", "fast"):
                best, reason = None, "end of the search"
                for side in steps:
                    result, failure = run_trial(
                        script, ["block", operator, path, side, 1], args.cap_gib, args.timeout
                    )
                    if failure:
                        reason = f"{side}: {failure}"
                        break
                    best = (side, result)
                entry = {
                    "operator": operator,
                    "path": path,
                    "side": best[0] if best else None,
                    "peak_gib": best[1]["peak_gib"] if best else None,
                    "seconds": best[1]["pass_seconds"] if best else None,
                    "stopped": reason,
                }
                measurements["largest"].append(entry)
                print(
                    f"{operator:<20}{path:<7} largest {entry['side']}×{entry['side']} "
                    f"({entry['peak_gib']:.2f} GiB, {entry['seconds']:.1f} s); stopped at {reason}",
                    flush=True,
                )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(measurements, handle, indent=2)


if __name__ == "__main__":
    main()
