"""Runnable tasks, one module each: config, jobs, one run, summary, report.

Importing this package registers the built-in tasks with the engine
(:func:`pdenets.experiments.register_task`); ``pdenets run <task>`` dispatches on that
registry. See ``docs/tasks.md`` for adding one.
"""

from ..experiments.task import REPRODUCTIONS, TASKS, get_reproduction, get_task
from . import coin_claims, coin_forecast, coin_tabular, fewshot, geodesic, image_classification, node_classification, synthetic  # noqa: F401

__all__ = ["TASKS", "REPRODUCTIONS", "get_task", "get_reproduction"]
