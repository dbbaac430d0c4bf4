"""DiffusionNodeClassifier: the node-classification task's models on a graph held in memory or in a file,
the unlabelled nodes predicted, saved in the format of a run's models and read by ``pdenets predict``."""

import numpy as np
import pytest
import torch
from torch_geometric.data import Data
from usergraphs import write_graph_with_features as _with_features

from pdenets.cli import main
from pdenets.estimators import DiffusionNodeClassifier
from pdenets.experiments.predictions import read_predictions
from pdenets.saved_model import SavedModelError


def _communities(nodes=150, seed=0, unknown=0.3):
    """Three communities with blurred features; the truth and labels with ``unknown`` of them left out."""
    generator = torch.Generator().manual_seed(seed)
    truth = torch.arange(nodes) * 3 // nodes
    pairs = torch.randint(0, nodes, (2, 8 * nodes), generator=generator)
    inside = truth[pairs[0]] == truth[pairs[1]]
    edges = torch.cat([pairs[:, inside], pairs[:, ~inside][:, : nodes // 10]], 1)
    x = torch.eye(3)[truth] + 0.8 * torch.randn(nodes, 3, generator=generator)
    hidden = torch.rand(nodes, generator=generator) < unknown
    return Data(x=x, edge_index=edges), truth, torch.where(hidden, -1, truth), hidden


@pytest.mark.parametrize("model", ["diff-resnet", "gcn"])
def test_unlabelled_nodes_are_predicted_on_hidden_truth(model):
    graph, truth, labels, hidden = _communities()
    names = np.array(["red", "green", "blue"])
    given = np.where(hidden.numpy(), None, names[truth.numpy()])
    estimator = DiffusionNodeClassifier(model, max_epochs=200).fit(graph, given)
    assert estimator.classes_.tolist() == ["blue", "green", "red"]
    predicted = estimator.predict()
    assert len(predicted) == len(estimator.node_ids()) == 150
    right = (predicted[hidden.numpy()] == names[truth.numpy()][hidden.numpy()]).mean()
    assert right >= 0.85, right
    probabilities = estimator.predict_proba()
    assert probabilities.shape == (150, 3) and np.allclose(probabilities.sum(1), 1, atol=1e-6)


def test_settings_and_the_seed_are_used():
    graph, _, labels, _ = _communities(90, seed=1)
    base = DiffusionNodeClassifier(max_epochs=30).fit(graph, labels).predict_proba()
    again = DiffusionNodeClassifier(max_epochs=30).fit(graph, labels).predict_proba()
    assert np.array_equal(base, again)
    for changed in (
        DiffusionNodeClassifier(max_epochs=30, random_state=1),
        DiffusionNodeClassifier(max_epochs=30, settings={"num_steps": 2}),
        DiffusionNodeClassifier(max_epochs=30, settings={"step_size": 0.1}),
        DiffusionNodeClassifier(max_epochs=30, feature_transform="none"),
        DiffusionNodeClassifier(max_epochs=30, settings={"hidden_features": 16}),
        DiffusionNodeClassifier(max_epochs=30, patience=2, stop_on="loss-or-accuracy"),
        DiffusionNodeClassifier(max_epochs=30, min_val_per_class=5),  # 20, 20, 23 a class: none held out
    ):
        assert not np.allclose(changed.fit(graph, labels).predict_proba(), base, atol=1e-6), changed


def test_diff_resnet_diffuses_64_hidden_features_unless_told_the_input_width():
    graph, _, labels, _ = _communities(90, seed=1)
    estimator = DiffusionNodeClassifier(max_epochs=3).fit(graph, labels)
    assert estimator.model_.settings.hyperparameters.hidden_features == 64
    network = estimator.model_.network
    assert (network.input_map.in_features, network.input_map.out_features) == (3, 64)
    assert network.classifier.in_features == 64
    paper = DiffusionNodeClassifier(max_epochs=3, settings={"hidden_features": None}).fit(graph, labels)
    assert paper.model_.network.input_map is None and paper.model_.network.classifier.in_features == 3


def test_the_diffusion_dropout_is_the_hidden_width_s_on_every_graph_and_the_rest_table_6():
    from pdenets.estimators.node import HIDDEN_DROPOUT
    from pdenets.tasks.node_classification.config import TABLE6

    for name in ("citeseer", "cora", "pubmed", "my-graph"):
        settings = DiffusionNodeClassifier()._hyperparameters(name)
        table = TABLE6.get(name, TABLE6["default"])
        assert settings.dropout == HIDDEN_DROPOUT == 0.25, name
        assert (settings.step_size, settings.num_steps) == (table.step_size, table.num_steps), name
    assert TABLE6["citeseer"].dropout == 0.35  # the task's protocol keeps the paper's value
    told = DiffusionNodeClassifier(settings={"dropout": 0.1})._hyperparameters("citeseer")
    assert told.dropout == 0.1 and told.step_size == TABLE6["citeseer"].step_size


def test_calibrated_probabilities_divide_the_logits_by_the_temperature_fitted_on_the_held_out_nodes(tmp_path):
    """``calibrate=True``: the temperature that minimizes the held-out nodes' log-loss, the same predictions,
    and the probabilities kept through the saved model and ``pdenets predict``."""
    from pdenets.analysis.calibration import fit_temperature
    from pdenets.data.splits import held_out_split

    graph, truth, labels, hidden = _communities(120, seed=2)
    plain = DiffusionNodeClassifier(max_epochs=60, progress=False).fit(graph, labels)
    calibrated = DiffusionNodeClassifier(max_epochs=60, progress=False, calibrate=True).fit(graph, labels)
    assert plain.temperature_ == 1.0 and calibrated.temperature_ != 1.0
    as_trained, scaled = plain.predict_proba(), calibrated.predict_proba()
    assert np.array_equal(as_trained.argmax(1), scaled.argmax(1))
    logits = torch.log(torch.from_numpy(as_trained).double())  # the same network: the same seed
    held_out = held_out_split(calibrated.graph_.y, 0.2, 0, min_held_out=4).val
    assert len(held_out) >= 12  # 4 and more a class
    expected = fit_temperature(logits[held_out], calibrated.graph_.y[held_out])
    assert calibrated.temperature_ == pytest.approx(expected, rel=1e-3)
    assert np.allclose(scaled, torch.softmax(logits / calibrated.temperature_, 1).numpy(), atol=1e-5)
    again = DiffusionNodeClassifier.load(calibrated.save(tmp_path / "model-diff-resnet"))
    assert again.temperature_ == calibrated.temperature_ and again.calibrate is True


def test_a_class_with_fewer_labels_than_its_held_out_share_needs_trains_on_them_all():
    """11 to 17 labelled nodes a class: at ``val_fraction=0.2`` each would hold out 2 or 3, under the default
    ``min_val_per_class=4``: every label trains (early stopping on the training loss); at 2 the shares are
    held out; ``calibrate`` with nothing held out says so and keeps the probabilities as trained."""
    import warnings

    graph, _, labels, _ = _communities(60, seed=1)
    counts = torch.bincount(labels[labels >= 0]).tolist()
    assert all(2 <= round(0.2 * count) <= 3 for count in counts), counts
    every = DiffusionNodeClassifier(max_epochs=30, progress=False).fit(graph, labels)
    held = DiffusionNodeClassifier(max_epochs=30, progress=False, min_val_per_class=2).fit(graph, labels)
    assert not np.allclose(every.predict_proba(), held.predict_proba(), atol=1e-6)
    with pytest.warns(UserWarning, match="no labelled node is held out"):
        calibrated = DiffusionNodeClassifier(max_epochs=30, progress=False, calibrate=True).fit(graph, labels)
    assert calibrated.temperature_ == 1.0
    assert np.array_equal(calibrated.predict_proba(), every.predict_proba())
    with pytest.warns(UserWarning, match=r"held out \(val_fraction=0\)"):
        none = DiffusionNodeClassifier(max_epochs=5, progress=False, calibrate=True, val_fraction=0)
        assert none.fit(graph, labels).temperature_ == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaled = DiffusionNodeClassifier(max_epochs=30, progress=False, calibrate=True, min_val_per_class=2)
        assert scaled.fit(graph, labels).temperature_ != 1.0


def test_saved_here_read_by_pdenets_predict_and_a_runs_model_loaded_here(tmp_path, capsys):
    folder = tmp_path / "g"
    folder.mkdir()
    graph = _with_features(folder, 90, seed=0)
    estimator = DiffusionNodeClassifier(max_epochs=40).fit(str(graph))
    saved = estimator.save(tmp_path / "mine" / "model-diff-resnet")
    out = tmp_path / "p.csv"
    assert main(["predict", str(tmp_path / "mine"), "--dataset", str(graph), "--out", str(out)]) == 0
    rows = read_predictions(out)
    assert [row["id"] for row in rows] == estimator.node_ids()
    assert [row["predicted"] for row in rows] == estimator.predict().tolist()
    again = DiffusionNodeClassifier.load(saved)
    assert torch.equal(
        torch.from_numpy(again.predict_proba(str(graph))), torch.from_numpy(estimator.predict_proba())
    )
    with pytest.raises(ValueError, match="give the graph"):
        again.predict()
    # a run's model: loaded here, it answers a grown graph as ``pdenets predict`` does
    run = tmp_path / "run"
    argv = ["run", "node-classification", "--dataset", str(graph), "--models", "diff-resnet", "--splits", "1"]
    argv += ["--inits", "1", "--max-epochs", "40", "--set", "train_per_class=5", "--set", "val_per_class=5"]
    assert main(argv + ["--no-progress", "--out", str(run)]) == 0
    grown_folder = tmp_path / "grown"
    grown_folder.mkdir()
    grown = _with_features(grown_folder, 150, seed=1)
    answer = tmp_path / "grown.csv"
    assert main(["predict", str(run), "--dataset", str(grown), "--out", str(answer)]) == 0
    loaded = DiffusionNodeClassifier.load(run / "model-diff-resnet")
    assert loaded.classes_.tolist() == ["b", "g", "r"]
    assert [row["predicted"] for row in read_predictions(answer)] == loaded.predict(str(grown)).tolist()


def test_bad_graphs_labels_and_settings_are_refused(tmp_path):
    graph, _, labels, _ = _communities(60)
    cases = [
        (DiffusionNodeClassifier("nonsense"), graph, labels, "model must be one of"),
        (DiffusionNodeClassifier(settings={"steps": 3}), graph, labels, "unknown 'steps'"),
        (DiffusionNodeClassifier(val_fraction=1.0), graph, labels, "val_fraction"),
        (DiffusionNodeClassifier(min_val_per_class=0), graph, labels, "min_val_per_class must be a whole"),
        (DiffusionNodeClassifier(min_val_per_class=2.5), graph, labels, "min_val_per_class must be a whole"),
        (DiffusionNodeClassifier(), graph, labels[:-1], "one label per node"),
        (DiffusionNodeClassifier(), graph, torch.full((60,), -1), "every label is unknown"),
        (DiffusionNodeClassifier(), (graph.x, graph.edge_index + 60), labels, "outside 0"),
        (DiffusionNodeClassifier(), (graph.x * float("nan"), graph.edge_index), labels, "NaN"),
        (DiffusionNodeClassifier(), [1, 2], labels, "graph must be"),
        (DiffusionNodeClassifier(stop_on="accuracy"), graph, labels, "stop_on must be one of"),
    ]
    for estimator, given, known, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            estimator.fit(given, known)
    fresh, _, labels, _ = _communities(60)
    folder = DiffusionNodeClassifier(max_epochs=5).fit(fresh, labels).save(tmp_path / "m")
    (folder / "weights.safetensors").write_bytes(b"0" + (folder / "weights.safetensors").read_bytes()[1:])
    with pytest.raises(SavedModelError, match="SHA-256"):
        DiffusionNodeClassifier.load(folder)
