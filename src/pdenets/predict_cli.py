"""``pdenets predict ...``: classify a user's unlabelled data and write the predictions by the user's ids.

    pdenets predict few-shot --support my_texts.npz --out predictions.csv
    pdenets predict few-shot --support labelled.npz --queries new.npz --method laplacianshot --out p.csv
    pdenets predict runs/wines --dataset new_wines.csv --out new_predictions.csv       # a run's saved model
    pdenets predict runs/sensors --dataset sensors_longer/ --out forecasts.csv    # the steps after its end
    pdenets predict runs/wines/model-mlp --dataset new_wines.csv --out p.csv           # one model's folder

The predictions file's columns are described in :mod:`pdenets.experiments.predictions`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import List

import torch

from ._output import OutputError, checked_output
from .data.fewshot import load_features
from .data.temporal import load_temporal
from .experiments.config import check_device
from .experiments.predictions import prediction_accuracy, read_predictions, write_predictions
from .models.fewshot import DEFAULT_METHOD
from .saved_model import saved_task
from .tasks.coin_forecast.forecasts import write_forecasts
from .tasks.coin_forecast.model import ForecastModel
from .tasks.coin_tabular.model import TabularModel
from .tasks.fewshot.predict import classify_queries
from .tasks.node_classification.model import NodeModel

__all__ = ["run_predict_command"]


#: the files read beside a dataset file ``<stem><suffix>``: its labels, features and split
_COMPANIONS = ("-labels", "-features", "-split")


def _read_beside(dataset: Path) -> List[Path]:
    """``dataset`` and the files a reader may take with it (an edge list's ``<stem>-labels.csv``, …); a folder
    dataset stands for every file inside it."""
    if dataset.is_dir():
        return [dataset]
    suffixes = {dataset.suffix, ".csv", ".txt"}
    return [dataset] + [
        dataset.with_name(dataset.stem + kind + end) for kind in _COMPANIONS for end in suffixes
    ]


def _checked_out(args, inputs: List[Path]) -> Path:
    """``--out``: a new ``.csv`` file (an existing one only with ``--overwrite``), never one of the inputs nor
    a file inside or beside them that their readers read, in a folder that can be written (one line
    otherwise, before any model is read)."""
    read = [path for given in inputs for path in _read_beside(Path(given))]
    try:
        return checked_output(args.out, inputs=read, overwrite=args.overwrite, suffix=".csv")
    except OutputError as error:
        raise ValueError(f"--out {error}") from None


def _task_of(folder: Path) -> str:
    """The task a saved model names (``""`` where its manifest cannot be read: the loader then says why)."""
    return saved_task(folder)


def _model_folder(run: Path, model) -> Path:
    """The saved model to use: ``run`` itself where it is a model's folder, else its ``model-<name>/`` (the
    one there is, ``--model``, or COIN / Diff-ResNet)."""
    manifest = run / "model.json"
    if manifest.exists() or manifest.is_symlink():  # a model's folder (its loader checks the file itself)
        if model is not None:
            raise ValueError(f"{run} is a saved model's folder; --model chooses among a run's models")
        return run
    folders = sorted(path for path in run.glob("model-*") if path.is_dir())
    if not folders:
        raise ValueError(f"{run}: no saved model (model-<name>/); runs on your own files save theirs")
    names = [folder.name[len("model-") :] for folder in folders]
    preferred = next((name for name in ("coin", "diff-resnet") if name in names), None)
    chosen = model or (names[0] if len(names) == 1 else preferred)
    if chosen not in names:
        raise ValueError(f"{run}: give --model, one of {', '.join(names)}")
    return run / f"model-{chosen}"


def _forecast(folder: Path, dataset: str, out: Path, overwrite: bool) -> int:
    """A forecaster's saved model forecasts the steps after the end of the series ``dataset``."""
    model = ForecastModel.load(folder)
    series = load_temporal(dataset)
    forecast = model.forecast(series, dataset)
    write_forecasts(out, series, forecast.columns, forecast.node_names, overwrite=overwrite)
    print(
        f"{len(forecast.node_names)} nodes of {dataset} forecast {len(forecast.stamps)} steps after its "
        f"last ({forecast.stamps[0]} to {forecast.stamps[-1]}) by {folder}; written to {out}"
    )
    return 0


