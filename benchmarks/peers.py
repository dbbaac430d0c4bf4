"""pdenets beside the tools a user would otherwise pick, side by side in one run, one thread each: accuracy
and the time ratio.

    python benchmarks/peers.py                    # tables, nodes and few-shot (~7 min)
    python benchmarks/peers.py --part tables      # the tables alone (~2 min)
    python benchmarks/peers.py --part nodes       # Cora and CiteSeer, wide sparse features (~4 min)
    python benchmarks/peers.py --part fewshot --features clinc150.npz   # 384-d sentence embeddings (~15 s)
    python benchmarks/peers.py --part scale       # the table fit at 10k / 100k / 1M rows (~55 min: label
                                                  # spreading's 1M trial runs to its 25-minute limit)
    python benchmarks/peers.py --json OUT.json    # keep the measurements

**Tables** — scikit-learn's digits (1,797 × 64), breast cancer (569 × 30) and iris (150 × 4) with 90 % and
97 % of the labels hidden (at least one label of each class kept), 5 seeds. Each method is fitted on the
table with the hidden labels as ``-1`` and predicts the hidden rows (``fit`` + ``predict``, timed together);
the accuracy is on the hidden rows. Methods: ``COINTabularClassifier()`` (the default), the same with half
the epochs at twice the step size (half the time), the same with ``"label-spreading"``, scikit-learn's
``LabelSpreading(kernel="knn")`` (the reference of every ratio),
``SelfTrainingClassifier(LogisticRegression)``
and a ``LogisticRegression`` on the labelled rows alone.

**Nodes** — Cora (2,708 nodes, 1,433 bag-of-words features) and CiteSeer (3,312 nodes, 3,703;
``$PDENETS_DATA/npz/{cora,citeseer}.npz``), 20 labels per class, every other node unlabelled:
``DiffusionNodeClassifier()`` (Diff-ResNet) and ``DiffusionNodeClassifier("gcn")`` beside a textbook
full-batch GCN written here (two layers of 64 on the symmetric-normalized adjacency with self-loops, sparse
products, dropout 0.5, Adam at 0.01 with weight decay 5e-4, early stopping with patience 50 on 500 more
validation nodes, or on the estimators' own held-out share of the labels), accuracy on the unlabelled nodes
minus those 500.

**Few-shot** — the default method (``adaptive``) beside a logistic regression trained on the support set,
per task on 384-d embeddings (a features file of ``pdenets features embed-text``, or Gaussian classes of
384-d unit vectors without one), 5- and 20-way, 1 and 5 shots, 15 queries per class.

**Scale** — synthetic tables with structure (Gaussian classes on a low-dimensional manifold, 32 features)
of 10k, 100k and 1M rows, and a wide sparse one, 1 % labelled: seconds, peak memory per row and accuracy of
``COINTabularClassifier()``, beside ``LabelSpreading(kernel="knn")`` at every size it finishes within the
time limit; each size runs in a child process.

Times are medians over the seeds (tables) or tasks (few-shot); ratios are ours / the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread each, set before numpy and torch start

import numpy as np  # noqa: E402
import torch  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

torch.set_num_threads(1)

HIDDEN = (0.9, 0.97)
SEEDS = 5


def _hide(labels: np.ndarray, share: float, seed: int) -> np.ndarray:
    """The labels with ``share`` of them hidden (``-1``), at least one label of every class kept."""
    rng = np.random.default_rng(seed)
    hidden = rng.random(len(labels)) < share
    for label in np.unique(labels):  # one labelled row of every class
        members = np.flatnonzero(labels == label)
        if hidden[members].all():
            hidden[rng.choice(members)] = False
    return np.where(hidden, -1, labels)


def _table_methods() -> Dict[str, Callable[[], Any]]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier

    from pdenets.estimators import COINTabularClassifier

    return {
        "COINTabularClassifier()": lambda: COINTabularClassifier(),
        "COINTabularClassifier(epochs=100, step_size=0.5)": lambda: COINTabularClassifier(
            epochs=100, step_size=0.5
        ),
        'COINTabularClassifier("label-spreading")': lambda: COINTabularClassifier("label-spreading"),
        "LabelSpreading(knn)": lambda: LabelSpreading(kernel="knn"),
        "SelfTraining(LogisticRegression)": lambda: SelfTrainingClassifier(LogisticRegression(max_iter=1000)),
        "LogisticRegression (labelled rows)": lambda: _LabelledOnly(LogisticRegression(max_iter=1000)),
    }


class _LabelledOnly:
    """A supervised model fitted on the rows whose label is known."""

    def __init__(self, model):
        self.model = model

    def fit(self, X, y):
        known = y != -1
        self.model.fit(X[known], y[known])
        return self

    def predict(self, X):
        return self.model.predict(X)


def _tables() -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris

    loaders = (("digits", load_digits), ("breast cancer", load_breast_cancer), ("iris", load_iris))
    return {name: loader(return_X_y=True) for name, loader in loaders}


def run_tables(seeds: int = SEEDS) -> Dict[str, Any]:
    """Every method on every table and share of hidden labels (module docstring)."""
    methods, out = _table_methods(), {}
    for table, (X, y) in _tables().items():
        for share in HIDDEN:
            cell: Dict[str, Dict[str, List[float]]] = {
                name: {"seconds": [], "accuracy": []} for name in methods
            }
            for seed in range(seeds):
                partial = _hide(y, share, seed)
                hidden = partial == -1
                for name, make in methods.items():
                    model = make()
                    with warnings.catch_warnings(), threadpool_limits(1):
                        warnings.simplefilter("ignore")
                        start = time.perf_counter()
                        model.fit(X, partial)
                        predicted = model.predict(X[hidden])
                        seconds = time.perf_counter() - start
                    cell[name]["seconds"].append(seconds)
                    cell[name]["accuracy"].append(float((predicted == y[hidden]).mean()))
            out[f"{table} / {int(share * 100)} % hidden"] = cell
            _print_table_cell(f"{table}, {int(share * 100)} % hidden", cell)
    return out


def _print_table_cell(title: str, cell: Dict[str, Dict[str, List[float]]]) -> None:
    reference = cell["LabelSpreading(knn)"]
    ref_seconds, ref_accuracy = statistics.median(reference["seconds"]), float(np.mean(reference["accuracy"]))
    print(f"\n{title}")
    print("| method | accuracy % | vs label spreading (points) | seconds (median) | time / label spreading |")
    print("|---|---:|---:|---:|---:|")
    for name, values in cell.items():
        accuracy, seconds = float(np.mean(values["accuracy"])), statistics.median(values["seconds"])
        print(
            f"| {name} | {100 * accuracy:.1f} | {100 * (accuracy - ref_accuracy):+.1f} | {seconds:.4f} | "
            f"{seconds / ref_seconds:.1f}x |"
        )
    sys.stdout.flush()


# ----------------------------------------------------------------------------------------------- nodes


def _textbook_gcn(graph, train, val, seed: int, hidden: int = 64):
    """The 40-line full-batch GCN a user would write beside it (module docstring): two layers on
    ``D̃^{-1/2}(A + I)D̃^{-1/2}``, sparse products, dropout 0.5 on the hidden layer, Adam at 0.01 with weight
    decay 5e-4, early stopping on the validation nodes' loss with patience 50; returns the logits."""
    import scipy.sparse as sp
    from torch.nn import functional as F

    n, edges = graph.num_nodes, graph.edge_index.numpy()
    adjacency = sp.coo_matrix((np.ones(edges.shape[1]), (edges[0], edges[1])), shape=(n, n)).tocsr() + sp.eye(
        n
    )
    scale = np.asarray(adjacency.sum(1)).ravel() ** -0.5
    adjacency = (sp.diags(scale) @ adjacency @ sp.diags(scale)).tocoo()
    a_hat = torch.sparse_coo_tensor(
        np.vstack([adjacency.row, adjacency.col]), adjacency.data.astype(np.float32), (n, n)
    ).coalesce()
    x = graph.x_sparse.to_sparse_coo().float().coalesce()
    torch.manual_seed(seed)
    first, second = torch.nn.Linear(x.shape[1], hidden), torch.nn.Linear(hidden, graph.num_classes)
    parameters = list(first.parameters()) + list(second.parameters())
    optimizer = torch.optim.Adam(parameters, lr=0.01, weight_decay=5e-4)

    def forward(training: bool) -> torch.Tensor:
        h = torch.sparse.mm(a_hat, torch.sparse.mm(x, first.weight.T) + first.bias).relu()
        return torch.sparse.mm(a_hat, second(F.dropout(h, 0.5, training)))

    labels, best, waited, kept = graph.y, float("inf"), 0, None
    for _ in range(1000):
        optimizer.zero_grad()
        F.cross_entropy(forward(True)[train], labels[train]).backward()
        optimizer.step()
        with torch.no_grad():
            loss = float(F.cross_entropy(forward(False)[val], labels[val]))
        if loss < best:
            best, waited, kept = loss, 0, [p.detach().clone() for p in parameters]
        else:
            waited += 1
            if waited >= 50:
                break
    with torch.no_grad():
        for parameter, value in zip(parameters, kept):
            parameter.copy_(value)
        return forward(False)


