"""A fitted node model explains its predictions by the user's node ids: the named shares, the other nodes' and
the bias add up to the margin, which is the log-odds of the model's own (calibrated) probabilities; cutting
out the top contributors changes predictions more often than cutting out as many random nodes of the reach
(faithfulness); it suggests only nodes without a label (and among those asked); a GNN baseline is refused
plainly; the files written are safe to open and never replace a file."""

import csv
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from pdenets.analysis.explanations import isolate_nodes
from pdenets.analysis.label_selection import select_items
from pdenets.data.errors import DatasetError
from pdenets.estimators import DiffusionNodeClassifier
from pdenets.models.training import evaluation_mode
from pdenets.tasks.node_classification.decisions import (
    MAX_TOP,
    explain_nodes,
    suggest_nodes,
    write_explanations,
    write_suggestions,
)


def _community_graph(nodes=150, classes=3, seed=0):
    generator = torch.Generator().manual_seed(seed)
    blocks = torch.arange(nodes) % classes
    pairs = torch.randint(0, nodes, (2, 8 * nodes), generator=generator)
    inside = blocks[pairs[0]] == blocks[pairs[1]]
    edges = torch.cat([pairs[:, inside], pairs[:, ~inside][:, : nodes // 2]], 1)
    x = torch.nn.functional.one_hot(blocks, classes).float() + 1.5 * torch.randn(
        nodes, classes, generator=generator
    )
    labels = torch.where(torch.arange(nodes) < 4 * classes, blocks, -1)
    return Data(x=x, edge_index=edges), labels, blocks


@pytest.fixture(scope="module")
def fitted():
    graph, labels, truth = _community_graph()
    estimator = DiffusionNodeClassifier(max_epochs=60, progress=False).fit(graph, labels)
    return estimator, truth


def _margins_of(model):
    network, graph, inputs = model.network_on(None)
    with evaluation_mode(network), torch.no_grad():
        logits = network(*inputs).double() / model.temperature
    top = logits.topk(2, dim=1).values
    return top[:, 0] - top[:, 1], graph.node_ids()


@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_the_shares_add_up_to_the_log_odds_of_the_models_probabilities(fitted, temperature):
    estimator, _ = fitted
    model = replace(estimator.model_, temperature=temperature)
    margins, ids = _margins_of(model)
    probabilities = model.predict_proba(None).double()
    asked = ["0", "17", "149", "40"]
    explanations = model.explain(asked, top=4)
    assert [item.id for item in explanations] == asked
    for item in explanations:
        node = ids.index(item.id)
        named = sum(contributor.share for contributor in item.contributors)
        assert named + item.others + item.bias == pytest.approx(item.margin, abs=1e-9)
        assert item.margin == pytest.approx(float(margins[node]), abs=1e-5)
        first, second = probabilities[node].topk(2).values
        assert item.margin == pytest.approx(float(torch.log(first / second)), abs=1e-4)
        assert item.probability == pytest.approx(float(first), abs=1e-6)
        assert len(item.contributors) == 4 and item.reach > 4
        shares = [abs(contributor.share) for contributor in item.contributors]
        assert shares == sorted(shares, reverse=True)
        assert sum(contributor.itself for contributor in item.contributors) <= 1


def test_a_contributor_names_its_label_where_the_graph_has_one(fitted):
    estimator, truth = fitted
    (item,) = estimator.explain(["3"], top=150)
    labels = {contributor.id: contributor.label for contributor in item.contributors}
    assert labels["3"] == str(int(truth[3])) and any(c.itself for c in item.contributors)
    assert all(labels[str(node)] is None for node in range(12, 150) if str(node) in labels)


def test_removing_the_top_contributors_changes_more_predictions_than_random_ones(fitted):
    estimator, _ = fitted
    model = estimator.model_
    network, graph, inputs = model.network_on(None)
    x, weights = inputs[0], graph.weights
    with evaluation_mode(network), torch.no_grad():
        before = network(x).argmax(1)
    ids = graph.node_ids()
    items = list(range(12, 150))
    explanations = explain_nodes(model, graph, [ids[i] for i in items], top=5)
    generator = np.random.default_rng(0)
    changed = {"top": 0, "random": 0}
    for node, item in zip(items, explanations):
        top = [ids.index(c.id) for c in item.contributors if not c.itself and c.share > 0][:3]
        reach = [j for j in range(len(ids)) if j != node]
        drawn = generator.choice(reach, 3, replace=False).tolist()
        for kind, removed in (("top", top), ("random", drawn)):
            with evaluation_mode(network), torch.no_grad():
                after = network(x, isolate_nodes(weights, torch.tensor(removed))).argmax(1)[node]
            changed[kind] += int(after != before[node])
    assert changed["top"] > 2 * changed["random"] and changed["top"] >= 5, changed


def test_ids_not_in_the_graph_and_a_top_out_of_range_are_refused(fitted):
    estimator, _ = fitted
    with pytest.raises(DatasetError, match=r"2 node id\(s\) not in the graph: 'paper-1', '900'"):
        estimator.explain(["paper-1", "3", "900"])
    for top in (0, MAX_TOP + 1, True):
        with pytest.raises(ValueError, match="top must be a whole number"):
            estimator.explain(["3"], top=top)
    (item,) = estimator.explain(["3"], top=1)
    assert len(item.contributors) == 1


def test_a_message_passing_baseline_is_refused_in_one_line():
    graph, labels, _ = _community_graph(nodes=60)
    gcn = DiffusionNodeClassifier("gcn", max_epochs=5, progress=False).fit(graph, labels)
    with pytest.raises(ValueError, match="GCN is not a sum over the items"):
        gcn.explain(["1"])
    assert len(gcn.suggest(3, "coverage")) == 3  # its spread: the graph's propagation, once a layer
    assert len(set(gcn.suggest(3))) == 3  # typical: the representation its last convolution reads


@pytest.mark.parametrize("criterion", ["typical", "coverage", "uncertainty", "random"])
def test_the_suggestions_are_nodes_without_a_label_and_among_those_asked(fitted, criterion):
    estimator, _ = fitted
    suggested = estimator.suggest(10, criterion)
    assert len(set(suggested)) == 10 and all(int(node) >= 12 for node in suggested)
    among = [str(node) for node in range(0, 40)]  # 12 labelled, 28 not
    inside = estimator.suggest(28, criterion, among=among)
    assert sorted(map(int, inside)) == list(range(12, 40))
    with pytest.raises(ValueError, match=r"budget must be a whole number in \[1, 28\]"):
        estimator.suggest(29, criterion, among=among)


def test_the_coverage_scores_are_the_greedys_gains_in_order(fitted):
    estimator, _ = fitted
    suggestions = suggest_nodes(estimator.model_, estimator.graph_, 8, "coverage")
    scores = [s.score for s in suggestions]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
    assert all(0 <= s.uncertainty <= 1 and 0 < s.probability <= 1 for s in suggestions)


def test_typical_clusters_the_networks_own_diffused_features(fitted):
    estimator, _ = fitted
    model = estimator.model_
    network, graph, inputs = model.network_on(None)
    with evaluation_mode(network), torch.no_grad():
        features = network.features(*inputs)
        probabilities = torch.softmax(network(*inputs).double(), dim=1)
    labelled = graph.y < 0
    expected, _ = select_items(
        probabilities, labelled, 6, "typical", embedding=features, labelled=~labelled, seed=3
    )
    suggestions = suggest_nodes(model, graph, 6, "typical", seed=3)
    ids = graph.node_ids()
    assert [s.id for s in suggestions] == [ids[i] for i in expected.tolist()]
    assert [s.id for s in suggestions] == list(estimator.suggest(6, seed=3))  # the estimator's default
    assert all(s.score > 0 for s in suggestions)


def test_the_files_add_up_are_safe_to_open_and_never_replace_a_file(fitted, tmp_path):
    estimator, _ = fitted
    explanations = estimator.explain(["0", "20"], top=3)
    path = write_explanations(tmp_path / "why.csv", explanations)
    with open(path, newline="") as stream:
        rows = list(csv.DictReader(stream))
    for item in explanations:
        mine = [row for row in rows if row["id"] == item.id]
        assert len(mine) == 3 + 2 and mine[-1]["contributor"] == "(bias)"
        assert sum(float(row["share"]) for row in mine) == pytest.approx(item.margin, abs=1e-4)
    with pytest.raises(FileExistsError):
        write_explanations(path, explanations)
    hostile = [replace(s, id="=HYPERLINK(1)") for s in suggest_nodes(estimator.model_, estimator.graph_, 2)]
    text = write_suggestions(tmp_path / "next.csv", hostile).read_text()
    assert ",'=HYPERLINK(1)," in text and ",=HYPERLINK" not in text
