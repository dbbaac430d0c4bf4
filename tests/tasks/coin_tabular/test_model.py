"""A coin-tabular run on a user's table keeps its models; ``pdenets predict RUN_DIR`` answers new rows with
them, the same answer after every reload, and refuses a model file that was altered, truncated, or comes
from another task or version, and new rows with other columns."""

import csv
import json

import numpy as np
import pytest

from pdenets.cli import main
from pdenets.experiments.predictions import prediction_accuracy, read_predictions
from pdenets.operators import faiss_available

CLASSES = ["low", "mid", "high"]


def _write(path, rows, seed, order=("wine id", "acidity", "sugar", "alcohol", "quality"), empty_every=0):
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(order)
        for row in range(rows):
            values = dict(zip(("acidity", "sugar", "alcohol"), rng.normal(size=3) + 3 * np.eye(3)[row % 3]))
            label = "" if empty_every and row % empty_every == 0 else CLASSES[row % 3]
            cells = {
                "wine id": f"s{seed}-{row}",
                "quality": label,
                **{k: f"{v:.5f}" for k, v in values.items()},
            }
            writer.writerow([cells[name] for name in order])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("saved")
    _write(folder / "wines.csv", 90, seed=0, empty_every=5)
    out = folder / "run"
    argv = ["run", "coin-tabular", "--dataset", str(folder / "wines.csv"), "--labels", "5", "--splits", "1"]
    argv += ["--models", "coin,mlp", "--epochs", "60", "--set", "id_column=wine id", "--no-progress"]
    assert main(argv + ["--out", str(out)]) == 0
    return folder, out


def test_new_rows_are_answered_by_the_saved_models_the_same_after_every_reload(run, capsys):
    folder, out = run
    _write(folder / "new.csv", 30, seed=1, order=("quality", "alcohol", "wine id", "sugar", "acidity"))
    for model in ("coin", "mlp"):
        first, second = folder / f"{model}-1.csv", folder / f"{model}-2.csv"
        for path in (first, second):
            argv = [
                "predict",
                str(out),
                "--dataset",
                str(folder / "new.csv"),
                "--model",
                model,
                "--out",
                str(path),
            ]
            assert main(argv) == 0
        assert "30 rows of" in capsys.readouterr().out
        assert first.read_bytes() == second.read_bytes()  # reloaded, the same answer bit for bit
        rows = read_predictions(first)
        assert [row["id"] for row in rows] == [f"s1-{row}" for row in range(30)]
        assert prediction_accuracy(rows) >= 0.8
    # the MLP reads each row alone: its answer on the training rows is the run's predictions file
    mlp = folder / "train-mlp.csv"
    assert (
        main(
            ["predict", str(out), "--dataset", str(folder / "wines.csv"), "--model", "mlp", "--out", str(mlp)]
        )
        == 0
    )
    again = {row["id"]: row for row in read_predictions(mlp)}
    for row in read_predictions(out / "predictions-mlp.csv"):
        assert [again[row["id"]][key] for key in row if key.startswith("p(")] == [
            value for key, value in row.items() if key.startswith("p(")
        ]
    assert "model-coin/" in (out / "report.md").read_text()


def _damage(folder, how):
    weights, manifest = folder / "weights.safetensors", folder / "model.json"
    document = json.loads(manifest.read_text())
    if how == "flipped byte":
        data = bytearray(weights.read_bytes())
        data[-3] ^= 0xFF
        weights.write_bytes(bytes(data))
    elif how == "truncated":
        weights.write_bytes(weights.read_bytes()[:-8])
    elif how == "not JSON":
        manifest.write_text("{oops")
    else:
        field, value = how
        document[field] = document[field][::-1] if value == "reversed" else value
        manifest.write_text(json.dumps(document))


