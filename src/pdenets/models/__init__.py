"""Composed networks, and the one registry that builds them by name (:func:`create_model`)."""

from .coin import COIN, block_diagonal_graph, coin_mlp
from .diffresnet import DiffResNet, no_diff_resnet
from .registry import (
    GRAPH_INPUTS,
    MODEL_REGISTRY,
    ModelEntry,
    ModelExample,
    create_model,
    list_models,
    model_entry,
    register_model,
)

__all__ = [
    "COIN",
    "block_diagonal_graph",
    "coin_mlp",
    "DiffResNet",
    "no_diff_resnet",
    "create_model",
    "list_models",
    "model_entry",
    "register_model",
    "ModelEntry",
    "ModelExample",
    "MODEL_REGISTRY",
    "GRAPH_INPUTS",
]
