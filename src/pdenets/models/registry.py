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
    >>> try:
    ...     create_model("diff-resnett", in_features=2, num_classes=2)
    ... except KeyError as error:  # an UnknownNameError
    ...     print(error)  # doctest: +ELLIPSIS
    unknown model 'diff-resnett' (did you mean 'diff-resnet'?); valid: ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional

from torch import nn

__all__ = ["register_model", "create_model", "list_models", "model_entry", "ModelEntry", "MODEL_REGISTRY"]


@dataclass(frozen=True)
class ModelEntry:
    """A registered network: its factory, family, architecture defaults and training defaults.

    Made by :func:`register_model` and returned by :func:`model_entry`; :func:`create_model` calls
    ``factory(**{**defaults, **kwargs})``.

    Args:
        name: the registered name (e.g. ``"diff-resnet"``).
        factory: callable ``(in_features, num_classes, **kwargs) -> nn.Module`` building the network.
        family: group of related models (e.g. ``"diffusion"``, ``"message-passing"``), filter of
            :func:`list_models`.
        defaults: architecture keyword arguments of the factory, overridden by the caller's
            (default: ``{}``).
        training: optimizer settings of the protocol that trains it, e.g. ``{"lr": 0.01}`` (default: ``{}``).
        description: one line for listings (default: ``""``).

    Examples:
        >>> from torch import nn
        >>> entry = ModelEntry("linear", nn.Linear, "example", defaults={"bias": False})
        >>> entry.factory(3, 2, **entry.defaults).bias is None
        True
    """

    name: str
    factory: Callable[..., nn.Module]
    family: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    training: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


MODEL_REGISTRY: Dict[str, ModelEntry] = {}


def register_model(name: str, *, family: str, defaults: Optional[Mapping[str, Any]] = None,
                   training: Optional[Mapping[str, Any]] = None, description: str = ""):
    """Decorator: register a factory ``(in_features, num_classes, **kwargs) -> nn.Module`` under ``name``.

    The factory is stored unchanged in ``MODEL_REGISTRY[name]`` as a :class:`ModelEntry`; registering the
    same factory twice is harmless.

    Args:
        name: the name :func:`create_model` builds it by (e.g. ``"diff-resnet"``).
        family: group of related models (e.g. ``"diffusion"``), filter of :func:`list_models`.
        defaults: architecture keyword arguments, overridden by the caller's (default: ``None``, none).
        training: optimizer settings of the protocol that trains it, e.g. ``{"lr": 0.01, "weight_decay": 5e-4}``
            (default: ``None``, none).
        description: one line for listings (default: ``""``: the first line of the factory's docstring).

    Returns:
        (Callable): The decorator, which registers the factory and returns it unchanged.

    Raises:
        ValueError: (when decorating) if another factory is already registered under ``name``.

    Examples:
        >>> from torch import nn
        >>> from pdenets.models import MODEL_REGISTRY, create_model, register_model
        >>> @register_model("doc-linear", family="example", defaults={"bias": False})
        ... def doc_linear(in_features, num_classes, **kwargs):
        ...     return nn.Linear(in_features, num_classes, **kwargs)
        >>> create_model("doc-linear", in_features=3, num_classes=2).bias is None
        True
        >>> del MODEL_REGISTRY["doc-linear"]
    """

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
    """Registered names (of one ``family``, e.g. ``"diffusion"`` or ``"message-passing"``).

    The built-in models are loaded first, so every model of the library is listed.

    Args:
        family: list only the models of this family (default: ``None``, all).

    Returns:
        The names, sorted.

    Examples:
        >>> from pdenets.models import list_models
        >>> "diff-resnet" in list_models("diffusion"), "diff-resnet" in list_models("coin")
        (True, False)
    """
    _load_builtin_models()
    return sorted(name for name, entry in MODEL_REGISTRY.items() if family is None or entry.family == family)


def model_entry(name: str) -> ModelEntry:
    """The :class:`ModelEntry` registered under ``name`` (the built-in models are loaded first).

    Args:
        name: a registered model name (see :func:`list_models`).

    Returns:
        The entry: factory, family, architecture and training defaults, description.

    Raises:
        UnknownNameError: (a ``KeyError``) if ``name`` is not registered; the
            message suggests the closest name and lists the valid ones.

    Examples:
        >>> from pdenets.models import model_entry
        >>> entry = model_entry("coin-mlp")
        >>> entry.family, entry.defaults["hidden"]
        ('coin', 64)
    """
    from .._checks import unknown_name

    _load_builtin_models()
    if name not in MODEL_REGISTRY:
        raise unknown_name("model", name, list(MODEL_REGISTRY))
    return MODEL_REGISTRY[name]


def create_model(name: str, **kwargs: Any) -> nn.Module:
    """Build the registered model ``name``: its defaults, overridden by ``kwargs``.

    Calls ``factory(**{**defaults, **kwargs})`` of :func:`model_entry` ``(name)``; the keyword arguments
    (``in_features``, ``num_classes`` and the model's own options) are passed to the factory.

    Args:
        name: a registered model name (see :func:`list_models`).

    Returns:
        The network, an ``nn.Module``.

    Raises:
        UnknownNameError: (a ``KeyError``) if ``name`` is not registered; the
            message suggests the closest name and lists the valid ones.

    Examples:
        >>> from pdenets.models import create_model
        >>> net = create_model("no-diff-resnet", in_features=2, num_classes=3)
        >>> type(net).__name__, net.num_steps
        ('DiffResNet', 0)
    """
    entry = model_entry(name)
    return entry.factory(**{**entry.defaults, **kwargs})
