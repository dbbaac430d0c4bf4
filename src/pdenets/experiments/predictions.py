"""Predictions files: one row per item, named by the user's own id, with the predicted class and every
class's probability.

:func:`write_predictions` writes the CSV every task that predicts writes (``predictions.csv``): the columns

``id``, [``split``], [``label``], ``predicted``, ``p(<class>)`` for each class in the order of
``class_names``;

``label`` is the known label (empty where there is none), ``split`` where the items fall in several
(``train``/``val``/``test``/``unlabelled``). Ids and class names are written as given, except that a cell a
spreadsheet would evaluate as a formula (a leading ``=``, ``+``, ``-``, ``@``, tab or carriage return) gets a
leading apostrophe (:mod:`pdenets._output`); the ``csv`` module quotes commas, quotes and line breaks, and
:func:`read_predictions` undoes the apostrophe, so any id reads back unchanged. Class names must be distinct
(each names a column, ``p(<class>)``: never a formula, it starts with ``p``). The file is created in one step
and never replaces an existing file, nor one of ``inputs``, unless asked.

Examples:
    >>> import tempfile, pathlib, torch
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "predictions.csv"
    >>> probabilities = torch.tensor([[0.9, 0.1], [0.2, 0.8]])
    >>> _ = write_predictions(path, ["q1", "q2"], probabilities, ["cat", "dog"], labels=["cat", None])
    >>> print(path.read_text().strip())
    id,label,predicted,p(cat),p(dog)
    q1,cat,cat,0.9,0.1
    q2,,dog,0.2,0.8
    >>> read_predictions(path)[1]["predicted"]
    'dog'
    >>> _ = write_predictions(path, ["=1+2"], probabilities[:1], ["cat", "dog"], overwrite=True)
    >>> path.read_text().splitlines()[1]                  # a spreadsheet shows the text, evaluates nothing
    "'=1+2,cat,0.9,0.1"
    >>> read_predictions(path)[0]["id"]
    '=1+2'
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import torch

from .._output import read_csv_rows, write_csv

__all__ = ["write_predictions", "read_predictions", "prediction_accuracy"]


def write_predictions(
    path: Union[str, Path],
    ids: Sequence[str],
    probabilities: torch.Tensor,
    class_names: Sequence[str],
    *,
    labels: Optional[Sequence[Optional[str]]] = None,
    splits: Optional[Sequence[str]] = None,
    overwrite: bool = False,
    inputs: Sequence[Union[str, Path]] = (),
) -> Path:
    """Write the predictions file (module docstring) and return its path.

    Args:
        path: the ``.csv`` file to write.
        ids: one id per row (strings, distinct).
        probabilities: ``(N, C)`` class probabilities; the predicted class is the most probable (the first
            of a tie).
        class_names: ``C`` names, in the order of the columns of ``probabilities``.
        labels: the known label per row, ``None`` (or ``""``) where unknown; the column is left out if not
            given.
        splits: the split of each row; the column is left out if not given.
        overwrite: replace an existing file (default: refuse).
        inputs: the files and folders the predictions answer (never written over, nor into).

    Raises:
        pdenets._output.OutputExistsError: ``path`` exists and ``overwrite`` is false (a
            ``FileExistsError``).
        pdenets._output.OutputError: ``path`` cannot be written (a folder, an input, no permission).
        ValueError: sizes that disagree, repeated ids or class names, or non-finite probabilities.
    """
    path = Path(path)
    count = len(ids)
    if probabilities.ndim != 2 or probabilities.shape != (count, len(class_names)):
        raise ValueError(
            f"probabilities of shape {tuple(probabilities.shape)} for {count} ids and {len(class_names)} "
            "classes"
        )
    for name, column in (("labels", labels), ("splits", splits)):
        if column is not None and len(column) != count:
            raise ValueError(f"{len(column)} {name} for {count} ids")
    if len(set(ids)) != count:
        raise ValueError("the ids of a predictions file must be distinct")
    if not bool(torch.isfinite(probabilities).all()):
        raise ValueError("the probabilities hold NaN or infinity")
    header = ["id"] + (["split"] if splits is not None else []) + (["label"] if labels is not None else [])
    header += ["predicted"] + [f"p({name})" for name in class_names]
    if len(set(header)) != len(header):
        raise ValueError("the class names of a predictions file must be distinct")
    predicted = probabilities.argmax(1).tolist()
    values = probabilities.detach().to(torch.float64).cpu().tolist()

    def rows():
        for row in range(count):
            cells = [str(ids[row])]
            if splits is not None:
                cells.append(splits[row])
            if labels is not None:
                cells.append("" if labels[row] is None else str(labels[row]))
            cells.append(str(class_names[predicted[row]]))
            cells += [f"{value:.6g}" for value in values[row]]
            yield cells

    return write_csv(path, header, rows(), overwrite=overwrite, inputs=inputs)


def read_predictions(path: Union[str, Path]) -> List[Dict[str, str]]:
    """The rows of a predictions file as ``{column: cell}`` dicts, in the file's order (every cell as it was
    given to :func:`write_predictions`)."""
    rows = read_csv_rows(path)
    if not rows:
        return []
    header = rows[0]
    return [dict(zip(header, row)) for row in rows[1:]]


def prediction_accuracy(rows: Sequence[Dict[str, str]], split: Optional[str] = None) -> Optional[float]:
    """The share of rows with a known label whose prediction is that label (of one ``split`` if given);
    ``None`` where no row has a label."""
    known = [row for row in rows if row.get("label") and (split is None or row.get("split") == split)]
    if not known:
        return None
    return sum(row["label"] == row["predicted"] for row in known) / len(known)
