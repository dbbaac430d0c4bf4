"""Node-classification protocol: pinned down piece by piece on a tiny graph, then end to end."""

import dataclasses
import json
import sqlite3
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from datafiles import CORA_NPZ, requires_data

from pdenets.cli import main
from pdenets.data.graphs import load_npz
from pdenets.data.splits import split_and_init_seeds, split_seeds
from pdenets.data.transforms import prepared_graph
from pdenets.experiments import job_key, run_task
from pdenets.tasks.node_classification.model import build_network as _build_model
from pdenets.tasks.node_classification.task import (
    NodeClassificationConfig,
    NodeClassificationTask,
    NodeJob,
    split_of,
    train_node_classifier,
)

from ...graph_fixtures import write_sbm_npz

SHORT = [
    "--set",
    "max_epochs=20",
    "--set",
    "patience=5",
    "--set",
    "train_per_class=10",
    "--set",
    "val_per_class=10",
    "--no-progress",
]


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


def first_job(graph, **changes) -> NodeJob:
    return task(graph, **changes).jobs()[0]


# ----------------------------------------------------------------------------------------
# the pieces of the protocol


def _reference_split(labels, seed, num_splits, num_inits, train_per_class, val_per_class):
    """The Diff-ResNet code's procedure: master RandomState → one seed per split; per split, per class
    (members in ascending order, earlier picks excluded) ``choice`` for training, then validation, then
    one torch seed per initialization from the same stream."""
    master = np.random.RandomState(seed)
    out = []
    for split_seed in master.randint(0, 1000000, num_splits):
        stream = np.random.RandomState(split_seed)
        picks = []
        for count in (train_per_class, val_per_class):
            forbidden = np.concatenate(picks) if picks else np.array([], dtype=int)
            picks.append(
                np.concatenate(
                    [
                        stream.choice(
                            [i for i in range(len(labels)) if labels[i] == c and i not in forbidden],
                            count,
                            replace=False,
                        )
                        for c in range(labels.max() + 1)
                    ]
                )
            )
        out.append((set(picks[0]), set(picks[1]), list(stream.randint(0, 1000000, num_inits))))
    return out


def test_splits_and_init_seeds_follow_the_reference_procedure():
    labels = np.repeat(np.arange(3), 12)
    np.random.default_rng(5).shuffle(labels)
    reference = _reference_split(labels, 42, 3, 4, 2, 3)
    assert split_seeds(42, 3) == [121958, 671155, 131932]  # RandomState(42).randint(0, 1e6, 3)
    for index, (train, val, inits) in enumerate(reference):
        split, init_seeds = split_and_init_seeds(torch.from_numpy(labels), split_seeds(42, 3)[index], 4, 2, 3)
        assert set(split.train.tolist()) == train and set(split.val.tolist()) == val
        assert set(split.test.tolist()) == set(range(36)) - train - val
        assert init_seeds == inits
        for init in range(4):  # a job's split and seed do not depend on how many splits/inits are planned
            job = NodeJob(
                experiment="protocol",
                graph="g",
                dataset="g",
                model="diff-resnet",
                depth=None,
                split=index,
                init=init,
                seed=42,
                train_per_class=2,
                val_per_class=3,
                max_epochs=10,
                patience=5,
                hyperparameters={},
            )
            job_split, seed = split_of(job, torch.from_numpy(labels))
            assert torch.equal(job_split.train, split.train) and seed == inits[init]


def test_every_initialization_of_a_split_starts_from_other_parameters(graph):
    jobs = task(graph, num_splits=2, num_inits=3).jobs()
    prepared = prepared_graph(graph, None)
    seeds, first_weights = set(), []
    for job in jobs:
        _, seed = split_of(job, prepared.y)
        seeds.add(seed)
        torch.manual_seed(seed)
        first_weights.append(_build_model(job, prepared).blocks[0].fc1.weight.detach().clone())
    assert len(seeds) == 6
    for i in range(len(first_weights)):
        for j in range(i):
            assert not torch.equal(first_weights[i], first_weights[j]), (i, j)


