"""One cache per worker process for what the jobs of a run share: a loaded dataset, a prepared graph.

Jobs run in pool workers (or on Ray); each worker loads a dataset once and keeps it for the next job
that asks with the same arguments. :func:`process_cache` is that rule written once: a bounded
least-recently-used cache keyed by the arguments, dicts and lists included (they are frozen into
hashable equivalents), so a task never hand-writes its own dictionary and eviction policy.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

__all__ = ["process_cache", "FrozenDict"]

F = TypeVar("F", bound=Callable[..., Any])


class FrozenDict(dict):
    """A dict that hashes by its items (used as a cache key); treat it as read-only."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=repr)))


def _hashable(value: Any) -> Any:
    if isinstance(value, dict) and not isinstance(value, FrozenDict):
        return FrozenDict({key: _hashable(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    return value


def process_cache(maxsize: int) -> Callable[[F], F]:
    """Keep the ``maxsize`` most recently used results of a loader, per process.

    Args:
        maxsize: how many distinct argument sets to keep (``1`` for data as large as an image set).

    Returns:
        A decorator; the decorated function has ``cache_clear()`` and ``cache_info()``. Dict and list
        arguments reach the function as :class:`FrozenDict` and tuples. The cached objects are shared by
        every later caller: do not change them in place.

    Examples:
        >>> calls = []
        >>> @process_cache(maxsize=2)
        ... def load(name, options):
        ...     calls.append(name)
        ...     return {"name": name, "size": options["size"]}
        >>> load("a", {"size": 1}) is load("a", {"size": 1}), calls
        (True, ['a'])
        >>> _ = load("b", {"size": 1}); _ = load("c", {"size": 1}); _ = load("a", {"size": 1})
        >>> calls  # "a" was the least recently used of three: evicted, loaded again
        ['a', 'b', 'c', 'a']
    """

    def decorate(function: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize)(function)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return cached(*(_hashable(a) for a in args), **{k: _hashable(v) for k, v in kwargs.items()})

        wrapper.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        wrapper.cache_info = cached.cache_info  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
