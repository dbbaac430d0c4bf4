r"""The few-shot method interface: a batch of tasks in, query class probabilities out.

A method is a class with a name, an ``is_transductive`` flag and a frozen settings
dataclass holding the hyperparameters it uses and nothing else. Every method solves ``T``
tasks at once from a :class:`FewShotBatch`:

* ``support`` ``(T, S, M)`` with ``support_labels`` ``(T, S)`` in ``0 … C−1`` (every class present),
* ``query`` ``(T, Q, M)`` — any number of queries, balanced over the classes or not,

and returns probabilities ``(T, Q, C)``. A new method is one file::

    from dataclasses import dataclass
    from pdenets.models.fewshot import FewShotMethod, register_method

    @dataclass(frozen=True)
    class NearestNeighbourSettings:
        pass

    @register_method
    class NearestNeighbour(FewShotMethod):
        name = "nearest-neighbour"
        is_transductive = False
        settings_class = NearestNeighbourSettings

        def predict_proba(self, batch):
            distances = torch.cdist(batch.query, batch.support)              # (T, Q, S)
            nearest = batch.support_labels.gather(1, distances.argmin(2))    # (T, Q)
            return F.one_hot(nearest, batch.ways).to(batch.query.dtype)

after which ``method_from_name("nearest-neighbour")``, :func:`~pdenets.models.fewshot.classify`
and ``pdenets run few-shot --method nearest-neighbour`` know it (the task reads the registry when
it checks its configuration, so a method registered after ``pdenets`` was imported is accepted).

Every method declares what it assumes of the query set: ``assumes_balanced_queries`` is true for
the methods whose transductive step pulls the query predictions towards equal class counts
(PT-MAP's Sinkhorn columns, TIM's marginal entropy, BD-CSPN's cross-class shift). Reports mark their
results on query sets that are not balanced. A query set smaller than the number of classes
(``Q < C``, one query at a time above all) can never be balanced; there these methods return their
inductive counterpart instead of forcing a balance that cannot hold (:attr:`FewShotBatch.can_balance`).

``presets`` holds named settings of the literature (``"paper"``: how the Diff-ResNet ablation or the
method's own paper set it); ``Method.preset("paper", **changes)`` or ``method_from_name(name,
preset="paper")`` builds one; an unknown preset is refused with the method's presets.

Probabilities are finite or refused: every method's ``predict_proba`` (a plug-in's too) raises a
``ValueError`` naming the method where its answer holds NaN or infinity, never a silent NaN. The methods whose
answer does not depend on the features' scale (BD-CSPN's cosines, PADDLE's temperature set by the prototypes'
spread, PT-MAP) compute at any magnitude; the others have temperatures set for unit-scale features, which
:func:`~pdenets.models.fewshot.classify` provides by measuring the task in its support's units.

Episode shape: :attr:`FewShotBatch.points_per_class` — ``(S + Q) / C``, the average number
of points a class has in the task's graph — is what the transductive methods adapt their
neighbourhood and diffusion strength to (:mod:`.heads`).
"""

from __future__ import annotations

import dataclasses
import functools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

import torch

from ..._checks import check_features, check_positive_int
from ..._registry import Registry
from .preprocessing import prototypes, rectified_prototypes

__all__ = [
    "FewShotBatch",
    "FewShotMethod",
    "register_method",
    "method_from_name",
    "METHOD_CLASSES",
    "registered_methods",
    "DEFAULT_METHOD",
    "finite_probabilities",
    "canonical_method_name",
    "stored_method_name",
]

#: The method a user can pick without knowing the query set's shape or the features (the estimator's
#: default): PT-MAP (TIM from 5 shots) on the tasks whose queries pass a balance test, the ensemble of
#: LaplacianShot and the Diff-ResNet head elsewhere (``"adaptive"``, :mod:`.adaptive`). The ensemble alone
#: left 1–9 points to PT-MAP or TIM on balanced 1-shot tasks; a balance-assuming method alone fell far below
#: nearest prototype on skewed queries (docs/fewshot.md, "Which method to choose").
DEFAULT_METHOD = "adaptive"

