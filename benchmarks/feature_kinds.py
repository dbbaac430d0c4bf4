"""Node classification on the feature kinds users bring: one Diff-ResNet epoch per kind, relative to binary
bag-of-words features of the same shape.

    python benchmarks/feature_kinds.py                      # a 2,810 x 2,879 graph at 1.9 % density (~2 min)
    python benchmarks/feature_kinds.py --nodes 1000 --features 500 --repeats 2   # a smaller one
    python benchmarks/feature_kinds.py --graph my_graph.npz # the structure and sparsity pattern of a file

Each kind is written as a ``.npz`` graph file on one random sparse pattern (the same edges, labels and
non-zero positions): ``binary`` (0/1), ``counts`` (whole numbers), ``tfidf`` (TF-IDF weights, rows of unit
length), ``dense`` (real values in every entry, the same shape) and ``narrow-binary`` / ``narrow-dense``
(64 columns: an embedding against 0/1 features of its shape). Each file goes through what a run does to it
(:func:`pdenets.data.transforms.prepared_graph` with ``feature_transform = auto``: the transform it chooses,
sparse or dense input by density), then one training epoch of the node-classification protocol's
Diff-ResNet (``r = 20``, forward, backward, Adam step, validation pass) is timed on one thread, medians over
``--repeats``. The ratio is the kind's epoch time over the binary graph's of the same shape; the goal is at
most 1.5x. The row ``tfidf, standardize held sparse`` is the way such a graph once ran (centred features,
every entry stored in a sparse matrix), for scale.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import median_time  # noqa: E402
from pdenets.data.transforms import feature_density, prepared_graph  # noqa: E402
from pdenets.models import DiffResNet  # noqa: E402
from pdenets.tasks.node_classification.config import TABLE6  # noqa: E402


def _pattern(nodes: int, features: int, density: float, seed: int):
    """Edges (a sparse random graph with 3 communities), labels and a sparse 0/1 feature pattern."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, nodes)
    rows = rng.integers(0, nodes, nodes * 4)
    same = rng.random(nodes * 4) < 0.8
    partners = np.where(same, rng.permutation(nodes)[rows], rng.integers(0, nodes, nodes * 4))
    adjacency = sp.coo_matrix((np.ones(rows.size), (rows, partners)), shape=(nodes, nodes)).tocsr()
    adjacency = ((adjacency + adjacency.T + sp.eye(nodes, k=1) + sp.eye(nodes, k=-1)) > 0).astype(np.float32)
    pattern = sp.random(nodes, features, density=density, format="csr", random_state=seed, dtype=np.float32)
    pattern.data[:] = 1.0
    return adjacency, labels, pattern


def _from_file(path: str):
    import scipy.sparse as sp

    data = np.load(path, allow_pickle=False)
    adjacency = sp.csr_matrix(
        (data["adj_data"], data["adj_indices"], data["adj_indptr"]), shape=data["adj_shape"]
    )
    attributes = sp.csr_matrix(
        (data["attr_data"], data["attr_indices"], data["attr_indptr"]), shape=data["attr_shape"]
    )
    pattern = (attributes != 0).astype(np.float32)
    return adjacency.astype(np.float32), np.asarray(data["labels"]), pattern


def _kinds(pattern, seed: int):
    """The feature matrices of every kind on one pattern (scipy CSR, or a dense array)."""
    from sklearn.feature_extraction.text import TfidfTransformer

    rng = np.random.default_rng(seed)
    counts = pattern.copy()
    counts.data = (rng.poisson(1.5, counts.nnz) + 1).astype(np.float32)
    tfidf = TfidfTransformer().fit_transform(counts).astype(np.float32).tocsr()
    dense = rng.normal(size=pattern.shape).astype(np.float32)
    narrow = rng.normal(size=(pattern.shape[0], 64)).astype(np.float32)
    narrow_binary = (rng.random((pattern.shape[0], 64)) < 0.2).astype(np.float32)
    return {
        "binary": pattern,
        "counts": counts,
        "tfidf": tfidf,
        "dense": dense,
        "narrow-binary": narrow_binary,
        "narrow-dense": narrow,
    }


def _save(folder: Path, name: str, adjacency, labels, features) -> str:
    import scipy.sparse as sp

    features = sp.csr_matrix(features)
    path = folder / f"{name}.npz"
    np.savez(
        path,
        adj_data=adjacency.data,
        adj_indices=adjacency.indices,
        adj_indptr=adjacency.indptr,
        adj_shape=np.array(adjacency.shape),
        attr_data=features.data,
        attr_indices=features.indices,
        attr_indptr=features.indptr,
        attr_shape=np.array(features.shape),
        labels=labels,
    )
    return str(path)


def epoch_seconds(graph, inputs: torch.Tensor, repeats: int) -> float:
    """The median time of one training epoch of the protocol's Diff-ResNet on ``inputs``."""
    settings = TABLE6["default"]
    torch.manual_seed(0)
    model = DiffResNet(
        graph.num_features,
        graph.num_classes,
        block="graph",
        num_steps=settings.num_steps,
        step_size=settings.step_size,
        dropout=settings.dropout,
        dropout_position="before",
        weights=graph.weights,
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    train = torch.arange(0, graph.num_nodes, 20)

    def epoch():
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(inputs)[train], graph.y[train]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            model(inputs)

    return median_time(epoch, repeats)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2810)
    parser.add_argument("--features", type=int, default=2879)
    parser.add_argument(
        "--density", type=float, default=0.019, help="share of non-zero features (default 0.019)"
    )
    parser.add_argument("--graph", default=None, help="a .npz graph whose edges, labels and pattern to use")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--skip-before", action="store_true", help="leave out the standardize-held-sparse row"
    )
    parser.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.graph:
        adjacency, labels, pattern = _from_file(args.graph)
    else:
        adjacency, labels, pattern = _pattern(args.nodes, args.features, args.density, args.seed)
    rows, reference = [], {}
    columns = ("kind", 30), ("shape", 12), ("transform", 14), ("input", 7), ("density", 8), ("epoch s", 8)
    print(" ".join(f"{name:>{width}}" for name, width in columns) + f" {'/ binary':>9}")
    with tempfile.TemporaryDirectory() as folder:
        kinds = _kinds(pattern, args.seed)
        cases = [(kind, kind, "auto") for kind in kinds]
        if not args.skip_before:
            cases.append(("tfidf, standardize held sparse", "tfidf", "standardize"))
        for label, kind, transform in cases:
            path = _save(Path(folder), kind, adjacency, labels, kinds[kind])
            graph = prepared_graph(path, None, "identity", transform)
            inputs = graph.x_sparse if transform == "standardize" else graph.x_input
            seconds = epoch_seconds(graph, inputs, args.repeats)
            shape = "narrow" if kind.startswith("narrow") else "wide"
            if kind in ("binary", "narrow-binary"):
                reference[shape] = seconds
            ratio = seconds / reference[shape]
            layout = "sparse" if inputs.layout != torch.strided else "dense"
            print(
                f"{label:>30} {graph.num_nodes:>5}x{graph.num_features:<6} {graph.feature_transform:>14} "
                f"{layout:>7} {feature_density(graph.x):>8.3f} {seconds:>8.3f} {ratio:>8.2f}x",
                flush=True,
            )
            rows.append(
                {
                    "kind": label,
                    "nodes": graph.num_nodes,
                    "features": graph.num_features,
                    "transform": graph.feature_transform,
                    "input": layout,
                    "density": feature_density(graph.x),
                    "epoch_s": seconds,
                    "relative_to_binary": ratio,
                }
            )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