@pytest.mark.parametrize(
    "how, message",
    [
        ("flipped byte", "SHA-256 is not its manifest's"),
        ("truncated", "its manifest says"),
        ("not JSON", "not a JSON manifest"),
        (("task", "node-classification"), "a model of the task 'node-classification', not 'coin-tabular'"),
        (("pdenets", "0.0.1"), "written by pdenets '0.0.1'"),
        (("format", 99), "not a pdenets model manifest of format 2"),
        (("format", 1), "a model of format 1; this pdenets (0.1.0) reads format 2"),
        (("shapes", {}), "not the manifest its weights were saved with (edited after the model was saved)"),
        (("class_names", "reversed"), "edited after the model was saved"),
        (("feature_names", "reversed"), "edited after the model was saved"),
        (("weights", {"bytes": 1, "sha256": "0"}), "its manifest says 1"),
    ],
)
def test_a_damaged_or_foreign_model_is_refused_in_one_line_naming_the_file(
    run, tmp_path, capsys, how, message
):
    import shutil

    folder, out = run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    _damage(copy / "model-mlp", how)
    _write(tmp_path / "new.csv", 6, seed=2)
    argv = [
        "predict",
        str(copy),
        "--dataset",
        str(tmp_path / "new.csv"),
        "--model",
        "mlp",
        "--out",
        str(tmp_path / "p.csv"),
    ]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert message in error and "model-mlp" in error and error.count("\n") == 1, error
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize(
    "order, message",
    [
        (("wine id", "acidity", "sugar", "quality"), "missing 'alcohol'"),
        (("wine id", "acidity", "sugar", "alcohol", "quality", "colour"), "not the model's 'colour'"),
        (("acidity", "sugar", "alcohol", "quality"), "missing 'wine id'"),
    ],
)
def test_new_rows_with_other_columns_are_refused(run, tmp_path, capsys, order, message):
    _, out = run
    rng = np.random.default_rng(0)
    with open(tmp_path / "new.csv", "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(order)
        for row in range(3):
            writer.writerow(
                [
                    f"n{row}" if name == "wine id" else "low" if name == "quality" else f"{rng.normal():.3f}"
                    for name in order
                ]
            )
    argv = [
        "predict",
        str(out),
        "--dataset",
        str(tmp_path / "new.csv"),
        "--model",
        "coin",
        "--out",
        str(tmp_path / "p.csv"),
    ]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_predict_names_what_is_missing(run, tmp_path, capsys):
    folder, out = run
    cases = [
        (
            ["predict", str(tmp_path), "--dataset", "x.csv", "--out", str(tmp_path / "p.csv")],
            "no saved model",
        ),
        (["predict", str(out), "--out", str(tmp_path / "p.csv")], "give the new data with --dataset"),
        (
            ["predict", str(out), "--dataset", "x.csv", "--model", "gcn", "--out", str(tmp_path / "p.csv")],
            "give --model, one of coin, mlp",
        ),
        (
            [
                "predict",
                str(out),
                "--dataset",
                str(folder / "wines.csv"),
                "--model",
                "coin",
                "--out",
                str(folder / "wines.csv"),
            ],
            "is an input file",
        ),
        (
            ["predict", "few-shot", "--dataset", "x.csv", "--out", str(tmp_path / "p.csv")],
            "--dataset is for a run's saved model",
        ),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err, argv


def test_a_run_folder_reused_with_other_settings_keeps_the_saved_model(tmp_path):
    _write(tmp_path / "wines.csv", 60, seed=0)
    argv = [
        "run",
        "coin-tabular",
        "--dataset",
        str(tmp_path / "wines.csv"),
        "--splits",
        "1",
        "--models",
        "mlp",
    ]
    argv += ["--epochs", "20", "--set", "id_column=wine id", "--no-progress", "--out", str(tmp_path / "run")]
    assert main(argv + ["--labels", "5"]) == 0
    first = (tmp_path / "run" / "model-mlp" / "weights.safetensors").read_bytes()
    assert main(argv + ["--labels", "5", "--report-only"]) == 0  # the same model again: rewritten alike
    assert (tmp_path / "run" / "model-mlp" / "weights.safetensors").read_bytes() == first
    assert main(argv + ["--labels", "8"]) == 0  # other settings: another folder, the first model kept
    assert (tmp_path / "run" / "model-mlp" / "weights.safetensors").read_bytes() == first
    others = sorted(p.name for p in (tmp_path / "run").glob("model-mlp-*"))
    assert len(others) == 1 and others[0] in (tmp_path / "run" / "report.md").read_text()


def _resaved(folder, target, **changes):
    """The model of ``folder`` saved again into ``target`` with its manifest entries ``changes`` (a model file
    whose weights vouch for the changed manifest: what a careful forger writes)."""
    from pdenets.saved_model import load_model, save_model

    tensors, manifest = load_model(folder, task="coin-tabular")
    plain = {k: v for k, v in manifest.items() if k not in ("format", "pdenets", "task", "model", "shapes")}
    plain.pop("weights")
    return save_model(
        target, tensors, task="coin-tabular", model=manifest["model"], manifest={**plain, **changes}
    )


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"settings": {"mlp": {"hidden_features": 1e9}}}, "settings.mlp: hidden_features holds 1000000000.0"),
        (
            {"settings": {"mlp": {"hidden_features": 10**9}}},
            "the saved weights do not fit the model its settings",
        ),
        ({"settings": {"mlp": {"layers": 40}}}, "the saved weights do not fit the model its settings"),
        ({"settings": {"diffusion": {"num_steps": 10**12}}}, "num_steps must be at most 100,000"),
        ({"settings": {"diffusion": {"num_steps": 1e12}}}, "num_steps holds 1000000000000.0, not a whole"),
        ({"settings": {"diffusion": {"step_size": 7}}}, r"step_size must be in \(0, 1\]"),
        ({"settings": {"mlp": {"lr": True}}}, "lr holds True, not a finite number"),
        (
            {"settings": {"spreading": {"n_top": 3, "spreading_alpha": 0.2}}},
            "settings of coin are mlp, diffusion",
        ),
        ({"feature_names": ["acidity", "acidity", "alcohol"]}, "feature_names repeats 'acidity'"),
        ({"feature_names": ["acidity", "sugar"]}, "2 feature_names, its weights hold 3"),
        ({"class_names": ["high", "low"]}, "its trained labels are not class ids of its 2 classes"),
        ({"class_names": ["high", "high", "low"]}, "class_names repeats 'high'"),
        ({"id_column": 7}, "id_column is not a column name"),
    ],
)
def test_a_manifest_that_lies_about_its_weights_is_refused_before_anything_is_built(
    run, tmp_path, changes, message
):
    from pdenets.saved_model import SavedModelError, load_model
    from pdenets.tasks.coin_tabular.model import TabularModel

    _, out = run
    _, manifest = load_model(out / "model-coin", task="coin-tabular")
    if "settings" in changes:  # each change is one field of one part, over the saved settings
        settings = {part: dict(values) for part, values in manifest["settings"].items()}
        for part, values in changes["settings"].items():
            settings[part] = {**settings.get(part, {}), **values} if part in settings else values
        changes = {"settings": settings}
    folder = _resaved(out / "model-coin", tmp_path / "forged", **changes)
    with pytest.raises(SavedModelError, match=message) as error:
        TabularModel.load(folder)
    assert str(error.value).startswith(str(folder / "model.json")) and "\n" not in str(error.value)


