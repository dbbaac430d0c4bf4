"""The memory budget: how many bytes one loaded array may take, and byte counts in words.

The budget is ``$PDENETS_MEMORY_BUDGET`` (bytes, or with a unit: ``512M``, ``16G``), else half of the
machine's memory, at most 8 GiB. Every reader checks the sizes a file declares against it before it
allocates anything (the data readers through :mod:`pdenets.data.limits`, saved partitions through
:mod:`pdenets.operators.partition`).
"""

from __future__ import annotations

import os
import re
from decimal import Decimal
from typing import Any, Optional, Tuple, Union

import numpy as np

__all__ = ["MEMORY_BUDGET_ENV_VAR", "MemoryBudgetError", "memory_budget", "format_bytes", "npy_header"]

MEMORY_BUDGET_ENV_VAR = "PDENETS_MEMORY_BUDGET"
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class MemoryBudgetError(ValueError):
    """``$PDENETS_MEMORY_BUDGET`` is set to something that is not a size; the message names the variable.

    A ``ValueError`` of its own, so that loaders which turn a library's ``ValueError`` into
    "file corrupt" let it through unchanged.
    """


def format_bytes(count: Union[int, float]) -> str:
    """``count`` bytes in the largest binary unit up to TiB; exact for integers of any size.

    Examples:
        >>> format_bytes(512), format_bytes(3 * 2**29), format_bytes(10**400)[:12]
        ('512 B', '1.5 GiB', '9.095e+387 T')
    """
    if isinstance(count, float) and count != count:
        return "NaN B"
    if isinstance(count, float) and abs(count) == float("inf"):
        return f"{'-' if count < 0 else ''}infinitely many bytes"
    value = Decimal(int(count)) if isinstance(count, (int, np.integer)) else Decimal(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            break
        value /= 1024
    if unit == "B":
        return f"{value:.0f} B"
    return f"{value:.1f} {unit}" if abs(value) < 10**6 else f"{value:.3e} {unit}"


def _physical_memory() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def memory_budget() -> int:
    """Bytes a single loaded array may take (see the module docstring).

    Reads ``$PDENETS_MEMORY_BUDGET`` — a number of bytes, optionally with a unit ``K``,
    ``M``, ``G`` or ``T`` (powers of 1024, case-insensitive, an optional ``B``/``iB`` suffix:
    ``512M``, ``16GiB``). Without it, half of the machine's physical memory, at most 8 GiB
    (8 GiB where the memory cannot be read).

    Returns:
        The budget in bytes.

    Raises:
        MemoryBudgetError: ``$PDENETS_MEMORY_BUDGET`` is set but is not such a size (a ``ValueError``).

    Examples:
        >>> import os
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, {"PDENETS_MEMORY_BUDGET": "512M"}):
        ...     memory_budget()
        536870912
    """
    text = os.environ.get(MEMORY_BUDGET_ENV_VAR, "").strip()
    if text:
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", text, flags=re.IGNORECASE)
        if not match:
            raise MemoryBudgetError(
                f"${MEMORY_BUDGET_ENV_VAR}={text!r} is not a size such as 4000000000, 512M or 16G"
            )
        return int(Decimal(match.group(1)) * _UNITS[match.group(2).upper()])
    physical = _physical_memory()
    return min(8 * 2**30, physical // 2) if physical else 8 * 2**30


def npy_header(stream: Any) -> Tuple[Tuple[int, ...], np.dtype]:
    """The shape and dtype a ``.npy`` stream declares, read from its header alone (nothing allocated):
    what a reader checks against the budget before reading the array.

    Raises:
        ValueError: not a ``.npy`` header of version 1 or 2.
    """
    version = np.lib.format.read_magic(stream)
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise ValueError(f"unsupported .npy version {version}")
    shape, _, dtype = readers[version](stream)
    return tuple(int(size) for size in shape), np.dtype(dtype)
