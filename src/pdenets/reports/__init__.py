"""The report sections and figures of the built-in tasks, one module per task.

A task's :meth:`~pdenets.experiments.task.Task.report` starts the report with the engine's header
(:meth:`~pdenets.experiments.task.Task.new_report`), hands it to its module here with plain data
(the configuration, the results, the records, the run folder), and ends it with the engine's table of
settings (:meth:`~pdenets.experiments.task.Task.write_report`). So a task file holds its science,
and the tables, captions and plots live beside each other here.

This package sits below :mod:`pdenets.tasks`: it may use the engine, the data readers, the models
and the analysis, never a task module.
"""
