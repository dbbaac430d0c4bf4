"""COINTabularClassifier: the coin-tabular task's models as a scikit-learn classifier, the same numbers as
the task's runs, and saved in the format of a run's models (both ways)."""

import json
import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_wine

from pdenets.cli import main
from pdenets.estimators import COINTabularClassifier
from pdenets.experiments.predictions import read_predictions
from pdenets.saved_model import SavedModelError
from pdenets.tasks.coin_tabular.task import (
    GraphDiffusion,
    MlpSettings,
    TabularJob,
    fit_job,
    labelled_split,
)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    hidden = np.random.default_rng(0).random(len(y)) < 0.8
    return X, y, np.where(hidden, -1, y)


def test_unknown_labels_are_predicted_on_hidden_truth(wine):
    X, y, partial = wine
    for name in ("coin", "mlp", "label-spreading"):
        model = COINTabularClassifier(name).fit(X, partial)
        unknown = partial == -1
        accuracy = (model.transduction_[unknown] == y[unknown]).mean()
        assert accuracy >= 0.9, (name, accuracy)
        assert model.label_distributions_.shape == (len(y), 3)
        assert np.allclose(model.label_distributions_.sum(1), 1)
        assert model.classes_.tolist() == [0, 1, 2]


def test_same_numbers_as_the_tasks_run_on_the_same_rows(tmp_path):
    """The estimator and the task's job (one reading a CSV, one arrays) train the same network on the same
    rows: the same probabilities, for a seed away from 0 and settings away from the defaults."""
    X, y = load_wine(return_X_y=True)
    path = tmp_path / "wine.csv"
    header = ",".join(f"f{column}" for column in range(X.shape[1])) + ",label"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=header, comments="", fmt="%.10g")
    mlp = MlpSettings(hidden_features=16, layers=2, dropout=0.1, epochs=40, lr=0.02, weight_decay=1e-3)
    diffusion = GraphDiffusion(n_top=7, sigma_neighbor=3, step_size=0.4, num_steps=2)
    spec = TabularJob(
        dataset=str(path), labels_per_class=5, split=3, model="coin", mlp=mlp, diffusion=diffusion
    )
    fitted, labelled = fit_job(spec)
    probabilities = fitted.probabilities
    assert labelled.tolist() == labelled_split(y, 5, 3).tolist()
    partial = np.full(len(y), -1)
    partial[labelled] = y[labelled]
    model = COINTabularClassifier(
        hidden_features=16, dropout=0.1, epochs=40, lr=0.02, weight_decay=1e-3, n_top=7, sigma_neighbor=3,
        step_size=0.4, num_steps=2, random_state=3,
    ).fit(X, partial)  # fmt: skip
    assert np.allclose(model.label_distributions_, probabilities, atol=1e-9)
    other = COINTabularClassifier(
        hidden_features=16, dropout=0.1, epochs=40, lr=0.02, weight_decay=1e-3, n_top=7, sigma_neighbor=3,
        step_size=0.4, num_steps=2, random_state=4,
    ).fit(X, partial)  # fmt: skip
    assert not np.allclose(other.label_distributions_, probabilities, atol=1e-6)  # the seed is used


def test_save_load_answers_bit_for_bit_and_pdenets_predict_reads_it(wine, tmp_path, capsys):
    X, y, partial = wine
    model = COINTabularClassifier(epochs=60).fit(
        X, np.where(partial == -1, "-1", np.array(["a", "b", "c"])[y])
    )
    folder = model.save(tmp_path / "model-coin")
    again = COINTabularClassifier.load(folder)
    assert torch.equal(
        torch.from_numpy(again.predict_proba(X[:40])), torch.from_numpy(model.predict_proba(X[:40]))
    )
    assert again.classes_.tolist() == ["a", "b", "c"] and again.get_params() == model.get_params()
    rows = tmp_path / "new.csv"
    with open(rows, "w", encoding="utf-8") as stream:
        stream.write(",".join(f"x{column}" for column in range(13)) + "\n")
        for row in X[:40]:
            stream.write(",".join(repr(float(value)) for value in row) + "\n")
    out = tmp_path / "p.csv"
    assert main(["predict", str(tmp_path), "--dataset", str(rows), "--out", str(out)]) == 0
    written = read_predictions(out)
    assert [row["predicted"] for row in written] == model.predict(X[:40]).tolist()