def test_protocol_graph_is_the_self_looped_symmetric_normalization(graph):
    prepared = prepared_graph(graph, None)
    # by hand: the file's directed edges made undirected, largest component, A + I, D^-1/2 (A+I) D^-1/2
    raw = load_npz(graph)
    n = raw.num_nodes
    adjacency = sp.csr_matrix(
        (np.ones(raw.edge_index.shape[1]), raw.edge_index.numpy()), shape=(n, n)
    ).toarray()
    adjacency = ((adjacency + adjacency.T) > 0).astype(float)
    np.fill_diagonal(adjacency, 0)
    _, component = sp.csgraph.connected_components(adjacency)
    keep = np.flatnonzero(component == np.bincount(component).argmax())
    a_hat = adjacency[np.ix_(keep, keep)] + np.eye(keep.size)
    d = a_hat.sum(1)
    expected = a_hat / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]
    weights = prepared.weights.to_dense().double().numpy()
    assert weights.shape == expected.shape == (prepared.num_nodes,) * 2
    np.testing.assert_allclose(weights, expected, rtol=1e-6, atol=1e-7)
    assert prepared.num_edges == int(adjacency[np.ix_(keep, keep)].sum() // 2)


def test_early_stopping_fires_and_restores_the_best_state(graph):
    job = replace(
        first_job(graph, max_epochs=300, patience=7),
        hyperparameters=replace(first_job(graph).hyperparameters, lr=0.05),
    )
    trained = train_node_classifier(job)
    model, fitted, record = trained.network, trained.result, trained.record
    assert fitted.epochs < 300, "this graph must make early stopping fire"
    assert record["epochs"] - record["best_epoch"] == 7 == job.patience
    again = train_node_classifier(replace(job, max_epochs=record["best_epoch"]))
    rerun, refit = again.network, again.result
    assert refit.epochs == refit.best_epoch == record["best_epoch"]
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, rerun.state_dict()[name]), name


def test_store_key_follows_every_setting_that_changes_a_run(graph):
    job = first_job(graph)
    base = job_key("node-classification", job)
    changes = {
        "experiment": "depth",
        "graph": "other.npz",
        "dataset": "other",
        "model": "gcn",
        "depth": 4,
        "split": 1,
        "init": 1,
        "seed": 7,
        "train_per_class": 11,
        "val_per_class": 12,
        "max_epochs": 21,
        "patience": 6,
        "missing_features": "degree",
        "partition": "metis",
        "feature_transform": "standardize",
        "split_digest": "0123abcd",
    }
    not_keys = {"hyperparameters", "split_file"}  # the split file's content is its digest's
    assert set(changes) == {f.name for f in dataclasses.fields(NodeJob)} - not_keys
    for name, value in changes.items():
        assert job_key("node-classification", replace(job, **{name: value})) != base, name
    for name, value in dataclasses.asdict(job.hyperparameters).items():
        other = (
            not value if isinstance(value, bool) else ("after" if value == "before" else (value or 0) * 2 + 1)
        )
        changed = replace(job, hyperparameters=replace(job.hyperparameters, **{name: other}))
        assert job_key("node-classification", changed) != base, name
    assert job_key("node-classification", replace(job, split_file="/elsewhere/split.csv")) == base
    assert job.partition == "contiguous"  # the default split keeps the single process's numbers and keys
    # bag-of-words features (as the citation graphs hold) keep the keys stored before the setting existed
    assert job.feature_transform == "bag-of-words"  # tests/test_deprecation.py pins such a key
    # end to end: a config setting reaches the key
    for setting in (
        {"lr": 0.02},
        {"weight_decay": 0.0},
        {"dropout_position": "after"},
        {"check_stability": False},
    ):
        assert job_key("node-classification", first_job(graph, **setting)) != base, setting
    config = NodeClassificationConfig(datasets=[graph], models=["diff-resnet"], num_splits=1, num_inits=1)
    config.diffusion["default"].dropout = 0.5
    assert job_key("node-classification", NodeClassificationTask(config).jobs()[0]) != job_key(
        "node-classification",
        NodeClassificationTask(
            NodeClassificationConfig(datasets=[graph], models=["diff-resnet"], num_splits=1, num_inits=1)
        ).jobs()[0],
    )


# ----------------------------------------------------------------------------------------
# end to end


def test_pinned_results_on_a_tiny_graph(graph, tmp_path):
    outcome = run_task(
        task(graph, models=["diff-resnet", "no-diff-resnet", "gcn"], num_splits=2),
        out=tmp_path / "run",
        progress=False,
    )
    table = outcome.results["table"]["sbm"]
    rows = (
        sqlite3.connect(tmp_path / "run" / "results.sqlite")
        .execute("SELECT model, split, accuracy, epochs FROM runs ORDER BY model, split")
        .fetchall()
    )
    assert [(m, s, e) for m, s, _, e in rows] == [
        ("diff-resnet", 0, 20),
        ("diff-resnet", 1, 20),
        ("gcn", 0, 20),
        ("gcn", 1, 20),
        ("no-diff-resnet", 0, 20),
        ("no-diff-resnet", 1, 20),
    ]
    accuracies = {(m, s): a for m, s, a, _ in rows}
    assert accuracies == pytest.approx(PINNED, abs=1e-12)
    for model in ("diff-resnet", "no-diff-resnet", "gcn"):
        expected = np.array([PINNED[(model, 0)], PINNED[(model, 1)]]) * 100
        assert table[model]["mean"] == pytest.approx(expected.mean()) and table[model]["runs"] == 2
        assert table[model]["std"] == pytest.approx(expected.std())


