"""Few-shot methods side by side with easyfsl's on the same features and the same episodes, in one run.

    python benchmarks/fewshot_peers.py --features FILE.npz [--runs RUNS.npz] [--tasks 1000] [--ways 5]
    [--shots 1,5]
        [--shapes balanced,dirichlet:2,open-set:2,one-at-a-time] [--queries 15]
        [--methods prototype,bd-cspn,bd-cspn:preset=easyfsl,tim,tim:iterations=50,...]

Every method sees L2-normalized features and the same episodes, one table per query-set shape
(``--shapes``): ``balanced`` (``--queries`` per class), ``dirichlet:A`` (class proportions drawn per
task, Veilleux et al. 2021), ``open-set:K`` (balanced, plus queries of ``K`` classes absent from the
support; accuracy over the support's classes), ``one-at-a-time`` (every query of the balanced tasks
its own task). Ours solve the tasks of a block of 100 at once (batched), easyfsl's the same block
after them, block by block (interleaved, so both see the same machine);
easyfsl's classes (``PrototypicalNetworks``, ``LaplacianShot``, ``BDCSPN``, ``PTMAP``, ``TIM``,
identity backbone, their default settings) solve one task at a time, as they are written. For
every cell the table gives accuracy ± 95 % interval, seconds per 1,000 tasks and the number of queries
the two answer differently; where ``prototype`` runs before a method, also the method's accuracy minus
nearest prototype's with the interval of the per-task differences (paired: the same tasks; the JSON's
``pdenets_minus_prototype``); ``--runs``
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

from pdenets.data.fewshot import EpisodeSampler, QueryShape, load_features, mean_and_interval
from pdenets.data.graphs import read_npz_arrays
from pdenets.models.fewshot import METHODS, Preprocessing, classify, method_from_name
from pdenets.tasks.fewshot.protocol import classes_without_a_query

PEERS = {
    "prototype": "PrototypicalNetworks",
    "laplacianshot": "LaplacianShot",
    "bd-cspn": "BDCSPN",
    "pt-map": "PTMAP",
    "tim": "TIM",
}
#: query-set shapes: (query shape, every query its own task)
SHAPES = ("balanced", "dirichlet:2", "open-set:2", "one-at-a-time")


def _stand_in_attribute(attribute: str):
    """What the empty ``torchvision`` stand-in gives for a name: ``object`` (never built), except module
    dunders (``__file__``, ...), which it does not have — ``inspect`` walks every module in
    ``sys.modules``."""
    if attribute.startswith("__"):
        raise AttributeError(attribute)
    return object


def easyfsl_methods():
    """easyfsl's method classes by our names, or ``{}`` when easyfsl is not installed."""
    try:
        import torchvision  # noqa: F401
    except ImportError:
        modules = {
            name: types.ModuleType(name)
            for name in ("torchvision", "torchvision.models", "torchvision.models.resnet")
        }
        for module in modules.values():
            module.__getattr__ = _stand_in_attribute  # any name easyfsl.modules imports
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


def method_of(spec: str):
    """A method from ``NAME`` or ``NAME:KEY=VALUE:…`` (``preset=NAME`` picks a preset, e.g.
    ``bd-cspn:preset=easyfsl``; ``tim:iterations=50`` runs easyfsl's number of steps)."""
    name, *fields = spec.split(":")
    changes = {}
    for field in fields:
        key, _, value = field.partition("=")
        changes[key] = value if key == "preset" else json.loads(value)
    return method_from_name(name, **changes)


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def task_accuracies(predictions, query_labels):
    """Accuracy per task over the queries of the support's classes (open-set queries, label −1, left out)."""
    known = query_labels >= 0
    return (((predictions == query_labels) & known).double().sum(1) / known.sum(1).clamp_min(1)).tolist()


