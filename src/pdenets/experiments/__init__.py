"""The experiment engine every task uses.

* :mod:`~pdenets.experiments.task` — the task protocol and the task registry;
* :mod:`~pdenets.experiments.context` — :class:`RunContext`: how a run runs (device, data folder, threads,
  place under ``torchrun``), resolved once and handed to every job;
* :mod:`~pdenets.experiments.runner` — :func:`run_task`: validate, run directory, store,
  resume, process pool or Ray, progress, ``results.json``, CSVs, report;
* :mod:`~pdenets.experiments.results` — a task's typed results and their ``results.json`` form;
* :mod:`~pdenets.experiments.config` — dataclass configs merged and checked by OmegaConf;
* :mod:`~pdenets.experiments.store` — the SQLite results store;
* :mod:`~pdenets.experiments.rundir` — safe, locked run directories with atomic writes;
* :mod:`~pdenets.experiments.parallel` — inline / process pool / Ray execution;
* :mod:`~pdenets.models.training` — steps, accuracy, early stopping, divergence guard;
* :mod:`~pdenets.experiments.summary` — group statistics, ``mean ± std``, paper vs ours;
* :mod:`~pdenets.experiments.report`, :mod:`~pdenets.experiments.plots` — reports and figures.

See ``docs/tasks.md`` for adding a task.
"""

from ..models.training import EarlyStopping, FitResult, accuracy, evaluation_mode, fit
from .config import ConfigError, TaskConfig, check_fields, config_to_dict, resolve_config, setting
from .context import RunContext, run_context
from .report import Report
from .results import FLATTEN, OMIT_NONE, RunFacts, TaskResults, results_to_dict
from .rundir import RunDirectory, RunDirectoryError
from .runner import JobFailedError, RunInterrupted, RunOutcome, run_task
from .store import ResultsStore, StoredRun, StoreError
from .summary import PaperValue, Stats, format_mean_std, group_summary, paper_and_ours
from .task import (
    Task,
    get_reproduction,
    get_task,
    job_key,
    register_reproduction,
    register_task,
    registered_reproductions,
    registered_tasks,
)

__all__ = [
    "ConfigError",
    "TaskConfig",
    "config_to_dict",
    "resolve_config",
    "setting",
    "check_fields",
    "RunContext",
    "run_context",
    "Report",
    "TaskResults",
    "RunFacts",
    "results_to_dict",
    "FLATTEN",
    "OMIT_NONE",
    "RunDirectory",
    "RunDirectoryError",
    "JobFailedError",
    "RunInterrupted",
    "RunOutcome",
    "run_task",
    "ResultsStore",
    "StoreError",
    "StoredRun",
    "PaperValue",
    "Stats",
    "format_mean_std",
    "group_summary",
    "paper_and_ours",
    "Task",
    "get_reproduction",
    "get_task",
    "job_key",
    "register_reproduction",
    "register_task",
    "registered_reproductions",
    "registered_tasks",
    "EarlyStopping",
    "FitResult",
    "accuracy",
    "evaluation_mode",
    "fit",
]
