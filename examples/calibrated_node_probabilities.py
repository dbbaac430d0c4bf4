"""Probabilities you can take at their word: calibrate a node classifier, and read its accuracy on the nodes
nobody labelled before anyone labels them.

A graph of three communities whose features blur into each other, 20 labelled nodes per community: the rest
are what we want answered. ``DiffusionNodeClassifier(calibrate=True)`` divides the network's logits by one
temperature fitted on the labelled nodes it held out for early stopping (4 a community), so that a 0.8 comes
true about eight times in ten; the predictions stay the same. The expected calibration error (ECE) on the
unlabelled nodes, measured against the truth we kept back, says how far each is from that; the reliability
diagram shows it bin by bin. Last, the mean confidence of the calibrated probabilities on the unlabelled
nodes, with its interval, estimates the accuracy there, without their labels.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch_geometric.data import Data

from pdenets.analysis.calibration import expected_accuracy, expected_calibration_error, reliability_bins
from pdenets.estimators import DiffusionNodeClassifier
from pdenets.experiments.calibration_report import draw_reliability

generator = torch.Generator().manual_seed(0)
nodes, communities = 900, 3
truth = torch.arange(nodes) * communities // nodes
pairs = torch.randint(0, nodes, (2, 10 * nodes), generator=generator)
inside = truth[pairs[0]] == truth[pairs[1]]
edges = torch.cat([pairs[:, inside], pairs[:, ~inside][:, : 2 * nodes]], dim=1)  # a fifth of edges cross over
features = torch.eye(communities, 8)[truth] + 1.2 * torch.randn(nodes, 8, generator=generator)
graph = Data(x=features, edge_index=edges)

labels = torch.full((nodes,), -1)
for community in range(communities):
    members = torch.nonzero(truth == community).squeeze(1)
    chosen = members[torch.randperm(len(members), generator=generator)[:20]]
    labels[chosen] = community
unlabelled = (labels < 0).numpy()

figure, ax = plt.subplots(figsize=(4.6, 4.2), layout="constrained")
for calibrate, style in ((False, "-"), (True, "--")):
    estimator = DiffusionNodeClassifier(calibrate=calibrate, progress=False).fit(graph, labels)
    probabilities = estimator.predict_proba()
    answer = estimator.classes_[probabilities.argmax(1)]
    right = (answer[unlabelled] == truth.numpy()[unlabelled]).mean()
    ece = expected_calibration_error(probabilities[unlabelled], truth.numpy()[unlabelled])
    estimate, low, high = expected_accuracy(probabilities[unlabelled])
    name = "calibrated" if calibrate else "as trained"
    print(
        f"{name:>10}: temperature {estimator.temperature_:.3f}, ECE {100 * ece:.1f} %, accuracy on the "
        f"{unlabelled.sum()} unlabelled nodes {100 * right:.1f} %, expected {100 * estimate:.1f} % "
        f"[{100 * low:.1f}, {100 * high:.1f}]"
    )
    bins = reliability_bins(probabilities[unlabelled], truth.numpy()[unlabelled])
    draw_reliability(ax, bins, label=f"{name} (ECE {100 * ece:.1f} %)", color="#1f77b4", linestyle=style)
ax.set_xlim(np.floor(10 / communities) / 10, 1)
ax.set_title("Reliability on the unlabelled nodes", fontsize=10)
ax.legend(fontsize=8, loc="upper left")
figure.savefig("calibrated_node_probabilities.png", dpi=110)
