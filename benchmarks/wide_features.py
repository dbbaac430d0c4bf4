"""Diff-ResNet on graphs with wide features: diffusing in the input width vs in a learned hidden width.

    python benchmarks/wide_features.py                 # Cora (1,433 features), CiteSeer (3,703), 1 thread
    python benchmarks/wide_features.py --width 32

One training epoch (forward, backward, Adam step, validation pass) of the node-classification
protocol's Diff-ResNet, r = 20, on one thread, medians of 5 epochs:

* ``input`` (the paper): ``x + ReLU(FC1 x)`` in the ``d`` input features, then 20 diffusion
  steps on ``d`` columns — ``O(r · nnz(W) · d)`` and a ``d × d`` FC1;
* ``hidden`` (``--diffuse-in hidden``): a linear map ``d → h`` first, then the block and the
  20 steps on ``h`` columns.

The split of the epoch: the same model with ``r = 0`` gives the cost of everything but the
diffusion (features, block, classifier, optimizer); the rest is the diffusion.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import median_time  # noqa: E402
from pdenets.data.transforms import prepared_graph  # noqa: E402
from pdenets.models import DiffResNet  # noqa: E402
from pdenets.tasks.node_classification.task import TABLE6  # noqa: E402


def epoch_seconds(graph, num_steps: int, hidden, settings, repeats: int) -> float:
    torch.manual_seed(0)
    model = DiffResNet(
        graph.num_features,
        graph.num_classes,
        block="graph",
        num_steps=num_steps,
        step_size=settings.step_size,
        dropout=settings.dropout if num_steps else 0.0,
        dropout_position="before",
        weights=graph.weights if num_steps else None,
        hidden_features=hidden,
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    train = torch.arange(0, graph.num_nodes, 20)

    def epoch():
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(graph.x_sparse)[train], graph.y[train]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            model(graph.x_sparse)

    return median_time(epoch, repeats)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="cora,citeseer")
    parser.add_argument("--width", type=int, default=64, help="hidden width h (default 64)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    print(
        f"{'graph':>10} {'features':>9} {'variant':>8} {'epoch s':>8} {'diffusion s':>12} {'rest s':>7} "
        f"{'input / hidden':>15}"
    )
    for name in args.datasets.split(","):
        graph = prepared_graph(name, None)
        settings = TABLE6.get(name, TABLE6["default"])
        times = {}
        for variant, hidden in (("input", None), ("hidden", args.width)):
            total = epoch_seconds(graph, settings.num_steps, hidden, settings, args.repeats)
            rest = epoch_seconds(graph, 0, hidden, settings, args.repeats)
            times[variant] = total
            ratio = "" if variant == "input" else f"{times['input'] / total:>14.1f}x"
            print(
                f"{name:>10} {graph.num_features:>9,} {variant:>8} {total:>8.3f} {total - rest:>12.3f} "
                f"{rest:>7.3f} {ratio:>15}",
                flush=True,
            )
            rows.append(
                {
                    "graph": name,
                    "features": graph.num_features,
                    "variant": variant,
                    "width": hidden,
                    "epoch_s": total,
                    "without_diffusion_s": rest,
                }
            )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
