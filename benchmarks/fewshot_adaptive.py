"""The default few-shot method (``adaptive``) cell by cell: minus nearest prototype, minus the best method.

    python benchmarks/fewshot_adaptive.py --features FILE.npz --out DIR [--levels 0.05,0.2,0.5]
        [--tim-from-shots 5] [--cells quick|tables] [--threads 1]

``adaptive`` answers a task with the free method (the ensemble) or, where Pearson's test on the free
method's predicted counts passes at ``balance_level``, with PT-MAP (TIM from ``tim_from_shots`` shots;
``pdenets.models.fewshot.adaptive``). Both answers are functions of the same per-task probabilities, so
this script computes, once per cell and stored in ``DIR`` (a rerun resumes), the probabilities of nearest
prototype, the ensemble, LaplacianShot, the Diff-ResNet head, PADDLE, PT-MAP and TIM, and then evaluates
the rule at every level of ``--levels`` without running anything again. ``--check`` runs the registered
``adaptive`` itself on the first cell and asserts its answers are those composed here.

Cells (``--cells tables``, the cell tables of docs/fewshot.md): 5-way with 15 queries per class, balanced,
Dirichlet(2), Dirichlet(0.5) and open set (15 queries of each of 2 absent classes), 200 tasks each; 20-way
balanced, Dirichlet(2) and Dirichlet(0.5), 100 tasks; one query per class, 5- and 20-way, 200 tasks; 1 and
5 shots (one query per class: 1 shot). One query at a time is left out: with fewer queries than classes
``adaptive`` is the ensemble by construction. ``--cells quick``: the 5-way balanced and Dirichlet(2) 1-shot
cells, 50 tasks.

For every cell and level: the share of tasks that took the balanced method, ``adaptive`` minus nearest
prototype and minus the best method of the cell (on balanced cells PT-MAP and TIM included; on the others
the methods that do not assume balance, as in the cell tables). ``!`` marks a cell below nearest prototype
by more than 1 point or below the best by more than 1 point. The JSON (``DIR/results.json``) holds every
number printed. Threads: ``--threads`` (default 1).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from pdenets.data.fewshot import EpisodeSampler, QueryShape, load_features
from pdenets.models.fewshot import Adaptive, AdaptiveSettings, classify, method_from_name

FREE = ("prototype", "ensemble", "laplacianshot", "internal", "paddle")
BALANCED = ("pt-map", "tim")
TABLE_CELLS = (  # shape, ways, shots, queries per class, tasks
    *(
        (shape, 5, shots, 15, 200)
        for shape in ("balanced", "dirichlet:2", "dirichlet:0.5", "open-set:2")
        for shots in (1, 5)
    ),
    *(
        (shape, 20, shots, 15, 100)
        for shape in ("balanced", "dirichlet:2", "dirichlet:0.5")
        for shots in (1, 5)
    ),
    ("balanced", 5, 1, 1, 200),
    ("balanced", 20, 1, 1, 200),
)
QUICK_CELLS = (("balanced", 5, 1, 15, 50), ("dirichlet:2", 5, 1, 15, 50))


def cell_name(shape: str, ways: int, shots: int, queries: int) -> str:
    return f"{shape} {ways}-way {shots}-shot" + ("" if queries == 15 else f", {queries} per class")


def episodes(features, shape: str, ways: int, shots: int, queries: int, tasks: int):
    spread = (
        QueryShape(open_set=int(shape.split(":")[1]))
        if shape.startswith("open-set")
        else QueryShape.parse(shape)
    )
    sampler = EpisodeSampler(
        features.labels, features.novel_classes, ways=ways, shots=shots, queries=queries, seed=0, shape=spread
    )
    drawn = sampler.sample(range(tasks))
    support = F.normalize(features.features[drawn.support].float(), dim=2)
    query = F.normalize(features.features[drawn.query].float(), dim=2)
    return support, drawn.support_labels, query, drawn.query_labels


def cell_probabilities(features, cell, folder: Path) -> dict:
    """Every method's probabilities on the cell's tasks; those stored in ``folder`` are read, not computed."""
    shape, ways, shots, queries, tasks = cell
    path = folder / (
        cell_name(shape, ways, shots, queries).replace(" ", "_").replace(",", "").replace(":", "") + ".npz"
    )
    arrays: dict = {}
    if path.exists():
        with np.load(path) as stored:
            arrays = {name: stored[name] for name in stored.files}
    missing = [name for name in FREE + BALANCED if name not in arrays]
    if not missing:
        return arrays
    support, support_labels, query, query_labels = episodes(features, shape, ways, shots, queries, tasks)
    arrays["labels"] = query_labels.numpy()
    for name in missing:
        started = time.perf_counter()
        probabilities = classify(support, support_labels, query, ways, method_from_name(name), chunk_size=100)
        arrays[name] = probabilities.numpy()
        arrays[f"seconds {name}"] = np.array(time.perf_counter() - started)
        partial = path.with_name(path.stem + ".partial.npz")
        np.savez(partial, **arrays)  # every finished method kept at once: a rerun resumes
        partial.replace(path)
    return arrays


def task_accuracies(probabilities: np.ndarray, labels: np.ndarray, ways: int) -> np.ndarray:
    """Accuracy per task over the queries of the support's classes (open-set queries are labelled −1)."""
    counted = (labels >= 0) & (labels < ways)
    return ((probabilities.argmax(2) == labels) & counted).sum(1) / counted.sum(1)


