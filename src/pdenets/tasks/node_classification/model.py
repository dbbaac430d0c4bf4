"""node-classification's model, in one place: its settings, the network built on a graph, the fit, the answer
for a graph's nodes, and the saved model.

:func:`fit_nodes` trains one model of the task (Diff-ResNet, a variant, or a PyG baseline) on a split of a
prepared graph (:func:`~pdenets.data.transforms.prepare_graph`) and returns a :class:`NodeModel`; a run's jobs
(:mod:`.task`), its predictions file, ``pdenets predict RUN_DIR`` and
:class:`~pdenets.estimators.DiffusionNodeClassifier` all go through it. :class:`NodeSettings` is what a model
is: a job of the task (:class:`~.job.NodeJob`, the store key) names one, and the estimator makes one from the
task's defaults (:func:`default_hyperparameters`).

The graph given at predict time is read as the run read its graph (the same feature transform and
missing-features rule, :meth:`NodeModel.read_graph`) and must give the model's feature width; a model's
diffusion (Diff-ResNet) or message passing (the baselines) runs on the new graph. Per-feature transforms
(``standardize``, ``scale``) are computed on the graph given, as the run computed them on its own.
:meth:`NodeModel.load` reads the settings typed and validated, the class names distinct, and compares the
network they build with the weights before building it.
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ...analysis.calibration import (
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    class_shift_weights,
    held_out_calibration,
)
from ...data.errors import DatasetError
from ...data.splits import Split
from ...data.transforms import FEATURE_TRANSFORMS, PreparedGraph, graph_label, prepared_graph
from ...experiments.context import CPU
from ...models.node_training import STOP_RULES, DiffusionSettings, MessagePassingSettings, fit_node_classifier
from ...models.registry import create_model, model_entry
from ...models.training import FitResult, evaluation_mode
from ...operators.partitioned import PartitionedDiffusion
from ...saved_model import (
    SavedModelError,
    check_fits,
    distinct_names,
    load_model,
    load_weights,
    save_model,
    typed_settings,
)
from .config import MODEL_NAMES, TABLE6, NodeClassificationConfig

if TYPE_CHECKING:  # pragma: no cover
    from .decisions import NodeExplanation, Suggestion

__all__ = [
    "NodeSettings",
    "NodeModel",
    "fit_nodes",
    "build_network",
    "network_inputs",
    "diffusion_steps",
    "default_hyperparameters",
    "MAX_NUM_STEPS",
    "calibration_of_sets",
]

#: the most diffusion steps (or layers) a model takes (a bound on what a model file may ask for)
MAX_NUM_STEPS = 100_000
_KINDS = {"DiffusionSettings": DiffusionSettings, "MessagePassingSettings": MessagePassingSettings}
#: how the protocol trains a message-passing baseline: Adam as PyTorch Geometric's examples run it (lr 0.01,
#: weight decay 5e-4), GAT at lr 0.005 as its example does; ``baselines`` in the config overrides either
BASELINE_OPTIMIZER: Dict[str, float] = {"lr": 0.01, "weight_decay": 5e-4}
BASELINE_OPTIMIZER_BY_MODEL: Dict[str, Dict[str, float]] = {"gat": {"lr": 0.005}}


def _whole(value: Any, name: str, minimum: int, maximum: Optional[int] = None) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise ValueError(f"{name} must be a whole number ≥ {minimum}, got {value!r}")
    if maximum is not None and int(value) > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {value:,}")


@dataclass(frozen=True)
class NodeSettings:
    """What a node model is: its name in the model registry, its settings and optimizer
    (:class:`~pdenets.models.node_training.DiffusionSettings` for the diffusion family,
    :class:`~pdenets.models.node_training.MessagePassingSettings` for the baselines), the depth of the depth
    study (``None``: the protocol's), the training's bounds, and how a graph's features are read.

    Examples:
        >>> settings = NodeSettings("gcn", default_hyperparameters("gcn", "my_graph.npz"))
        >>> settings.hyperparameters.lr, diffusion_steps(settings)
        (0.01, 0)
    """

    model: str
    hyperparameters: Union[DiffusionSettings, MessagePassingSettings]
    depth: Optional[int] = None
    max_epochs: int = 1000
    patience: int = 50
    missing_features: str = "identity"
    feature_transform: str = "bag-of-words"
    #: what early stopping watches (:data:`~pdenets.models.node_training.STOP_RULES`): a training setting,
    #: not kept by a saved model
    stop_on: str = "loss-or-accuracy"

    def __post_init__(self) -> None:
        if self.stop_on not in STOP_RULES:
            raise ValueError(f"stop_on must be one of {', '.join(STOP_RULES)}, got {self.stop_on!r}")
        if self.model not in MODEL_NAMES:
            raise ValueError(f"model must be one of {', '.join(MODEL_NAMES)}, got {self.model!r}")
        kind = (
            DiffusionSettings
            if model_entry(self.model).graph_input == "constructor"
            else MessagePassingSettings
        )
        if not isinstance(self.hyperparameters, kind):
            raise ValueError(f"{self.model} takes {kind.__name__}, got {type(self.hyperparameters).__name__}")
        hp = self.hyperparameters
        if isinstance(hp, DiffusionSettings):
            _whole(hp.num_steps, "num_steps", 0, MAX_NUM_STEPS)
            if hp.hidden_features is not None:
                _whole(hp.hidden_features, "hidden_features", 1)
        elif hp.hidden_features is not None:
            _whole(hp.hidden_features, "hidden_features", 1)
        if self.depth is not None:
            _whole(self.depth, "depth", 1, MAX_NUM_STEPS)
        _whole(self.max_epochs, "max_epochs", 1)
        _whole(self.patience, "patience", 1)
        if self.feature_transform not in FEATURE_TRANSFORMS or self.feature_transform == "auto":
            raise ValueError(
                f"feature_transform must be a resolved transform, got {self.feature_transform!r}"
            )

    def as_json(self) -> Dict[str, Any]:
        """The settings as a saved model's manifest keeps them."""
        hp = self.hyperparameters
        return {
            "depth": self.depth,
            "max_epochs": self.max_epochs,
            "patience": self.patience,
            "hyperparameters": {"kind": type(hp).__name__, **asdict(hp)},
            "missing_features": self.missing_features,
            "feature_transform": self.feature_transform,
        }

    @classmethod
    def from_json(cls, model: Any, manifest: Dict[str, Any], source: Any) -> "NodeSettings":
        """The settings a manifest keeps, typed and checked (:class:`~pdenets.saved_model.SavedModelError`
        naming ``source`` otherwise)."""
        if model not in MODEL_NAMES:
            raise SavedModelError(f"{source}: unknown model {model!r}; models: {', '.join(MODEL_NAMES)}")
        document = manifest.get("hyperparameters")
        kind = document.get("kind") if isinstance(document, dict) else None
        if not isinstance(document, dict) or kind not in _KINDS:
            raise SavedModelError(f"{source}: no hyperparameters of a known kind")
        values = {name: value for name, value in document.items() if name != "kind"}
        hp: Union[DiffusionSettings, MessagePassingSettings] = typed_settings(
            _KINDS[kind], values, source, "hyperparameters"
        )
        depth = manifest.get("depth")
        for name, value in (
            ("max_epochs", manifest.get("max_epochs")),
            ("patience", manifest.get("patience")),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise SavedModelError(f"{source}: {name} holds {value!r:.40}, not a whole number")
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)):
            raise SavedModelError(f"{source}: depth holds {depth!r:.40}, not a whole number")
        for name in ("missing_features", "feature_transform"):
            if not isinstance(manifest.get(name), str):
                raise SavedModelError(f"{source}: {name} is not a name")
        try:
            return cls(
                model,
                hp,
                depth,
                manifest["max_epochs"],
                manifest["patience"],
                manifest["missing_features"],
                manifest["feature_transform"],
            )
        except ValueError as error:
            raise SavedModelError(f"{source}: {error}") from None