def _saved_model(args) -> int:
    """``pdenets predict RUN_DIR``: a run's saved model answers the rows of ``--dataset``."""
    run = Path(args.target)
    if not run.is_dir():
        raise ValueError(
            f"{run}: not a run folder (nor few-shot); give the folder a run wrote its report into"
        )
    for name in ("support", "queries", "method"):
        if getattr(args, name) is not None:
            raise ValueError(f"--{name} is for few-shot queries, not for a run's saved model")
    if args.dataset is None:
        raise ValueError("give the new data with --dataset FILE")
    folder = _model_folder(run, args.model)
    out = _checked_out(args, [Path(args.dataset)])
    task = _task_of(folder)
    if task == "coin-forecast":
        return _forecast(folder, args.dataset, out, args.overwrite)
    # a table is a .csv file; a graph is any other form (an edge list, a .npz, a folder)
    if Path(args.dataset).suffix.lower() != ".csv" and task == "node-classification":
        nodes = NodeModel.load(folder)
        graph = nodes.read_graph(args.dataset)
        probabilities = nodes.predict_proba(graph, args.dataset)
        given = list(graph.class_names)
        labels = [given[int(label)] if int(label) >= 0 else None for label in graph.y.tolist()]
        ids, known = graph.node_ids(), labels if any(label is not None for label in labels) else None
        write_predictions(out, ids, probabilities, nodes.class_names, labels=known, overwrite=args.overwrite)
        what = "nodes"
    else:
        model = TabularModel.load(folder)
        rows = model.read_rows(Path(args.dataset))
        probabilities = torch.from_numpy(model.predict_proba(rows.features))
        ids, known = rows.ids, rows.labels
        write_predictions(out, ids, probabilities, model.class_names, labels=known, overwrite=args.overwrite)
        what = "rows"
    summary = f"{len(ids)} {what} of {args.dataset} classified by {folder}; written to {out}"
    if known is not None:
        accuracy = prediction_accuracy(read_predictions(out))
        if accuracy is not None:
            summary += f"; {100 * accuracy:.1f} % match the file's labels"
    print(summary)
    return 0


def _fewshot(args) -> int:
    for name in ("dataset", "model"):
        if getattr(args, name) is not None:
            raise ValueError(f"--{name} is for a run's saved model, not for few-shot queries")
    if args.support is None:
        raise ValueError("few-shot needs --support FILE (a features file with labelled rows)")
    inputs = [Path(args.support)] + ([Path(args.queries)] if args.queries else [])
    out = _checked_out(args, inputs)
    check_device(args.device)
    support = load_features(args.support)
    source = load_features(args.queries) if args.queries else support
    where = args.queries or args.support
    labels = None
    if source.unlabelled is not None:
        queries, ids = source.unlabelled, source.unlabelled_ids
    elif args.queries:  # a file of labelled rows: every row is classified, its label written beside it
        queries = source.features
        ids = source.ids or tuple(str(row) for row in range(1, len(source.labels) + 1))
        labels = [source.class_names[int(label)] for label in source.labels]
    else:
        raise ValueError(
            f"{where} holds no unlabelled rows to classify: give them with --queries FILE, or embed a file "
            "whose rows with an empty label are the queries"
        )
    start = time.perf_counter()
    prediction = classify_queries(
        support,
        queries,
        method=args.method or DEFAULT_METHOD,
        preprocessing=args.preprocessing,
        max_queries_per_task=args.max_queries_per_task,
        seed=args.seed,
        device=args.device,
    )
    seconds = time.perf_counter() - start
    write_predictions(
        out, ids, prediction.probabilities, prediction.class_names, labels=labels, overwrite=args.overwrite
    )
    summary = (
        f"{len(ids)} queries of {where} classified into {len(prediction.class_names)} classes from "
        f"{len(support.labels)} labelled rows with {prediction.method} ({prediction.tasks} task"
        f"{'' if prediction.tasks == 1 else 's'}, {seconds:.1f} s); written to {out}"
    )
    if labels is not None:
        predicted = [prediction.class_names[int(index)] for index in prediction.probabilities.argmax(1)]
        right = sum(guess == label for guess, label in zip(predicted, labels))
        summary += f"; {right} of {len(labels)} match the file's labels ({100 * right / len(labels):.1f} %)"
    print(summary)
    return 0


def run_predict_command(args) -> int:
    return _fewshot(args) if args.target == "few-shot" else _saved_model(args)
