"""Composed networks and a small registry of them by name."""

from .diffresnet import DiffResNet, no_diff_resnet

MODELS = {
    "diff-resnet": DiffResNet,
    "no-diff-resnet": no_diff_resnet,
}

__all__ = ["DiffResNet", "no_diff_resnet", "MODELS"]
