"""The memory budget loaders check declared sizes against before they allocate anything.

A file declares the shapes it holds (an ``.npz`` header, a sparse matrix's ``shape``, the
largest node id of an index file). Loaders compute what those shapes would cost in memory
and refuse, naming the file, anything above the budget, so that a 52-byte pickle cannot
ask for 21 GiB. The budget is ``$PDENETS_MEMORY_BUDGET`` (bytes, or with a unit: ``512M``,
``16G``), else half of the machine's memory, at most 8 GiB.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional, Union

from .errors import DatasetError

__all__ = ["MEMORY_BUDGET_ENV_VAR", "memory_budget", "check_allocation", "format_bytes"]

MEMORY_BUDGET_ENV_VAR = "PDENETS_MEMORY_BUDGET"
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def format_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(count) < 1024 or unit == "TiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"  # pragma: no cover


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
        ValueError: ``$PDENETS_MEMORY_BUDGET`` is set but is not such a size.

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
            raise ValueError(f"${MEMORY_BUDGET_ENV_VAR}={text!r} is not a size such as 4000000000, 512M or 16G")
        return int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    physical = _physical_memory()
    return min(8 * 2**30, physical // 2) if physical else 8 * 2**30


def check_allocation(count: int, itemsize: int, what: str, path: Union[str, Path]) -> None:
    """Refuse allocating ``count`` items of ``itemsize`` bytes for ``what`` from ``path`` above the budget."""
    needed = int(count) * int(itemsize)
    budget = memory_budget()
    if needed > budget:
        raise DatasetError(f"{path}: {what} would need {format_bytes(needed)}, more than the memory budget "
                           f"{format_bytes(budget)}; a damaged or hostile file declares sizes it does not hold. If "
                           f"the file is genuine, raise ${MEMORY_BUDGET_ENV_VAR} (e.g. 32G)")
