"""A dataclass field with its help text: how every settings dataclass of the library declares an option.

It sits below the packages (models' settings use it as the tasks' configs do), and
:mod:`pdenets.experiments.config` exports it as part of the engine's configuration API.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import field
from typing import Any

__all__ = ["setting"]


def setting(default: Any, help: str = "", **metadata: Any) -> Any:
    """A config field with its help text (shown by ``--help``); mutable defaults are copied per instance.

    Args:
        default: the field's default value (a list, dict, set or dataclass is deep-copied for every instance).
        help: the text ``pdenets run TASK --help`` shows for the option (default: ``""``).
        **metadata: more field metadata, e.g. ``key=False`` for a job-spec field that cannot change a result,
            ``renamed_from=("hidden",)`` for a field whose old names are still read (with a warning).

    Returns:
        A ``dataclasses.field`` to assign in a ``TaskConfig`` subclass.

    Examples:
        >>> from dataclasses import dataclass
        >>> from typing import List
        >>> @dataclass
        ... class Demo:
        ...     seeds: List[int] = setting([0, 1], "data seeds")
        >>> Demo().seeds is Demo().seeds, dataclasses.fields(Demo)[0].metadata["help"]
        (False, 'data seeds')
    """
    metadata = {"help": help, **metadata}
    if isinstance(default, (list, dict, set)) or (
        dataclasses.is_dataclass(default) and not isinstance(default, type)
    ):
        return field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return field(default=default, metadata=metadata)
