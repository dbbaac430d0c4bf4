"""Runnable tasks, one package each: ``config.py``, ``task.py`` (jobs, one run, summary), ``report.py`` and,
where the application has one, ``protocol.py`` (data preparation, splits, windows, its baselines).

Each package registers its task with the engine (:func:`pdenets.experiments.register_task`) when it is
imported. The engine's task registry (:data:`pdenets.experiments.TASKS`, a
:class:`pdenets._registry.Registry`) imports every module and package here the first time it is read (the
package root names this package as the tasks' home): adding a task is adding one module or package here. A
user's own package registers its tasks through the ``pdenets.tasks`` entry-point group. See ``docs/tasks.md``.
"""
