"""A saved node-classification model is refused, in one line naming its file or the graph, when its manifest
lacks what a prediction needs or when the graph given has another feature width; a complete manifest comes
back as written."""

from types import SimpleNamespace

import pytest
import torch

from pdenets.data.errors import DatasetError
from pdenets.saved_model import SavedModelError, save_model
from pdenets.tasks.node_classification.saved import load_node_model, node_probabilities, predict_graph

MANIFEST = {
    "model": "gcn",
    "depth": 2,
    "seed": 3,
    "train_per_class": 20,
    "val_per_class": 30,
    "max_epochs": 5,
    "patience": 5,
    "hyperparameters": {"kind": "MessagePassingSettings", "lr": 0.01, "weight_decay": 5e-4},
    "missing_features": "identity",
    "feature_transform": "auto",
    "num_features": 5,
    "class_names": ["team-north", "team-south", "team-west"],
    "graph": "friends",
}
WEIGHTS = {"layer.weight": torch.ones(3, 5)}


def _folder(tmp_path, name, task="node-classification", **changes):
    manifest = {key: value for key, value in {**MANIFEST, **changes}.items() if value is not None}
    return save_model(tmp_path / name, WEIGHTS, task=task, model="gcn", manifest=manifest)


def test_a_complete_manifest_comes_back_with_its_weights(tmp_path):
    state, manifest = load_node_model(_folder(tmp_path, "model-gcn"))
    assert torch.equal(state["layer.weight"], WEIGHTS["layer.weight"])
    for key, value in MANIFEST.items():
        assert manifest[key] == value, key


@pytest.mark.parametrize(
    "changes",
    [
        {"hyperparameters": None},
        {"hyperparameters": {"kind": "AdamSettings", "lr": 0.01}},
        {"patience": None},
        {"class_names": None},
    ],
)
def test_a_manifest_without_what_a_prediction_needs_is_refused_naming_it(tmp_path, changes):
    folder = _folder(tmp_path, "model-gcn", **changes)
    with pytest.raises(SavedModelError, match=r"model-gcn/model.json: no hyperparameters of a known kind"):
        load_node_model(folder)


def test_a_model_of_another_task_or_no_model_at_all_is_refused(tmp_path):
    with pytest.raises(SavedModelError, match="coin-tabular"):
        load_node_model(_folder(tmp_path, "tabular", task="coin-tabular"))
    with pytest.raises(SavedModelError, match=r"nothing/model.json: missing"):
        predict_graph(tmp_path / "nothing", "cora")


def test_a_graph_of_another_feature_width_is_refused_naming_it(tmp_path):
    state, manifest = load_node_model(_folder(tmp_path, "model-gcn", missing_features="zeros"))
    graph = SimpleNamespace(num_features=8)  # a graph read with 8 features a node
    with pytest.raises(DatasetError, match=r"^grown.txt: its nodes have 8 features as the run read them, the "
                       r"model 5 \(another feature width\)$"):  # fmt: skip
        node_probabilities(state, manifest, graph, "grown.txt")
    # a model of a graph without features read the node ids: a grown graph has more of them
    state, manifest = load_node_model(_folder(tmp_path, "identity"))
    with pytest.raises(
        DatasetError, match="another feature width; without a features file the features are the"
    ):
        node_probabilities(state, manifest, graph, "grown.txt")
