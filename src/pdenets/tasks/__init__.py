"""Runnable tasks, one package each: ``config.py``, ``task.py`` (jobs, one run, summary), ``report.py`` and,
where the application has one, ``protocol.py`` (data preparation, splits, windows, its baselines).

Importing this package imports every module and package in it, and each registers its task with the engine
(:func:`pdenets.experiments.register_task`): adding a task is adding one module or package here. The engine
finds this package through the ``pdenets.tasks`` entry point (see ``pyproject.toml``); a user's own package
registers its tasks the same way. See ``docs/tasks.md``.
"""

import importlib
import pkgutil

from ..experiments.task import REPRODUCTIONS, TASKS, get_reproduction, get_task

for _module in sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["TASKS", "REPRODUCTIONS", "get_task", "get_reproduction"]
