"""coin-tabular's saved models: a model trained on the user's table, kept beside the report
(``model-<name>/``, :mod:`pdenets.saved_model`), answers new rows later
(``pdenets predict RUN_DIR --dataset NEW.csv``).

COIN and label spreading are transductive: a new row is classified on the sample graph of the training
table's rows and the new rows together (COIN: the trained network's diffusion on that graph; label
spreading: spread from the training labels over it), so the model keeps the training rows' scaled
features and the labels it was trained on. The MLP reads each new row alone. New rows are scaled with the
training table's per-feature mean and standard deviation.

A new file must hold the model's feature columns (any order) and, where the model was trained with one, its
id column; a label column is optional (its labels are written beside the predictions); any other column, a
missing one, a repeated or empty id or a cell that is no number is refused naming the file and the line.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ...data.csvfile import parse_number, read_csv_table
from ...data.errors import DatasetError, dataset_error
from ...data.tabular import TabularData, row_id_of
from ...models.registry import create_model
from ...operators import knn_gaussian_weights
from ...saved_model import SavedModelError, load_model, load_weights, save_model

__all__ = [
    "save_tabular_model",
    "save_rows_model",
    "load_tabular_model",
    "NewRows",
    "read_new_rows",
    "predict_new_rows",
]


def _scaling(features: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The per-feature mean and scale the task standardizes with (a constant feature keeps scale 1)."""
    scale = features.std(0)
    return features.mean(0), np.where(scale > 0, scale, 1.0)


def save_tabular_model(
    folder: Path, spec: Any, table: TabularData, labelled: np.ndarray, network: Optional[torch.nn.Module]
) -> Path:
    """Keep the model of the job ``spec`` (a ``TabularJob``) trained on ``table``'s rows ``labelled``."""
    trained = np.full(len(table.labels), -1, dtype=np.int64)
    trained[labelled] = table.labels[labelled]
    return save_rows_model(
        folder,
        model=spec.model,
        settings=spec,
        features=table.features,
        trained_labels=trained,
        feature_names=table.feature_names,
        class_names=table.class_names,
        network=network,
        about={
            "id_column": spec.id_column,
            "label_column": table.label_column or spec.label_column,
            "labels_per_class": spec.labels_per_class,
            "split": spec.split,
            "dataset": Path(str(spec.dataset)).name,
        },
    )


def save_rows_model(
    folder: Path,
    *,
    model: str,
    settings: Any,
    features: np.ndarray,
    trained_labels: np.ndarray,
    feature_names: Sequence[str],
    class_names: Sequence[str],
    network: Optional[torch.nn.Module],
    about: Dict[str, Any],
) -> Path:
    """Keep a model trained on rows (module docstring): ``features`` ``(n, F)`` as read (the scaling is
    computed and kept here), ``trained_labels`` ``(n,)`` the class ids it trained on (``-1`` elsewhere),
    ``settings`` with the ``mlp``/``diffusion``/``spreading`` of a ``TabularJob``, and what ``about`` adds to
    the manifest (``id_column`` and ``label_column`` at least)."""
    mean, scale = _scaling(features)
    tensors: Dict[str, torch.Tensor] = {
        "features": torch.from_numpy((features - mean) / scale),
        "trained_labels": torch.from_numpy(np.asarray(trained_labels, dtype=np.int64)),
        "mean": torch.from_numpy(mean),
        "scale": torch.from_numpy(scale),
    }
    if network is not None:
        tensors.update({f"network.{name}": value for name, value in network.state_dict().items()})
    chosen = {
        name: asdict(getattr(settings, name))
        for name in ("mlp", "diffusion", "spreading")
        if getattr(settings, name)
    }
    manifest = {
        "settings": chosen,
        "feature_names": [str(name) for name in feature_names],
        "class_names": [str(name) for name in class_names],
        **about,
    }
    return save_model(folder, tensors, task="coin-tabular", model=model, manifest=manifest)


def load_tabular_model(folder: Path) -> Tuple[Dict[str, torch.Tensor], Dict[str, Any]]:
    """A saved coin-tabular model, checked (:func:`~pdenets.saved_model.load_model`) and its
    manifest's fields present."""
    tensors, manifest = load_model(folder, task="coin-tabular")
    for name in ("settings", "feature_names", "class_names", "model"):
        if name not in manifest:
            raise SavedModelError(f"{Path(folder) / 'model.json'}: no {name!r} in the manifest")
    return tensors, manifest