#: The few-shot method registry, name → method class in registration order: every module of
#: :mod:`pdenets.models.fewshot` (a method is one module there) and the ``pdenets.fewshot_methods`` entry
#: points of other packages (``[project.entry-points."pdenets.fewshot_methods"] mine =
#: "my_package.fewshot"``).
METHOD_CLASSES: Registry[Type["FewShotMethod"]] = Registry(
    "fewshot-methods",
    kind="few-shot method",
    package=__package__,
    describe=lambda cls: cls.description or " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split()),
    # the scikit-learn estimator wraps the registry and registers nothing (importing it imports scikit-learn)
    skip=("estimator",),
)


@dataclass
class FewShotBatch:
    """``T`` few-shot tasks of one shape, preprocessed (see the module docstring for the shapes).

    Args:
        support: ``(T, S, M)`` features; support_labels: ``(T, S)`` in ``0 … C−1``.
        query: ``(T, Q, M)``.
        ways: ``C``.
        seeds: one seed per task for methods that draw random numbers (default ``0 … T−1``).
        rectify: :attr:`prototypes` are rectified by the queries (BD-CSPN) instead of support means.
    """

    support: torch.Tensor
    support_labels: torch.Tensor
    query: torch.Tensor
    ways: int
    seeds: Optional[Sequence[int]] = None
    rectify: bool = False
    _prototypes: Optional[torch.Tensor] = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_features(self.support, "support", min_dim=3)
        check_features(self.query, "query", min_dim=3)
        self.ways = check_positive_int(self.ways, "ways")
        support, query, labels = self.support, self.query, self.support_labels
        if (
            support.dim() != 3
            or query.dim() != 3
            or support.shape[0] != query.shape[0]
            or support.shape[2] != query.shape[2]
        ):
            raise ValueError(
                f"support (T, S, M) and query (T, Q, M) must agree, got {tuple(support.shape)} and "
                f"{tuple(query.shape)}"
            )
        if query.shape[1] == 0:
            raise ValueError("every task needs at least one query")
        if (
            not isinstance(labels, torch.Tensor)
            or labels.dtype != torch.long
            or labels.shape != support.shape[:2]
        ):
            raise ValueError(
                f"support_labels must be an int64 tensor of shape {tuple(support.shape[:2])}, got "
                f"{getattr(labels, 'dtype', type(labels).__name__)} {tuple(getattr(labels, 'shape', ()))}"
            )
        if bool((labels < 0).any()) or bool((labels >= self.ways).any()):
            raise ValueError(f"support_labels must lie in 0 … {self.ways - 1} (ways={self.ways})")
        present = torch.zeros(support.shape[0], self.ways, dtype=torch.bool)
        present.scatter_(1, labels.cpu(), True)
        if not bool(present.all()):
            raise ValueError(
                f"every task needs at least one support sample of each of the {self.ways} classes"
            )
        if self.seeds is None:
            self.seeds = list(range(self.tasks))
        elif len(self.seeds) != self.tasks:
            raise ValueError(f"{len(self.seeds)} seeds for {self.tasks} tasks")

    @property
    def tasks(self) -> int:
        return self.support.shape[0]

    @property
    def shots(self) -> float:
        """Average support samples per class."""
        return self.support.shape[1] / self.ways

    @property
    def queries(self) -> int:
        """``Q``, the queries of every task."""
        return self.query.shape[1]

    @property
    def can_balance(self) -> bool:
        """Whether the queries can be spread evenly over the classes, ``Q ≥ C`` (at least one query per
        class)."""
        return self.queries >= self.ways

    @property
    def points_per_class(self) -> float:
        """``(S + Q) / C``: the average number of points (support and query) of a class in the task."""
        return (self.support.shape[1] + self.query.shape[1]) / self.ways

    @property
    def prototypes(self) -> torch.Tensor:
        """Class centres ``(T, C, M)``: support means, or rectified prototypes with ``rectify`` (computed
        once)."""
        if self._prototypes is None:
            self._prototypes = (
                rectified_prototypes(self.support, self.support_labels, self.query, self.ways)
                if self.rectify
                else prototypes(self.support, self.support_labels, self.ways)
            )
        return self._prototypes

    def nearest_prototype_proba(self, scale: Union[float, torch.Tensor]) -> torch.Tensor:
        """``softmax_c(−scale ‖q − m_c‖² / 2)`` to :attr:`prototypes`, ``(T, Q, C)``: nearest prototype;
        ``scale`` one number, or one a task ``(T,)``.

        What a method that assumes balanced queries returns where they cannot be balanced (:attr:`can_balance`
        false: fewer queries than classes, e.g. one query at a time): its inductive counterpart, with nearest
        prototype's predictions on any features.

        Examples:
            >>> batch = FewShotBatch(torch.tensor([[[0.0], [4.0]]]), torch.tensor([[0, 1]]),
            ...                      torch.tensor([[[1.0]]]), 2)
            >>> batch.nearest_prototype_proba(1.0).argmax(2).tolist()
            [[0]]
        """
        distances = torch.cdist(self.query, self.prototypes).square()
        if isinstance(scale, torch.Tensor):
            scale = scale.reshape(-1, 1, 1)
        return torch.softmax(-scale / 2 * distances, dim=2)

    def chunk(self, start: int, stop: int) -> "FewShotBatch":
        """Tasks ``start … stop − 1`` as a batch of their own."""
        assert self.seeds is not None  # set by __post_init__
        part = FewShotBatch(
            self.support[start:stop],
            self.support_labels[start:stop],
            self.query[start:stop],
            self.ways,
            list(self.seeds[start:stop]),
            self.rectify,
        )
        if self._prototypes is not None:
            part._prototypes = self._prototypes[start:stop]
        return part

    def select(self, tasks: torch.Tensor) -> "FewShotBatch":
        """The tasks at the indices ``tasks`` ``(K,)``, in that order, as a batch of their own (their seeds
        kept)."""
        assert self.seeds is not None  # set by __post_init__
        indices = [int(index) for index in tasks.tolist()]
        on_device = torch.as_tensor(indices, dtype=torch.long, device=self.support.device)
        part = FewShotBatch(
            self.support[on_device],
            self.support_labels[on_device],
            self.query[on_device],
            self.ways,
            [self.seeds[index] for index in indices],
            self.rectify,
        )
        if self._prototypes is not None:
            part._prototypes = self._prototypes[on_device]
        return part


