"""Modules imported on first use.

``pdenets --help`` and ``pdenets run TASK --help`` import every task module to read its
config; those modules name scipy and matplotlib at module level, which together cost about
as much as torch itself. A :class:`LazyModule` stands in for such a module and imports it
the first time an attribute is read, so only work that needs it pays for it.

    >>> from pdenets._lazy import LazyModule
    >>> fractions = LazyModule("fractions")
    >>> fractions.Fraction(1, 3) + fractions.Fraction(1, 6)
    Fraction(1, 2)
"""

from __future__ import annotations

import importlib
import types
from typing import Any, Callable, Optional

__all__ = ["LazyModule"]


class LazyModule(types.ModuleType):
    """Stands in for module ``name``; imports it (after ``before_import()``) on first attribute access.

    Args:
        name: the module's import name, e.g. ``"scipy.sparse"``.
        before_import: called once just before the import (e.g. choosing matplotlib's backend).
    """

    def __init__(self, name: str, before_import: Optional[Callable[[], None]] = None) -> None:
        super().__init__(name)
        self._before_import = before_import
        self._module: Optional[types.ModuleType] = None

    def _load(self) -> types.ModuleType:
        if self._module is None:
            if self._before_import is not None:
                self._before_import()
            self._module = importlib.import_module(self.__name__)
        return self._module

    def __getattr__(self, attribute: str) -> Any:  # only called for names not set on the stand-in
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return getattr(self._load(), attribute)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self.__name__!r} ({state})>"
