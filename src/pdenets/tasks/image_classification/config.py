"""The settings of ``pdenets run image-classification``: the configuration dataclass and what it names (the
task, its report and its checks read them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from ...data.canvas import LABELS
from ...data.image_benchmarks import IMAGE_BENCHMARKS
from ...experiments.config import ConfigError, TaskConfig, check_fields, setting
from ...models.registry import list_models

__all__ = ["DATASETS", "ImageClassificationConfig"]


DATASETS = IMAGE_BENCHMARKS


@dataclass
class ImageClassificationConfig(TaskConfig):
    """Configuration of ``pdenets run image-classification``."""

    datasets: List[str] = setting(["cifar10"], "cifar10, canvas or canvas-segmentation")
    models: List[str] = setting(
        [
            "resnet-44",
            "hamiltonian-74",
            "hamiltonian-74-diffusion",
            "hamiltonian-74-fractional",
            "hamiltonian-74-inverse-fractional",
            "hamiltonian-74-log",
        ],
        "registered image models",
    )
    seeds: List[int] = setting([0, 1, 2], "seeds (the report gives the median)")
    units: List[int] = setting([6, 6, 6], "Hamiltonian blocks per unit (6-6-6: Hamiltonian-74)")
    widths: List[int] = setting([32, 64, 112], "Hamiltonian channels per unit")
    resnet_depth: int = setting(44, "ResNet v1 depth (6n+2); PreResNet uses 20")
    resnet_widths: List[int] = setting([16, 32, 64], "ResNet v1 stage widths")
    step_size: float = setting(0.06, "h of the Hamiltonian and nonlocal blocks")
    lam: float = setting(0.1, "lambda of the nonlocal kernels")
    s: float = setting(0.5, "fractional order of (-Delta)^s and (-Delta)^-s")
    subsample: int = setting(2, "max-pooling of keys and values in the nonlocal blocks (CIFAR 2, STL 4)")
    stages: int = setting(2, "stages of each nonlocal block")
    epochs: int = setting(200, "training epochs")
    amp: bool = setting(
        False,
        "mixed precision: bfloat16 autocast for training and evaluation (as timm's --amp; the spectra stay "
        "float32)",
    )
    batch_size: int = setting(100, "global batch size")
    lr: float = setting(0.1, "peak learning rate (the paper's piecewise schedule, scaled to the epochs)")
    momentum: float = setting(0.9, "SGD momentum")
    l2: float = setting(
        2e-4, "L2 penalty r * sum K^2 on the kernels of the Hamiltonian networks (alpha1 = 2r)"
    )
    l2_resnet: float = setting(1e-4, "L2 penalty of the ResNet baselines (ResNet-44, PreResNet-20)")
    smoothness: float = setting(1e-8, "alpha2 of the weight smoothness decay (Hamiltonian networks)")
    train_limit: Optional[int] = setting(None, "training images used (CIFAR; default all 40,000)")
    test_limit: Optional[int] = setting(None, "held-out images evaluated (CIFAR; default all 10,000)")
    canvas_train: int = setting(20000, "training canvases")
    canvas_test: int = setting(2000, "test canvases (from MNIST test digits)")
    canvas_size: int = setting(96, "canvas side")
    min_distance: float = setting(48.0, "least distance between the two digits' corners")
    canvas_label: str = setting(
        "sum", "canvas label: sum (of the two digits, mod 10) or same (same digit or not)"
    )
    canvas_digits: Optional[List[int]] = setting(
        None, "digit classes drawn on the canvases (default all ten)"
    )
    flops_models: List[str] = setting(
        [
            "resnet-44",
            "hamiltonian-74",
            "hamiltonian-74-diffusion",
            "hamiltonian-74-fractional",
            "hamiltonian-74-inverse-fractional",
            "hamiltonian-74-log",
        ],
        "networks of the FLOPs table (paper scale, 32x32)",
    )

    def validate(self) -> None:
        super().validate()
        image_models = set(list_models("image"))
        check_fields(
            self,
            non_empty=("datasets", "models", "seeds"),
            choices={"datasets": DATASETS, "models": sorted(image_models), "canvas_label": sorted(LABELS)},
            counts=(
                "units",
                "widths",
                "resnet_widths",
                "subsample",
                "stages",
                "epochs",
                "batch_size",
                "canvas_train",
                "canvas_test",
                "canvas_size",
            ),
            positive=("step_size", "lam", "s", "lr"),
            non_negative=("momentum", "l2", "l2_resnet", "smoothness", "min_distance"),
            non_negative_counts=("seeds",),
        )
        if len(self.units) != len(self.widths):
            raise ConfigError(f"units {self.units} and widths {self.widths} need the same length")
        if any(w % 2 for w in self.widths):
            raise ConfigError(f"widths must be even, got {self.widths}")
        if self.resnet_depth < 8 or (self.resnet_depth - 2) % 6:
            raise ConfigError(
                f"resnet_depth must be 6n + 2 with n ≥ 1 (8, 14, 20, …), got {self.resnet_depth}"
            )
        if self.train_limit is not None and self.train_limit < self.batch_size:
            raise ConfigError("train_limit must be at least one batch")
        if self.test_limit is not None and self.test_limit < 1:
            raise ConfigError("test_limit must be a positive count")
        if self.canvas_digits is not None:
            if len(set(self.canvas_digits)) < 2 or not all(0 <= digit <= 9 for digit in self.canvas_digits):
                raise ConfigError(
                    f"canvas_digits must name at least two distinct digits 0-9, got {self.canvas_digits}"
                )