class FewShotMethod(ABC):
    """Base class of the few-shot methods (module docstring).

    ``Method(settings)`` or ``Method(**changes)`` (changes applied to the default settings);
    :meth:`predict_proba` maps a :class:`FewShotBatch` to ``(T, Q, C)`` probabilities.
    """

    name: ClassVar[str]
    #: one line for listings (``pdenets list fewshot-methods``; default: the class docstring's first line)
    description: ClassVar[str] = ""
    is_transductive: ClassVar[bool]
    settings_class: ClassVar[type]
    #: True when the method reads :attr:`FewShotBatch.prototypes` (rectification changes its predictions).
    uses_prototypes: ClassVar[bool] = False
    #: True when the transductive step pulls the predictions towards equal query counts per class.
    assumes_balanced_queries: ClassVar[bool] = False
    #: named settings changes from the literature (``"paper"``), see :meth:`preset`.
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    #: names the method was registered under before, oldest first: still accepted, with a
    #: ``DeprecationWarning``; the oldest is the name its stored runs' keys hash (:func:`stored_method_name`).
    former_names: ClassVar[Tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every method's own ``predict_proba`` refuses non-finite probabilities, naming the method
        (:func:`finite_probabilities`)."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("predict_proba")
        if (
            own is None
            or getattr(own, "__isabstractmethod__", False)
            or getattr(own, "_checks_finite", False)
        ):
            return

        @functools.wraps(own)
        def predict_proba(self: "FewShotMethod", batch: FewShotBatch) -> torch.Tensor:
            return finite_probabilities(self, own(self, batch), batch)

        predict_proba._checks_finite = True  # type: ignore[attr-defined]
        cls.predict_proba = predict_proba  # type: ignore[method-assign]

    def __init__(self, settings: Any = None, **changes: Any):
        if settings is None:
            settings = self.settings_class(**changes)
        elif changes:
            settings = dataclasses.replace(settings, **changes)
        if not isinstance(settings, self.settings_class):
            raise TypeError(
                f"{self.name} takes {self.settings_class.__name__}, got {type(settings).__name__}"
            )
        self.settings = settings

    @classmethod
    def preset(cls, name: str, **changes: Any) -> "FewShotMethod":
        """The method with the settings of the preset ``name`` (:attr:`presets`), ``changes`` on top.

        ``"paper"`` is known to every method: one without such a preset takes its default settings (its
        defaults are then the literature's).

        Raises:
            ValueError: a preset the method does not have, naming those it has.
        """
        if not isinstance(name, str):
            raise TypeError(f"a preset is named by a string, got {type(name).__name__}")
        known = {"paper", *cls.presets}
        if name not in known:
            raise ValueError(f"{cls.name} has no preset {name!r}; its presets: {', '.join(sorted(known))}")
        return cls(**{**cls.presets.get(name, {}), **changes})

    @abstractmethod
    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        """Query class probabilities ``(T, Q, C)``."""

    def reads_prototypes(self) -> bool:
        """Whether these settings make the predictions depend on the prototypes (and so on rectification)."""
        return self.uses_prototypes

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings!r})"