class NewRows:
    """New rows of a table: their ids, features in the model's column order, and labels where given."""

    def __init__(self, ids: List[str], features: np.ndarray, labels: Optional[List[Optional[str]]]):
        self.ids, self.features, self.labels = ids, features, labels


def read_new_rows(path: Path, manifest: Dict[str, Any]) -> NewRows:
    """Read ``path``'s rows for the model of ``manifest`` (module docstring for what is refused)."""
    path = Path(path)
    if path.suffix.lower() != ".csv":
        raise DatasetError(f"{path}: new rows come as a .csv file with the training table's columns")
    rows = read_csv_table(path)
    if len(rows) < 2:
        raise dataset_error(path, "needs a header row and at least one row")
    header = [cell.strip() for cell in rows[0][1]]
    features: List[str] = list(manifest["feature_names"])
    id_column: Optional[str] = manifest.get("id_column")
    label_column = manifest.get("label_column")
    missing = [name for name in features + ([id_column] if id_column else []) if name not in header]
    known = set(features) | {id_column, label_column}
    extra = [name for name in header if name not in known and name.lower() != "split"]
    labels_at = header.index(label_column) if label_column in header else None
    if labels_at is None and len(extra) == 1 and not missing:  # the training file's label column by any name
        labels_at, extra = header.index(extra[0]), []
    if missing or extra:
        raise dataset_error(
            path,
            "its columns are not the model's: "
            + "; ".join(
                part
                for part in (
                    f"missing {', '.join(map(repr, missing))}" if missing else "",
                    f"not the model's {', '.join(map(repr, extra))}" if extra else "",
                )
                if part
            ),
        )
    positions = [header.index(name) for name in features]
    ids, values, labels = [], [], []
    seen: Dict[str, int] = {}
    for number, row in rows[1:]:
        if len(row) != len(header):
            raise dataset_error(path, f"line {number} has {len(row)} fields, the header {len(header)}")
        index = header.index(id_column) if id_column else None
        row_id = row_id_of(path, number, row, index, id_column, seen)
        try:
            values.append([parse_number(row[position]) for position in positions])
        except ValueError as error:
            raise dataset_error(path, f"line {number}: {error}") from None
        ids.append(row_id)
        labels.append(row[labels_at].strip() or None if labels_at is not None else None)
    return NewRows(ids, np.asarray(values, dtype=np.float64), labels if labels_at is not None else None)


def predict_new_rows(
    tensors: Dict[str, torch.Tensor], manifest: Dict[str, Any], features: np.ndarray
) -> torch.Tensor:
    """Class probabilities ``(M, C)`` of new rows ``features`` ``(M, F)`` (in the model's column order, as
    read) by the saved model (module docstring)."""
    count = len(features)
    scaled = torch.from_numpy((features - tensors["mean"].numpy()) / tensors["scale"].numpy())
    settings = manifest["settings"]
    stored, trained = tensors["features"], tensors["trained_labels"]
    classes = len(manifest["class_names"])
    if "spreading" in settings:
        from sklearn.semi_supervised import LabelSpreading

        spreading = settings["spreading"]
        partial = np.concatenate([trained.numpy(), np.full(count, -1)])
        model = LabelSpreading(
            kernel="knn", n_neighbors=spreading["n_top"], alpha=spreading["spreading_alpha"], max_iter=1000
        )
        model.fit(torch.cat([stored, scaled]).numpy(), partial)
        return torch.from_numpy(np.asarray(model.label_distributions_[len(stored) :], dtype=np.float64))
    mlp, diffusion = settings["mlp"], settings.get("diffusion")
    points = torch.cat([stored, scaled]) if diffusion else scaled
    graph = (
        knn_gaussian_weights(
            points, diffusion["n_top"], sigma_neighbor=diffusion["sigma_neighbor"], normalization="row"
        )
        if diffusion
        else None
    )
    network = create_model(
        "coin-mlp",
        in_features=stored.shape[1],
        num_classes=classes,
        hidden_features=mlp["hidden_features"],
        num_layers=mlp["layers"],
        dropout=mlp["dropout"],
        graph=graph,
        step_size=diffusion["step_size"] if diffusion else 0.5,
        num_steps=diffusion["num_steps"] if diffusion else 0,
    ).double()
    load_weights(network, tensors, "the saved model", prefix="network.")
    network.eval()
    with torch.no_grad():
        probabilities = torch.softmax(network(points), dim=1)
    return probabilities[len(points) - count :]
