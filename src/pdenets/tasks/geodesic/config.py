"""The settings of ``pdenets run geodesic``: the configuration dataclass and what it names (the task, its
report and its checks read them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from ...experiments.config import ConfigError, TaskConfig, check_fields, setting
from ...models.transport_pairs import INITS

__all__ = ["CIFAR_ARCHITECTURES", "DATASETS", "GeodesicConfig", "KINDS"]


KINDS = ("plain", "resnet")


DATASETS = ("mnist", "cifar10")


CIFAR_ARCHITECTURES = ("k1", "k4")


@dataclass
class GeodesicConfig(TaskConfig):
    """Configuration of ``pdenets run geodesic``."""

    datasets: List[str] = setting(["mnist"], "mnist and/or cifar10")
    architectures: List[str] = setting(
        ["k1"],
        "CIFAR-10 networks: k1 (32×16×16, 10 blocks) and/or k4 (4 stages "
        "of 5 blocks); MNIST always uses the MLP",
    )
    weight_decays: List[float] = setting([0.0, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 1e-1], "weight decays gamma")
    kinds: List[str] = setting(list(KINDS), "plain and/or resnet")
    seeds: List[int] = setting([0], "seeds")
    width: int = setting(1000, "MLP block width (paper: 1000)")
    blocks: int = setting(5, "MLP blocks (paper: 5)")
    k4_widths: List[int] = setting(
        [64, 128, 256, 512], "channels of the four K = 4 stages (paper: 64,128,256,512)"
    )
    init: str = setting(
        "auto",
        "weight initialization: auto (plain: kaiming, ResNet: torch), kaiming (He normal, "
        "zero bias) or torch (its default)",
    )
    epochs: int = setting(10, "training epochs")
    batch_size: int = setting(128, "batch size")
    lr: float = setting(0.01, "SGD learning rate")
    momentum: float = setting(0.9, "SGD momentum")
    augment: bool = setting(True, "pad-4 random crop and flip on CIFAR-10")
    train_limit: Optional[int] = setting(
        None, "training images used (default all: MNIST 60,000, CIFAR-10 40,000)"
    )
    test_limit: Optional[int] = setting(
        None, "test images scored (default all: MNIST 10,000, CIFAR-10 10,000)"
    )
    track_points: int = setting(1000, "training images whose tracks are scored")
    noise_levels: List[float] = setting([0.0, 0.1, 0.2, 0.3, 0.5, 1.0], "Gaussian noise sigma (robustness)")
    fgsm_levels: List[float] = setting([0.0, 0.01, 0.02, 0.05, 0.1, 0.2], "FGSM epsilon (robustness)")
    robustness_points: int = setting(1000, "test images for robustness and unit ablation")
    ablation_block: int = setting(3, "block whose units are ablated (1-based; paper: 3)")
    ablation_counts: List[int] = setting([0, 10, 20, 50, 100, 200, 500, 1000], "numbers of eliminated units")
    projection_points: int = setting(150, "test images whose tracks are drawn in 2-D (Fig. 3)")
    amp: bool = setting(
        False,
        "mixed precision: bfloat16 autocast for training and the accuracies (as timm's --amp; the track "
        "scores stay float32)",
    )
    figure_weight_decay: float = setting(
        5e-4, "weight decay shown in the robustness, ablation and track figures"
    )

    def validate(self) -> None:
        super().validate()
        check_fields(
            self,
            non_empty=(
                "datasets",
                "architectures",
                "weight_decays",
                "kinds",
                "seeds",
                "k4_widths",
                "noise_levels",
                "fgsm_levels",
                "ablation_counts",
            ),
            choices={
                "datasets": DATASETS,
                "architectures": CIFAR_ARCHITECTURES,
                "kinds": KINDS,
                "init": INITS,
            },
            counts=(
                "width",
                "blocks",
                "epochs",
                "batch_size",
                "track_points",
                "k4_widths",
                "robustness_points",
                "ablation_block",
                "projection_points",
            ),
            positive=("lr",),
            non_negative=("weight_decays", "momentum", "noise_levels", "fgsm_levels", "figure_weight_decay"),
            non_negative_counts=("seeds", "ablation_counts"),
        )
        for name in ("train_limit", "test_limit"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1 (or null for all images), got {getattr(self, name)}")
        if len(self.k4_widths) != 4:
            raise ConfigError(f"k4_widths must list 4 stage widths, got {self.k4_widths}")
        if self.ablation_block > self.blocks and "mnist" in self.datasets:
            raise ConfigError(f"ablation_block={self.ablation_block} exceeds the MLP's {self.blocks} blocks")
