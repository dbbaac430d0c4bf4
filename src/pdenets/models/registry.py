"""One registry of networks by name, and the factory every task builds its models with.

A model is registered where it is defined, with the architecture defaults of its paper, how it
takes its graph, and a small example of itself (the one contract every registration keeps); how a
protocol trains it (optimizer settings) belongs to the task that runs the protocol::

    @register_model("gcn", family="message-passing", defaults={"hidden_features": 16, "dropout": 0.5},
                    graph_input="forward",
                    example=lambda classes: ModelExample({"in_features": 5}, (x, edge_index), (6, classes)))
    def gcn(in_features, num_classes, **kwargs):
        return GCN(in_features, num_classes, **kwargs)

:func:`create_model` merges the defaults with the caller's arguments; a variant's ``fixed`` arguments
are part of its definition, and a caller's different value for one is refused; a misspelt name is answered
with the closest registered one and the full list. Code that builds any registered model (the registry's
tests, the tasks) reads ``graph_input``, ``fixed`` and ``example`` instead of switching on a family or a name.

Examples:
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
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from torch import nn

from .._registry import Registry

__all__ = [
    "register_model",
    "create_model",
    "list_models",
    "model_entry",
    "ModelEntry",
    "ModelExample",
    "MODEL_REGISTRY",
    "GRAPH_INPUTS",
]

#: How a registered model takes its graph: ``"none"`` (it has none), ``"constructor"`` (the factory takes the
#: sample or node graph, e.g. ``weights=`` or ``graph=``; ``forward(x)``), ``"forward"`` (``forward(x,
#: graph)``, e.g. an ``edge_index``).
GRAPH_INPUTS = ("none", "constructor", "forward")


@dataclass(frozen=True)
class ModelExample:
    """A small instance of a registered model and what it runs on: the registry's tests build every model from
    it.

    Args:
        kwargs: keyword arguments of :func:`create_model` besides ``num_classes`` (small sizes).
        inputs: the positional arguments of ``forward``.
        output_shape: the shape ``forward`` returns.

    Examples:
        >>> import torch
        >>> example = model_entry("gcn").example(3)
        >>> model = create_model("gcn", num_classes=3, **example.kwargs)
        >>> model(*example.inputs).shape == example.output_shape
        True
    """

    kwargs: Mapping[str, Any]
    inputs: Tuple[Any, ...]
    output_shape: Tuple[int, ...]


@dataclass(frozen=True)
class ModelEntry:
    """A registered network: its factory, family, architecture defaults and how it takes its graph.

    Made by :func:`register_model` and returned by :func:`model_entry`; :func:`create_model` calls
    ``factory(**{**defaults, **kwargs})``.

    Args:
        name: the registered name (e.g. ``"diff-resnet"``).
        factory: callable ``(in_features, num_classes, **kwargs) -> nn.Module`` building the network.
        family: group of related models (e.g. ``"diffusion"``, ``"message-passing"``), filter of
            :func:`list_models`.
        defaults: architecture keyword arguments of the factory, overridden by the caller's
            (default: ``{}``).
        description: one line for listings (default: ``""``).
        graph_input: how it takes its graph, one of :data:`GRAPH_INPUTS` (default: ``"none"``).
        fixed: arguments that define the variant, e.g. ``{"num_steps": 0}``; a caller may repeat them, not
            change them (default: ``{}``).
        example: ``num_classes -> ModelExample``, a small instance and its inputs (default: ``None``).
        settings: the shared settings the model is built from, setting name → the factory's keyword; a
            dotted keyword ``"options.lam"`` goes into the dict keyword ``options`` (default: ``{}``). A
            family whose members share settings (the image networks' ``ImageArchitecture``) builds each
            member from the settings it declares here, and keys its runs by them, instead of switching on
            names.

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
    description: str = ""
    graph_input: str = "none"
    fixed: Mapping[str, Any] = field(default_factory=dict)
    example: Optional[Callable[[int], ModelExample]] = None
    settings: Mapping[str, str] = field(default_factory=dict)

    def settings_arguments(self, values: Mapping[str, Any]) -> Dict[str, Any]:
        """The factory's keyword arguments for the declared settings that ``values`` gives (``None`` skipped).

        Args:
            values: setting name → value; settings the entry does not declare are ignored.

        Returns:
            Keyword arguments; a dotted keyword ``"a.b"`` becomes the entry ``b`` of the dict argument ``a``.

        Examples:
            >>> entry = ModelEntry("demo", dict, "example", settings={"depth": "depth", "lam": "options.lam"})
            >>> entry.settings_arguments({"depth": 8, "lam": 0.1, "other": 1})
            {'depth': 8, 'options': {'lam': 0.1}}
            >>> entry.settings_arguments({"depth": None, "lam": 0.1})
            {'options': {'lam': 0.1}}
        """
        arguments: Dict[str, Any] = {}
        for setting, keyword in self.settings.items():
            value = values.get(setting)
            if value is None:
                continue
            outer, _, inner = keyword.partition(".")
            if inner:
                arguments.setdefault(outer, {})[inner] = value
            else:
                arguments[keyword] = value
        return arguments


#: The model registry, name → :class:`ModelEntry`: every module of :mod:`pdenets.models` and the
#: ``pdenets.models`` entry points of other packages (a package's module registers with
#: :func:`register_model`: ``[project.entry-points."pdenets.models"] mine = "my_package.models"``).
MODEL_REGISTRY: Registry[ModelEntry] = Registry(
    "models",
    kind="model",
    package=__package__,
    describe=lambda entry: entry.description,
    same=lambda old, new: old.factory is new.factory,
)


def register_model(
    name: str,
    *,
    family: str,
    defaults: Optional[Mapping[str, Any]] = None,
    description: str = "",
    graph_input: str = "none",
    fixed: Optional[Mapping[str, Any]] = None,
    example: Optional[Callable[[int], ModelExample]] = None,
    settings: Optional[Mapping[str, str]] = None,
):
    """Decorator: register a factory ``(in_features, num_classes, **kwargs) -> nn.Module`` under ``name``.

    The factory is stored unchanged in ``MODEL_REGISTRY[name]`` as a :class:`ModelEntry`; registering the
    same factory twice is harmless.

    Args:
        name: the name :func:`create_model` builds it by (e.g. ``"diff-resnet"``).
        family: group of related models (e.g. ``"diffusion"``), filter of :func:`list_models`.
        defaults: architecture keyword arguments, overridden by the caller's (default: ``None``, none).
        description: one line for listings (default: ``""``: the first line of the factory's docstring).
        graph_input: how the model takes its graph, one of :data:`GRAPH_INPUTS` (default: ``"none"``).
        fixed: arguments that define the variant; :func:`create_model` refuses a caller's other value
            (default: ``None``, none).
        example: ``num_classes -> ModelExample``: a small instance and inputs it runs on, used by the
            registry's tests (default: ``None``; every built-in model has one).
        settings: the shared settings the model is built from, setting → the factory's keyword (a dotted
            keyword ``"a.b"`` reaches into the dict argument ``a``; default: ``None``, none); see
            :meth:`ModelEntry.settings_arguments`.

    Returns:
        (Callable): The decorator, which registers the factory and returns it unchanged.

    Raises:
        ValueError: ``graph_input`` is not one of :data:`GRAPH_INPUTS`; a ``settings`` keyword is not a name
            or ``name.name``; (when decorating) another factory is already registered under ``name``.

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
    from .._checks import check_choice

    check_choice(graph_input, "graph_input", GRAPH_INPUTS)
    for setting, keyword in (settings or {}).items():
        parts = keyword.split(".") if isinstance(keyword, str) else []
        if not 1 <= len(parts) <= 2 or not all(part.isidentifier() for part in parts):
            raise ValueError(
                f"model {name!r}: the keyword of setting {setting!r} must be a name or 'name.name', "
                f"got {keyword!r}"
            )

    def decorator(factory: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        text = description or ((factory.__doc__ or "").strip().splitlines() or [""])[0]
        entry = ModelEntry(
            name,
            factory,
            family,
            dict(defaults or {}),
            text,
            graph_input,
            dict(fixed or {}),
            example,
            dict(settings or {}),
        )
        MODEL_REGISTRY.register(name, entry, module=factory.__module__)
        return factory

    return decorator


#: The entry-point group through which a package registers its models: importing the module an entry point
#: names must register them (``@register_model``), e.g. ``[project.entry-points."pdenets.models"] mine =
#: "my_package.models"``.
MODEL_ENTRY_POINTS = MODEL_REGISTRY.group


def list_models(family: Optional[str] = None, *, order: str = "name") -> List[str]:
    """Registered names (of one ``family``, e.g. ``"diffusion"`` or ``"message-passing"``).

    The built-in models are loaded first, so every model of the library is listed.

    Args:
        family: list only the models of this family (default: ``None``, all).
        order: ``"name"`` (sorted) or ``"registration"`` (as registered: within a module, the order it
            defines them in, e.g. the paper's model before its variants; default: ``"name"``).

    Returns:
        The names.

    Examples:
        >>> from pdenets.models import list_models
        >>> "diff-resnet" in list_models("diffusion"), "diff-resnet" in list_models("coin")
        (True, False)
        >>> list_models("diffusion", order="registration")[:2]
        ['diff-resnet', 'no-diff-resnet']
    """
    from .._checks import check_choice

    check_choice(order, "order", ("name", "registration"))
    names = [name for name, entry in MODEL_REGISTRY.items() if family is None or entry.family == family]
    return sorted(names) if order == "name" else names


def model_entry(name: str) -> ModelEntry:
    """The :class:`ModelEntry` registered under ``name`` (the built-in models are loaded first).

    Args:
        name: a registered model name (see :func:`list_models`).

    Returns:
        The entry: factory, family, architecture defaults, description.

    Raises:
        UnknownNameError: (a ``KeyError``) if ``name`` is not registered; the
            message suggests the closest name and lists the valid ones.

    Examples:
        >>> from pdenets.models import model_entry
        >>> entry = model_entry("coin-mlp")
        >>> entry.family, entry.defaults["hidden_features"]
        ('coin', 64)
    """
    return MODEL_REGISTRY[name]


def create_model(name: str, **kwargs: Any) -> nn.Module:
    """Build the registered model ``name``: its defaults, overridden by ``kwargs``, and its ``fixed``
    arguments.

    Calls ``factory(**{**defaults, **kwargs, **fixed})`` of :func:`model_entry` ``(name)``; the keyword
    arguments (``in_features``, ``num_classes`` and the model's own options) are passed to the factory. A
    ``fixed`` argument defines the variant (``no-diff-resnet`` is Diff-ResNet with ``num_steps=0``): passing
    it with another value is an error, not silently overridden.

    Args:
        name: a registered model name (see :func:`list_models`).

    Returns:
        The network, an ``nn.Module``.

    Raises:
        UnknownNameError: (a ``KeyError``) if ``name`` is not registered; the
            message suggests the closest name and lists the valid ones.
        ValueError: a keyword argument contradicts one of the variant's ``fixed`` arguments.

    Examples:
        >>> from pdenets.models import create_model
        >>> net = create_model("no-diff-resnet", in_features=2, num_classes=3)
        >>> type(net).__name__, net.num_steps
        ('DiffResNet', 0)
        >>> create_model("no-diff-resnet", in_features=2, num_classes=3, num_steps=5)
        Traceback (most recent call last):
        ...
        ValueError: model 'no-diff-resnet' is defined with num_steps=0; it cannot be built with num_steps=5
    """
    from .._deprecation import apply_renames

    entry = model_entry(name)
    kwargs = apply_renames(entry.factory, kwargs)
    conflicts = [key for key, value in entry.fixed.items() if key in kwargs and kwargs[key] != value]
    if conflicts:
        fixed = ", ".join(f"{key}={entry.fixed[key]!r}" for key in conflicts)
        given = ", ".join(f"{key}={kwargs[key]!r}" for key in conflicts)
        raise ValueError(f"model {name!r} is defined with {fixed}; it cannot be built with {given}")
    return entry.factory(**{**entry.defaults, **kwargs, **entry.fixed})