NODE_GRAPHS = {
    "cora": "Cora (2,708 nodes, 1,433 bag-of-words features)",
    "citeseer": "CiteSeer (3,312 nodes, 3,703 bag-of-words features)",
}


def run_nodes(seeds: int = SEEDS, data_dir=None) -> Dict[str, Any]:
    """Cora and CiteSeer with 20 labels per class (module docstring): the estimators beside the textbook
    GCN, which early-stops on 500 more labelled validation nodes or on the same share of the 20 labels per
    class the estimators hold out (the same information)."""
    return {name: _run_graph(name, seeds, data_dir) for name in NODE_GRAPHS}


def _run_graph(name: str, seeds: int, data_dir) -> Dict[str, Any]:
    from pdenets.data.graphs import load_graph
    from pdenets.data.splits import held_out_split
    from pdenets.data.transforms import prepare_graph
    from pdenets.estimators import DiffusionNodeClassifier

    data = load_graph(name, data_dir)
    graph = prepare_graph(data, "bag-of-words")
    truth = graph.y.numpy()
    methods = [
        "DiffusionNodeClassifier()",
        'DiffusionNodeClassifier("gcn")',
        "textbook GCN, 500 validation labels",
        "textbook GCN, the same labels",
    ]
    cell: Dict[str, Dict[str, List[float]]] = {m: {"seconds": [], "accuracy": []} for m in methods}
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        chosen = np.concatenate(
            [rng.choice(np.flatnonzero(truth == c), 20, replace=False) for c in range(graph.num_classes)]
        )
        labels = np.full(len(truth), -1)
        labels[chosen] = truth[chosen]
        unlabelled = np.flatnonzero(labels < 0)
        validation = torch.from_numpy(rng.permutation(unlabelled)[:500])
        scored = np.setdiff1d(unlabelled, validation.numpy())  # never seen by any method
        for method in methods:
            start = time.perf_counter()
            if method.startswith("DiffusionNodeClassifier"):
                model = "gcn" if '"gcn"' in method else "diff-resnet"
                estimator = DiffusionNodeClassifier(model, random_state=seed).fit(
                    (graph.x, graph.edge_index), labels
                )
                predicted = estimator.predict().astype(int)
            else:
                if "500" in method:
                    train, val = torch.from_numpy(chosen), validation
                else:
                    split = held_out_split(torch.from_numpy(labels), 0.2, seed)
                    train, val = split.train, split.val
                predicted = _textbook_gcn(graph, train, val, seed).argmax(1).numpy()
            cell[method]["seconds"].append(time.perf_counter() - start)
            cell[method]["accuracy"].append(float((predicted[scored] == truth[scored]).mean()))
    reference = cell["textbook GCN, 500 validation labels"]
    ref_seconds, ref_accuracy = statistics.median(reference["seconds"]), float(np.mean(reference["accuracy"]))
    print(f"\n{NODE_GRAPHS[name]}, 20 labels per class, {seeds} seeds")
    print("| method | accuracy % | vs textbook GCN (points) | seconds (median) | time / textbook GCN |")
    print("|---|---:|---:|---:|---:|")
    for method, values in cell.items():
        accuracy, seconds = float(np.mean(values["accuracy"])), statistics.median(values["seconds"])
        print(
            f"| {method} | {100 * accuracy:.1f} | {100 * (accuracy - ref_accuracy):+.1f} | {seconds:.2f} | "
            f"{seconds / ref_seconds:.2f}x |"
        )
    sys.stdout.flush()
    return cell


