"""``pdenets predict``: which saved model of a run answers (the only one, ``--model``, else COIN or
Diff-ResNet), which task's reader its manifest routes the new data to, and the requests refused in one line
before any model is read or any file written."""

import json

import pytest

from pdenets import __version__
from pdenets.cli import main
from pdenets.saved_model import MODEL_FORMAT


def _run_with(tmp_path, *names, task=None):
    """A run folder with empty ``model-<name>/`` folders (a manifest naming ``task`` in each, if given)."""
    run = tmp_path / "run"
    for name in names:
        (run / f"model-{name}").mkdir(parents=True)
        if task is not None:
            manifest = {"format": MODEL_FORMAT, "pdenets": __version__, "task": task}
            (run / f"model-{name}" / "model.json").write_text(json.dumps(manifest))
    run.mkdir(parents=True, exist_ok=True)
    return run


def _predict(capsys, *argv):
    code = main(["predict", *argv])
    error = capsys.readouterr().err
    assert code == 2 and error.count("\n") == 1, (code, error)
    return error


@pytest.mark.parametrize(
    "models, model, chosen",
    [
        (("mlp",), None, "mlp"),  # the only one
        (("coin", "mlp"), None, "coin"),
        (("diff-resnet", "gcn"), None, "diff-resnet"),
        (("coin", "diff-resnet"), None, "coin"),  # COIN first
        (("coin", "mlp"), "mlp", "mlp"),
    ],
)
def test_the_model_used_is_the_only_one_the_one_named_or_coin_then_diff_resnet(
    tmp_path, capsys, models, model, chosen
):
    """Each folder is empty: the chosen one is the folder whose missing manifest the refusal names."""
    run = _run_with(tmp_path, *models)
    argv = [str(run), "--dataset", str(tmp_path / "new.csv"), "--out", str(tmp_path / "p.csv")]
    error = _predict(capsys, *argv, *(["--model", model] if model else []))
    assert f"model-{chosen}/model.json: missing; a saved model is a folder with model.json" in error


def test_without_a_preferred_model_the_choice_is_asked_for_by_name(tmp_path, capsys):
    run = _run_with(tmp_path, "mlp", "gcn")
    argv = [str(run), "--dataset", str(tmp_path / "new.csv"), "--out", str(tmp_path / "p.csv")]
    assert f"{run}: give --model, one of gcn, mlp" in _predict(capsys, *argv)
    assert f"{run}: give --model, one of gcn, mlp" in _predict(capsys, *argv, "--model", "coin")
    assert "no saved model (model-<name>/)" in _predict(capsys, str(_run_with(tmp_path / "bare")), *argv[1:])
    folder = run / "model-mlp"
    (folder / "model.json").write_text("{}")  # a model's own folder: no choice to make
    assert "is a saved model's folder; --model chooses among a run's models" in _predict(
        capsys, str(folder), *argv[1:], "--model", "mlp"
    )


@pytest.mark.parametrize(
    "task, dataset, reader",
    [
        ("coin-forecast", "series.csv", "weights.safetensors: missing"),  # the forecaster, even for a .csv
        ("node-classification", "graph.npz", "weights.safetensors: missing"),  # a graph: not a .csv
        ("node-classification", "nodes.csv", "a model of the task 'node-classification', not 'coin-tabular'"),
        ("coin-tabular", "rows.tsv", "weights.safetensors: missing"),
    ],
)
def test_the_manifests_task_and_the_datas_form_choose_the_reader(tmp_path, capsys, task, dataset, reader):
    """A manifest without weights: the reader it reaches says either that the weights are missing (its own
    task) or that the model is of another task (the table reader, for a node classifier given a .csv)."""
    run = _run_with(tmp_path, "one", task=task)
    error = _predict(capsys, str(run), "--dataset", str(tmp_path / dataset), "--out", str(tmp_path / "p.csv"))
    assert reader in error and "model-one" in error


@pytest.mark.parametrize(
    "argv, out, message",
    [
        (["nowhere.d"], "p.csv", "nowhere.d: not a run folder (nor few-shot)"),
        (
            ["RUN", "--support", "s.npz"],
            "p.csv",
            "--support is for few-shot queries, not for a run's saved model",
        ),
        (["RUN", "--method", "prototype"], "p.csv", "--method is for few-shot queries"),
        (["RUN"], "p.csv", "give the new data with --dataset FILE"),
        (["RUN", "--dataset", "new.csv"], "new.csv", "is an input file"),
        (["RUN", "--dataset", "new.csv"], "p.json", "the file name must end in .csv"),
        (
            ["few-shot", "--support", "s.npz", "--dataset", "d.csv"],
            "p.csv",
            "--dataset is for a run's saved model",
        ),
        (
            ["few-shot", "--support", "s.npz", "--model", "coin"],
            "p.csv",
            "--model is for a run's saved model",
        ),
        (["few-shot"], "p.csv", "few-shot needs --support FILE"),
        (["few-shot", "--support", "s.npz", "--queries", "q.CSV"], "q.CSV", "is an input file"),
    ],
)
def test_a_request_that_cannot_work_is_refused_before_anything_is_read(tmp_path, capsys, argv, out, message):
    run = _run_with(tmp_path, "mlp")
    argv = [str(run) if word == "RUN" else str(tmp_path / word) if "." in word else word for word in argv]
    assert message in _predict(capsys, *argv, "--out", str(tmp_path / out))
    assert not (tmp_path / out).exists()


def test_an_existing_predictions_file_is_kept_without_overwrite(tmp_path, capsys):
    run = _run_with(tmp_path, "mlp")
    (tmp_path / "p.csv").write_text("mine")
    argv = [str(run), "--dataset", str(tmp_path / "new.csv"), "--out", str(tmp_path / "p.csv")]
    assert "p.csv exists; pass --overwrite to replace it" in _predict(capsys, *argv)
    assert "model-mlp/model.json: missing" in _predict(capsys, *argv, "--overwrite")  # then the model is read
    assert (tmp_path / "p.csv").read_text() == "mine"
