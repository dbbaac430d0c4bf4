"""One registry of networks by name, and the factory every task builds its models with.

A model is registered where it is defined, with the architecture defaults of its paper
and, where a protocol trains it with its own optimizer settings, those too::

    @register_model("gcn", family="message-passing", defaults={"hidden": 16, "dropout": 0.5},
                    training={"lr": 0.01, "weight_decay": 5e-4})
    def gcn(in_features, num_classes, **kwargs):
        return GCN(in_features, num_classes, **kwargs)

:func:`create_model` merges the defaults with the caller's arguments; a misspelt name is
answered with the closest registered one and the full list.

Example:
    >>> from pdenets.models import create_model, list_models
    >>> "diff-resnet" in list_models()
    True
    >>> net = create_model("diff-resnet", in_features=2, num_classes=2, num_steps=0)
    >>> sum(p.numel() for p in net.parameters())
    18
    >>> create_model("diff-resnett", in_features=2, num_classes=2)
    Traceback (most recent call last):
    ...
    pdenets.experiments.task.UnknownNameError: unknown model 'diff-resnett' (did you mean 'diff-resnet'?); valid: ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional

from torch import nn

__all__ = ["register_model", "create_model", "list_models", "model_entry", "ModelEntry", "MODEL_REGISTRY"]


@dataclass(frozen=True)
class ModelEntry:
    """A registered network: its factory, family, architecture defaults and training defaults."""

    name: str
    factory: Callable[..., nn.Module]
    family: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    training: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


MODEL_REGISTRY: Dict[str, ModelEntry] = {}


def register_model(name: str, *, family: str, defaults: Optional[Mapping[str, Any]] = None,
                   training: Optional[Mapping[str, Any]] = None, description: str = ""):
    """Decorator: register a factory ``(in_features, num_classes, **kwargs) -> nn.Module`` under ``name``."""

    def decorator(factory: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        if name in MODEL_REGISTRY and MODEL_REGISTRY[name].factory is not factory:
            raise ValueError(f"a model named {name!r} is already registered")
        text = description or ((factory.__doc__ or "").strip().splitlines() or [""])[0]
        MODEL_REGISTRY[name] = ModelEntry(name, factory, family, dict(defaults or {}), dict(training or {}), text)
        return factory

    return decorator


def _load_builtin_models() -> None:
    from . import (backbones, cifar_resnets, coin, diffresnet, forecasting, gnn, hamiltonian,  # noqa: F401
                   transport_pairs)


def list_models(family: Optional[str] = None) -> List[str]:
    """Registered names (of one ``family``, e.g. ``"diffusion"`` or ``"message-passing"``)."""
    _load_builtin_models()
    return sorted(name for name, entry in MODEL_REGISTRY.items() if family is None or entry.family == family)


def model_entry(name: str) -> ModelEntry:
    from ..experiments.task import unknown_name

    _load_builtin_models()
    if name not in MODEL_REGISTRY:
        raise unknown_name("model", name, list(MODEL_REGISTRY))
    return MODEL_REGISTRY[name]


def create_model(name: str, **kwargs: Any) -> nn.Module:
    """Build the registered model ``name``: its defaults, overridden by ``kwargs``."""
    entry = model_entry(name)
    return entry.factory(**{**entry.defaults, **kwargs})
