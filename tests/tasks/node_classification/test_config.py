"""Node-classification protocol: pinned down piece by piece on a tiny graph, then end to end."""

import dataclasses

import pytest

from pdenets.experiments.config import ConfigError
from pdenets.tasks.node_classification.config import (
    MODEL_NAMES,
    TABLE6,
    BaselineSettings,
    DiffusionHyperparameters,
    NodeClassificationConfig,
)
from pdenets.tasks.node_classification.task import NodeClassificationTask

from ...graph_fixtures import write_sbm_npz


@pytest.fixture()
def graph(tmp_path):
    return str(write_sbm_npz(tmp_path / "sbm.npz"))


def task(graph, **changes):
    values = dict(
        datasets=[graph],
        models=["diff-resnet"],
        num_splits=1,
        num_inits=1,
        max_epochs=20,
        patience=5,
        train_per_class=10,
        val_per_class=10,
        workers=1,
    )
    values.update(changes)
    return NodeClassificationTask(NodeClassificationConfig(**values))


def test_baselines_take_registry_defaults_and_overrides(graph):
    gat = task(graph, models=["gat"]).hyperparameters("gat", graph)
    assert dataclasses.asdict(gat) == {
        "hidden_features": 8,
        "heads": 8,
        "dropout": 0.6,
        "lr": 0.005,
        "weight_decay": 5e-4,
    }
    config = NodeClassificationConfig(
        datasets=[graph], models=["gcn"], baselines={"gcn": BaselineSettings(hidden_features=32)}
    )
    assert NodeClassificationTask(config).hyperparameters("gcn", graph).hidden_features == 32


@pytest.mark.parametrize(
    "changes",
    [
        dict(models=list(MODEL_NAMES), depth_models=["gat"]),
        dict(depths=[], depth_splits=1, depth_inits=1),
        dict(depths=[1], train_per_class=1, val_per_class=1),
        dict(weight_decay=0.0, diffuse_in="hidden", diffusion_width=1),
        dict(diffusion={"cora": DiffusionHyperparameters(1e-9, 0, 0.0)}),
        dict(baselines={"gat": BaselineSettings(hidden_features=1, heads=1, dropout=0.0, lr=1e-9)}),
        dict(baselines={"gcn": BaselineSettings()}),
    ],
)
def test_values_at_the_edge_of_each_bound_are_accepted(changes):
    NodeClassificationConfig(**changes).validate()


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(depth_models=["gcn", "mlp"]), r"unknown model\(s\) \['mlp'\]; choose from"),
        (dict(models=[]), "models must not be empty"),
        (dict(depths=[4, 0]), "depths must be >= 1, got 0"),
        (dict(val_per_class=0), "val_per_class must be >= 1"),
        (dict(lr=0.0), "lr must be > 0"),
        (dict(diffusion_width=0), "diffusion_width must be >= 1"),
        (dict(dropout_position="middle"), r"dropout_position must be one of \['before', 'after'\]"),
        (dict(feature_transform="pca"), "feature_transform must be one of"),
        (dict(missing_features="zeros"), r"missing_features must be one of \['identity', 'degree'\]"),
        (
            dict(diffusion={"cora": DiffusionHyperparameters(0.0, 20, 0.25)}),
            "diffusion.cora.step_size must be > 0",
        ),
        (
            dict(diffusion={"g": DiffusionHyperparameters(0.25, -1, 0.25)}),
            "diffusion.g.num_steps must be >= 0",
        ),
        (
            dict(diffusion={"g": DiffusionHyperparameters(0.25, 2, 1.0)}),
            r"diffusion.g.dropout must be in \[0, 1\)",
        ),
        (dict(baselines={"gat": BaselineSettings(heads=0)}), "baselines.gat.heads must be >= 1, got 0"),
        (
            dict(baselines={"gcn": BaselineSettings(hidden_features=0)}),
            "baselines.gcn.hidden_features must be >= 1",
        ),
        (
            dict(baselines={"gcn": BaselineSettings(dropout=1.0)}),
            r"baselines.gcn.dropout must be in \[0, 1\)",
        ),
        (dict(baselines={"gcn": BaselineSettings(lr=0.0)}), "baselines.gcn.lr must be > 0"),
        (
            dict(baselines={"gcn": BaselineSettings(weight_decay=-1.0)}),
            "baselines.gcn.weight_decay must be >= 0",
        ),
        (dict(baselines={"diff-resnet": BaselineSettings()}), r"\['diff-resnet'\], which are not baselines"),
        (dict(partition="nowhere"), "partition='nowhere' is neither a partitioner"),
    ],
)
def test_a_value_past_a_bound_is_refused_naming_the_setting(changes, message):
    with pytest.raises(ConfigError, match=message):
        NodeClassificationConfig(**changes).validate()


def test_the_split_file_beside_a_single_graph_file_is_taken_and_a_missing_one_refused(tmp_path):
    graph, other = tmp_path / "roads.npz", tmp_path / "rivers.npz"
    graph.write_bytes(b"")
    other.write_bytes(b"")
    alone = NodeClassificationConfig(datasets=[str(graph)])
    alone.validate()
    assert alone.split_file is None  # no split beside the graph
    (tmp_path / "roads-split.csv").write_text("0,train\n")
    beside = NodeClassificationConfig(datasets=[str(graph)])
    beside.validate()
    assert beside.split_file == str(tmp_path / "roads-split.csv")
    two = NodeClassificationConfig(datasets=[str(graph), str(other)])
    two.validate()
    assert two.split_file is None  # a split names the nodes of one graph
    named = NodeClassificationConfig(datasets=["cora"])
    named.validate()
    assert named.split_file is None
    with pytest.raises(ConfigError, match=r"split_file '.*gone.csv' is not a file \(node,split lines\)"):
        NodeClassificationConfig(split_file=str(tmp_path / "gone.csv")).validate()


def test_a_partition_folder_needs_its_partition_json(tmp_path):
    with pytest.raises(ConfigError, match="nor a folder holding a saved partition"):
        NodeClassificationConfig(partition=str(tmp_path)).validate()
    (tmp_path / "partition.json").write_text("{}")
    NodeClassificationConfig(partition=str(tmp_path)).validate()


def test_the_table6_defaults_are_copied_into_each_config():
    config = NodeClassificationConfig()
    assert config.diffusion == TABLE6 and config.diffusion["cora"] is not TABLE6["cora"]
    config.diffusion["cora"].step_size = 0.9
    assert TABLE6["cora"].step_size == 0.25 and NodeClassificationConfig().diffusion["cora"].step_size == 0.25
    assert (TABLE6["pubmed"].step_size, TABLE6["pubmed"].num_steps, TABLE6["pubmed"].dropout) == (
        0.4,
        10,
        0.3,
    )


def test_quick_config_changes_only_the_splits_inits_and_epochs():
    quick, full = NodeClassificationTask.quick_config(), NodeClassificationConfig()
    changed = {f.name for f in dataclasses.fields(full) if getattr(quick, f.name) != getattr(full, f.name)}
    assert changed == {"num_splits", "num_inits", "max_epochs", "patience"}
    assert (quick.num_splits, quick.num_inits, quick.max_epochs, quick.patience) == (2, 1, 60, 20)
    assert quick.depths == [] and quick.patience < quick.max_epochs  # no depth study; early stopping can act
    quick.validate()
