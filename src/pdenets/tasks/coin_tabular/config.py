"""The settings of ``pdenets run coin-tabular``: the configuration dataclass and what it names (the task, its
report and its checks read them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from ...data.tabular import TABULAR_DATASETS
from ...experiments.config import ConfigError, TaskConfig, check_fields, setting
from .model import DEFAULT_EPOCHS, DEFAULT_STEP_SIZE, MAX_NUM_STEPS, MODELS

__all__ = ["CoinTabularConfig", "MODELS"]


@dataclass
class CoinTabularConfig(TaskConfig):
    """Configuration of ``pdenets run coin-tabular``."""

    datasets: List[str] = setting(["breast-cancer"], "breast-cancer or PATH.csv (label = last column)")
    label_column: Optional[str] = setting(
        None, "label column of a CSV file (default: the last; an empty cell: an unlabelled row, predicted)"
    )
    id_column: Optional[str] = setting(
        None, "id column of a CSV file, no feature (default: a column headed id, else rows by line number)"
    )
    predictions: str = setting(
        "auto",
        "predictions-<model>.csv, every row by its id, from each model's first split: auto (for your CSV "
        "files), always, or never",
    )
    split_file: Optional[str] = setting(
        None,
        "your split: a file of id,split lines (train or test) used exactly, one split; a column headed split "
        "in the table does the same",
    )
    labels_per_class: List[int] = setting([5, 10, 20], "labelled samples per class")
    splits: int = setting(50, "random labelled/unlabelled splits per setting")
    models: List[str] = setting(list(MODELS), "coin, mlp, label-spreading")
    hidden_features: int = setting(64, "MLP width", renamed_from=("hidden",))
    layers: int = setting(2, "MLP layers")
    dropout: float = setting(0.2, "MLP dropout")
    n_top: int = setting(10, "neighbours of the sample graph (COIN and label spreading)")
    sigma_neighbor: int = setting(5, "Gaussian bandwidth = distance to this neighbour")
    step_size: float = setting(
        DEFAULT_STEP_SIZE, "gamma of COIN's diffusion (row-normalized graph: stable up to 1)"
    )
    num_steps: int = setting(3, "r, COIN's diffusion steps")
    spreading_alpha: float = setting(0.2, "alpha of LabelSpreading")
    epochs: int = setting(DEFAULT_EPOCHS, "full-batch Adam epochs")
    lr: float = setting(0.01, "Adam learning rate")
    weight_decay: float = setting(5e-4, "Adam weight decay")

    def validate(self) -> None:
        super().validate()
        check_fields(
            self,
            non_empty=("datasets", "labels_per_class", "models"),
            choices={"models": MODELS, "predictions": ("auto", "always", "never")},
            counts=(
                "labels_per_class",
                "splits",
                "hidden_features",
                "layers",
                "n_top",
                "sigma_neighbor",
                "epochs",
            ),
            non_negative_counts=("num_steps",),
            positive=("step_size", "lr", "spreading_alpha"),
            non_negative=("weight_decay",),
            probabilities=("dropout",),
        )
        if self.sigma_neighbor > self.n_top:
            raise ConfigError(f"sigma_neighbor ({self.sigma_neighbor}) must not exceed n_top ({self.n_top})")
        if self.num_steps > MAX_NUM_STEPS:
            raise ConfigError(f"num_steps must be at most {MAX_NUM_STEPS:,}, got {self.num_steps:,}")
        if self.step_size > 1:
            raise ConfigError(f"step_size must be <= 1 on a row-normalized graph, got {self.step_size}")
        if not 0 < self.spreading_alpha < 1:
            raise ConfigError(f"spreading_alpha must lie in (0, 1), got {self.spreading_alpha}")
        if self.split_file is not None:
            if not Path(self.split_file).is_file():
                raise ConfigError(f"split_file {self.split_file!r} is not a file (id,split lines)")
            if len(set(self.datasets)) > 1:
                raise ConfigError("split_file names the rows of one table; give one dataset with it")
        for dataset in self.datasets:
            if dataset not in TABULAR_DATASETS and not dataset.lower().endswith(".csv"):
                raise ConfigError(f"datasets: {dataset!r} is neither breast-cancer nor a .csv path")
