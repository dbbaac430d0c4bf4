"""Every task's ``--quick`` configuration is valid and plans a small set of distinct jobs.

Running every ``--quick`` takes minutes (``make check-report`` does, and opens each report in a browser);
here each is validated and planned, so a quick config broken by a new setting fails in seconds."""

import pytest

from pdenets.experiments import job_key
from pdenets.experiments.task import registered_tasks

#: tasks whose jobs need ``prepare()`` first, and why it is not run here
NEEDS_PREPARE = {
    "few-shot": "planning reads the features file, which --quick embeds from Omniglot first (~80 s)"
}
BUILTIN = sorted(name for name, task in registered_tasks().items() if task.__module__.startswith("pdenets."))


@pytest.mark.parametrize("name", BUILTIN)
def test_quick_config_is_valid_and_plans_distinct_jobs(name):
    task_class = registered_tasks()[name]
    task = task_class(task_class.quick_config())
    task.validate()
    if name in NEEDS_PREPARE:  # validated only (see NEEDS_PREPARE for why)
        return
    jobs = list(task.jobs())
    keys = {job_key(name, job) for job in jobs}
    assert 0 < len(jobs) <= 100, f"--quick plans {len(jobs)} jobs"
    assert len(keys) == len(jobs), "two --quick jobs share a store key: one would never run"
