"""One run of node classification: the job that identifies it (:class:`NodeJob`, what its store key
hashes) and the model it trains, built on its graph (:func:`build_model`, :func:`diffusion_steps`,
:func:`model_inputs`). The task plans and runs jobs (:mod:`.task`); a saved model is rebuilt from its job's
settings (:mod:`.saved`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Optional, Tuple, Union

import torch

from ...data.transforms import PreparedGraph
from ...experiments.context import CPU
from ...models.node_training import DiffusionSettings, MessagePassingSettings
from ...models.registry import create_model, model_entry
from ...operators.partitioned import PartitionedDiffusion

__all__ = ["NodeJob", "build_model", "diffusion_steps", "model_inputs"]


@dataclass(frozen=True, kw_only=True)
class NodeJob:
    """One (graph, model, depth, split, initialization) of the protocol or the depth study.

    Split ``split`` and its ``init``-th initialization come from prefixes of seeded streams, the same for any
    number of splits and initializations: a protocol grown from 10 × 2 to 100 × 20 keeps the runs already
    stored.
    """

    experiment: str
    graph: str
    dataset: str
    model: str
    depth: Optional[int]
    split: int
    init: int
    seed: int
    train_per_class: int
    val_per_class: int
    max_epochs: int
    patience: int
    hyperparameters: Union[DiffusionSettings, MessagePassingSettings]
    missing_features: str = "identity"
    #: under torchrun: how the graph is split over the processes. ``contiguous`` keeps the node numbering, so
    #: the dropout masks and the numbers are the single process's; another partition renumbers the nodes,
    #: which hands each node other mask entries (same distribution, other draws): it then enters the store key
    partition: str = field(default="contiguous", metadata={"key": "unless-default"})
    #: how the features entered the models (``feature_transform`` resolved on the graph): the citation
    #: graphs' bag-of-words keeps the store keys of the runs made before the setting existed
    feature_transform: str = field(default="bag-of-words", metadata={"key": "unless-default"})
    #: the user's split file (read where the job runs) and the digest of the split it holds (its key)
    split_file: Optional[str] = field(default=None, metadata={"key": False})
    split_digest: str = field(default="", metadata={"key": "unless-default"})
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}


def _diffusion_settings(spec: NodeJob) -> DiffusionSettings:
    """The settings of a job whose model is built on its graph (``graph_input == "constructor"``: the
    diffusion family), :class:`DiffusionSettings` as :meth:`NodeClassificationTask.hyperparameters` makes
    them."""
    hp = spec.hyperparameters
    assert isinstance(hp, DiffusionSettings), f"{spec.model} diffuses but has {type(hp).__name__}"
    return hp


def diffusion_steps(spec: NodeJob) -> int:
    """The diffusion steps ``r`` a job's model takes: the depth study's depth, else its graph's ``num_steps``,
    a variant's fixed value over both (``no-diff-resnet``: 0); 0 for a model not built on its graph.

    The one place the number is decided: the model is built with it, and a job with ``r > 0`` splits its graph
    over the processes under torchrun.
    """
    entry = model_entry(spec.model)
    if entry.graph_input != "constructor":
        return 0
    default = spec.depth if spec.depth is not None else _diffusion_settings(spec).num_steps
    return int(entry.fixed.get("num_steps", default))


def build_model(
    spec: NodeJob, graph: PreparedGraph, operator: Optional[PartitionedDiffusion] = None
) -> torch.nn.Module:
    hp, entry = spec.hyperparameters, model_entry(spec.model)
    sizes = {"in_features": graph.num_features, "num_classes": graph.num_classes}
    if entry.graph_input == "constructor":  # diffuses on the graph it is built with; a variant may fix r
        hp = _diffusion_settings(spec)
        steps = diffusion_steps(spec)
        return create_model(
            spec.model,
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
        spec.model, **sizes, num_layers=int(spec.depth) if spec.depth is not None else 2, **architecture
    )


def model_inputs(spec: NodeJob, graph: PreparedGraph, device: torch.device = CPU) -> Tuple[torch.Tensor, ...]:
    """What ``spec``'s model takes, on ``device``: the features (a sparse matrix where they are sparse), and
    the edges for a model that reads them at each call."""
    inputs = (
        (graph.x, graph.edge_index) if model_entry(spec.model).graph_input == "forward" else (graph.x_input,)
    )
    return tuple(tensor.to(device) for tensor in inputs)