# -------------------------------------------------------------------------------------------- few-shot

FEWSHOT_SETTINGS = ((5, 1), (5, 5), (20, 1), (20, 5))
QUERIES = 15


def _fewshot_features(path) -> Tuple[np.ndarray, np.ndarray, str]:
    """``(features, labels, description)`` of a features file, or 150 Gaussian classes of 30 unit vectors
    in 384 dimensions (class centres of norm 1 plus noise of the same size, then L2-normalized)."""
    if path is not None:
        from pdenets.data.fewshot import load_features

        loaded = load_features(path)
        features = loaded.features.double().numpy()
        return features, loaded.labels.numpy(), f"{Path(path).name} ({features.shape[1]}-d)"
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(150, 384)) / np.sqrt(384)
    features = np.repeat(centres, 30, axis=0) + rng.normal(size=(4500, 384)) / np.sqrt(384) * 1.2
    features /= np.linalg.norm(features, axis=1, keepdims=True)
    return features, np.repeat(np.arange(150), 30), "Gaussian classes (384-d unit vectors)"


def _draw_task(labels: np.ndarray, ways: int, shots: int, rng) -> Tuple[np.ndarray, np.ndarray]:
    """Indices of a support set (``shots`` per class) and a query set (``QUERIES`` per class) of ``ways``
    classes, each with at least ``shots + QUERIES`` samples."""
    counts = np.bincount(labels)
    classes = rng.choice(np.flatnonzero(counts >= shots + QUERIES), ways, replace=False)
    support, query = [], []
    for label in classes:
        members = rng.permutation(np.flatnonzero(labels == label))
        support.append(members[:shots])
        query.append(members[shots : shots + QUERIES])
    return np.concatenate(support), np.concatenate(query)


