"""Why this class, and what to label next: a node classifier's predictions shared over the nodes that carried
them, and the labels to ask for in the next round.

A graph of four communities whose features blur into each other, two labelled nodes per community. A
Diff-ResNet's prediction is a sum over nodes: its diffusion carries every node's score to its neighbours,
so ``explain`` names the nodes that carried a prediction with their exact shares of its margin over the
runner-up class (they add up to the margin, with the classifier's bias). ``suggest`` picks the nodes to
label next: ``typical`` the most typical node of each of the largest clusters of the model's own diffused
features that no label speaks for yet, ``coverage`` the nodes whose labels would reach the most uncertainty
through the model's own diffusion, ``uncertainty`` the smallest margins, ``random`` a draw. Three rounds of
four labels each, the truth we kept back answering for the user, and the accuracy on the nodes still
unlabelled after each round.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch_geometric.data import Data

from pdenets.estimators import DiffusionNodeClassifier

generator = torch.Generator().manual_seed(0)
nodes, communities, budget, rounds = 400, 4, 4, 3
truth = torch.arange(nodes) * communities // nodes
pairs = torch.randint(0, nodes, (2, 8 * nodes), generator=generator)
inside = truth[pairs[0]] == truth[pairs[1]]
chain = torch.stack([torch.arange(nodes - 1), torch.arange(1, nodes)])  # keeps every community connected
edges = torch.cat([chain, pairs[:, inside], pairs[:, ~inside][:, :nodes]], dim=1)
features = torch.eye(communities, 8)[truth] + 2.0 * torch.randn(nodes, 8, generator=generator)
graph = Data(x=features, edge_index=edges)

first = torch.full((nodes,), -1)
for community in range(communities):
    members = torch.nonzero(truth == community).squeeze(1)
    first[members[torch.randperm(len(members), generator=generator)[:2]]] = community


def fit(labels):
    """Every labelled node trains (no validation share to hold out from two per class)."""
    settings = dict(val_fraction=0.0, max_epochs=150, progress=False)
    return DiffusionNodeClassifier(**settings).fit(graph, labels)


def accuracy(estimator, labels):
    unlabelled = (labels < 0).numpy()
    answer = estimator.classes_[estimator.predict_proba().argmax(1)]
    return 100 * (answer[unlabelled] == truth.numpy()[unlabelled]).mean()


estimator = fit(first)
node = int(torch.nonzero(first < 0)[0])
explanation = estimator.explain([node], top=5)[0]
print(
    f"node {explanation.id}: class {explanation.predicted} ({100 * explanation.probability:.1f} %) over "
    f"{explanation.runner_up}, margin {explanation.margin:.3f} = shares of {explanation.reach} nodes + bias"
)
for contributor in explanation.contributors:
    label = "unlabelled" if contributor.label is None else f"labelled {contributor.label}"
    print(f"  node {contributor.id:>4} ({label}): {contributor.share:+.3f}")
print(f"  the other nodes: {explanation.others:+.3f}, bias: {explanation.bias:+.3f}")
total = sum(c.share for c in explanation.contributors) + explanation.others + explanation.bias
print(f"  sum of the shares and the bias: {total:.3f}")

curves = {}
for criterion in ("typical", "coverage", "uncertainty", "random"):
    labels, model = first.clone(), estimator
    curve = [accuracy(model, labels)]
    for round_ in range(rounds):
        chosen = model.suggest(budget, criterion=criterion, seed=round_).astype(int)
        labels[chosen] = truth[chosen]  # the user labels them
        model = fit(labels)
        curve.append(accuracy(model, labels))
    curves[criterion] = curve
    print(f"{criterion:>11}: " + ", ".join(f"{value:.1f} %" for value in curve))

figure, ax = plt.subplots(figsize=(4.8, 3.6), layout="constrained")
counts = communities * 2 + budget * np.arange(rounds + 1)
for (criterion, curve), marker in zip(curves.items(), "osx^"):
    ax.plot(counts, curve, marker=marker, label=criterion)
ax.set_xlabel("labelled nodes")
ax.set_ylabel("accuracy on the unlabelled nodes (%)")
ax.set_xticks(counts)
ax.legend(fontsize=8)
ax.set_title("Rounds of labels by criterion", fontsize=10)
figure.savefig("explain_and_label_next.png", dpi=110)