def default_hyperparameters(
    model: str, graph_spec: str, config: Optional[NodeClassificationConfig] = None
) -> Union[DiffusionSettings, MessagePassingSettings]:
    """The settings the task gives ``model`` on ``graph_spec`` under ``config`` (default: the task's
    defaults): Table 6 for the diffusion family (the graph's entry, else ``default``), the registry's
    defaults and the optimizer of PyG's examples for a baseline, ``baselines`` over both."""
    if model not in MODEL_NAMES:
        raise ValueError(f"model must be one of {', '.join(MODEL_NAMES)}, got {model!r}")
    config = config if config is not None else NodeClassificationConfig()
    entry = model_entry(model)
    if entry.graph_input == "constructor":
        default = config.diffusion.get("default", TABLE6["default"])
        diffusion = config.diffusion.get(graph_label(graph_spec), default)
        return DiffusionSettings(
            config.lr,
            config.weight_decay,
            diffusion.step_size,
            diffusion.num_steps,
            diffusion.dropout,
            config.dropout_position,
            config.check_stability,
            config.diffusion_width if config.diffuse_in == "hidden" else None,
        )
    overrides = config.baselines.get(model)
    given = {k: v for k, v in vars(overrides).items() if v is not None} if overrides is not None else {}
    optimizer = {**BASELINE_OPTIMIZER, **BASELINE_OPTIMIZER_BY_MODEL.get(model, {})}
    return MessagePassingSettings(**{**entry.defaults, **optimizer, **given})