def test_new_rows_that_repeat_a_column_are_refused_and_copies_of_one_row_are_answered(run, tmp_path, capsys):
    _, out = run
    header = "wine id,acidity,acidity,sugar,alcohol\n"
    (tmp_path / "twice.csv").write_text(header + "n1,0.1,0.1,0.2,0.3\n")
    argv = ["predict", str(out), "--model", "coin", "--out", str(tmp_path / "p.csv"), "--dataset"]
    assert main(argv + [str(tmp_path / "twice.csv")]) == 2
    assert "its header repeats 'acidity'" in capsys.readouterr().err
    # six identical new rows: each is its five neighbours' copy (a width of zero), linked to its copies
    rows = "".join(f"same{row},3.0,0.1,0.2\n" for row in range(6))
    (tmp_path / "same.csv").write_text("wine id,acidity,sugar,alcohol\n" + rows)
    assert main(argv + [str(tmp_path / "same.csv")]) == 0, capsys.readouterr().err
    answers = read_predictions(tmp_path / "p.csv")
    assert len(answers) == 6 and len({row["predicted"] for row in answers}) == 1


def _fitted(model_name="coin", **options):
    from sklearn.datasets import load_wine

    from pdenets.tasks.coin_tabular.model import TabularSettings, fit_table

    X, y = load_wine(return_X_y=True)
    labels = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    settings = TabularSettings.of(model_name, epochs=30, rows=len(X), **options)
    model = fit_table(
        X, labels, np.flatnonzero(labels >= 0), settings, class_names=["a", "b", "c"],
        feature_names=[f"f{i}" for i in range(X.shape[1])], seed=2,
    )  # fmt: skip
    return model, X