def run_fewshot(tasks: int = 30, features_path=None) -> Dict[str, Any]:
    """The default few-shot method beside a support-set logistic regression, task by task (module
    docstring): ``DiffusionFewShotClassifier().fit(support).predict(queries)`` as a user calls it, and
    ``LogisticRegression(max_iter=1000)`` fitted on the same support set; both timed per task."""
    from sklearn.linear_model import LogisticRegression

    from pdenets.models.fewshot import DiffusionFewShotClassifier

    features, labels, description = _fewshot_features(features_path)
    methods: Dict[str, Callable[[], Any]] = {
        "DiffusionFewShotClassifier() (adaptive)": lambda: DiffusionFewShotClassifier(),
        "LogisticRegression (support set)": lambda: LogisticRegression(max_iter=1000),
    }
    out: Dict[str, Any] = {}
    print(f"\nFew-shot, {description}, {tasks} tasks a setting, {QUERIES} queries a class, one thread")
    print(
        "| setting | default accuracy % | logistic regression % | points | default ms (median) | "
        "logistic regression ms | time ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for ways, shots in FEWSHOT_SETTINGS:
        rng = np.random.default_rng(1000 * ways + shots)
        cell: Dict[str, Dict[str, List[float]]] = {m: {"seconds": [], "accuracy": []} for m in methods}
        for _ in range(tasks):
            support, query = _draw_task(labels, ways, shots, rng)
            for name, make in methods.items():
                with warnings.catch_warnings(), threadpool_limits(1):
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    predicted = make().fit(features[support], labels[support]).predict(features[query])
                    seconds = time.perf_counter() - start
                cell[name]["seconds"].append(seconds)
                cell[name]["accuracy"].append(float((predicted == labels[query]).mean()))
        ours, theirs = (cell[name] for name in methods)
        ours_ms, theirs_ms = (1000 * statistics.median(values["seconds"]) for values in (ours, theirs))
        ours_accuracy, theirs_accuracy = (
            100 * float(np.mean(values["accuracy"])) for values in (ours, theirs)
        )
        print(
            f"| {ways}-way {shots}-shot | {ours_accuracy:.1f} | {theirs_accuracy:.1f} | "
            f"{ours_accuracy - theirs_accuracy:+.1f} | {ours_ms:.1f} | {theirs_ms:.1f} | "
            f"{ours_ms / theirs_ms:.1f}x |"
        )
        sys.stdout.flush()
        out[f"{ways}-way {shots}-shot"] = cell
    return {"features": description, "settings": out}


# ----------------------------------------------------------------------------------------------- scale

SCALE_SIZES = (10_000, 100_000, 1_000_000)
NEW_ROWS = 10_000
LABELLED = 0.01


def _scale_table(kind: str, rows: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: ``rows`` rows of 10 classes. ``manifold``: Gaussian classes in 4 latent dimensions, mapped
    to 32 features by a fixed random two-layer map (``tanh``) plus noise; ``sparse``: 1,000 word counts a
    row, about 20 words a row drawn from a class's own distribution over a shared vocabulary (98 % zeros).
    The class structure (the maps, the word distributions) is the same for every ``seed``."""
    structure = np.random.default_rng(12345)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, rows)
    if kind == "manifold":
        centres = structure.normal(scale=2.0, size=(10, 4))
        first, second = structure.normal(size=(4, 32)), structure.normal(size=(32, 32)) / np.sqrt(32)
        latent = centres[labels] + rng.normal(size=(rows, 4))
        features = np.tanh(latent @ first) @ second + 0.05 * rng.normal(size=(rows, 32))
        return features, labels
    if kind != "sparse":
        raise ValueError(f"unknown table kind {kind!r}")
    vocabulary = 1000
    topics = structure.dirichlet(np.full(vocabulary, 0.05), size=10)
    common = structure.dirichlet(np.full(vocabulary, 1.0))
    features = np.zeros((rows, vocabulary))
    for label in range(10):
        members = np.flatnonzero(labels == label)
        mixture = 0.5 * topics[label] + 0.5 * common
        words = rng.choice(vocabulary, size=(len(members), 20), p=mixture)
        np.add.at(features, (np.repeat(members, 20), words.ravel()), 1.0)
    return features, labels


def _scale_trial(kind: str, rows: int, method: str) -> Dict[str, Any]:
    """One fit (``LABELLED`` of the rows labelled) and one predict (``NEW_ROWS`` fresh rows) in this
    process; what the parent prints (seconds, peak memory, accuracy)."""
    from sklearn.semi_supervised import LabelSpreading

    from _common import peak_memory_gib
    from pdenets.estimators import COINTabularClassifier

    X, y = _scale_table(kind, rows, seed=0)
    new_X, new_y = _scale_table(kind, NEW_ROWS, seed=1)
    partial = _hide(y, 1 - LABELLED, seed=0)
    hidden = partial == -1
    baseline = peak_memory_gib()
    model = COINTabularClassifier() if method == "coin" else LabelSpreading(kernel="knn")
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X, partial)
        fit_seconds = time.perf_counter() - start
        start = time.perf_counter()
        predicted = model.predict(new_X)
        predict_seconds = time.perf_counter() - start
    return {
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
        "peak_gib": peak_memory_gib(),
        "data_gib": baseline,  # before the fit: the interpreter, the libraries and the tables
        "accuracy": float((model.transduction_[hidden] == y[hidden]).mean()),
        "predict_accuracy": float((predicted == new_y).mean()),
    }


def run_scale(sizes=SCALE_SIZES, timeout: float = 1800.0, cap_gib: float = 20.0) -> Dict[str, Any]:
    """Every size and method in a child process (its own peak memory), ``timeout`` seconds each; label
    spreading stops at the first size it does not finish."""
    from _common import run_trial

    script = str(Path(__file__).resolve())
    out: Dict[str, Any] = {}
    print(
        f"\nScale: {int(LABELLED * 100)} % of the rows labelled, fit then predict {NEW_ROWS:,} new rows, one "
        f"thread, {timeout:g} s and {cap_gib:g} GiB a trial"
    )
    print(
        "| table | rows | method | fit s | fit µs / row | predict s | peak GiB | fit KiB / row | "
        "accuracy % (hidden rows) | accuracy % (new rows) |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind, kind_sizes in (
        ("manifold", sizes),
        ("sparse", tuple(size for size in sizes if size <= 100_000)),
    ):
        reached = {"coin": True, "label-spreading": True}
        for rows in kind_sizes:
            for method in ("coin", "label-spreading"):
                name = "COINTabularClassifier()" if method == "coin" else "LabelSpreading(knn)"
                if not reached[method]:
                    print(
                        f"| {kind} | {rows:,} | {name} | not run: a smaller size did not finish | | | | | | |"
                    )
                    continue
                result, failure = run_trial(script, [kind, rows, method], cap_gib, timeout)
                out[f"{kind} / {rows} / {method}"] = result if result is not None else {"failed": failure}
                if result is None:
                    reached[method] = False
                    print(f"| {kind} | {rows:,} | {name} | {failure} | | | | | | |")
                    continue
                fit_kib_per_row = (result["peak_gib"] - result["data_gib"]) * 2**20 / rows
                print(
                    f"| {kind} | {rows:,} | {name} | {result['fit_seconds']:.1f} | "
                    f"{1e6 * result['fit_seconds'] / rows:.1f} | {result['predict_seconds']:.2f} | "
                    f"{result['peak_gib']:.2f} | {fit_kib_per_row:.2f} | "
                    f"{100 * result['accuracy']:.1f} | {100 * result['predict_accuracy']:.1f} |"
                )
                sys.stdout.flush()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "tables", "nodes", "fewshot", "scale"), default="all")
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--tasks", type=int, default=30, help="few-shot tasks a setting (default 30)")
    parser.add_argument("--features", type=Path, default=None, help="few-shot features file (.npz)")
    parser.add_argument("--sizes", default=",".join(map(str, SCALE_SIZES)), help="rows of the scale part")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds a scale trial may take")
    parser.add_argument("--trial", nargs=3, metavar=("KIND", "ROWS", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.trial:
        kind, rows, method = args.trial
        print(json.dumps(_scale_trial(kind, int(rows), method)))
        return 0
    results: Dict[str, Any] = {}
    if args.part in ("all", "tables"):
        results["tables"] = run_tables(args.seeds)
    if args.part in ("all", "nodes"):
        results["nodes"] = run_nodes(args.seeds)
    if args.part in ("all", "fewshot"):
        results["fewshot"] = run_fewshot(args.tasks, args.features)
    if args.part == "scale":  # not in "all": about half an hour
        results["scale"] = run_scale(tuple(int(size) for size in args.sizes.split(",")), args.timeout)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