def _diffusion_settings(settings: Any) -> DiffusionSettings:
    """The settings of a model built on its graph (``graph_input == "constructor"``: the diffusion family)."""
    hp = settings.hyperparameters
    assert isinstance(hp, DiffusionSettings), f"{settings.model} diffuses but has {type(hp).__name__}"
    return hp


def diffusion_steps(settings: Any) -> int:
    """The diffusion steps ``r`` a model takes (``settings``: :class:`NodeSettings`, or a job naming one): the
    depth study's depth, else its graph's ``num_steps``, a variant's fixed value over both
    (``no-diff-resnet``: 0); 0 for a model not built on its graph.

    The one place the number is decided: the model is built with it, and a job with ``r > 0`` splits its graph
    over the processes under torchrun.
    """
    entry = model_entry(settings.model)
    if entry.graph_input != "constructor":
        return 0
    default = settings.depth if settings.depth is not None else _diffusion_settings(settings).num_steps
    return int(entry.fixed.get("num_steps", default))


def build_network(
    settings: Any, graph: Any, operator: Optional[PartitionedDiffusion] = None
) -> torch.nn.Module:
    """The network of ``settings`` (:class:`NodeSettings`, or a job naming one) on ``graph`` (a
    :class:`~pdenets.data.transforms.PreparedGraph`, or anything with its ``num_features``, ``num_classes``
    and ``weights``); ``operator``: the diffusion of this process's part of the graph under torchrun."""
    hp, entry = settings.hyperparameters, model_entry(settings.model)
    sizes = {"in_features": graph.num_features, "num_classes": graph.num_classes}
    if entry.graph_input == "constructor":  # diffuses on the graph it is built with; a variant may fix r
        hp = _diffusion_settings(settings)
        steps = diffusion_steps(settings)
        return create_model(
            settings.model,
            **sizes,
            block="graph",
            num_steps=steps,
            step_size=float(hp.step_size),
            dropout=float(hp.dropout) if steps else 0.0,
            dropout_position=hp.dropout_position,
            weights=(operator or graph.weights) if steps else None,
            check_stability=hp.check_stability,
            hidden_features=hp.hidden_features,
        )
    architecture = {
        name: getattr(hp, name)
        for name in ("hidden_features", "heads", "dropout")
        if getattr(hp, name) is not None
    }
    return create_model(
        settings.model,
        **sizes,
        num_layers=int(settings.depth) if settings.depth is not None else 2,
        **architecture,
    )


def network_inputs(
    settings: Any, graph: PreparedGraph, device: torch.device = CPU
) -> Tuple[torch.Tensor, ...]:
    """What the network of ``settings`` takes, on ``device``: the features (a sparse matrix where they are
    sparse: bag-of-words, TF-IDF; every model reads them so), and the edges for a model that reads them at
    each call."""
    inputs = (
        (graph.x_input, graph.edge_index)
        if model_entry(settings.model).graph_input == "forward"
        else (graph.x_input,)
    )
    return tuple(tensor.to(device) for tensor in inputs)


@dataclass
class _Sizes:
    """The sizes a network is built with, where no graph is at hand (a saved model's check)."""

    num_features: int
    num_classes: int
    weights: Any = None


