"""What the answers on a user's data cost: each task's run on a file of the user's kind with its predictions
(or forecasts, saved models) against the same run without them, and ``pdenets predict`` few-shot as the
queries grow.

    python benchmarks/predictions.py            # three runs twice, few-shot queries 2,000 to 16,000 (~3 min)
    python benchmarks/predictions.py --json OUT.json

The runs (``pdenets run ... --set predictions=never`` against the default, in fresh folders, medians of
``--repeats``):

* node-classification: a 600-node, 3-class named-node edge list, 30 % of the labels left out, Diff-ResNet and
  GCN, 2 splits, at most 60 epochs;
* coin-tabular: a 300-row table with 20 % empty labels and an id column, three models, 5 splits, 100 epochs;
* coin-forecast: 12 sensors every 5 minutes for a day, ``--quick`` with ``window-mlp`` and ``last-value``.

The extra time is the first run of each model trained again and its answers written; the goal is under a
fifth of the run. The few-shot rows time ``classify_queries`` with the default method on 64-d features,
tasks of 2,000 queries: the time per query should stay flat as the queries grow (the graph of a task stays
2,000 × 2,000).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from pdenets.cli import main
from pdenets.data.fewshot import FeatureSet
from pdenets.tasks.fewshot.predict import classify_queries


def _sensors(folder: Path, sensors: int = 12, steps: int = 288) -> Path:
    """Sensors on a ring read every 5 minutes for a day (a CSV folder: series.csv and edges.csv)."""
    rng = np.random.default_rng(0)
    root = folder / "sensors"
    root.mkdir()
    wave = 60 - 15 * np.exp(-((np.arange(steps) - 100) ** 2) / 400.0)
    speeds = wave[:, None] + rng.normal(scale=2.0, size=(steps, sensors)).cumsum(0) * 0.2
    stamps = np.datetime64("2026-03-02T00:00") + np.arange(steps) * np.timedelta64(5, "m")
    names = [f"s{k}" for k in range(sensors)]
    rows = [
        str(t).replace("T", " ") + "," + ",".join(f"{v:.2f}" for v in row) for t, row in zip(stamps, speeds)
    ]
    (root / "series.csv").write_text("time," + ",".join(names) + "\n" + "\n".join(rows) + "\n")
    ring = "".join(f"{names[k]},{names[(k + 1) % sensors]}\n" for k in range(sensors))
    (root / "edges.csv").write_text("source,target\n" + ring)
    return root


def _edge_list(folder: Path, nodes: int = 600) -> Path:
    rng = np.random.default_rng(0)
    community = np.arange(nodes) * 3 // nodes
    lines = []
    for node in range(nodes):
        for _ in range(4):
            other = (
                rng.choice(np.flatnonzero(community == community[node]))
                if rng.random() < 0.9
                else rng.integers(nodes)
            )
            if other != node:
                lines.append(f"user{node} user{other}")
    (folder / "graph.txt").write_text("\n".join(lines) + "\n")
    labels = [f"user{node} {'abc'[community[node]]}" for node in range(nodes) if rng.random() >= 0.3]
    (folder / "graph-labels.txt").write_text("\n".join(labels) + "\n")
    return folder / "graph.txt"


def _table(folder: Path, rows: int = 300) -> Path:
    rng = np.random.default_rng(0)
    lines = ["id,a,b,c,label"]
    for row in range(rows):
        values = rng.normal(size=3) + 2.5 * np.eye(3)[row % 3]
        label = "" if row % 5 == 0 else "xyz"[row % 3]
        lines.append(f"r{row}," + ",".join(f"{v:.4f}" for v in values) + f",{label}")
    (folder / "table.csv").write_text("\n".join(lines) + "\n")
    return folder / "table.csv"


def _timed(argv) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"failed: pdenets {' '.join(argv)}")
    return time.perf_counter() - start


def run_costs(folder: Path, repeats: int) -> list:
    runs = {
        "node-classification": (
            [
                "run",
                "node-classification",
                "--dataset",
                str(_edge_list(folder)),
                "--models",
                "diff-resnet,gcn",
            ]
            + ["--splits", "2", "--inits", "1", "--max-epochs", "60", "--set", "train_per_class=10"],
            "predictions",
        ),
        "coin-tabular": (
            ["run", "coin-tabular", "--dataset", str(_table(folder)), "--quick", "--labels", "5"]
            + ["--set", "id_column=id"],
            "predictions",
        ),
        "coin-forecast": (
            ["run", "coin-forecast", "--dataset", str(_sensors(folder)), "--quick"]
            + ["--models", "window-mlp,last-value"],
            "forecasts",
        ),
    }
    rows = []
    for task, (argv, setting) in runs.items():
        times = {"without": [], "with": []}
        for repeat in range(repeats):
            for kind, extra in (("without", ["--set", f"{setting}=never"]), ("with", [])):
                out = folder / f"{task}-{kind}-{repeat}"
                times[kind].append(_timed(argv + extra + ["--no-progress", "--out", str(out)]))
        without, with_ = float(np.median(times["without"])), float(np.median(times["with"]))
        rows.append({"task": task, "without_s": without, "with_s": with_, "ratio": with_ / without})
        print(
            f"{task:20s} without {without:6.1f} s   with {with_:6.1f} s   {with_ / without:5.2f}x", flush=True
        )
    return rows


def fewshot_costs(sizes) -> list:
    generator = torch.Generator().manual_seed(0)
    centres = torch.randn(5, 64, generator=generator) * 2
    support = FeatureSet(
        centres.repeat(5, 1) + torch.randn(25, 64, generator=generator),
        torch.arange(5).repeat(5),
        tuple("abcde"),
    )
    rows = []
    for size in sizes:
        queries = centres.repeat(size // 5, 1) + torch.randn(size, 64, generator=generator)
        start = time.perf_counter()
        prediction = classify_queries(support, queries)
        seconds = time.perf_counter() - start
        rows.append(
            {
                "queries": size,
                "tasks": prediction.tasks,
                "seconds": seconds,
                "ms_per_query": 1000 * seconds / size,
            }
        )
        per_query = 1000 * seconds / size
        print(
            f"few-shot {size:6d} queries, {prediction.tasks:2d} task(s): {seconds:6.2f} s, "
            f"{per_query:.3f} ms a query"
        )
    return rows


def main_benchmark() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--sizes", default="2000,4000,8000,16000")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        runs = run_costs(Path(folder), args.repeats)
    fewshot = fewshot_costs([int(size) for size in args.sizes.split(",")])
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "fewshot": fewshot}, indent=1))


if __name__ == "__main__":
    main_benchmark()
