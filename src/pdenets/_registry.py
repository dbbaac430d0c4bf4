"""One registry mechanism for every kind of plug-in: tasks, models, few-shot methods, forecasters, formats.

A :class:`Registry` is a read-only mapping ``name → entry`` of one *family* (``"models"``,
``"fewshot-methods"``, ``"graph-formats"``, …). Every family is found the same way, the first time
it is read:

1. the modules of its **built-in package** are imported (a module registers what it defines, with
   the family's decorator or :meth:`Registry.register`); a built-in module that fails raises;
2. every entry point of its **entry-point group** ``pdenets.<family>`` (hyphens as underscores) is
   loaded: a package adds its plug-ins with, in its ``pyproject.toml``::

       [project.entry-points."pdenets.fewshot_methods"]
       mine = "my_package.fewshot"

   A plug-in that fails to import, or registers a name already taken, or an entry its family refuses,
   is left out: everything it registered (in every family) is taken back and one
   :class:`PluginWarning` names the entry point and the error. A plug-in never takes a built-in down.

An unknown name raises one :class:`~pdenets._checks.UnknownNameError` naming the family, the closest
name and the valid ones. Each entry remembers its source (``"built-in"``, or the plug-in's
distribution) and a one-line description; ``pdenets list [FAMILY]`` prints them.

Adding an entry is one file: a module in the family's package (found by the walk) or in a plug-in
package (found by its entry point). No list of modules and no ``if`` chain names it.

A family whose built-in package sits *above* the module that keeps its registry (the engine keeps
the task registry; the tasks live one floor up) is told where its built-ins live by the package root
(:func:`declare_home`), as ``pyproject.toml`` declares entry points: the engine names no task module.

Examples:
    >>> from pdenets._registry import Registry
    >>> colours = Registry("doc-colours", kind="colour")
    >>> colours.register("red", (255, 0, 0), description="the colour of stop signs", module="paints.reds")
    (255, 0, 0)
    >>> colours["red"], "blue" in colours, colours.source("red"), colours.description("red")
    ((255, 0, 0), False, 'paints', 'the colour of stop signs')
    >>> colours["rde"]
    Traceback (most recent call last):
    ...
    pdenets._checks.UnknownNameError: unknown colour 'rde' (did you mean 'red'?); valid: red
    >>> colours.forget()
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import sys
import warnings
from collections.abc import Mapping
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, TypeVar

from ._checks import UnknownNameError, unknown_name

__all__ = [
    "Registry",
    "PluginWarning",
    "FAMILIES",
    "BUILTIN",
    "declare_home",
    "families",
    "isolated_registries",
    "UnknownNameError",
]

E = TypeVar("E")

#: the source of an entry registered by pdenets itself
BUILTIN = "built-in"
#: this package's import name (its modules' entries are built in)
_PACKAGE = __name__.partition(".")[0]

#: family name → its registry, in the order the registries were made
FAMILIES: Dict[str, "Registry[Any]"] = {}

#: family name → the package of its built-in entries, for registries made without one (see
#: :func:`declare_home`)
_HOMES: Dict[str, str] = {}

#: the plug-in (distribution or module) whose entry point is being loaded now
_LOADING: List[str] = []

#: entry points that failed once in this process (group, name, value): not tried, nor warned about, again
_FAILED: Set[Tuple[str, str, str]] = set()


class PluginWarning(UserWarning):
    """A third-party entry point could not be loaded; what it registered is left out."""


def declare_home(family: str, package: str) -> None:
    """Name the package whose modules hold ``family``'s built-in entries, for a registry that does not name
    it.

    The package root declares it for the families whose registry sits on a lower floor than their built-in
    entries (the engine's task registry), as ``pyproject.toml`` declares entry points.

    Args:
        family: the family's name (``"tasks"``).
        package: an importable package or module name.
    """
    _HOMES[family] = package


def families() -> Dict[str, "Registry[Any]"]:
    """Every registry made so far, family name → registry (a copy)."""
    return dict(FAMILIES)


@contextmanager
def isolated_registries(*, rediscover: bool = False) -> Iterator[None]:
    """Every registry's entries, loading state and failed plug-ins put back as they were on exit (for tests).

    Args:
        rediscover: inside, every registry reads its entry points again when next read (the built-in modules
            are imported once a process: their entries stay).
    """
    for registry in list(FAMILIES.values()):
        registry.load()
    saved = {
        name: (registry, dict(registry._records), registry._loaded) for name, registry in FAMILIES.items()
    }
    failed = set(_FAILED)
    if rediscover:
        for registry in FAMILIES.values():
            registry._loaded = False
    try:
        yield
    finally:
        for family, (registry, records, loaded) in saved.items():
            registry._records.clear()
            registry._records.update(records)
            registry._loaded = loaded
            FAMILIES[family] = registry
        for family in set(FAMILIES) - set(saved):
            del FAMILIES[family]
        _FAILED.clear()
        _FAILED.update(failed)


@dataclass(frozen=True)
class _Record:
    entry: Any
    source: str
    description: str
    module: Optional[str] = None


def _source_of(module: Optional[str]) -> str:
    """The source of an entry defined in ``module``: built-in for pdenets' own modules, else the plug-in now
    loading, else the module's top-level package."""
    if module is not None and module.partition(".")[0] == _PACKAGE:
        return BUILTIN
    if _LOADING:
        return _LOADING[-1]
    return (module or "user code").split(".")[0]


def _first_line(text: Optional[str]) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else ""


class Registry(Mapping[str, E]):
    """The entries of one family of plug-ins, found by walking a package and an entry-point group.

    Reading the registry (``registry[name]``, ``name in registry``, iteration, ``len``) loads the family once
    per process (see the module docstring); so does registering an entry that is not built in, so that a name
    of pdenets' own is known taken before a plug-in (or the user's code) asks for it. Entries keep their
    registration order.

    Args:
        family: the family's name, e.g. ``"fewshot-methods"`` (unique; ``pdenets list FAMILY``).
        kind: what one entry is called in messages, e.g. ``"few-shot method"``.
        package: the package (or module) whose modules register the built-in entries (default: ``None``: the
            one :func:`declare_home` names, or none).
        group: the entry-point group (default: ``"pdenets." + family`` with ``-`` as ``_``).
        describe: an entry's one-line description when :meth:`register` is given none (default: the first line
            of the entry's docstring).
        same: whether a second registration under a taken name is the same entry again, replaced quietly
            (default: the very same object).
        loads_with: registries whose loading registers entries of this one too (their modules are walked
            first; e.g. paper tables are registered by task modules).
        skip: module names of ``package`` that hold no entries and are not imported by the walk (e.g. a
            wrapper that needs an optional dependency).

    Raises:
        ValueError: another registry of the family exists (the same one made again, by a module imported
            twice under two names, is allowed; the first stays the family's).
    """

    kind: str
    group: str

    def __init__(
        self,
        family: str,
        *,
        kind: str,
        package: Optional[str] = None,
        group: Optional[str] = None,
        describe: Optional[Callable[[E], str]] = None,
        same: Optional[Callable[[E, E], bool]] = None,
        loads_with: Tuple["Registry[Any]", ...] = (),
        skip: Tuple[str, ...] = (),
        check: Optional[Callable[[Any], Optional[str]]] = None,
    ) -> None:
        previous = FAMILIES.get(family)
        if previous is not None and (previous.kind, previous.group) != (kind, group or previous.group):
            raise ValueError(f"a registry of the family {family!r} exists already")
        self.family = family
        self.kind = kind
        self.package = package
        self.group = group or "pdenets." + family.replace("-", "_")
        self._describe = describe or (lambda entry: _first_line(getattr(entry, "__doc__", None)))
        self._same = same or (lambda old, new: old is new)
        self._loads_with = loads_with
        self._skip = frozenset(skip)
        self._check = check
        self._records: Dict[str, _Record] = {}
        #: deprecated name → the entry's current name (:meth:`rename`)
        self._former: Dict[str, str] = {}
        self._loaded = False
        self._loading = False
        FAMILIES.setdefault(family, self)

    # ------------------------------------------------------------------ registering

    def register(
        self, name: str, entry: E, *, description: Optional[str] = None, module: Optional[str] = None
    ) -> E:
        """Add ``entry`` under ``name`` and return it.

        Args:
            name: the name users give (a non-empty string).
            entry: what the family keeps (a class, a factory, a declaration).
            description: one line for listings (default: from ``describe``).
            module: the module that defines the entry, for its source (default: ``entry.__module__``).

        A name of pdenets' own is taken before any other entry is registered (the built-ins are loaded
        first): a plug-in that asks for one is refused here, and the family still loads whole (an entry
        point's plug-in is then left out with one :class:`PluginWarning`, :meth:`load`).

        Raises:
            ValueError: ``name`` is empty or not a string, or another entry is registered under it.
        """
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a {self.kind} needs a non-empty name, got {name!r}")
        problem = self._check(entry) if self._check is not None else None
        if problem:
            raise TypeError(f"{self.kind} {name!r}: {problem}")
        module = module if module is not None else getattr(entry, "__module__", None)
        source = _source_of(module)
        if source != BUILTIN and not self._loaded and not self._loading:
            self.load()  # the built-in names first: a plug-in never shadows one, nor breaks the family's load
        old = self._records.get(name)
        if old is not None and not self._same(old.entry, entry):
            owner = _PACKAGE if old.source == BUILTIN else old.source
            raise ValueError(f"a {self.kind} named {name!r} is already registered (by {owner})")
        text = description if description is not None else self._describe(entry)
        self._records[name] = _Record(entry, source, " ".join(str(text or "").split()), module)
        return entry

    def rename(self, old: str, new: str) -> None:
        """Keep ``old``, a name the entry ``new`` had before, as a deprecated name of it.

        Reading ``old`` gives the entry ``new`` with a ``DeprecationWarning`` (:meth:`canonical`); listings
        show ``new`` only. A name registered for an entry of its own is never taken as a former name.
        """
        if not isinstance(old, str) or not old.strip() or old == new:
            raise ValueError(f"a former {self.kind} name must be a non-empty string other than {new!r}")
        self._former[old] = new

    def canonical(self, name: Any) -> Any:
        """The name ``name`` stands for now: itself, or the current name of a former one (with a
        ``DeprecationWarning`` naming both). Anything else is returned as it is, for the caller to refuse."""
        self.load()
        new = self._former.get(name) if isinstance(name, str) else None
        if new is None or name in self._records:
            return name
        warnings.warn(
            f"the {self.kind} {name!r} is now called {new!r}; {name!r} will be removed (see CHANGELOG.md)",
            DeprecationWarning,
            stacklevel=3,
        )
        return new

    def unregister(self, name: str) -> None:
        """Remove the entry ``name`` (for tests and examples that register a throw-away entry)."""
        self._records.pop(name, None)

    __delitem__ = unregister

    def forget(self) -> None:
        """Remove this registry from :data:`FAMILIES` (a throw-away registry of a test or an example)."""
        if FAMILIES.get(self.family) is self:
            del FAMILIES[self.family]

    # ------------------------------------------------------------------ reading

    def __getitem__(self, name: str) -> E:
        self.load()
        record = self._records.get(self.canonical(name))
        if record is None:
            raise self.unknown(name)
        return record.entry

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(list(self._records))

    def __len__(self) -> int:
        self.load()
        return len(self._records)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._records

    def __repr__(self) -> str:
        return f"Registry({self.family!r}, {len(self._records)} {self.kind} entries)"

    def unknown(self, name: Any) -> UnknownNameError:
        """The error for a name this family does not hold (closest name, valid ones)."""
        self.load()
        return unknown_name(self.kind, name, list(self._records))

    def names(self, *, order: str = "registration") -> List[str]:
        """The registered names, in registration order or sorted (``order="name"``)."""
        from ._checks import check_choice

        check_choice(order, "order", ("registration", "name"))
        names = list(self)
        return sorted(names) if order == "name" else names

    def source(self, name: str) -> str:
        """Where the entry ``name`` comes from: ``"built-in"`` or the plug-in's distribution (or package)."""
        self[name]
        return self._records[name].source

    def description(self, name: str) -> str:
        """The entry's one-line description."""
        self[name]
        return self._records[name].description

    # ------------------------------------------------------------------ loading

    @property
    def loaded(self) -> bool:
        """Whether the family has been loaded in this process."""
        return self._loaded

    def load(self) -> None:
        """Import the built-in package's modules, then the entry-point group's plug-ins (once a process).

        The family counts as loaded only once every built-in module has imported: a module that fails takes
        back what it registered and raises, and the next read imports it again (and raises again)."""
        if self._loaded or self._loading:
            return  # a module of the walk that reads its own registry sees what is registered so far
        self._loading = True
        try:
            for other in self._loads_with:
                other.load()
            package = self.package or _HOMES.get(self.family)
            if package is not None:
                self._walk(package)
        finally:
            self._loading = False
        self._loaded = True
        self._load_entry_points()

    def reload(self) -> None:
        """Load again: the plug-ins installed since are found (for tests)."""
        self._loaded = False
        self.load()

    def _walk(self, package: str) -> None:
        """Import ``package`` and, when it is a package, each of its public modules (a failure raises)."""
        root = _import_builtin(package)
        path = getattr(root, "__path__", None)
        if path is None:
            return
        for info in sorted(pkgutil.iter_modules(path), key=lambda info: info.name):
            if not info.name.startswith("_") and info.name not in self._skip:
                _import_builtin(f"{package}.{info.name}")

    def _load_entry_points(self) -> None:
        for entry in importlib.metadata.entry_points(group=self.group):
            distribution = getattr(getattr(entry, "dist", None), "name", None)
            key = (entry.group, entry.name, entry.value)
            if key not in _FAILED:  # every entry point, pdenets' own included, isolated (a failure warns)
                self._load_plugin(entry, distribution or entry.value.split(":")[0])

    def _load_plugin(self, entry: Any, source: str) -> None:
        """Load one third-party entry point; on any failure take back what it registered, in every family."""
        saved = {family: dict(registry._records) for family, registry in FAMILIES.items()}
        _LOADING.append(source)
        try:
            with redirect_stdout(sys.stderr):  # what a plug-in prints never mixes with pdenets' output
                entry.load()
        except (Exception, SystemExit) as error:  # noqa: BLE001 - a broken plug-in must not take others down
            for family, registry in list(FAMILIES.items()):
                registry._records.clear()
                registry._records.update(saved.get(family, {}))
            _FAILED.add((entry.group, entry.name, entry.value))
            detail = " ".join(str(error).split()) or "(no message)"
            warnings.warn(
                f"the {self.family} of {entry.value!r} (entry point {entry.name!r} of {entry.group!r}) could "
                f"not be loaded: {type(error).__name__}: {detail}; they are left out",
                PluginWarning,
                stacklevel=5,
            )
        finally:
            _LOADING.pop()


def _import_builtin(name: str) -> Any:
    """Import a built-in module; when it fails, take back what it registered (in every family) and raise."""
    before = {family: dict(registry._records) for family, registry in FAMILIES.items()}
    try:
        return importlib.import_module(name)
    except BaseException:
        for family, registry in list(FAMILIES.items()):
            old = before.get(family, {})
            for key, record in list(registry._records.items()):
                kept = record.module is not None and record.module in sys.modules
                if old.get(key) is not record and not kept:  # registered by a module that did not finish
                    if key in old:
                        registry._records[key] = old[key]
                    else:
                        del registry._records[key]
        raise


def call_plugin(
    registry: "Registry[Any]", name: str, what: str, function: Callable[..., Any], *args: Any
) -> Any:
    """``function(*args)`` for the entry ``name`` of ``registry``; when the entry is a plug-in's and the call
    fails, the entry is left out with one :class:`PluginWarning` naming the plug-in, and ``None`` returned."""
    record = registry._records.get(name)
    if record is None or record.source == BUILTIN:
        return function(*args)
    try:
        with redirect_stdout(sys.stderr):
            return function(*args)
    except Exception as error:  # noqa: BLE001 - a broken plug-in must not take the built-ins down
        registry._records.pop(name, None)
        detail = " ".join(str(error).split()) or "(no message)"
        warnings.warn(
            f"the {registry.kind} {name!r} of {record.source!r} failed in {what}: {type(error).__name__}: "
            f"{detail}; it is left out",
            PluginWarning,
            stacklevel=3,
        )
        return None