@dataclass
class NodeModel:
    """A fitted node model (module docstring).

    Args:
        settings: the model and its settings.
        network: the trained network.
        class_names: the ``C`` classes, in the order of the probabilities' columns.
        num_features: the feature width it reads.
        graph: the graph it was fitted on (where it was fitted here).
        result: the fit's history; record: the run's record (test accuracy, …) where it was fitted here.
        about: what the saved model's manifest adds.
        temperature: what the logits are divided by before the softmax (temperature scaling fitted on the
            validation nodes, :mod:`pdenets.analysis.calibration`; 1: as trained).
    """

    settings: NodeSettings
    network: torch.nn.Module
    class_names: Tuple[str, ...]
    num_features: int
    graph: Optional[PreparedGraph] = None
    result: Optional[FitResult] = None
    record: Dict[str, Any] = field(default_factory=dict)
    about: Dict[str, Any] = field(default_factory=dict)
    temperature: float = 1.0

    def read_graph(self, graph_spec: str, data_dir: Optional[str] = None) -> PreparedGraph:
        """The graph ``graph_spec`` read as the run read its graph (module docstring)."""
        settings = self.settings
        return prepared_graph(graph_spec, data_dir, settings.missing_features, settings.feature_transform)

    def _graph(self, graph: Optional[PreparedGraph]) -> PreparedGraph:
        """``graph``, else the graph it was fitted on."""
        if graph is not None:
            return graph
        if self.graph is None:
            raise ValueError("a loaded model has no graph of its own: give the graph to predict")
        return self.graph

    def network_on(
        self, graph: Optional[PreparedGraph] = None, source: str = "the graph"
    ) -> Tuple[torch.nn.Module, PreparedGraph, Tuple[torch.Tensor, ...]]:
        """The trained network on ``graph`` (default: the graph it was fitted on; another graph's nodes are
        given the model's classes), the graph, and the network's inputs there.

        Raises:
            DatasetError: the graph's nodes have another feature width than the model's, naming ``source``.
        """
        graph = self._graph(graph)
        if graph.num_features != self.num_features:
            identity = (
                "; without a features file the features are the node ids"
                if self.settings.missing_features == "identity"
                else ""
            )
            raise DatasetError(
                f"{source}: its nodes have {graph.num_features} features as the run read them, the model "
                f"{self.num_features} (another feature width{identity})"
            )
        network = self.network
        if graph is not self.graph:  # the network on the graph given
            graph = replace(
                graph, num_classes=len(self.class_names)
            )  # the model's classes, whatever the graph's
            network = build_network(self.settings, graph)
            network.load_state_dict(self.network.state_dict())
        device = next(network.parameters()).device
        return network, graph, network_inputs(self.settings, graph, device)

    def predict_proba(self, graph: Optional[PreparedGraph] = None, source: str = "the graph") -> torch.Tensor:
        """``(N, C)`` class probabilities of ``graph``'s nodes (default: the graph it was fitted on), in the
        order of its nodes and of ``class_names``."""
        network, graph, inputs = self.network_on(graph, source)
        with evaluation_mode(network), torch.no_grad():
            logits = network(*inputs)
        return torch.softmax(logits.float() / self.temperature, dim=1).cpu()

    def explain(
        self, ids: Sequence[object], graph: Optional[PreparedGraph] = None, top: int = 10
    ) -> List["NodeExplanation"]:
        """Why each node of ``ids`` (the user's ids) gets its class: the nodes that carried its prediction,
        with their exact shares (:func:`~.decisions.explain_nodes`); ``graph``: default the fitted one."""
        from .decisions import explain_nodes

        return explain_nodes(self, self._graph(graph), ids, top)

    def suggest_labels(
        self,
        budget: int,
        graph: Optional[PreparedGraph] = None,
        criterion: str = "typical",
        seed: int = 0,
        among: Optional[Sequence[object]] = None,
    ) -> List["Suggestion"]:
        """The ``budget`` nodes without a label to label next, by ``criterion``
        (:func:`~.decisions.suggest_nodes`); ``graph``: default the fitted one; ``among``: the ids that may
        be chosen (default: every node without a label)."""
        from .decisions import suggest_nodes

        return suggest_nodes(self, self._graph(graph), budget, criterion, seed, among)

    def save(self, folder: Union[str, Path]) -> Path:
        """Keep the model in ``folder`` (another model's folder is never replaced); returns the folder
        written."""
        manifest = {
            **self.about,
            **self.settings.as_json(),
            "num_features": self.num_features,
            "class_names": list(self.class_names),
            "temperature": self.temperature,
        }
        return save_model(
            folder,
            {name: value.detach().cpu() for name, value in self.network.state_dict().items()},
            task="node-classification",
            model=self.settings.model,
            manifest=manifest,
        )

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "NodeModel":
        """A saved model (by :meth:`save`, a run or the estimator), checked before anything is built (module
        docstring).

        Raises:
            SavedModelError: an altered, truncated or foreign model, settings of the wrong kind or out of
                range, class names repeated, weights that are not the settings' network, naming the file.
        """
        state, manifest = load_model(folder, task="node-classification")
        source = Path(folder) / "model.json"
        settings = NodeSettings.from_json(manifest.get("model"), manifest, source)
        class_names = distinct_names(manifest.get("class_names"), "class_names", source)
        width = manifest.get("num_features")
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise SavedModelError(f"{source}: num_features holds {width!r:.40}, not a whole number ≥ 1")
        if len(class_names) < 2:
            raise SavedModelError(f"{source}: {len(class_names)} class names; a classifier has 2 or more")
        temperature = manifest.get("temperature", 1.0)  # a model saved before calibration: as trained
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or not MIN_TEMPERATURE <= temperature <= MAX_TEMPERATURE
        ):
            raise SavedModelError(
                f"{source}: temperature holds {temperature!r:.40}, not a number in "
                f"[{MIN_TEMPERATURE}, {MAX_TEMPERATURE}]"
            )
        sizes = _Sizes(width, len(class_names))  # no graph: a diffusion runs on the graph predicted
        check_fits(lambda: build_network(settings, sizes), state, source)
        network = load_weights(build_network(settings, sizes), state, source)
        known = set(settings.as_json()) | {"num_features", "class_names", "model", "shapes", "weights"}
        known.add("temperature")
        known |= {"format", "pdenets", "task"}
        about = {name: value for name, value in manifest.items() if name not in known}
        return cls(settings, network, tuple(class_names), width, about=about, temperature=float(temperature))


