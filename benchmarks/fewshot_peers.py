"""Few-shot methods side by side with easyfsl's on the same features and the same episodes, in one run.

    python benchmarks/fewshot_peers.py --features FILE.npz [--runs RUNS.npz] [--tasks 1000] [--ways 5] [--shots 1,5]

Every method sees L2-normalized features. Ours solve all tasks of a cell at once (batched);
easyfsl's classes (``PrototypicalNetworks``, ``LaplacianShot``, ``BDCSPN``, ``PTMAP``, ``TIM``,
identity backbone, their default settings) solve one task at a time, as they are written. For
every cell the table gives accuracy ± 95 % interval and seconds per 1,000 tasks; ``--runs``
adds the error rate on the 20 official Omniglot one-shot runs (the file
``pdenets.features.official_runs_features`` writes). Methods without an easyfsl
counterpart (the Diff-ResNet heads) appear on our side only.

easyfsl is optional: ``pip install --no-deps easyfsl`` (its ``methods`` package needs only torch,
but importing it pulls ``torchvision`` in through ``easyfsl.modules``; this script puts an empty
stand-in module in its place, since no easyfsl network is built here). Without easyfsl the
script measures our methods only. Threads: ``--threads`` (default 1).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import types

import numpy as np
import torch
from torch.nn import functional as F

from pdenets.data.fewshot import EpisodeSampler, load_features, mean_and_interval
from pdenets.data.graphs import read_npz_arrays
from pdenets.models.fewshot import METHODS, Preprocessing, classify, method_from_name

PEERS = {"prototype": "PrototypicalNetworks", "diffusion": "LaplacianShot", "bd-cspn": "BDCSPN", "pt-map": "PTMAP",
         "tim": "TIM"}


def easyfsl_methods():
    """easyfsl's method classes by our names, or ``{}`` when easyfsl is not installed."""
    try:
        import torchvision  # noqa: F401
    except ImportError:
        modules = {name: types.ModuleType(name) for name in ("torchvision", "torchvision.models",
                                                             "torchvision.models.resnet")}
        for module in modules.values():
            module.__getattr__ = lambda attribute: object  # any name easyfsl.modules imports
            module.__path__ = []
        modules["torchvision"].models = modules["torchvision.models"]
        modules["torchvision.models"].resnet = modules["torchvision.models.resnet"]
        sys.modules.update(modules)
    try:
        import easyfsl.methods as peers
    except ImportError as error:
        print(f"easyfsl not available ({error}); measuring pdenets only", file=sys.stderr)
        return {}
    return {ours: getattr(peers, theirs) for ours, theirs in PEERS.items()}


def easyfsl_predict(peer_class, support, support_labels, query) -> torch.Tensor:
    """Predictions ``(T, Q)`` of an easyfsl method, one task at a time."""
    model = peer_class(torch.nn.Identity())
    predictions = []
    for task in range(support.shape[0]):
        with torch.enable_grad() if peer_class.__name__ == "TIM" else torch.no_grad():
            model.process_support_set(support[task], support_labels[task])
            predictions.append(model(query[task]).argmax(-1).detach())
    return torch.stack(predictions)


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def measure_cell(support, support_labels, query, query_labels, ways, methods, peers, rows, cell):
    seeds = list(range(support.shape[0]))
    for name in methods:
        probabilities, seconds = timed(lambda: classify(support, support_labels, query, ways, method_from_name(name),
                                                        Preprocessing(), seeds=seeds, chunk_size=100))
        accuracy = (probabilities.argmax(2) == query_labels).double().mean(1).tolist()
        mean, interval = mean_and_interval(accuracy)
        row = {"cell": cell, "method": name, "pdenets_accuracy": 100 * mean, "pdenets_ci95": 100 * interval,
               "pdenets_s_per_1000": 1000 * seconds / len(seeds)}
        if name in peers:
            predictions, seconds = timed(lambda: easyfsl_predict(peers[name], support, support_labels, query))
            mean, interval = mean_and_interval((predictions == query_labels).double().mean(1).tolist())
            row.update(easyfsl_accuracy=100 * mean, easyfsl_ci95=100 * interval,
                       easyfsl_s_per_1000=1000 * seconds / len(seeds))
        rows.append(row)
        theirs = (f"{row['easyfsl_accuracy']:6.2f} ± {row['easyfsl_ci95']:.2f}  {row['easyfsl_s_per_1000']:8.1f}"
                  if "easyfsl_accuracy" in row else f"{'—':>15} {'—':>9}")
        print(f"{cell:<22} {name:<11} {row['pdenets_accuracy']:6.2f} ± {row['pdenets_ci95']:.2f}  "
              f"{row['pdenets_s_per_1000']:8.1f}   {theirs}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", required=True)
    parser.add_argument("--runs", default=None)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--ways", default="5")
    parser.add_argument("--shots", default="1,5")
    parser.add_argument("--queries", type=int, default=15)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=None)
    parser.add_argument("--ours-only", action="store_true", help="skip easyfsl")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    methods = args.methods.split(",")
    peers = {} if args.ours_only else easyfsl_methods()
    print(f"{'cell':<22} {'method':<11} {'pdenets acc (%)':>15} {'s/1000':>8}   {'easyfsl acc (%)':>15} {'s/1000':>8}")
    rows = []
    features = load_features(args.features)
    for ways in (int(w) for w in args.ways.split(",")):
        for shots in (int(s) for s in args.shots.split(",")):
            sampler = EpisodeSampler(features.labels, features.novel_classes, ways=ways, shots=shots,
                                     queries=args.queries, seed=0)
            episodes = sampler.sample(range(args.tasks))
            support = F.normalize(features.features[episodes.support].float(), dim=2)
            query = F.normalize(features.features[episodes.query].float(), dim=2)
            measure_cell(support, episodes.support_labels, query, episodes.query_labels, ways, methods, peers, rows,
                         f"{ways}-way {shots}-shot")
    if args.runs:
        arrays = read_npz_arrays(args.runs)
        support = F.normalize(torch.from_numpy(arrays["training"]).float(), dim=2)
        query = F.normalize(torch.from_numpy(arrays["test"]).float(), dim=2)
        answers = torch.from_numpy(arrays["answers"])
        measure_cell(support, torch.arange(support.shape[1]).expand(support.shape[0], -1), query, answers,
                     support.shape[1], methods, peers, rows, "Lake runs (accuracy)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
