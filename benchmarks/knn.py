"""Exact kNN search under float32 round-off: three ways measured side by side in one run.

    python benchmarks/knn.py            # N = 2k, 8k, 32k (about 5 minutes on 2 cores)
    python benchmarks/knn.py --quick    # N = 2k, 8k

The fast squared distance ``‖q‖² − 2q·p + ‖p‖²`` cancels catastrophically when the points
share a large offset. Three chunked exact searches (k = 10, D = 16, float32, 2 threads):

* ``plain``: the expansion as is, distances returned as computed (pdenets before this
  change, kept here as the reference);
* ``refine64``: the expansion picks ``k + 8`` candidates, their distances are recomputed in
  float64 in the difference form, the best ``k`` are kept;
* ``centred``: the points and queries are centred first (mean in float64), the expansion
  picks ``k``, their distances are recomputed in the difference form and re-sorted —
  :func:`pdenets.operators.knn_search` now.

Each runs on a standard normal cloud and on the same cloud shifted to ``1000 + 0.1·x``.
Exactness: the fraction of points whose neighbour set equals the float64 difference-form
brute force (``torch.cdist(..., compute_mode="donot_use_mm_for_euclid_dist")``).
Times are medians; ratios are ``plain time / method time``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import median_time  # noqa: E402

warnings.filterwarnings("ignore")
from pdenets.operators import knn_search  # noqa: E402
from pdenets.operators.knn import CHUNK_MEMORY_BYTES, exact_sq_distances, pairwise_sq_distances  # noqa: E402

FEATURES = 16
NEIGHBOURS = 10
EXTRA_CANDIDATES = 8


def _chunks(points):
    size = max(1, CHUNK_MEMORY_BYTES // (points.shape[0] * points.element_size() * 2))
    return range(0, points.shape[0], size), size


def plain(points, k):
    """The search before centring: the expansion's top-k and its distances."""
    starts, size = _chunks(points)
    out = []
    for start in starts:
        sq = pairwise_sq_distances(points[start : start + size], points)
        rows = torch.arange(sq.shape[0])
        sq[rows, rows + start] = float("inf")
        out.append(torch.topk(sq, k, dim=1, largest=False, sorted=True).indices)
    return torch.cat(out)


def refine64(points, k):
    """Candidates from the uncentred expansion, distances recomputed in float64."""
    starts, size = _chunks(points)
    as64 = points.double()
    out = []
    for start in starts:
        sq = pairwise_sq_distances(points[start : start + size], points)
        rows = torch.arange(sq.shape[0])
        sq[rows, rows + start] = float("inf")
        candidates = torch.topk(sq, k + EXTRA_CANDIDATES, dim=1, largest=False, sorted=True).indices
        exact = exact_sq_distances(as64[start : start + size], as64, candidates)
        out.append(torch.gather(candidates, 1, torch.topk(exact, k, dim=1, largest=False).indices))
    return torch.cat(out)


def centred(points, k):
    return knn_search(points, k, backend="chunked").indices


def truth(points, k):
    as64 = points.double()
    out = []
    for start in range(0, as64.shape[0], 1024):
        distances = torch.cdist(as64[start : start + 1024], as64, compute_mode="donot_use_mm_for_euclid_dist")
        rows = torch.arange(distances.shape[0])
        distances[rows, rows + start] = float("inf")
        out.append(torch.topk(distances, k, dim=1, largest=False).indices)
    return torch.cat(out)


def exactness(found, expected) -> float:
    same = [set(a) == set(b) for a, b in zip(found.tolist(), expected.tolist())]
    return sum(same) / len(same)


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default=None, help="also write the measurements to this file")
    args = parser.parse_args()
    torch.set_num_threads(2)
    sizes = [2000, 8000] if args.quick else [2000, 8000, 32000]
    methods = {"plain": plain, "refine64": refine64, "centred": centred}
    rows = []
    print(
        f"{'cloud':>8} {'N':>6} "
        + " ".join(f"{m + ' s':>11} {m + ' exact':>14}" for m in methods)
        + f" {'plain/centred':>14} {'plain/refine64':>15}"
    )
    for shifted in (False, True):
        for size in sizes:
            base = torch.randn(size, FEATURES, generator=torch.Generator().manual_seed(size))
            points = 1000 + 0.1 * base if shifted else base
            expected = truth(points, NEIGHBOURS)
            row = {"cloud": "shifted" if shifted else "normal", "N": size}
            for name, method in methods.items():
                repeats = args.repeats if size <= 8000 else max(1, args.repeats // 2)
                row[f"{name}_s"] = median_time(lambda: method(points, NEIGHBOURS), repeats)
                row[f"{name}_exact"] = exactness(method(points, NEIGHBOURS), expected)
            rows.append(row)
            print(
                f"{row['cloud']:>8} {size:>6} "
                + " ".join(f"{row[m + '_s']:>11.4f} {row[m + '_exact']:>14.3f}" for m in methods)
                + f" {row['plain_s'] / row['centred_s']:>13.3f}x {row['plain_s'] / row['refine64_s']:>14.3f}x"
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
