"""The settings of ``pdenets run synthetic``: the configuration dataclass and what it names (the task, its
report and its checks read them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

from ...experiments.config import ConfigError, TaskConfig, check_fields, setting
from ...models.synthetic_diffresnet import (
    TABLE4,
    SyntheticHyperparameters,
)
from ...operators.weights import NORMALIZATIONS

__all__ = ["OptimizerSettings", "SyntheticConfig"]


@dataclass
class OptimizerSettings:
    momentum: float = setting(0.0, "SGD momentum")


@dataclass
class SyntheticConfig(TaskConfig):
    """Configuration of ``pdenets run synthetic``."""

    datasets: List[str] = setting(["moon", "circle", "spiral"], "sets to classify: moon, circle, spiral")
    hyperparameters: Dict[str, SyntheticHyperparameters] = setting(
        TABLE4, "per set: n_top, sigma, step_size, num_steps, lr (Table 4)"
    )
    points_per_class: int = setting(500, "training points per class")
    test_points_per_class: int = setting(500, "held-out test points per class")
    seeds: List[int] = setting(list(range(10)), "data and initialization seeds (added to --seed)")
    epochs: int = setting(100, "full-batch training epochs")
    paper_epochs: int = setting(20, "epoch whose accuracy is also reported (the paper's 20 steps)")
    optimizers: Dict[str, OptimizerSettings] = setting(
        {"sgd-momentum": OptimizerSettings(0.9), "sgd-plain": OptimizerSettings(0.0)}, "named SGD variants"
    )
    weight_decay: float = setting(5e-4, "SGD weight decay")
    include_self: bool = setting(True, "count each point among its own n_top neighbours")
    normalization: str = setting("row", "weight normalization: row, symmetric or none")
    feature_epochs: List[int] = setting([0, 5, 20, 100], "epochs whose features are plotted (first seed)")
    xor_points_per_disc: int = setting(100, "XOR points per disc")
    xor_seeds: List[int] = setting(list(range(10)), "XOR data seeds")
    xor_n_top: int = setting(20, "XOR neighbours per point")
    xor_sigma: float = setting(0.5, "XOR kernel width")
    xor_step_size: float = setting(1.0, "XOR diffusion step size")
    xor_steps: int = setting(200, "XOR diffusion steps")
    xor_report_steps: List[int] = setting([1, 10, 20, 200], "XOR steps shown in the table and figure")
    paper_script_check: bool = setting(True, "rerun the paper scripts' exact protocol")
    dtype: str = setting("float32", "float32 or float64 for classification")

    def validate(self) -> None:
        super().validate()
        check_fields(
            self,
            non_empty=("datasets", "seeds", "xor_seeds", "optimizers"),
            choices={
                "datasets": sorted(TABLE4),
                "normalization": NORMALIZATIONS,
                "dtype": ("float32", "float64"),
            },
            counts=(
                "points_per_class",
                "test_points_per_class",
                "epochs",
                "xor_points_per_disc",
                "xor_n_top",
                "xor_steps",
                "xor_report_steps",
            ),
            non_negative_counts=("seeds", "xor_seeds", "feature_epochs", "paper_epochs"),
            positive=("xor_sigma", "xor_step_size"),
            non_negative=("weight_decay",),
        )
        missing = [name for name in self.datasets if name not in self.hyperparameters]
        if missing:
            raise ConfigError(f"no hyperparameters for {missing}")
        for name, hp in self.hyperparameters.items():
            check_fields(
                hp,
                counts=("n_top",),
                non_negative_counts=("num_steps",),
                positive=("sigma", "step_size", "lr"),
                prefix=f"hyperparameters.{name}.",
            )
        for name, settings in self.optimizers.items():
            check_fields(settings, non_negative=("momentum",), prefix=f"optimizers.{name}.")
        if any(step > self.xor_steps for step in self.xor_report_steps):
            raise ConfigError(f"xor_report_steps must lie in [1, xor_steps={self.xor_steps}]")
