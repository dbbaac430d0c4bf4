"""Which nodes to label next, simulated on graphs with known labels: rounds of labels chosen by each criterion
of ``DiffusionNodeClassifier.suggest`` against labels chosen at random; and whether an explanation names
the nodes that matter (faithfulness); and what each costs beside a plain predict.

    python benchmarks/active_learning.py                 # Cora, CiteSeer, digits; 5 seeds (~25 min, 1 thread)
    python benchmarks/active_learning.py --quick         # 2 seeds
    python benchmarks/active_learning.py --datasets digits --seeds 1
    python benchmarks/active_learning.py --part fits --datasets cora,citeseer   # few-label fits (~20 min)

Graphs: Cora and CiteSeer (``$PDENETS_DATA/npz/``, their largest components) and scikit-learn's digits
table (1,797 × 64, standardized) as the symmetric 10-nearest-neighbour graph of its rows. Per seed, a fixed
test set (1,000 nodes; 500 for digits) is never labelled; the loop starts from 2 random labels per class and
adds ``B = 2 C`` labels a round (``C`` classes): the estimator is fitted, ``suggest(B, criterion,
among=the pool)`` names the next labels, their true classes are revealed, and it is fitted again. 3 rounds
for ``typical``, ``coverage`` and ``uncertainty``; 7 for ``random``, which ends with twice the labels the
criteria end with, from the same pool (nodes of the largest component outside the test set; the 2 starting
labels a class are drawn from every node outside it, the same for every criterion). Every fit is the
estimator's default (``FIT``). Accuracy on the test nodes after every round; medians over the seeds.

Faithfulness (on the model of random's last round, twice the labels): for 200 test nodes, the ``k``
contributors of largest positive share (the node itself aside) are cut out of the graph
(:func:`pdenets.analysis.explanations.isolate_nodes`) and the trained network predicts again; so for
``k`` random nodes of its reach. The share of predictions that change, for ``k`` = 1, 3, 5, 10.

``--part fits``: the estimator's default against the earlier split (``min_val_per_class=1``: a share held
out of every class, 2 and more labels a class) at 2, 8, 16 and 30 labels a class (balanced draws), the
test accuracy and fit seconds, medians of the seeds.

Cost: ``predict_proba`` of every node, ``explain`` of 10 nodes and ``suggest(B)`` by each criterion, one
thread, medians of 5; ratios over the predict.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import median_time  # noqa: E402
from pdenets.analysis.explanations import explain_diffusion, isolate_nodes  # noqa: E402
from pdenets.data.graphs import graph_data  # noqa: E402
from pdenets.estimators import DiffusionNodeClassifier  # noqa: E402
from pdenets.models.training import evaluation_mode  # noqa: E402

#: the estimator of every fit: its defaults
FIT = dict(progress=False)


def _graphs(names):
    """``name -> (graph, labels)`` of the node numbers as read."""
    data = os.environ.get("PDENETS_DATA", os.path.expanduser("~/.cache/pdenets"))
    graphs = {}
    for name in names:
        if name == "digits":
            from sklearn.datasets import load_digits
            from sklearn.neighbors import kneighbors_graph
            from torch_geometric.data import Data

            features, labels = load_digits(return_X_y=True)
            features = (features - features.mean(0)) / np.maximum(features.std(0), 1e-12)
            knn = kneighbors_graph(features, 10, include_self=False).tocoo()
            edges = torch.tensor(np.vstack([knn.row, knn.col]), dtype=torch.long)
            edges = torch.cat([edges, edges.flip(0)], 1)
            graphs[name] = (Data(x=torch.tensor(features, dtype=torch.float32), edge_index=edges), labels)
        else:
            path = os.path.join(data, "npz", f"{name}.npz")
            if not os.path.isfile(path):
                sys.exit(f"needs {path}: set $PDENETS_DATA to the data folder")
            graphs[name] = (path, np.asarray(graph_data(path).y))
    return graphs


def _accuracy(estimator, truth, test):
    predicted = estimator.predict()
    ids = estimator.node_ids()
    where = {node: position for position, node in enumerate(ids)}
    rows = [where[str(node)] for node in test if str(node) in where]
    kept = [node for node in test if str(node) in where]
    return float(np.mean(predicted[rows].astype(int) == truth[kept]))


def _loop(graph, truth, test, start, rounds, budget, criterion, seed):
    """The test accuracy after each round (round 0: the starting labels)."""
    known = np.full(len(truth), -1)
    known[start] = truth[start]
    pool_mask = np.ones(len(truth), dtype=bool)
    pool_mask[test] = False
    curve = []
    for round_ in range(rounds + 1):
        estimator = DiffusionNodeClassifier(**FIT, random_state=seed).fit(graph, known)
        curve.append(_accuracy(estimator, truth, test))
        if round_ == rounds:
            break
        ids = estimator.node_ids()
        pool = [node for node in ids if pool_mask[int(node)] and known[int(node)] < 0]
        chosen = estimator.suggest(budget, criterion, seed=seed + 1000 * round_, among=pool)
        for node in chosen:
            known[int(node)] = truth[int(node)]
    return curve, estimator


def _faithfulness(estimator, truth, test, ks, count, seed):
    """For each ``k``: the share of ``count`` test nodes whose prediction changes when their top-``k``
    contributors are cut out, and when ``k`` random nodes of their reach are."""
    model = estimator.model_
    network, graph, inputs = model.network_on(None)
    ids = graph.node_ids()
    where = {node: position for position, node in enumerate(ids)}
    items = [where[str(node)] for node in test if str(node) in where][:count]
    x, weights = inputs[0], graph.weights
    with evaluation_mode(network), torch.no_grad():
        before = network(x).argmax(1)
    shares = explain_diffusion(network, x, torch.tensor(items))
    logits = shares.logits()
    first, second = logits.topk(2, dim=1).indices.T
    margins = shares.margin_shares(first, second)
    generator = np.random.default_rng(seed)
    changed = {k: [0, 0] for k in ks}
    for row, item in enumerate(items):
        values = margins[row].clone()
        reach = torch.nonzero(shares.rows[row] != 0).flatten().tolist()
        others = [node for node in reach if node != item]
        values[item] = -torch.inf
        order = torch.argsort(values, descending=True).tolist()
        for k in ks:
            if len(others) < k:
                continue
            top = [node for node in order[:k] if values[node] > 0]
            drawn = generator.choice(others, k, replace=False).tolist()
            for column, removed in enumerate((top, drawn)):
                if not removed:
                    continue
                with evaluation_mode(network), torch.no_grad():
                    after = network(x, isolate_nodes(weights, torch.tensor(removed))).argmax(1)[item]
                changed[k][column] += int(after != before[item])
    return {k: (changed[k][0] / len(items), changed[k][1] / len(items)) for k in ks}


def _few_label_fits(graphs, seeds) -> None:
    """``--part fits`` (module docstring)."""
    fits = {"min_val_per_class=1 (earlier split)": dict(min_val_per_class=1), "default": {}}
    for name, (graph, truth) in graphs.items():
        classes = np.unique(truth[truth >= 0])
        cells = {}
        for per_class in (2, 8, 16, 30):
            for seed in range(seeds):
                generator = np.random.default_rng(seed)
                test = generator.choice(len(truth), 500 if name == "digits" else 1000, replace=False)
                rest = np.setdiff1d(np.arange(len(truth)), test)
                chosen = np.concatenate(
                    [generator.choice(rest[truth[rest] == c], per_class, replace=False) for c in classes]
                )
                known = np.full(len(truth), -1)
                known[chosen] = truth[chosen]
                for fit, settings in fits.items():
                    start = time.perf_counter()
                    estimator = DiffusionNodeClassifier(**FIT, random_state=seed, **settings)
                    estimator.fit(graph, known)
                    seconds = time.perf_counter() - start
                    accuracy = _accuracy(estimator, truth, test)
                    cells.setdefault((per_class, fit), []).append((accuracy, seconds))
                print(".", end="", flush=True)
        print(f"\n{name}: test accuracy % (fit seconds), medians of {seeds} seeds")
        print("| labels a class | " + " | ".join(fits) + " |")
        print("|---|" + "---|" * len(fits))
        for per_class in (2, 8, 16, 30):
            row = []
            for fit in fits:
                values = np.asarray(cells[(per_class, fit)])
                row.append(f"{100 * np.median(values[:, 0]):.1f} ({np.median(values[:, 1]):.1f} s)")
            print(f"| {per_class} | " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="2 seeds")
    parser.add_argument("--seeds", type=int, default=None, help="seeds (default 5; --quick: 2)")
    parser.add_argument("--datasets", default="cora,citeseer,digits", help="comma-separated")
    parser.add_argument("--criteria", default="typical,coverage,uncertainty", help="comma-separated")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--part", choices=("loop", "fits"), default="loop", help="module docstring")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds = args.seeds or (2 if args.quick else 5)
    if args.part == "fits":
        _few_label_fits(_graphs(args.datasets.split(",")), seeds)
        return
    criteria = tuple(args.criteria.split(","))
    results = {}
    for name, (graph, truth) in _graphs(args.datasets.split(",")).items():
        classes = np.unique(truth[truth >= 0])
        budget = 2 * len(classes)
        curves = {criterion: [] for criterion in (*criteria, "random")}
        faithful, costs = [], []
        for seed in range(seeds):
            generator = np.random.default_rng(seed)
            test = generator.choice(len(truth), 500 if name == "digits" else 1000, replace=False)
            rest = np.setdiff1d(np.arange(len(truth)), test)
            start = np.concatenate(
                [generator.choice(rest[truth[rest] == c], 2, replace=False) for c in classes]
            )
            for criterion in criteria:
                curve, fitted = _loop(graph, truth, test, start, 3, budget, criterion, seed)
                curves[criterion].append(curve)
            # random choice, the same pool and start, 7 rounds: twice the labels the criteria end with
            curve, estimator = _loop(graph, truth, test, start, 7, budget, "random", seed)
            curves["random"].append(curve)
            faithful.append(_faithfulness(estimator, truth, test, (1, 3, 5, 10), 200, seed))
            if seed == 0:
                ids = estimator.node_ids()[:10]
                costs.append(
                    {
                        "predict": median_time(estimator.predict_proba, 5),
                        "explain 10": median_time(lambda: estimator.explain(ids), 5),
                        **{
                            f"suggest {c}": median_time(lambda c=c: estimator.suggest(budget, c), 5)
                            for c in ("typical", "coverage", "uncertainty")
                        },
                    }
                )
            print(flush=True)
            print(f"{name} seed {seed}: " + ", ".join(f"{c} {v[-1][-1]:.3f}" for c, v in curves.items()))
        medians = {c: np.median(np.asarray(v), axis=0).tolist() for c, v in curves.items()}
        start_count = 2 * len(classes)
        print(
            f"\n{name}: {len(truth):,} nodes, {len(classes)} classes, B = {budget} a round, "
            f"medians of {seeds}"
        )
        print("| labels | " + " | ".join((*criteria, "random")) + " |")
        print("|---|" + "---|" * (len(criteria) + 1))
        for round_ in range(8):
            cells = [
                f"{100 * medians[c][round_]:.1f}" if round_ < len(medians[c]) else ""
                for c in (*criteria, "random")
            ]
            twice = " (twice the criteria's 3 rounds)" if round_ == 7 else ""
            print(f"| {start_count + round_ * budget}{twice} | " + " | ".join(cells) + " |")
        ks = sorted(faithful[0])
        print("\nfaithfulness: share of predictions changed by cutting out k nodes (medians)")
        print("| k | top-k contributors | k random in reach |")
        print("|---|---|---|")
        for k in ks:
            top = np.median([f[k][0] for f in faithful])
            drawn = np.median([f[k][1] for f in faithful])
            print(f"| {k} | {100 * top:.1f} % | {100 * drawn:.1f} % |")
        cost = costs[0]
        print(
            "\ncost (one thread, medians of 5): "
            + ", ".join(
                f"{what} {seconds * 1000:.1f} ms ({seconds / cost['predict']:.2f}x)"
                for what, seconds in cost.items()
            )
        )
        results[name] = {
            "curves": medians,
            "budget": budget,
            "start": start_count,
            "faithfulness": {
                str(k): [float(np.median([f[k][c] for f in faithful])) for c in (0, 1)] for k in ks
            },
            "cost_s": cost,
        }
        print()
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(results, stream, indent=2)


if __name__ == "__main__":
    main()