def test_a_runs_saved_model_loads_and_answers_as_pdenets_predict(tmp_path, capsys):
    rng = np.random.default_rng(5)
    table = tmp_path / "wines.csv"
    with open(table, "w", encoding="utf-8") as stream:
        stream.write("id,acidity,sugar,quality\n")
        for row in range(60):
            values = rng.normal(size=2) + 3 * (row % 2)
            stream.write(f"w{row},{values[0]:.5f},{values[1]:.5f},{['dry', 'sweet'][row % 2]}\n")
    out = tmp_path / "run"
    argv = [
        "run",
        "coin-tabular",
        "--dataset",
        str(table),
        "--labels",
        "5",
        "--splits",
        "1",
        "--models",
        "coin",
    ]
    assert (
        main(argv + ["--epochs", "30", "--set", "predictions=always", "--no-progress", "--out", str(out)])
        == 0
    )
    model = COINTabularClassifier.load(out / "model-coin")
    assert model.classes_.tolist() == ["dry", "sweet"] and model.feature_names_in_.tolist() == [
        "acidity",
        "sugar",
    ]
    assert model.get_params()["step_size"] == 0.25 and model.get_params()["hidden_features"] == 64
    new = tmp_path / "new.csv"
    new.write_text("acidity,sugar,id\n0.1,0.2,n1\n3.1,2.9,n2\n", encoding="utf-8")
    answer = tmp_path / "answer.csv"
    assert main(["predict", str(out), "--dataset", str(new), "--out", str(answer)]) == 0
    import pandas as pd

    frame = pd.DataFrame({"acidity": [0.1, 3.1], "sugar": [0.2, 2.9]})
    expected = [row["predicted"] for row in read_predictions(answer)]
    assert model.predict(frame).tolist() == expected == ["dry", "sweet"]


def test_altered_files_and_bad_settings_are_refused(wine, tmp_path):
    X, y, partial = wine
    folder = COINTabularClassifier("mlp", epochs=5).fit(X, partial).save(tmp_path / "m")
    weights = folder / "weights.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(SavedModelError, match="SHA-256"):
        COINTabularClassifier.load(folder)
    manifest = json.loads((folder / "model.json").read_text())
    manifest["task"] = "few-shot"
    (folder / "model.json").write_text(json.dumps(manifest))
    with pytest.raises(SavedModelError, match="few-shot"):
        COINTabularClassifier.load(folder)
    for params, message in (
        ({"model": "gcn"}, "model must be one of"),
        ({"step_size": 1.5}, "step_size must be in"),
        ({"n_top": 0}, "n_top must be a whole number ≥ 1"),
        ({"num_steps": -1}, "num_steps"),
    ):
        with pytest.raises(ValueError, match=message):
            COINTabularClassifier(**params).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        COINTabularClassifier().fit(np.where(np.eye(len(y), 13) > 0, np.nan, X), y)
    with pytest.raises(ValueError, match="every label is -1"):
        COINTabularClassifier().fit(X, np.full(len(y), -1))


def test_the_unlabelled_marker_is_a_setting(wine):
    X, y, partial = wine
    as_class = COINTabularClassifier("mlp", epochs=5, unlabelled=None).fit(X, partial)
    assert as_class.classes_.tolist() == [-1, 0, 1, 2]
    words = np.where(partial == -1, "?", np.array(["a", "b", "c"])[y])
    marked = COINTabularClassifier("mlp", epochs=5, unlabelled="?").fit(X, words)
    assert marked.classes_.tolist() == ["a", "b", "c"]


def test_passes_scikit_learns_checks():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(COINTabularClassifier(epochs=20, unlabelled=None), on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    # scikit-learn compares a subset's answers to the whole's within 1e-7: float32 products of another batch
    # shape round differently (2e-7 seen); the subset invariance itself is checked below, at float32's scale
    assert failed <= {"check_methods_subset_invariance"}
    assert len([r for r in results if r["status"] == "passed"]) >= 50


def test_a_subset_of_new_rows_gets_the_answers_it_gets_among_all_of_them():
    # each new row is answered alone (linked to the training rows only): a subset's answers are the whole's,
    # up to float32 rounding (a row linked to the other new rows would move by far more)
    generator = np.random.default_rng(3)
    X = np.concatenate([generator.normal(size=(40, 4)), generator.normal(size=(40, 4)) + 2.5])
    y = np.repeat([0, 1], 40)
    model = COINTabularClassifier(epochs=20, unlabelled=None).fit(X, y)
    new = generator.normal(size=(30, 4)) + generator.integers(0, 2, size=(30, 1)) * 2.5
    whole = model.predict_proba(new)
    for part in (slice(0, 1), slice(3, 17), slice(17, 30)):
        np.testing.assert_allclose(model.predict_proba(new[part]), whole[part], rtol=0, atol=1e-5)


def test_the_estimator_s_defaults_are_the_task_s_and_the_settings_of():
    """One set of defaults: ``COINTabularClassifier()``, ``pdenets run coin-tabular`` and
    ``TabularSettings.of`` build the same COIN."""
    import dataclasses

    from pdenets.estimators.tabular import _SETTINGS
    from pdenets.tasks.coin_tabular.config import CoinTabularConfig
    from pdenets.tasks.coin_tabular.model import TabularSettings

    params, config = COINTabularClassifier().get_params(), CoinTabularConfig()
    assert {name: params[name] for name in _SETTINGS} == {name: getattr(config, name) for name in _SETTINGS}
    coin = TabularSettings.of("coin")
    assert coin.mlp is not None and coin.diffusion is not None
    chosen = (coin.mlp.epochs, coin.diffusion.step_size)
    assert chosen == (params["epochs"], params["step_size"]) == (200, 0.25)
    assert dataclasses.asdict(coin) == dataclasses.asdict(
        TabularSettings.of("coin", **{name: getattr(config, name) for name in _SETTINGS})
    )
