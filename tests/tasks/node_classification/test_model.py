"""A saved node-classification model is refused, in one line naming its file or the graph, when its manifest
lacks what a prediction needs, its settings are of the wrong kind or out of range, its weights are not the
network its settings build, or the graph given has another feature width; a complete model comes back as
written."""

from types import SimpleNamespace

import pytest
import torch

from pdenets.data.errors import DatasetError
from pdenets.models.node_training import MessagePassingSettings
from pdenets.saved_model import SavedModelError, load_model, save_model
from pdenets.tasks.node_classification.model import NodeModel, NodeSettings, _Sizes, build_network

SETTINGS = NodeSettings("gcn", MessagePassingSettings(0.01, 5e-4), 2, 5, 5, "identity", "bag-of-words")
CLASSES = ("team-north", "team-south", "team-west")


def _model(missing_features="identity"):
    settings = NodeSettings("gcn", SETTINGS.hyperparameters, 2, 5, 5, missing_features, "bag-of-words")
    torch.manual_seed(0)
    network = build_network(settings, _Sizes(5, 3))
    return NodeModel(settings, network, CLASSES, 5, about={"seed": 3, "graph": "friends"})


def _folder(tmp_path, name, task="node-classification", **changes):
    """A model saved with its manifest entries ``changes`` (``None``: left out)."""
    folder = _model().save(tmp_path / "original")
    tensors, manifest = load_model(folder, task="node-classification")
    plain = {k: v for k, v in manifest.items() if k not in ("format", "pdenets", "task", "model", "shapes")}
    plain.pop("weights")
    plain = {key: value for key, value in {**plain, **changes}.items() if value is not None}
    return save_model(tmp_path / name, tensors, task=task, model="gcn", manifest=plain)


def test_a_complete_model_comes_back_with_its_weights_and_settings(tmp_path):
    model = _model()
    again = NodeModel.load(model.save(tmp_path / "model-gcn"))
    assert again.settings == model.settings and again.class_names == CLASSES and again.num_features == 5
    assert again.about == {"seed": 3, "graph": "friends"}
    for name, value in model.network.state_dict().items():
        assert torch.equal(again.network.state_dict()[name], value), name


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"hyperparameters": None}, "no hyperparameters of a known kind"),
        ({"hyperparameters": {"kind": "AdamSettings", "lr": 0.01}}, "no hyperparameters of a known kind"),
        (
            {"hyperparameters": {"kind": "MessagePassingSettings", "lr": "fast", "weight_decay": 0.0}},
            "hyperparameters: lr holds 'fast', not a finite number",
        ),
        ({"patience": None}, "patience holds None, not a whole number"),
        ({"max_epochs": 1e12}, "max_epochs holds 1000000000000.0, not a whole number"),
        ({"class_names": None}, "class_names is not a list of names"),
        ({"class_names": ["a", "a", "b"]}, "class_names repeats 'a'"),
        ({"depth": 10**9}, "depth must be at most 100,000"),
        ({"num_features": 10**9}, "the saved weights do not fit the model its settings describe"),
        ({"class_names": ["a", "b"]}, "the saved weights do not fit the model its settings describe"),
        ({"temperature": 0.0}, r"temperature holds 0.0, not a number in \[0.01, 100.0\]"),
        ({"temperature": 100.5}, "temperature holds 100.5, not a number in"),
        ({"temperature": "warm"}, "temperature holds 'warm', not a number in"),
        ({"temperature": True}, "temperature holds True, not a number in"),
    ],
)
def test_a_manifest_that_cannot_describe_the_weights_is_refused_naming_it(tmp_path, changes, message):
    folder = _folder(tmp_path, "model-gcn", **changes)
    with pytest.raises(SavedModelError, match=rf"model-gcn/model.json: .*{message}"):
        NodeModel.load(folder)


def test_a_temperature_at_either_end_of_its_range_is_kept_and_one_saved_before_it_reads_as_trained(tmp_path):
    for temperature in (0.01, 100.0):
        assert NodeModel.load(_folder(tmp_path, f"t{temperature}", temperature=temperature)).temperature == (
            temperature
        )
    assert NodeModel.load(_folder(tmp_path, "before", temperature=None)).temperature == 1.0


def test_a_model_of_another_task_or_no_model_at_all_is_refused(tmp_path):
    with pytest.raises(SavedModelError, match="coin-tabular"):
        NodeModel.load(_folder(tmp_path, "tabular", task="coin-tabular"))
    with pytest.raises(SavedModelError, match=r"nothing/model.json: missing"):
        NodeModel.load(tmp_path / "nothing")


def test_a_graph_of_another_feature_width_is_refused_naming_it(tmp_path):
    graph = SimpleNamespace(num_features=8)  # a graph read with 8 features a node
    model = NodeModel.load(_model(missing_features="degree").save(tmp_path / "degree"))
    with pytest.raises(DatasetError, match=r"^grown.txt: its nodes have 8 features as the run read them, the "
                       r"model 5 \(another feature width\)$"):  # fmt: skip
        model.predict_proba(graph, "grown.txt")
    # a model of a graph without features read the node ids: a grown graph has more of them
    model = NodeModel.load(_model().save(tmp_path / "identity"))
    with pytest.raises(
        DatasetError, match="another feature width; without a features file the features are the"
    ):
        model.predict_proba(graph, "grown.txt")
