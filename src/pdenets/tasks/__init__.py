"""Tasks: each is a config dataclass plus ``run(config, run_dir) -> results``.

:data:`TASKS` is what ``pdenets run <task>`` dispatches on. A task module provides

* a config dataclass (every field settable with ``--set key=value`` or a YAML file);
* ``quick_config()`` — the small variant behind ``--quick`` (about a minute on 2 cores);
* ``run(config, run_dir, progress=True) -> dict`` that writes ``results.json``, CSVs,
  PNG plots and ``report.md``/``report.html`` into the :class:`RunDirectory`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Dict

__all__ = ["TaskSpec", "TASKS", "get_task"]


@dataclass(frozen=True)
class TaskSpec:
    name: str
    module: str
    config_class: str
    description: str

    def load(self):
        module = importlib.import_module(self.module)
        return module

    @property
    def config(self):
        return getattr(self.load(), self.config_class)

    @property
    def quick_config(self) -> Callable:
        return self.load().quick_config

    @property
    def run(self) -> Callable:
        return self.load().run


TASKS: Dict[str, TaskSpec] = {
    "synthetic": TaskSpec(
        "synthetic", "pdenets.tasks.synthetic", "SyntheticConfig",
        "Diff-ResNet synthetic suite: XOR diffusion (L/D), moon/circle/spiral with and without diffusion",
    ),
}


def get_task(name: str) -> TaskSpec:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; available: {', '.join(sorted(TASKS))}")
    return TASKS[name]
