"""``pdenets predict ...``: classify a user's unlabelled data and write the predictions by the user's ids.

    pdenets predict few-shot --support my_texts.npz --out predictions.csv
    pdenets predict few-shot --support labelled.npz --queries new.npz --method laplacianshot --out p.csv

The predictions file's columns are described in :mod:`pdenets.experiments.predictions`.
"""

from __future__ import annotations

import time
from pathlib import Path

from .data.fewshot import load_features
from .experiments.config import check_device
from .experiments.predictions import write_predictions
from .models.fewshot import DEFAULT_METHOD
from .tasks.fewshot.predict import classify_queries

__all__ = ["run_predict_command"]


def _fewshot(args) -> int:
    out = Path(args.out)
    if out.suffix.lower() != ".csv":
        raise ValueError(f"--out {out}: the predictions file name must end in .csv")
    inputs = [Path(args.support)] + ([Path(args.queries)] if args.queries else [])
    if any(out.resolve() == path.resolve() for path in inputs):
        raise ValueError(f"--out {out} is an input file: predictions never replace a features file")
    if out.exists() and not args.overwrite:
        raise ValueError(f"{out} exists; pass --overwrite to replace it")
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
        out, ids, prediction.probabilities, prediction.class_names, labels=labels, overwrite=True
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
    return {"few-shot": _fewshot}[args.kind](args)