def evaluate(arrays: dict, cell, levels, tim_from_shots: float) -> dict:
    shape, ways, shots, queries, tasks = cell
    labels = arrays["labels"]
    accuracy = {name: task_accuracies(arrays[name], labels, ways) for name in FREE + BALANCED}
    candidates = FREE + (BALANCED if shape == "balanced" else ())
    best = max(candidates, key=lambda name: accuracy[name].mean())
    branch = "tim" if shots >= tim_from_shots else "pt-map"
    row = {
        "cell": cell_name(shape, ways, shots, queries),
        "tasks": tasks,
        "accuracy": {name: 100 * float(values.mean()) for name, values in accuracy.items()},
        "best": best,
        "balanced_method": branch,
        "levels": {},
    }
    for level in levels:
        method = Adaptive(balance_level=level, tim_from_shots=tim_from_shots)
        took = method.decide(torch.from_numpy(arrays["ensemble"]))[1].numpy()
        ours = np.where(took, accuracy[branch], accuracy["ensemble"])
        row["levels"][str(level)] = {
            "took_balanced": float(took.mean()),
            "accuracy": 100 * float(ours.mean()),
            "minus_prototype": 100 * float((ours - accuracy["prototype"]).mean()),
            "minus_best": 100 * float((ours - accuracy[best]).mean()),
        }
    return row


def check_composition(features, cell, arrays: dict, level: float, tim_from_shots: float) -> None:
    """The registered method's answers are the ones this script composes from its parts."""
    shape, ways, shots, queries, tasks = cell
    support, support_labels, query, _ = episodes(features, shape, ways, shots, queries, tasks)
    method = method_from_name("adaptive", balance_level=level, tim_from_shots=tim_from_shots)
    answers = classify(support, support_labels, query, ways, method, chunk_size=100).argmax(2).numpy()
    took = method.decide(torch.from_numpy(arrays["ensemble"]))[1].numpy()
    branch = "tim" if shots >= tim_from_shots else "pt-map"
    composed = np.where(took[:, None], arrays[branch].argmax(2), arrays["ensemble"].argmax(2))
    apart = int((answers != composed).sum())
    print(f"check: adaptive answers {apart} of {answers.size} queries otherwise than composed here")
    assert apart == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--features", required=True)
    parser.add_argument("--out", required=True, help="folder for the per-cell probabilities and results.json")
    parser.add_argument("--levels", default=f"0.05,{AdaptiveSettings.balance_level},0.5")
    parser.add_argument("--tim-from-shots", type=float, default=AdaptiveSettings.tim_from_shots)
    parser.add_argument("--cells", choices=("tables", "quick"), default="tables")
    parser.add_argument(
        "--tasks",
        type=int,
        default=0,
        help="tasks per 5-way cell, half as many per 20-way one (default: as listed)",
    )
    parser.add_argument("--check", action="store_true", help="run adaptive itself on the first cell")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    levels = [float(level) for level in args.levels.split(",")]
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    features = load_features(args.features)
    cells = TABLE_CELLS if args.cells == "tables" else QUICK_CELLS
    if args.tasks:
        cells = tuple(
            (
                shape,
                ways,
                shots,
                queries,
                args.tasks if ways <= 5 or queries == 1 else max(1, args.tasks // 2),
            )
            for shape, ways, shots, queries, _ in cells
        )
    print(f"{'cell':<32} {'best':>22} " + " ".join(f"{'level ' + str(level):>23}" for level in levels))
    print(f"{'':<32} {'':>22} " + " ".join(f"{'took  −proto  −best':>23}" for _ in levels))
    rows = []
    for index, cell in enumerate(cells):
        arrays = cell_probabilities(features, cell, folder)
        if args.check and index == 0:
            check_composition(features, cell, arrays, levels[len(levels) // 2], args.tim_from_shots)
        row = evaluate(arrays, cell, levels, args.tim_from_shots)
        rows.append(row)
        shown = []
        for level in levels:
            result = row["levels"][str(level)]
            flag = "!" if min(result["minus_prototype"], result["minus_best"]) < -1 else " "
            shown.append(
                f"{result['took_balanced']:5.0%} {result['minus_prototype']:+6.2f} "
                f"{result['minus_best']:+6.2f}{flag}"
            )
        best = f"{row['best']} {row['accuracy'][row['best']]:.2f}"
        print(f"{row['cell']:<32} {best:>22} " + " ".join(f"{text:>23}" for text in shown), flush=True)
    with open(folder / "results.json", "w", encoding="utf-8") as handle:
        json.dump({"features": args.features, "levels": levels, "cells": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
