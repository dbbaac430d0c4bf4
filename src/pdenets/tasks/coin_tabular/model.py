"""coin-tabular's model, in one place: its settings, the fit, the answer for new rows, and the saved model.

:func:`fit_table` trains one of the task's models on the labelled rows of a table and returns a
:class:`TabularModel`; a run's jobs (:mod:`.task`), its predictions file, ``pdenets predict RUN_DIR`` and
:class:`~pdenets.estimators.COINTabularClassifier` all go through it.

* ``mlp`` — the convection alone, an MLP trained on the labelled rows;
* ``coin`` — the same MLP, then ``r`` diffusion steps ``X ← (I − γL)X`` on the Gaussian kNN graph of all
  rows (built once from the standardized features, rows normalized), then a linear classifier; trained on
  the labelled rows' outputs, the unlabelled ones taking part through the graph;
* ``label-spreading`` — scikit-learn's ``LabelSpreading`` (kNN kernel) on the same features.

Features are standardized over all rows (a constant feature keeps scale 1). The networks train in float32
with the closed-form step of :class:`~pdenets.models.coin_step.CoinMLPStep` on the CPU (autograd
elsewhere). Every training row takes part in the fit (transductive); a new row is answered alone
(:meth:`TabularModel.predict_proba`): COIN links it to its nearest training rows and diffuses its output
towards theirs (the training rows' head outputs before each step are kept, ``trajectory``), label spreading
averages its nearest training rows' label distributions (``spread``), the MLP reads it. A row whose
``sigma_neighbor`` nearest neighbours are copies of it (a width of zero) is linked to its copies only (the
kernel's limit, :func:`~pdenets.operators.gaussian_kernel`).

A saved model (:mod:`pdenets.saved_model`) keeps the scaled training rows, their labels, the scaling and the
network's weights; :meth:`TabularModel.load` reads its settings typed and validated, its names distinct and
as many as the weights imply, and compares the network with the weights before building it. New rows
(:meth:`TabularModel.read_rows`) must hold the model's feature columns (any order) and, where the model was
trained with one, its id column; a label column is optional (its labels are written beside the
predictions); any other column, a missing or repeated one, a repeated or empty id or a cell that is no number
is refused naming the file and the line.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch.nn import functional as F

from ...data.csvfile import parse_number, read_csv_table
from ...data.errors import DatasetError, dataset_error
from ...data.tabular import row_id_of
from ...experiments.context import CPU
from ...models.coin import COIN
from ...models.coin_step import CoinMLPStep
from ...models.optim import Adam
from ...models.registry import create_model
from ...models.training import fit, parameters_finite
from ...operators import NeighbourIndex, gaussian_kernel, knn_gaussian_weights
from ...saved_model import (
    SavedModelError,
    check_fits,
    distinct_names,
    load_model,
    load_weights,
    save_model,
    typed_settings,
)

__all__ = [
    "MODELS",
    "MAX_NUM_STEPS",
    "MlpSettings",
    "GraphDiffusion",
    "Spreading",
    "TabularSettings",
    "TabularModel",
    "NewRows",
    "fit_table",
    "standardization",
    "sample_graph",
]

#: the models of the task
MODELS = ("coin", "mlp", "label-spreading")
#: the most diffusion steps a model takes (a bound on what a model file may ask for)
MAX_NUM_STEPS = 100_000
#: COIN's epochs and step size, the task's and the estimator's defaults (one place). 100 epochs at γ = 0.5
#: take half the time at −0.1 to +1.5 points on ``benchmarks/peers.py``'s six tables, but 0.4 to 0.7 less on
#: the breast-cancer protocol and 3.0 less on its wide sparse table (benchmarks/README.md): not the default
DEFAULT_EPOCHS = 200
DEFAULT_STEP_SIZE = 0.25
#: the dtype the networks train and answer in (the rows are standardized in float64 first)
COMPUTE_DTYPE = torch.float32


def _set_count(settings: Any, name: str, minimum: int = 1) -> None:
    """Check the field ``name`` of ``settings`` is a whole number ``≥ minimum``, kept a Python ``int``."""
    value = getattr(settings, name)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be a whole number ≥ {minimum}, got {value!r}")
    object.__setattr__(settings, name, int(value))


def _set_number(
    settings: Any, name: str, low: float, high: float, *, low_open: bool, high_open: bool
) -> None:
    """Check the field ``name`` of ``settings`` is a number in its interval (a NumPy number kept a Python one:
    the value is part of a run's store key, which a Python ``int`` keeps as it is)."""
    value = getattr(settings, name)
    ok = not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real) and math.isfinite(value)
    ok = ok and (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    if isinstance(value, np.generic):
        object.__setattr__(settings, name, value.item())


@dataclass(frozen=True)
class MlpSettings:
    """The MLP and its training (the ``mlp`` and ``coin`` models)."""

    hidden_features: int = field(metadata={"stored_as": "hidden"})  # the runs stored before keep their keys
    layers: int
    dropout: float
    epochs: int
    lr: float
    weight_decay: float

    def __post_init__(self) -> None:
        for name in ("hidden_features", "layers", "epochs"):
            _set_count(self, name)
        _set_number(self, "dropout", 0, 1, low_open=False, high_open=True)
        _set_number(self, "lr", 0, math.inf, low_open=True, high_open=True)
        _set_number(self, "weight_decay", 0, math.inf, low_open=False, high_open=True)


@dataclass(frozen=True)
class GraphDiffusion:
    """COIN's diffusion on the Gaussian kNN sample graph: ``n_top`` neighbours, the width the distance to the
    ``sigma_neighbor``-th, ``num_steps`` steps of ``step_size`` (the graph's rows sum to one: stable up to
    1)."""

    n_top: int
    sigma_neighbor: int
    step_size: float
    num_steps: int

    def __post_init__(self) -> None:
        _set_count(self, "n_top")
        _set_count(self, "sigma_neighbor")
        _set_count(self, "num_steps", minimum=0)
        if self.sigma_neighbor > self.n_top:
            raise ValueError(f"sigma_neighbor ({self.sigma_neighbor}) must not exceed n_top ({self.n_top})")
        _set_number(self, "step_size", 0, 1, low_open=True, high_open=False)
        if self.num_steps > MAX_NUM_STEPS:
            raise ValueError(f"num_steps must be at most {MAX_NUM_STEPS:,}, got {self.num_steps:,}")


@dataclass(frozen=True)
class Spreading:
    """scikit-learn's LabelSpreading with a kNN kernel."""

    n_top: int
    spreading_alpha: float

    def __post_init__(self) -> None:
        _set_count(self, "n_top")
        _set_number(self, "spreading_alpha", 0, 1, low_open=True, high_open=True)


#: the parts of :class:`TabularSettings` each model computes with
_PARTS = {"coin": ("mlp", "diffusion"), "mlp": ("mlp",), "label-spreading": ("spreading",)}


@dataclass(frozen=True)
class TabularSettings:
    """One model and the settings it computes with (the others ``None``), checked.

    Examples:
        >>> TabularSettings.of("coin", epochs=50).diffusion
        GraphDiffusion(n_top=10, sigma_neighbor=5, step_size=0.25, num_steps=3)
        >>> TabularSettings.of("mlp", rows=4).diffusion is None
        True
    """

    model: str
    mlp: Optional[MlpSettings] = None
    diffusion: Optional[GraphDiffusion] = None
    spreading: Optional[Spreading] = None

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, got {self.model!r}")
        for part in ("mlp", "diffusion", "spreading"):
            if (getattr(self, part) is not None) != (part in _PARTS[self.model]):
                raise ValueError(f"the {self.model} model takes the settings {', '.join(_PARTS[self.model])}")

    @classmethod
    def of(
        cls,
        model: str,
        *,
        hidden_features: int = 64,
        layers: int = 2,
        dropout: float = 0.2,
        epochs: int = DEFAULT_EPOCHS,
        lr: float = 0.01,
        weight_decay: float = 5e-4,
        n_top: int = 10,
        sigma_neighbor: int = 5,
        step_size: float = DEFAULT_STEP_SIZE,
        num_steps: int = 3,
        spreading_alpha: float = 0.2,
        rows: Optional[int] = None,
    ) -> "TabularSettings":
        """The settings of ``model`` from the task's options (their defaults are the task's); with ``rows``,
        the graph's neighbours capped at the other rows there are (and the width's at the neighbours)."""
        if model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
        if rows is not None:
            n_top = int(min(n_top, rows - 1))
            sigma_neighbor = int(min(sigma_neighbor, n_top))
        parts: Dict[str, Any] = {}
        if "mlp" in _PARTS[model]:
            parts["mlp"] = MlpSettings(hidden_features, layers, dropout, epochs, lr, weight_decay)
        if "diffusion" in _PARTS[model]:
            parts["diffusion"] = GraphDiffusion(n_top, sigma_neighbor, step_size, num_steps)
        if "spreading" in _PARTS[model]:
            parts["spreading"] = Spreading(n_top, spreading_alpha)
        return cls(model, **parts)

    def as_json(self) -> Dict[str, Any]:
        """The settings as a saved model's manifest keeps them (the parts its model computes with)."""
        return {part: asdict(getattr(self, part)) for part in _PARTS[self.model]}

    @classmethod
    def from_json(cls, model: Any, document: Any, source: Any) -> "TabularSettings":
        """The settings a manifest keeps, typed and checked (:class:`~pdenets.saved_model.SavedModelError`
        naming ``source`` otherwise)."""
        if model not in MODELS:
            raise SavedModelError(f"{source}: unknown model {model!r}; models: {', '.join(MODELS)}")
        if not isinstance(document, dict) or set(document) != set(_PARTS[model]):
            raise SavedModelError(f"{source}: settings of {model} are {', '.join(_PARTS[model])}")
        kinds: Dict[str, type] = {"mlp": MlpSettings, "diffusion": GraphDiffusion, "spreading": Spreading}
        parts: Dict[str, Any] = {
            part: typed_settings(kinds[part], document[part], source, f"settings.{part}")
            for part in _PARTS[model]
        }
        return cls(model, **parts)


def standardization(features: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The per-feature mean and scale the task standardizes with (a constant feature keeps scale 1)."""
    scale = features.std(0)
    return features.mean(0), np.where(scale > 0, scale, 1.0)


def sample_graph(
    points: torch.Tensor, n_top: int, sigma_neighbor: int, index: Optional[NeighbourIndex] = None
) -> torch.Tensor:
    """The rows' Gaussian kNN graph, rows normalized (module docstring); ``index``: the rows' neighbour index
    to search (an approximate one, kept for the new rows)."""
    return knn_gaussian_weights(
        points, n_top, sigma_neighbor=sigma_neighbor, normalization="row", coincident="link", index=index
    )


def _in(graph: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """The sample graph in the networks' dtype."""
    return None if graph is None else graph.to(COMPUTE_DTYPE)


def _network(
    settings: TabularSettings, in_features: int, classes: int, graph: Any, *, steps: Optional[int] = None
) -> torch.nn.Module:
    """The network of ``settings`` (``steps``: its diffusion steps, default the settings')."""
    mlp, diffusion = settings.mlp, settings.diffusion
    assert mlp is not None  # the models with a network (mlp, coin) carry their MLP settings
    return create_model(
        "coin-mlp",
        in_features=in_features,
        num_classes=classes,
        hidden_features=mlp.hidden_features,
        num_layers=mlp.layers,
        dropout=mlp.dropout,
        graph=graph,
        step_size=diffusion.step_size if diffusion else 0.5,
        num_steps=(diffusion.num_steps if diffusion else 0) if steps is None else steps,
    )


def _links(
    training: NeighbourIndex, queries: torch.Tensor, diffusion: GraphDiffusion
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Each query row's ``n_top`` nearest training rows and its Gaussian weights to them (width: the
    distance to the ``sigma_neighbor``-th; a width of zero links the query to its copies), rows summing to
    one: ``(M, k)`` indices and weights."""
    count = min(max(diffusion.n_top, diffusion.sigma_neighbor), len(training.points))
    near = training.search(queries, count)
    sq = near.sq_distances.to(COMPUTE_DTYPE)
    width = sq[:, diffusion.sigma_neighbor - 1 : diffusion.sigma_neighbor].sqrt()
    weights = gaussian_kernel(sq[:, : diffusion.n_top], width, coincident="link")
    return near.indices[:, : diffusion.n_top], weights / weights.sum(1, keepdim=True).clamp_min(1e-30)


def _spread(settings: TabularSettings, points: np.ndarray, partial: np.ndarray) -> np.ndarray:
    """scikit-learn's label spreading of ``partial`` (``-1``: unknown) over ``points``: ``(n, C)``."""
    from sklearn.semi_supervised import LabelSpreading

    spreading = settings.spreading
    assert spreading is not None
    model = LabelSpreading(
        kernel="knn", n_neighbors=spreading.n_top, alpha=spreading.spreading_alpha, max_iter=1000
    )
    model.fit(points, partial)
    return np.asarray(model.label_distributions_, dtype=np.float64)


class NewRows:
    """New rows of a table: their ids, features in the model's column order, and labels where given."""

    def __init__(self, ids: List[str], features: np.ndarray, labels: Optional[List[Optional[str]]]):
        self.ids, self.features, self.labels = ids, features, labels


@dataclass
class TabularModel:
    """A fitted model of the task (module docstring).

    Args:
        settings: the model and its settings.
        points: ``(n, F)`` the training rows, standardized.
        mean, scale: ``(F,)`` the standardization of the training rows.
        trained_labels: ``(n,)`` the class ids trained on, ``-1`` for the other rows.
        class_names: the ``C`` classes, in the order of the probabilities' columns.
        feature_names: the ``F`` feature columns, in the order of ``points``' columns.
        network: the trained network (``None`` for label spreading, and for a model of one class).
        trajectory: ``(r, n, C)`` COIN's training rows' head outputs before each diffusion step (what a new
            row's steps pull it towards).
        spread: ``(n, C)`` label spreading's label distributions of the training rows.
        probabilities: ``(n, C)`` the training rows' class probabilities (where it was fitted here).
        outcome: what a run's record adds: ``final_loss`` or ``mean_confidence``.
        about: what the saved model's manifest adds (the id and label columns, the split, …).
    """

    settings: TabularSettings
    points: torch.Tensor
    mean: np.ndarray
    scale: np.ndarray
    trained_labels: np.ndarray
    class_names: Tuple[str, ...]
    feature_names: Tuple[str, ...]
    network: Optional[torch.nn.Module] = None
    trajectory: Optional[torch.Tensor] = None
    spread: Optional[torch.Tensor] = None
    probabilities: Optional[np.ndarray] = None
    outcome: Dict[str, Any] = field(default_factory=dict)
    about: Dict[str, Any] = field(default_factory=dict)
    _neighbours: Optional[NeighbourIndex] = field(default=None, init=False, repr=False, compare=False)

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def neighbour_index(self) -> NeighbourIndex:
        """The training rows (in the networks' dtype) as the new rows' neighbour search sees them, indexed at
        the first search of a large table and kept (:class:`~pdenets.operators.NeighbourIndex`)."""
        if self._neighbours is None:
            self._neighbours = NeighbourIndex(self.points.to(COMPUTE_DTYPE))
        return self._neighbours

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """Class probabilities ``(M, C)`` of new rows ``features`` ``(M, F)`` (in the model's column order, as
        read, unscaled), each row alone (module docstring): the MLP reads it; COIN links it to its
        ``n_top`` nearest training rows (the Gaussian weights of the fit, rows summing to one) and takes
        the diffusion's ``r`` steps from its own output towards the training rows' (``trajectory``); label
        spreading averages its ``n_top`` nearest training rows' label distributions, as scikit-learn's
        ``LabelSpreading.predict_proba`` does."""
        features = np.asarray(features, dtype=np.float64)
        if features.ndim != 2 or features.shape[1] != len(self.feature_names):
            raise ValueError(
                f"new rows need {len(self.feature_names)} features each, got shape {tuple(features.shape)}"
            )
        count = len(features)
        if self.num_classes == 1:
            return np.ones((count, 1))
        scaled = torch.from_numpy((features - self.mean) / self.scale).to(COMPUTE_DTYPE)
        settings, training = self.settings, self.neighbour_index()
        if settings.spreading is not None:
            assert self.spread is not None  # a fitted label spreading keeps its rows' distributions
            near = training.search(scaled, min(settings.spreading.n_top, len(self.points)))
            votes = self.spread[near.indices].sum(1)
            return (votes / votes.sum(1, keepdim=True).clamp_min(1e-300)).numpy()
        assert self.network is not None
        diffusion = settings.diffusion
        network = _network(settings, scaled.shape[1], self.num_classes, None, steps=0).to(COMPUTE_DTYPE)
        network.load_state_dict(self.network.state_dict())
        network.eval()
        with torch.no_grad():
            out = network(scaled)  # the head's output: the diffusion commutes with it
        if diffusion is not None and diffusion.num_steps > 0:
            assert self.trajectory is not None  # a fitted COIN keeps its training rows' steps
            indices, weights = _links(training, scaled, diffusion)
            for step in range(diffusion.num_steps):
                pulled = (weights[..., None] * self.trajectory[step][indices]).sum(1)
                out = out + diffusion.step_size * (pulled - out)
        return torch.softmax(out, dim=1).double().numpy()

    def read_rows(self, path: Union[str, Path]) -> NewRows:
        """Read the new rows of the CSV file ``path`` for this model (module docstring for what is
        refused)."""
        path = Path(path)
        if path.suffix.lower() != ".csv":
            raise DatasetError(f"{path}: new rows come as a .csv file with the training table's columns")
        rows = read_csv_table(path)
        if len(rows) < 2:
            raise dataset_error(path, "needs a header row and at least one row")
        header = [cell.strip() for cell in rows[0][1]]
        repeated = sorted({name for name in header if header.count(name) > 1})
        if repeated:
            raise dataset_error(path, f"its header repeats {', '.join(map(repr, repeated))}")
        features: List[str] = list(self.feature_names)
        id_column: Optional[str] = self.about.get("id_column")
        label_column = self.about.get("label_column")
        missing = [name for name in features + ([id_column] if id_column else []) if name not in header]
        known = set(features) | {id_column, label_column}
        extra = [name for name in header if name not in known and name.lower() != "split"]
        labels_at = header.index(label_column) if label_column in header else None
        if (
            labels_at is None and len(extra) == 1 and not missing
        ):  # the training file's label column by any name
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
        index = header.index(id_column) if id_column else None
        ids, values, labels = [], [], []
        seen: Dict[str, int] = {}
        for number, row in rows[1:]:
            if len(row) != len(header):
                raise dataset_error(path, f"line {number} has {len(row)} fields, the header {len(header)}")
            row_id = row_id_of(path, number, row, index, id_column, seen)
            try:
                values.append([parse_number(row[position]) for position in positions])
            except ValueError as error:
                raise dataset_error(path, f"line {number}: {error}") from None
            ids.append(row_id)
            labels.append(row[labels_at].strip() or None if labels_at is not None else None)
        return NewRows(ids, np.asarray(values, dtype=np.float64), labels if labels_at is not None else None)

    def tensors(self) -> Dict[str, torch.Tensor]:
        """What a saved model keeps of it (module docstring)."""
        tensors: Dict[str, torch.Tensor] = {
            "features": self.points,
            "trained_labels": torch.from_numpy(np.asarray(self.trained_labels, dtype=np.int64)),
            "mean": torch.from_numpy(np.asarray(self.mean, dtype=np.float64)),
            "scale": torch.from_numpy(np.asarray(self.scale, dtype=np.float64)),
        }
        if self.network is not None:
            tensors.update({f"network.{name}": value for name, value in self.network.state_dict().items()})
        if self.trajectory is not None:
            tensors["trajectory"] = self.trajectory
        if self.spread is not None:
            tensors["spread"] = self.spread
        return tensors

    def save(self, folder: Union[str, Path]) -> Path:
        """Keep the model in ``folder`` (another model's folder is never replaced); returns the folder
        written."""
        if self.num_classes == 1:
            raise ValueError("a model of one class has nothing to save")
        manifest = {
            "settings": self.settings.as_json(),
            "feature_names": list(self.feature_names),
            "class_names": list(self.class_names),
            "id_column": None,
            "label_column": None,
            **self.about,
        }
        return save_model(
            folder, self.tensors(), task="coin-tabular", model=self.settings.model, manifest=manifest
        )

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "TabularModel":
        """A saved model (by :meth:`save`, a run or the estimator), checked before anything is built
        (module docstring).

        Raises:
            SavedModelError: an altered, truncated or foreign model, settings of the wrong kind or out of
                range, names repeated or not as many as the weights imply, naming the file.
        """
        tensors, manifest = load_model(folder, task="coin-tabular")
        source = Path(folder) / "model.json"
        settings = TabularSettings.from_json(manifest.get("model"), manifest.get("settings"), source)
        for name in ("features", "trained_labels", "mean", "scale"):
            if name not in tensors:
                raise SavedModelError(f"{source}: no {name!r} among its tensors")
        points, trained = tensors["features"], tensors["trained_labels"]
        if points.ndim != 2 or points.dtype != torch.float64 or trained.shape != (len(points),):
            raise SavedModelError(f"{source}: its training rows are not a table with one label per row")
        width = points.shape[1]
        feature_names = distinct_names(manifest.get("feature_names"), "feature_names", source, count=width)
        class_names = distinct_names(manifest.get("class_names"), "class_names", source)
        classes = len(class_names)
        ids = trained.numpy()
        if (
            trained.dtype != torch.int64
            or classes < 2
            or (ids.size and (ids.min() < -1 or ids.max() >= classes))
        ):
            raise SavedModelError(f"{source}: its trained labels are not class ids of its {classes} classes")
        mean, scale = tensors["mean"], tensors["scale"]
        if mean.shape != (width,) or scale.shape != (width,) or not bool((scale > 0).all()):
            raise SavedModelError(f"{source}: its scaling is not {width} means and positive scales")
        for column in ("id_column", "label_column"):
            if manifest.get(column) is not None and not isinstance(manifest.get(column), str):
                raise SavedModelError(f"{source}: {column} is not a column name")
        network = None
        if settings.mlp is not None:
            check_fits(lambda: _network(settings, width, classes, None), tensors, source, "network.")
            network = _network(settings, width, classes, None).to(COMPUTE_DTYPE)
            load_weights(network, tensors, source, prefix="network.")
        trajectory, spread = tensors.get("trajectory"), tensors.get("spread")
        diffusion = settings.diffusion
        steps = diffusion.num_steps if diffusion is not None else 0
        if (trajectory is not None or steps > 0) and (
            trajectory is None or tuple(trajectory.shape) != (steps, len(points), classes)
        ):
            raise SavedModelError(
                f"{source}: its training rows' steps are not {steps} x {len(points)} x {classes}"
            )
        if (spread is not None or settings.spreading is not None) and (
            spread is None or tuple(spread.shape) != (len(points), classes)
        ):
            raise SavedModelError(f"{source}: its label distributions are not {len(points)} x {classes}")
        known = ("settings", "feature_names", "class_names", "shapes", "weights", "format", "pdenets", "task")
        about = {name: value for name, value in manifest.items() if name not in known + ("model",)}
        return cls(
            settings,
            points,
            mean.numpy(),
            scale.numpy(),
            trained.numpy(),
            tuple(class_names),
            tuple(feature_names),
            network,
            trajectory=None if trajectory is None else trajectory.to(COMPUTE_DTYPE),
            spread=None if spread is None else spread.to(COMPUTE_DTYPE),
            about=about,
        )


def fit_table(
    features: np.ndarray,
    labels: np.ndarray,
    labelled: np.ndarray,
    settings: TabularSettings,
    *,
    class_names: Sequence[str],
    feature_names: Sequence[str],
    seed: int,
    device: torch.device = CPU,
    graph: Optional[torch.Tensor] = None,
    about: Optional[Dict[str, Any]] = None,
) -> TabularModel:
    """Train ``settings``' model on the rows ``labelled`` of ``features`` ``(n, F)`` (as read: they are
    standardized here; every row takes part through the sample graph) with the class ids ``labels``
    ``(n,)`` (``-1``: unknown); ``seed`` seeds the network's initialization.

    Args:
        features: the table's feature columns.
        labels: every row's class id, ``-1`` where unknown (only the rows ``labelled`` are trained on).
        labelled: the rows trained on.
        settings: the model and its settings.
        class_names: the ``C`` classes (a model of one class answers it for every row).
        feature_names: the ``F`` feature columns.
        seed: the seed of the network's initialization.
        device: where the network trains.
        graph: the rows' sample graph where it is built already (:func:`sample_graph` of the standardized
            rows; default: built here).
        about: what the saved model's manifest adds.

    Returns:
        The fitted model, with the probabilities of every row and the run's outcome.
    """
    features = np.asarray(features, dtype=np.float64)
    mean, scale = standardization(features)
    points = torch.from_numpy((features - mean) / scale)
    trained = np.full(len(labels), -1, dtype=np.int64)
    trained[labelled] = np.asarray(labels)[labelled]
    model = TabularModel(
        settings, points, mean, scale, trained, tuple(map(str, class_names)), tuple(map(str, feature_names))
    )
    model.about = dict(about or {})
    classes = len(class_names)
    if classes == 1:
        model.probabilities = np.ones((len(points), 1))
        return model
    if settings.spreading is not None:
        model.probabilities = _spread(settings, points.numpy(), trained)
        model.spread = torch.from_numpy(model.probabilities).to(COMPUTE_DTYPE)
        model.outcome = {"mean_confidence": float(model.probabilities.max(1).mean())}
        return model
    diffusion = settings.diffusion
    if graph is None and diffusion is not None:
        # a large table's graph comes from the approximate index its new rows will search: built once
        index = model.neighbour_index()
        large = index.approximate(len(points))
        graph = sample_graph(points, diffusion.n_top, diffusion.sigma_neighbor, index if large else None)
    mlp = settings.mlp
    assert mlp is not None
    torch.manual_seed(seed)
    network = _network(settings, points.shape[1], classes, _in(graph) if diffusion else None)
    network = network.to(device=device, dtype=COMPUTE_DTYPE)
    inputs = points.to(device=device, dtype=COMPUTE_DTYPE)
    targets = torch.from_numpy(trained).to(device)
    train = torch.from_numpy(np.asarray(labelled, dtype=np.int64)).to(device)
    optimizer = Adam(network.parameters(), lr=mlp.lr, weight_decay=mlp.weight_decay)
    step = CoinMLPStep.of(network) if inputs.device.type == "cpu" else None
    if step is not None:  # the step's gradients in closed form: what the arithmetic costs, no autograd graph
        losses = _closed_form_fit(network, step, optimizer, inputs, train, targets, mlp.epochs)
    else:
        losses = fit(
            network,
            optimizer,
            lambda: F.cross_entropy(network(inputs)[train], targets[train]),
            max_epochs=mlp.epochs,
        ).losses
    network.eval()
    model.network = _network(settings, points.shape[1], classes, None).to(COMPUTE_DTYPE)
    model.network.load_state_dict({name: value.cpu() for name, value in network.state_dict().items()})
    with torch.no_grad():
        if diffusion is not None and diffusion.num_steps > 0:
            # the head's outputs before each step: what a new row's steps pull it towards (predict_proba)
            plain = _network(settings, points.shape[1], classes, None, steps=0).to(COMPUTE_DTYPE)
            plain.load_state_dict(model.network.state_dict())
            assert isinstance(network, COIN)  # a network with diffusion steps (the coin model)
            operator = network.diffusion.operator_for(inputs, network._fixed)
            steps = [plain.eval()(inputs.cpu())]
            for _ in range(diffusion.num_steps - 1):
                steps.append(operator.product(steps[-1]))
            model.trajectory = torch.stack(steps)
            logits = operator.product(steps[-1])
        else:
            logits = network(inputs).cpu()
    model.probabilities = torch.softmax(logits, dim=1).double().numpy()
    model.outcome = {"final_loss": losses[-1] if losses else float("nan")}
    return model


def _closed_form_fit(
    network: torch.nn.Module,
    step: CoinMLPStep,
    optimizer: Adam,
    inputs: torch.Tensor,
    rows: torch.Tensor,
    targets: torch.Tensor,
    epochs: int,
) -> List[float]:
    """``epochs`` full-batch steps with :class:`~pdenets.models.coin_step.CoinMLPStep`'s gradients, as
    :func:`~pdenets.models.training.fit` runs them (training mode; a loss or parameter that is not finite
    ends training: every parameter enters the loss, so a step that makes one infinite ends the next epoch,
    and the last step's parameters are checked once); returns the losses."""
    losses: List[float] = []
    network.train()
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = step.loss_and_gradients(inputs, rows, targets)
        if not math.isfinite(loss):
            break
        optimizer.step()
        losses.append(loss)
    if losses and not parameters_finite(network):
        losses.pop()
    return losses