#: accuracies of the tiny protocol above (2 splits, 20 epochs), fixed by the seeds
PINNED = {
    ("diff-resnet", 0): 120 / 120,
    ("diff-resnet", 1): 80 / 120,
    ("gcn", 0): 118 / 120,
    ("gcn", 1): 120 / 120,
    ("no-diff-resnet", 0): 69 / 120,
    ("no-diff-resnet", 1): 67 / 120,
}


def test_cli_on_a_user_graph(graph, tmp_path):
    out = tmp_path / "run"
    code = main(
        [
            "run",
            "node-classification",
            "--dataset",
            graph,
            "--model",
            "diff-resnet,no-diff-resnet,gcn",
            "--splits",
            "2",
            "--inits",
            "1",
            "--workers",
            "1",
            "--out",
            str(out),
        ]
        + SHORT
    )
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert set(results["table"]["sbm"]) == {"diff-resnet", "no-diff-resnet", "gcn"}
    assert results["graphs"]["sbm"]["nodes"] <= 180
    for name in ("report.md", "report.html", "accuracy.png", "runs.csv", "config.yaml", "results.sqlite"):
        assert (out / name).exists(), name
    assert "| diff-resnet |" in (out / "report.md").read_text()


def test_pool_gives_the_same_runs_as_inline(graph, tmp_path):
    run_task(task(graph, num_splits=2, threads=1), out=tmp_path / "a", progress=False)
    run_task(task(graph, num_splits=2, workers=2, threads=1), out=tmp_path / "b", progress=False)

    def runs(path):
        return (
            sqlite3.connect(path / "results.sqlite")
            .execute("SELECT key, accuracy, val_accuracy, epochs FROM runs ORDER BY key")
            .fetchall()
        )

    assert runs(tmp_path / "a") == runs(tmp_path / "b") and len(runs(tmp_path / "a")) == 2


def test_report_only_builds_the_report_from_stored_runs(graph, tmp_path):
    out = tmp_path / "run"
    base = [
        "run",
        "node-classification",
        "--dataset",
        graph,
        "--workers",
        "1",
        "--splits",
        "2",
        "--inits",
        "1",
        "--out",
        str(out),
    ]
    assert main(base + ["--model", "no-diff-resnet"] + SHORT) == 0
    assert main(base + ["--model", "no-diff-resnet,gcn", "--report-only"] + SHORT) == 0
    assert sqlite3.connect(out / "results.sqlite").execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    results = json.loads((out / "results.json").read_text())
    assert (results["runs_stored"], results["runs_planned"]) == (2, 4)
    assert set(results["table"]["sbm"]) == {"no-diff-resnet"}
    report = (out / "report.md").read_text()
    assert "2 of 4 runs stored (2 missing)" in report and "| gcn | — |\n" in report


def test_growing_the_protocol_keeps_the_stored_runs(graph, tmp_path):
    out = tmp_path / "run"
    base = [
        "run",
        "node-classification",
        "--dataset",
        graph,
        "--model",
        "no-diff-resnet",
        "--workers",
        "1",
        "--out",
        str(out),
    ] + SHORT
    assert main(base + ["--splits", "2", "--inits", "1"]) == 0
    first = dict(sqlite3.connect(out / "results.sqlite").execute("SELECT key, accuracy FROM runs").fetchall())
    assert main(base + ["--splits", "3", "--inits", "2"]) == 0
    grown = dict(sqlite3.connect(out / "results.sqlite").execute("SELECT key, accuracy FROM runs").fetchall())
    assert len(grown) == 6 and all(grown[key] == accuracy for key, accuracy in first.items())


