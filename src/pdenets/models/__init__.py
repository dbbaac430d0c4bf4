"""Composed networks, and the one registry that builds them by name (:func:`create_model`)."""

from .diffresnet import DiffResNet, no_diff_resnet
from .registry import MODEL_REGISTRY, ModelEntry, create_model, list_models, model_entry, register_model

__all__ = ["DiffResNet", "no_diff_resnet", "create_model", "list_models", "model_entry", "register_model",
           "ModelEntry", "MODEL_REGISTRY"]