def _calibration(logits: torch.Tensor, labels: torch.Tensor, split: Split) -> Dict[str, Any]:
    """The run's calibration (:func:`calibration_of_sets`) from the logits of every node."""
    outside = torch.ones(len(labels), dtype=torch.bool, device=labels.device)
    outside[split.train] = False
    answers = torch.bincount(logits[outside].argmax(1), minlength=logits.shape[1])
    return calibration_of_sets(
        logits[split.val], labels[split.val], logits[split.test], labels[split.test], answers
    )


def calibration_of_sets(
    val_logits: torch.Tensor,
    val_labels: torch.Tensor,
    test_logits: torch.Tensor,
    test_labels: torch.Tensor,
    answers: torch.Tensor,
) -> Dict[str, Any]:
    """A run's calibration: a temperature fitted on the validation nodes, each weighed by how common its class
    is among the model's answers for the nodes outside the training set (``answers``: their count per class;
    the validation nodes are drawn class by class, the nodes predicted are not:
    :func:`~pdenets.analysis.calibration.class_shift_weights`), measured on the test nodes. One process's
    nodes or all processes' gathered give the same."""
    classes = torch.arange(len(answers), device=answers.device)
    weights = class_shift_weights(val_labels, torch.repeat_interleave(classes, answers), len(answers))
    count = len(val_labels)
    return held_out_calibration(
        torch.cat([val_logits, test_logits]),
        torch.cat([val_labels, test_labels]),
        fit_on=torch.arange(count, device=val_labels.device),
        measure_on=torch.arange(count, count + len(test_labels), device=val_labels.device),
        fit_weights=weights,
    )


def fit_nodes(
    graph: PreparedGraph,
    split: Split,
    settings: NodeSettings,
    *,
    init_seed: int,
    device: torch.device = CPU,
    about: Optional[Dict[str, Any]] = None,
    progress: bool = False,
    calibrate: bool = False,
) -> NodeModel:
    """Train ``settings``' model on ``split`` of ``graph`` (Adam on the training nodes, early stopping on the
    validation nodes, the best state restored: :func:`~pdenets.models.node_training.fit_node_classifier`);
    ``init_seed`` seeds the initialization; ``progress``: a bar of the epochs on stderr once the fit has taken
    two seconds.

    The record holds the model's calibration on the test nodes, as trained and with a temperature fitted on
    the validation nodes (:func:`_calibration`); ``calibrate``: the model keeps that temperature, and its
    probabilities are the calibrated ones.

    Returns:
        The fitted model, with the fit's history (``result``) and record (test ``accuracy``, ``ece``, …).
    """
    torch.manual_seed(init_seed)
    network = build_network(settings, graph).to(device)
    hp = settings.hyperparameters
    result, record = fit_node_classifier(
        network,
        network_inputs(settings, graph, device),
        graph.y.to(device),
        split,
        lr=float(hp.lr),
        weight_decay=float(hp.weight_decay),
        max_epochs=settings.max_epochs,
        patience=settings.patience,
        stop_on=settings.stop_on,
        progress=progress,
    )
    with evaluation_mode(network), torch.no_grad():
        logits = network(*network_inputs(settings, graph, device))
    record.update(_calibration(logits.cpu(), graph.y.cpu(), split))
    names = graph.class_names or tuple(str(c) for c in range(graph.num_classes))
    return NodeModel(
        settings,
        network,
        tuple(names),
        graph.num_features,
        graph=graph,
        result=result,
        record=record,
        about=dict(about or {}),
        temperature=float(record.get("temperature", 1.0)) if calibrate else 1.0,
    )