def one_at_a_time(function, support, support_labels, query):
    """``function`` on every query of every task as a task of its own; predictions ``(T, Q, ...)``."""
    count = query.shape[1]
    result = function(
        support.repeat_interleave(count, 0),
        support_labels.repeat_interleave(count, 0),
        query.reshape(-1, 1, query.shape[2]),
    )
    return result.reshape(support.shape[0], count, *result.shape[2:])


#: tasks per block: ours and easyfsl's alternate block by block, so that both see the same machine
BLOCK = 100


def measure_cell(
    support, support_labels, query, query_labels, ways, methods, peers, rows, cell, single=False
):
    tasks = support.shape[0]
    empty = classes_without_a_query(query_labels, ways)

    def ours(name, block):
        seeds = list(range(block.start, block.stop))

        def solve(s, labels, q):
            repeat = s.shape[0] // len(seeds)
            return classify(
                s,
                labels,
                q,
                ways,
                method_of(name),
                Preprocessing(),
                seeds=[seed for seed in seeds for _ in range(repeat)],
                chunk_size=BLOCK,
            )

        arguments = (support[block], support_labels[block], query[block])
        return (one_at_a_time(solve, *arguments) if single else solve(*arguments)).argmax(2)

    def theirs(peer, block):
        def solve(s, labels, q):
            return easyfsl_predict(peer, s, labels, q)[..., None]

        arguments = (support[block], support_labels[block], query[block])
        return (one_at_a_time(solve, *arguments) if single else solve(*arguments))[..., 0]

    prototype_per_task = None  # nearest prototype's per-task accuracies, when it ran first in this cell
    for name in methods:
        peer = peers.get(name.split(":")[0])
        answers = {"pdenets": [], "easyfsl": []}
        seconds = {"pdenets": 0.0, "easyfsl": 0.0}
        error = None
        for start in range(0, tasks, BLOCK):
            block = slice(start, min(start + BLOCK, tasks))
            predictions, spent = timed(lambda: ours(name, block))
            answers["pdenets"].append(predictions)
            seconds["pdenets"] += spent
            if peer is not None and error is None:
                try:
                    predictions, spent = timed(lambda: theirs(peer, block))
                except Exception as failure:  # noqa: BLE001 - a peer that fails on a shape is a result
                    error = f"{type(failure).__name__}: {str(failure).splitlines()[0][:80]}"
                else:
                    answers["easyfsl"].append(predictions)
                    seconds["easyfsl"] += spent
        row = {
            "cell": cell,
            "method": name,
            "tasks": tasks,
            "share_with_empty_class": float(empty.double().mean()),
        }
        for side in ("pdenets", "easyfsl"):
            if side == "easyfsl" and (peer is None or error is not None):
                continue
            accuracies = task_accuracies(torch.cat(answers[side]), query_labels)
            per_task = torch.tensor(accuracies)
            mean, interval = mean_and_interval(accuracies)
            if 0 < int(empty.sum()) < tasks:  # accuracy over the tasks with and without an empty class
                row[f"{side}_accuracy_empty_class"] = 100 * float(per_task[empty].mean())
                row[f"{side}_accuracy_no_empty_class"] = 100 * float(per_task[~empty].mean())
            row.update(
                {
                    f"{side}_accuracy": 100 * mean,
                    f"{side}_ci95": 100 * interval,
                    f"{side}_s_per_1000": 1000 * seconds[side] / tasks,
                }
            )
            if side == "pdenets" and name == "prototype":
                prototype_per_task = per_task
            elif side == "pdenets" and prototype_per_task is not None:
                # paired over the same tasks: far narrower than the two intervals side by side
                gain, gain_interval = mean_and_interval((per_task - prototype_per_task).tolist())
                row.update(
                    pdenets_minus_prototype=100 * gain, pdenets_minus_prototype_ci95=100 * gain_interval
                )
        if error is not None:
            row["easyfsl_error"] = error
        elif peer is not None:  # queries the two answer differently (open-set ones too)
            row["queries_answered_apart"] = int(
                (torch.cat(answers["pdenets"]) != torch.cat(answers["easyfsl"])).sum()
            )
        rows.append(row)
        if "easyfsl_error" in row:
            shown = f"fails ({row['easyfsl_error']})"
        elif "easyfsl_accuracy" in row:
            shown = (
                f"{row['easyfsl_accuracy']:6.2f} ± {row['easyfsl_ci95']:.2f}  "
                f"{row['easyfsl_s_per_1000']:8.1f}   {row['queries_answered_apart']:>8}"
            )
        else:
            shown = f"{'—':>15} {'—':>9}"
        print(
            f"{cell:<34} {name:<22} {row['pdenets_accuracy']:6.2f} ± {row['pdenets_ci95']:.2f}  "
            f"{row['pdenets_s_per_1000']:8.1f}   {shown}"
            + (
                f"   minus prototype (paired) {row['pdenets_minus_prototype']:+.2f} ± "
                f"{row['pdenets_minus_prototype_ci95']:.2f}"
                if "pdenets_minus_prototype" in row
                else ""
            ),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--features", required=True)
    parser.add_argument("--runs", default=None)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--ways", default="5")
    parser.add_argument("--shots", default="1,5")
    parser.add_argument("--queries", type=int, default=15)
    parser.add_argument("--shapes", default="balanced", help="query-set shapes: " + ", ".join(SHAPES))
    parser.add_argument("--single-tasks", type=int, default=100, help="tasks of the one-at-a-time shape")
    parser.add_argument(
        "--methods",
        default=",".join(METHODS),
        help="NAME or NAME:KEY=VALUE:... (settings changed, preset=NAME), comma-separated",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=None)
    parser.add_argument("--ours-only", action="store_true", help="skip easyfsl")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    methods = args.methods.split(",")
    peers = {} if args.ours_only else easyfsl_methods()
    print(
        f"{'cell':<34} {'method':<22} {'pdenets acc (%)':>15} {'s/1000':>8}   {'easyfsl acc (%)':>15} "
        f"{'s/1000':>8}   {'answered apart':>8}"
    )
    rows = []
    features = load_features(args.features)
    for shape in filter(None, args.shapes.split(",")):  # --shapes "" with --runs: the runs alone
        single = shape == "one-at-a-time"
        spread = (
            QueryShape(open_set=int(shape.split(":")[1]))
            if shape.startswith("open-set")
            else QueryShape()
            if single
            else QueryShape.parse(shape)
        )
        for ways in (int(w) for w in args.ways.split(",")):
            for shots in (int(s) for s in args.shots.split(",")):
                sampler = EpisodeSampler(
                    features.labels,
                    features.novel_classes,
                    ways=ways,
                    shots=shots,
                    queries=args.queries,
                    seed=0,
                    shape=spread,
                )
                episodes = sampler.sample(range(args.single_tasks if single else args.tasks))
                support = F.normalize(features.features[episodes.support].float(), dim=2)
                query = F.normalize(features.features[episodes.query].float(), dim=2)
                measure_cell(
                    support,
                    episodes.support_labels,
                    query,
                    episodes.query_labels,
                    ways,
                    methods,
                    peers,
                    rows,
                    f"{shape} {ways}-way {shots}-shot"
                    + ("" if args.queries == 15 else f", {args.queries} per class"),
                    single=single,
                )
    if args.runs:
        arrays = read_npz_arrays(args.runs)
        support = F.normalize(torch.from_numpy(arrays["training"]).float(), dim=2)
        query = F.normalize(torch.from_numpy(arrays["test"]).float(), dim=2)
        answers = torch.from_numpy(arrays["answers"])
        measure_cell(
            support,
            torch.arange(support.shape[1]).expand(support.shape[0], -1),
            query,
            answers,
            support.shape[1],
            methods,
            peers,
            rows,
            "Lake runs (accuracy)",
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
