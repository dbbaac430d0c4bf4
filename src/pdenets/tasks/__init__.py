"""Tasks: each is a config dataclass plus ``run(config, run_dir) -> results``.

:data:`TASKS` is what ``pdenets run <task>`` dispatches on; :data:`REPRODUCTIONS` names the
paper tables behind ``pdenets reproduce <table>``. A task module provides

* a config dataclass (every field settable with ``--set key=value`` or a YAML file);
* ``quick_config()`` — the small variant behind ``--quick`` (about a minute on 2 cores);
* ``run(config, run_dir, progress=True) -> dict`` that writes ``results.json``, CSVs,
  PNG plots and ``report.md``/``report.html`` into the :class:`RunDirectory`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Dict

__all__ = ["TaskSpec", "Reproduction", "TASKS", "REPRODUCTIONS", "get_task"]


@dataclass(frozen=True)
class TaskSpec:
    name: str
    module: str
    config_class: str
    description: str
    #: command-line shortcuts: ``--dataset cora,citeseer`` sets the config field ``datasets``.
    aliases: Dict[str, str] = field(default_factory=dict)

    def load(self):
        return importlib.import_module(self.module)

    @property
    def config(self):
        return getattr(self.load(), self.config_class)

    @property
    def quick_config(self) -> Callable:
        return self.load().quick_config

    @property
    def run(self) -> Callable:
        return self.load().run


@dataclass(frozen=True)
class Reproduction:
    task: str
    full: str
    quick: str
    description: str


_GRAPH_ALIASES = {"dataset": "datasets", "model": "models", "splits": "num_splits", "inits": "num_inits",
                  "workers": "workers", "ray-address": "ray_address", "max-epochs": "max_epochs",
                  "report-only": "report_only"}

TASKS: Dict[str, TaskSpec] = {
    "synthetic": TaskSpec(
        "synthetic", "pdenets.tasks.synthetic", "SyntheticConfig",
        "Diff-ResNet synthetic suite: XOR diffusion (L/D), moon/circle/spiral with and without diffusion",
        {"dataset": "datasets", "seeds": "seeds", "epochs": "epochs"},
    ),
    "node-classification": TaskSpec(
        "node-classification", "pdenets.tasks.node_classification", "NodeClassificationConfig",
        "semi-supervised node classification: random-split protocol, Diff-ResNet and PyG baselines",
        _GRAPH_ALIASES,
    ),
}

REPRODUCTIONS: Dict[str, Reproduction] = {
    "table1": Reproduction("node-classification", "table1_config", "table1_quick_config",
                           "paper 000, Table 1 (Cora, CiteSeer; 6 models; 100 splits x 20 inits) and Fig. 5"),
}


def get_task(name: str) -> TaskSpec:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; available: {', '.join(sorted(TASKS))}")
    return TASKS[name]