def test_unknown_model_and_missing_dataset_fail_before_anything_is_written(graph, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "node-classification", "--dataset", graph, "--model", "mlp", "--out", str(out)]) == 2
    assert "unknown model(s) ['mlp']" in capsys.readouterr().err
    assert (
        main(
            [
                "run",
                "node-classification",
                "--dataset",
                "cora",
                "--data-dir",
                str(tmp_path / "empty"),
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 2
    )
    assert "missing dataset file" in capsys.readouterr().err
    assert not out.exists()


@requires_data(CORA_NPZ)
def test_cora_graph_facts_and_a_short_run(tmp_path):
    outcome = run_task(
        NodeClassificationTask(
            NodeClassificationConfig(
                datasets=["cora"], models=["diff-resnet"], num_splits=1, num_inits=1, max_epochs=15, workers=1
            )
        ),
        out=tmp_path / "cora",
        progress=False,
    )
    facts = outcome.results["graphs"]["cora"]
    assert (facts["nodes"], facts["edges"], facts["features"], facts["classes"]) == (2485, 5069, 1433, 7)
    assert facts["spectral_bound"] == pytest.approx(0.346, abs=1e-3)
    assert facts["gershgorin_bound"] == pytest.approx(0.174, abs=1e-3)


@pytest.mark.parametrize("model", ["diff-resnet", "gcn"])
def test_every_setting_of_a_node_job_reaches_the_result(graph, tmp_path, model):
    from ...helpers.spec_sensitivity import assert_every_key_setting_matters

    # a hard graph: validation accuracy must not saturate, or no patience ever stops (ties count as
    # improvements)
    hard, other = (
        str(write_sbm_npz(tmp_path / f"{name}.npz", p_in=0.05, p_out=0.04, seed=seed))
        for name, seed in (("hard", 0), ("other", 1))
    )
    spec = first_job(hard, models=[model], max_epochs=150, patience=3)
    assert_every_key_setting_matters(
        lambda job: train_node_classifier(job).record,
        spec,
        changes={
            "graph": other,
            "max_epochs": 6,
            "patience": 1,
            "hyperparameters.dropout_position": "after",
            "hyperparameters.num_steps": 5,
            "hyperparameters.hidden_features": 8,
            "feature_transform": "standardize",
        },
        skip={
            "experiment": "the study a run belongs to (its name)",
            "dataset": "the graph's name in tables, derived from graph",
            "model": "each model has its own settings",
            "depth": "None in the protocol; the depth study is its own experiment",
            "hyperparameters.check_stability": "a guard that refuses unstable steps, not arithmetic",
            "hyperparameters.heads": "GAT's attention heads; the other baselines have none",
            "missing_features": "only for graphs without node features",
            "partition": "splits the graph over torchrun processes only (tests/tasks/"
            "test_node_classification_torchrun.py: other draws, other keys)",
            "split_digest": "the digest of a split file, checked against it "
            "(tests/tasks/node_classification/test_predictions.py: an edited file, other keys)",
        },
        ignore=("seconds",),
    )


def test_real_valued_features_are_standardized_not_binarized(tmp_path):
    """Embeddings as node features: ``auto`` standardizes them (binarized, every row would be ones and the
    models would guess); the jobs, the key and the report say so."""
    path = write_sbm_npz(tmp_path / "embedded.npz", features=6, p_in=0.08, p_out=0.01, embedded=True)
    job = first_job(str(path), models=["gcn"], max_epochs=60, patience=20)
    assert job.feature_transform == "standardize"
    assert job_key("node-classification", job) != job_key(
        "node-classification", replace(job, feature_transform="bag-of-words")
    )
    standardized = train_node_classifier(job).record["accuracy"]
    binarized = train_node_classifier(replace(job, feature_transform="bag-of-words")).record["accuracy"]
    assert standardized > 0.9 and binarized < 0.5 + 1e-9, (standardized, binarized)
    out = tmp_path / "run"
    code = main(
        ["run", "node-classification", "--dataset", str(path), "--models", "gcn", "--out", str(out)]
        + ["--splits", "2", "--inits", "1", "--workers", "1"]
        + SHORT
    )
    report = (out / "report.md").read_text(encoding="utf-8")
    assert code == 0 and "embedded: standardized per feature" in report and "(paper)" not in report


def test_a_split_the_graph_cannot_give_is_refused_before_any_job_in_one_line_with_the_number_needed(
    graph, tmp_path, capsys
):
    """60 labelled nodes a class: 31 + 30 per class do not fit; 30 + 30 fit each class but leave no node to
    test; 29 + 30 leave one per class (the boundary)."""
    from pdenets.cli import main
    from pdenets.experiments.config import ConfigError
    from pdenets.experiments.store import STORE_FILENAME

    out = tmp_path / "run"
    argv = ["run", "node-classification", "--dataset", graph, "--no-progress", "--out", str(out)]
    assert main(argv + ["--train-per-class", "31", "--val-per-class", "30"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "job (" not in error, error
    assert (
        "class '0' has 60 labelled nodes (and 2 other classes); the random split needs 61 of each class"
        in error
    )
    assert "(31 training + 30 validation)" in error and not (out / STORE_FILENAME).exists()
    with pytest.raises(ConfigError, match="its 180 labelled nodes leave none to test after 30 training"):
        task(graph, train_per_class=30, val_per_class=30).prepare()
    task(graph, train_per_class=29, val_per_class=30).prepare()