def finite_probabilities(
    method: FewShotMethod, probabilities: torch.Tensor, batch: FewShotBatch
) -> torch.Tensor:
    """``probabilities`` where every one is finite; else a ``ValueError`` naming the method and the features'
    magnitude (a temperature or a step set for unit-scale features met features of size ``1e20``).

    Examples:
        >>> batch = FewShotBatch(torch.tensor([[[0.0], [4.0]]]), torch.tensor([[0, 1]]),
        ...                      torch.tensor([[[1.0]]]), 2)
        >>> finite_probabilities(method_from_name("prototype"), torch.full((1, 1, 2), float("nan")), batch)
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: prototype: non-finite probabilities on features of magnitude up to 4; its ...
    """
    if bool(torch.isfinite(probabilities).all()):
        return probabilities
    magnitude = float(torch.cat([batch.support, batch.query], 1).abs().amax())
    raise ValueError(
        f"{method.name}: non-finite probabilities on features of magnitude up to {magnitude:.3g}; its "
        "temperatures are set for features of unit scale: scale them (L2-normalize), or call classify(), "
        "which measures a task in its support's units"
    )


_Method = TypeVar("_Method", bound=Type[FewShotMethod])


def register_method(cls: _Method) -> _Method:
    """Class decorator: make a method known by its ``name`` (to :func:`method_from_name`, the task, the
    CLI)."""
    for attribute in ("name", "is_transductive", "settings_class"):
        if not hasattr(cls, attribute):
            raise TypeError(f"{cls.__name__} must define {attribute!r}")
    settings_class = cls.settings_class
    frozen = (
        dataclasses.is_dataclass(settings_class)
        # every dataclass has __dataclass_params__; typeshed's DataclassInstance leaves it out
        and settings_class.__dataclass_params__.frozen  # type: ignore[attr-defined]
    )
    if not frozen:
        raise TypeError(f"{cls.__name__}.settings_class must be a frozen dataclass")
    METHOD_CLASSES.register(cls.name, cls)
    for former in cls.former_names:
        METHOD_CLASSES.rename(former, cls.name)
    return cls


def canonical_method_name(name: Any) -> Any:
    """The current name of the method ``name`` names (a former name gives its new one, with a
    ``DeprecationWarning``); an unknown name is returned as it is, for the caller to refuse."""
    return METHOD_CLASSES.canonical(name)


def stored_method_name(name: str) -> str:
    """The name the runs of the method ``name`` are stored under: its oldest name
    (:attr:`FewShotMethod.former_names`), so that a rename keeps every stored run's key; an unknown name as
    it is.

    Examples:
        >>> stored_method_name("laplacianshot"), stored_method_name("prototype")
        ('diffusion', 'prototype')
    """
    if name not in METHOD_CLASSES:
        return name
    cls = METHOD_CLASSES[name]
    return cls.former_names[0] if cls.former_names else cls.name


def registered_methods() -> List[str]:
    """The names of the registered methods, read now (a method registered later is included)."""
    return list(METHOD_CLASSES)


def method_from_name(
    name: str, settings: Any = None, *, preset: Optional[str] = None, **changes: Any
) -> FewShotMethod:
    """An instance of the method registered as ``name`` (a typo is answered with the nearest name).

    Args:
        name: a registered name.
        settings: the method's settings object (default: its defaults, or the preset's).
        preset: a named preset of the method (:attr:`FewShotMethod.presets`), e.g. ``"paper"``.
        changes: settings fields changed on top.
    """
    cls = METHOD_CLASSES[name]  # an unknown name: UnknownNameError (a KeyError and a ValueError)
    if preset is not None:
        if settings is not None:
            raise ValueError("give settings or a preset, not both")
        return cls.preset(preset, **changes)
    return cls(settings, **changes)