def test_each_new_row_is_answered_alone_by_the_diffusion_towards_its_nearest_training_rows():
    """COIN's answer for a new row: its ``n_top`` nearest training rows with the fit's Gaussian weights
    (width: the distance to the ``sigma_neighbor``-th), rows summing to one, and ``r`` steps of the extended
    graph (the training rows link to no new row) — checked against dense matrices in float64."""
    import torch

    from pdenets.tasks.coin_tabular.model import _network

    model, X = _fitted(n_top=6, sigma_neighbor=3, step_size=0.4, num_steps=3)
    new = X[:9] + 0.3 * np.random.default_rng(0).normal(size=(9, X.shape[1]))
    answer = model.predict_proba(new)
    assert np.allclose(model.predict_proba(new[4:7]), answer[4:7], atol=1e-7)  # no row depends on another
    training = model.points.double()
    scaled = torch.from_numpy((new - model.mean) / model.scale)
    distances = torch.cdist(scaled, training).square()
    order = distances.argsort(1)
    width = distances.gather(1, order[:, 2:3]).sqrt()
    links = torch.zeros(len(new), len(training), dtype=torch.float64)
    links.scatter_(1, order[:, :6], torch.exp(-distances.gather(1, order[:, :6]) / width.square()))
    links /= links.sum(1, keepdim=True)
    plain = _network(model.settings, X.shape[1], 3, None, steps=0).double()
    plain.load_state_dict(model.network.state_dict())
    with torch.no_grad():
        out = plain.eval()(scaled)
        for step in range(3):
            out = out + 0.4 * (links @ model.trajectory[step].double() - out)
    assert np.allclose(answer, torch.softmax(out, 1).numpy(), atol=2e-5)


@pytest.mark.skipif(not faiss_available(), reason="faiss-cpu not installed")
def test_a_large_tables_neighbour_index_is_built_once_for_its_graph_and_its_new_rows(monkeypatch):
    """Above the approximate search's threshold (here 100 rows) the fit builds the rows' HNSW index for the
    graph and the model keeps it: new rows, asked twice, search it without building another; the answers
    are those of the model fitted below the threshold (HNSW is exact on 178 rows)."""
    from pdenets.operators import knn

    exact_model, X = _fitted(n_top=6, sigma_neighbor=3)
    monkeypatch.setattr(knn, "BRUTE_FORCE_MAX_ENTRIES", 0)
    monkeypatch.setattr(knn, "APPROXIMATE_THRESHOLD", 100)
    built = []
    original = knn._hnsw_index
    monkeypatch.setattr(knn, "_hnsw_index", lambda points: built.append(len(points)) or original(points))
    model, _ = _fitted(n_top=6, sigma_neighbor=3)
    assert built == [len(X)]
    new = X[:20] + 0.3 * np.random.default_rng(1).normal(size=(20, X.shape[1]))
    first, second = model.predict_proba(new), model.predict_proba(new[:5])
    assert built == [len(X)] and np.allclose(first[:5], second, atol=1e-7)
    assert np.allclose(first, exact_model.predict_proba(new), atol=1e-4)


def test_the_training_rows_steps_are_the_fitted_networks_and_label_spreading_predicts_as_scikit_learn():
    import torch
    from sklearn.semi_supervised import LabelSpreading

    model, X = _fitted()
    with torch.no_grad():  # the transductive answer: the fitted network on the graph of the training rows
        from pdenets.tasks.coin_tabular.model import _in, _network, sample_graph

        graph = sample_graph(model.points, 10, 5)
        network = _network(model.settings, X.shape[1], 3, _in(graph)).float()
        network.load_state_dict(model.network.state_dict())
        direct = torch.softmax(network.eval()(model.points.float()), 1).double().numpy()
    assert np.allclose(model.probabilities, direct, atol=1e-5)
    spreading, X = _fitted("label-spreading", n_top=7)
    reference = LabelSpreading(kernel="knn", n_neighbors=7, alpha=0.2, max_iter=1000).fit(
        spreading.points.numpy(), spreading.trained_labels
    )
    new = X[:12] * 1.01
    scaled = (new - spreading.mean) / spreading.scale
    assert np.allclose(spreading.predict_proba(new), reference.predict_proba(scaled), atol=1e-5)
