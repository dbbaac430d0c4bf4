"""What calibration costs beside a plain predict and a fit, measured side by side in one run.

    python benchmarks/calibration.py            # Cora (needs $PDENETS_DATA/npz/cora.npz), 5 repeats
    python benchmarks/calibration.py --quick    # 3 repeats

``DiffusionNodeClassifier`` (Diff-ResNet, 64 hidden features) is fitted on Cora's largest component with 20
labelled nodes per class, 20 % of them held out. Timed, one thread, medians:

* ``fit``: the whole fit, calibration included (``calibrate=True``);
* ``predict``: ``predict_proba`` of every node of the fitted graph (a plain predict);
* ``calibration``: what the fit spends on calibration: one forward pass for the logits, the class-shift
  weights, the temperature's bisection and the bins of the held-out nodes
  (:func:`pdenets.tasks.node_classification.model._calibration`);
* ``temperature``: the bisection alone, on the held-out nodes' logits.

The ratios are each time over ``predict``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import median_time  # noqa: E402
from pdenets.analysis.calibration import fit_temperature  # noqa: E402
from pdenets.data.graphs import graph_data  # noqa: E402
from pdenets.data.splits import held_out_split  # noqa: E402
from pdenets.estimators import DiffusionNodeClassifier  # noqa: E402
from pdenets.models.training import evaluation_mode  # noqa: E402
from pdenets.tasks.node_classification.model import _calibration, network_inputs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="3 repeats")
    parser.add_argument("--json", help="also write the table to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    repeats = 3 if args.quick else 5
    data = os.environ.get("PDENETS_DATA", os.path.expanduser("~/.cache/pdenets"))
    graph_file = os.path.join(data, "npz", "cora.npz")
    if not os.path.isfile(graph_file):
        sys.exit(f"needs {graph_file}: set $PDENETS_DATA to the data folder")
    truth = np.asarray(graph_data(graph_file).y)
    rng = np.random.default_rng(0)
    given = np.full(len(truth), -1)
    for label in np.unique(truth[truth >= 0]):
        given[rng.choice(np.flatnonzero(truth == label), 20, replace=False)] = label
    graph = graph_file
    estimator = DiffusionNodeClassifier(calibrate=True, progress=False).fit(graph, given)
    model, prepared = estimator.model_, estimator.graph_
    split = held_out_split(
        prepared.y, estimator.val_fraction, int(estimator.random_state), estimator.min_val_per_class
    )

    def calibration() -> None:
        with evaluation_mode(model.network), torch.no_grad():
            logits = model.network(*network_inputs(model.settings, prepared, torch.device("cpu")))
        _calibration(logits, prepared.y, split)

    with evaluation_mode(model.network), torch.no_grad():
        logits = model.network(*network_inputs(model.settings, prepared, torch.device("cpu")))
    held_out_logits, held_out_labels = logits[split.val], prepared.y[split.val]

    def fit() -> None:
        DiffusionNodeClassifier(calibrate=True, progress=False).fit(graph, given)

    times = {
        "fit": median_time(fit, repeats),
        "predict": median_time(estimator.predict_proba, repeats),
        "calibration": median_time(calibration, repeats),
        "temperature": median_time(lambda: fit_temperature(held_out_logits, held_out_labels), repeats),
    }
    print(
        f"Cora, {len(prepared.y):,} nodes, {int((given >= 0).sum())} labelled, {len(split.val)} held out; "
        f"temperature {estimator.temperature_:.3f}; one thread, medians of {repeats}"
    )
    print(f"{'step':<12} {'seconds':>10} {'/ predict':>10}")
    for name, seconds in times.items():
        print(f"{name:<12} {seconds:>10.4f} {seconds / times['predict']:>10.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump(times, stream, indent=2)


if __name__ == "__main__":
    main()
