"""The memory budget loaders check declared sizes against before they allocate anything.

A file declares the shapes it holds (an ``.npz`` header, a sparse matrix's ``shape``, the
largest node id of an index file). Loaders compute what those shapes would cost in memory
and refuse, naming the file, anything above the budget, so that a 52-byte pickle cannot
ask for 21 GiB. The budget is ``$PDENETS_MEMORY_BUDGET`` (bytes, or with a unit: ``512M``,
``16G``), else half of the machine's memory, at most 8 GiB.

Shared references count once per reference: a pickle can hold one array under 20,000 keys
in a few kilobytes, and every reader that stacks, copies or converts what it loaded makes
20,000 copies. :func:`check_expanded` measures what loaded data expands to, counting every
reference, before anything is stacked or converted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from .._limits import MEMORY_BUDGET_ENV_VAR, MemoryBudgetError, format_bytes, memory_budget
from .errors import DatasetError

__all__ = [
    "MEMORY_BUDGET_ENV_VAR",
    "MemoryBudgetError",
    "memory_budget",
    "check_allocation",
    "format_bytes",
    "expanded_bytes",
    "check_expanded",
]

_DECLARED = "a damaged or hostile file declares sizes it does not hold"


def check_allocation(
    count: Union[int, float], itemsize: int, what: str, path: Union[str, Path], *, reason: str = _DECLARED
) -> None:
    """Refuse allocating ``count`` items of ``itemsize`` bytes for ``what`` from ``path`` above the budget.

    ``count`` may be an integer of any size (a declared shape's product) or an infinite float;
    ``reason`` says how a file comes to ask for that much (default: it declares sizes it does
    not hold).
    """
    budget = memory_budget()
    if isinstance(count, float) and not count < float("inf"):
        needed: Union[int, float] = float("inf")
    else:
        needed = int(count) * int(itemsize)
    if needed > budget:
        raise DatasetError(
            f"{path}: {what} would need {format_bytes(needed)}, more than the memory budget "
            f"{format_bytes(budget)}; {reason}. If the file is genuine, raise "
            f"${MEMORY_BUDGET_ENV_VAR} (e.g. 32G)"
        )


def _leaf_bytes(value: Any) -> Optional[int]:
    """Bytes of a value that holds no references to walk, or ``None`` for a container."""
    if value is None or isinstance(value, (bool, int, float)):
        return 8
    if isinstance(value, complex):
        return 16
    if isinstance(value, str):
        return 4 * len(value)  # as numpy holds text: 4 bytes per character
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, np.ndarray):
        return None if value.dtype.hasobject else int(value.nbytes)
    if isinstance(value, np.generic):
        return int(value.nbytes)
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return None
    if hasattr(value, "tocsr") and hasattr(value, "__dict__"):  # a scipy sparse matrix: walk its arrays
        return None
    if callable(getattr(value, "element_size", None)) and callable(getattr(value, "numel", None)):
        return int(value.numel()) * int(value.element_size())  # a tensor: its (dense) data
    return 8


def _references(value: Any) -> Tuple[int, List[Any]]:
    """Own bytes of a container (8 per reference it holds) and the values it refers to."""
    if isinstance(value, dict):
        return 16 * len(value), [*value.keys(), *value.values()]
    if isinstance(value, np.ndarray):  # an object array
        return int(value.nbytes), list(value.flat)
    if isinstance(value, (list, tuple, set, frozenset)):
        return 8 * len(value), list(value)
    return 0, [item for item in vars(value).values() if isinstance(item, (np.ndarray, list, tuple, dict))]


class _Cycle(Exception):
    pass


def expanded_bytes(value: Any) -> int:
    """Bytes ``value`` takes once every reference to a shared object is counted as a copy of it.

    Arrays and tensors count their data, numbers 8 bytes, text 4 bytes per character, and a
    container 8 bytes per reference it holds plus what each reference expands to. Each distinct
    object is visited once and its expanded size computed once (a dynamic program over the graph
    of references), so the time grows with the number of distinct objects even when the result
    is astronomical: 60 nested lists ``x = [x, x]`` expand to about 2^64 bytes in 60 steps.

    Raises:
        ValueError: ``value`` refers to itself (a cycle of references).

    Examples:
        >>> import numpy as np
        >>> block = np.zeros(1024, dtype=np.uint8)
        >>> expanded_bytes({key: block for key in range(3)})  # 3 keys, 3 references, 3 KiB of data
        3144
        >>> x = []
        >>> for _ in range(60):
        ...     x = [x, x]
        >>> expanded_bytes(x) > 2**63
        True
    """
    sizes: Dict[int, int] = {}
    alive: List[Any] = []  # every measured object stays referenced, so that no id is reused
    on_path = set()
    stack: List[List[Any]] = [[value, None]]
    while stack:
        frame = stack[-1]
        item, parts = frame
        key = id(item)
        if parts is None:
            if key in sizes:
                stack.pop()
                continue
            leaf = _leaf_bytes(item)
            if leaf is not None:
                sizes[key] = leaf
                alive.append(item)
                stack.pop()
                continue
            on_path.add(key)
            own, children = _references(item)
            containers = []
            for child in children:
                child_leaf = _leaf_bytes(child)
                if child_leaf is not None:
                    own += child_leaf
                    continue
                containers.append(child)
                if id(child) in on_path:
                    raise _Cycle()
                if id(child) not in sizes:
                    stack.append([child, None])
            frame[1] = (own, containers)
        else:
            own, containers = parts
            sizes[key] = own + sum(sizes[id(child)] for child in containers)
            on_path.discard(key)
            alive.append(item)
            stack.pop()
    return sizes[id(value)]


def check_expanded(value: Any, what: str, path: Union[str, Path]) -> None:
    """Refuse loaded data whose every reference, counted as a copy (:func:`expanded_bytes`), exceeds the
    budget.

    Raises:
        DatasetError: the expanded size is above the memory budget, or the data refers to
            itself (a cycle, which no array data needs); the message names ``path``.
    """
    try:
        needed = expanded_bytes(value)
    except _Cycle:
        raise DatasetError(
            f"{path}: {what} refers to itself (a cycle of references); a file of arrays, lists and "
            "dicts never needs one"
        ) from None
    check_allocation(
        needed,
        1,
        f"{what}, with every shared reference counted as a copy,",
        path,
        reason="a small file can refer to one array many times, and stacking or converting the data "
        "copies it once per reference",
    )
