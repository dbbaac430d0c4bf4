"""The settings of ``pdenets run node-classification``: the configuration dataclass and what it names (the
task, its report and its checks read them)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from ...data.graphs import MISSING_FEATURES, accepted_forms
from ...data.split_file import split_file_beside
from ...data.transforms import FEATURE_TRANSFORMS, is_user_graph
from ...experiments.config import ConfigError, TaskConfig, check_fields, setting
from ...models.registry import list_models
from ...operators.partition import METIS_EXTRA, PARTITIONERS

__all__ = [
    "BaselineSettings",
    "DiffusionHyperparameters",
    "MODEL_NAMES",
    "NodeClassificationConfig",
    "TABLE6",
]


@dataclass
class DiffusionHyperparameters:
    """Diff-ResNet's diffusion on one graph (Table 6: its column labels are swapped; read as γ, r,
    dropout)."""

    step_size: float = setting(0.25, "diffusion step size gamma")
    num_steps: int = setting(20, "diffusion layers r")
    dropout: float = setting(0.25, "dropout at each diffusion step")


@dataclass
class BaselineSettings:
    """Overrides of a registered baseline's defaults (unset: the model's own)."""

    hidden_features: Optional[int] = setting(None, "hidden width", renamed_from=("hidden",))
    heads: Optional[int] = None
    dropout: Optional[float] = None
    lr: Optional[float] = None
    weight_decay: Optional[float] = None


TABLE6: Dict[str, DiffusionHyperparameters] = {
    "cora": DiffusionHyperparameters(0.25, 20, 0.25),
    "citeseer": DiffusionHyperparameters(0.2, 20, 0.35),
    "pubmed": DiffusionHyperparameters(0.4, 10, 0.3),
    "default": DiffusionHyperparameters(0.25, 20, 0.25),
}


#: the models the protocol compares: the diffusion family (Diff-ResNet and its variants) and the PyG
#: message-passing baselines, as the registry lists them
MODEL_NAMES = tuple(
    list_models("diffusion", order="registration") + list_models("message-passing", order="registration")
)


@dataclass
class NodeClassificationConfig(TaskConfig):
    """Configuration of ``pdenets run node-classification``.

    ``datasets`` holds names (``cora``, ``citeseer``, ``pubmed``, ``planetoid/<name>``) or paths of ``.npz``
    graph files; ``diffusion`` maps a dataset to ``step_size``, ``num_steps`` and ``dropout`` (``default`` for
    other graphs); ``baselines`` overrides the registered baselines' settings (``{"gat": {"lr": 0.005}}``).
    ``depths`` (empty: off) runs the depth study; for GCN the depth is the number of layers, for Diff-ResNet
    the number ``r`` of diffusion layers (Algorithm 1 calls each step a layer).
    """

    seed: int = setting(42, "master seed of the splits (the paper code's 42)")
    datasets: List[str] = setting(["cora"], "graphs: " + accepted_forms())
    models: List[str] = setting(["diff-resnet"], "models: " + ", ".join(MODEL_NAMES))
    num_splits: int = setting(100, "random splits")
    num_inits: int = setting(20, "initializations per split")
    train_per_class: int = setting(20, "labelled training nodes per class")
    val_per_class: int = setting(30, "validation nodes per class")
    max_epochs: int = setting(1000, "epochs at most")
    patience: int = setting(50, "early stopping patience (epochs)")
    lr: float = setting(0.01, "Adam learning rate of Diff-ResNet")
    weight_decay: float = setting(5e-4, "Adam weight decay of Diff-ResNet")
    diffusion: Dict[str, DiffusionHyperparameters] = setting(
        TABLE6, "per graph: step_size, num_steps, dropout (Table 6; 'default' for other graphs)"
    )
    dropout_position: str = setting(
        "before", "dropout 'before' each diffusion step (paper code) or 'after' (text)"
    )
    diffuse_in: str = setting(
        "input",
        "Diff-ResNet's width: 'input' (the paper: block and diffusion in the feature "
        "width) or 'hidden' (a linear map to diffusion_width first: O(r nnz width) "
        "becomes O(r nnz diffusion_width))",
    )
    diffusion_width: int = setting(64, "width of the block and the diffusion when diffuse_in is 'hidden'")
    baselines: Dict[str, BaselineSettings] = setting(
        {}, "per baseline: hidden_features, heads, dropout, lr, weight_decay"
    )
    depths: List[int] = setting([], "depth study depths (empty: no depth study)")
    depth_models: List[str] = setting(["gcn", "diff-resnet"], "models of the depth study")
    depth_datasets: List[str] = setting(["cora"], "graphs of the depth study")
    depth_splits: int = setting(5, "splits per depth")
    depth_inits: int = setting(1, "initializations per split and depth")
    check_stability: bool = setting(True, "refuse a diffusion step size beyond the bound")
    missing_features: str = setting(
        "identity", "features of a graph file without any: identity (one-hot node id) or degree"
    )
    feature_transform: str = setting(
        "auto",
        "how node features enter the models: auto (bag-of-words for counts or 0/1 features, "
        "row-normalize for sparse non-negative weights such as TF-IDF, scale for other sparse features, "
        "else standardize), bag-of-words (binary, rows normalized), row-normalize, scale (per feature, "
        "not centred), standardize (per feature), none",
    )
    split_file: Optional[str] = setting(
        None,
        "your split: a file of node,split lines (train, val, test) used exactly, in place of the random "
        "splits (one split; nodes it leaves out are in no set); default: split.csv in a graph folder or "
        "<graph>-split.csv beside a graph file, where there is one",
    )
    predictions: str = setting(
        "auto",
        "predictions-<model>.csv, every node by its id in your file, from each model's first run: auto (for "
        "graphs read from your files), always, or never",
    )
    calibrate: bool = setting(
        False,
        "the predictions files and saved models give calibrated probabilities: the logits divided by a "
        "temperature fitted on the validation nodes (the report measures the calibration either way)",
    )
    partition: str = setting(
        "contiguous",
        "launched by torchrun: how Diff-ResNet's graph is split over the "
        "processes: contiguous (the single process's numbers), metis (less "
        "exchanged, other dropout draws), or a folder from pdenets partition",
    )

    def validate(self) -> None:
        super().validate()
        unknown = [m for m in list(self.models) + list(self.depth_models) if m not in MODEL_NAMES]
        if unknown:
            raise ConfigError(f"unknown model(s) {unknown}; choose from {list(MODEL_NAMES)}")
        check_fields(
            self,
            non_empty=("datasets", "models"),
            positive=("lr",),
            non_negative=("weight_decay",),
            counts=(
                "num_splits",
                "num_inits",
                "max_epochs",
                "patience",
                "depth_splits",
                "depth_inits",
                "depths",
                "train_per_class",
                "val_per_class",
            ),
            choices={
                "dropout_position": ("before", "after"),
                "missing_features": MISSING_FEATURES,
                "feature_transform": tuple(FEATURE_TRANSFORMS),
                "diffuse_in": ("input", "hidden"),
                "predictions": ("auto", "always", "never"),
            },
        )
        check_fields(self, counts=("diffusion_width",))
        if self.split_file is None and len(set(self.datasets)) == 1 and is_user_graph(self.datasets[0]):
            self.split_file = split_file_beside(self.datasets[0])  # the split that comes with the graph
        if self.split_file is not None and not Path(self.split_file).is_file():
            raise ConfigError(f"split_file {self.split_file!r} is not a file (node,split lines)")
        if self.partition == "metis" and importlib.util.find_spec("pymetis") is None:
            raise ConfigError(f"partition=metis needs METIS: {METIS_EXTRA}; or use partition=contiguous")
        if self.partition not in PARTITIONERS and not (Path(self.partition) / "partition.json").is_file():
            raise ConfigError(
                f"partition={self.partition!r} is neither a partitioner ({', '.join(PARTITIONERS)}) "
                "nor a folder holding a saved partition (partition.json)"
            )
        for graph, hp in self.diffusion.items():
            check_fields(
                hp,
                positive=("step_size",),
                non_negative_counts=("num_steps",),
                probabilities=("dropout",),
                prefix=f"diffusion.{graph}.",
            )
        for model, settings in self.baselines.items():
            given = [name for name in ("hidden_features", "heads") if getattr(settings, name) is not None]
            check_fields(settings, counts=given, prefix=f"baselines.{model}.")
            if settings.dropout is not None:
                check_fields(settings, probabilities=("dropout",), prefix=f"baselines.{model}.")
            if settings.lr is not None:
                check_fields(settings, positive=("lr",), prefix=f"baselines.{model}.")
            if settings.weight_decay is not None:
                check_fields(settings, non_negative=("weight_decay",), prefix=f"baselines.{model}.")
        unknown = sorted(set(self.baselines) - set(list_models("message-passing")))
        if unknown:
            raise ConfigError(
                f"baselines has settings for {unknown}, which are not baselines; choose from "
                f"{list_models('message-passing')}"
            )
