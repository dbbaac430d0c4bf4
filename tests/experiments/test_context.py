"""The run protocol: a job spec identifies a run, the runner resolves its context once and hands it to every
job (inline and in a process pool), and a record dataclass is the stored record's schema."""

import ast
import dataclasses
import importlib
import json
import os
import pkgutil
import sqlite3
from dataclasses import dataclass

import pytest
import torch
from contexttask import WhereConfig, WhereJob, WhereRecord, WhereTask

import pdenets.tasks
from pdenets.experiments import RunContext, TaskConfig, job_key, run_context, run_task
from pdenets.experiments.distributed import DistributedContext
from pdenets.experiments.runner import takes_context
from pdenets.experiments.task import registered_tasks


def _job_classes():
    """Every dataclass named ``...Job`` in the modules of ``pdenets.tasks``."""
    registered_tasks()  # imports every task module
    found = {}
    for module in pkgutil.walk_packages(pdenets.tasks.__path__, "pdenets.tasks."):
        loaded = importlib.import_module(module.name)
        for name, value in vars(loaded).items():
            if (
                name.endswith("Job")
                and dataclasses.is_dataclass(value)
                and value.__module__ == loaded.__name__
            ):
                found[f"{loaded.__name__}.{name}"] = value
    return found


def test_no_job_spec_holds_the_device_or_the_data_folder_and_each_is_built_by_keyword():
    classes = _job_classes()
    assert len(classes) >= 11  # every task's jobs (three tasks plan more than one kind)
    for name, cls in classes.items():
        fields = {field.name for field in dataclasses.fields(cls)}
        assert not fields & {"device", "data_dir"}, name
        assert cls.__dataclass_params__.frozen, name
        assert all(field.kw_only for field in dataclasses.fields(cls)), f"{name} takes positional arguments"


def test_no_task_module_parses_a_device_or_joins_the_processes_itself():
    """One parse of the device, by the runner: no ``torch.device(...)`` call and no ``distributed_context``
    in the tasks' code."""
    offenders = []
    for module in pkgutil.walk_packages(pdenets.tasks.__path__, "pdenets.tasks."):
        path = importlib.import_module(module.name).__file__
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                function = node.func
                called = getattr(function, "attr", None) or getattr(function, "id", None)
                base = getattr(getattr(function, "value", None), "id", None)
                if called == "distributed_context" or (called == "device" and base == "torch"):
                    offenders.append(f"{module.name}:{node.lineno}")
    assert not offenders, offenders


def test_the_context_is_the_configurations_device_parsed_once_with_its_folder_seed_and_threads():
    context = run_context(TaskConfig(device="cpu", data_dir="/data/here", seed=7, threads=2))
    assert context.device == torch.device("cpu") and isinstance(context.device, torch.device)
    assert (context.data_dir, context.seed, context.threads) == ("/data/here", 7, 2)
    assert context.distributed == DistributedContext(0, 1, "cpu")
    with pytest.raises(TypeError, match="must be a torch.device"):
        RunContext(device="cpu")


def test_under_torchrun_the_context_names_this_processes_device():
    """A process's own device (``cuda:<rank>`` under torchrun) wins over the configuration's string."""
    mine = DistributedContext(rank=1, world_size=2, device="cpu")
    context = run_context(TaskConfig(device="cpu"), mine)
    assert context.distributed is mine and context.device == torch.device("cpu")
    assert run_context(TaskConfig(), DistributedContext(1, 2, "meta")).device == torch.device("meta")


def test_a_run_job_of_one_parameter_is_still_called_without_the_context():
    def old(spec):
        return {}

    def new(spec, context):
        return {}

    def variadic(*arguments):
        return {}

    assert not takes_context(old)
    assert takes_context(new) and takes_context(variadic)


@pytest.mark.parametrize("workers", [1, 2])
def test_every_job_receives_the_runs_context_inline_and_in_worker_processes(tmp_path, workers):
    config = WhereConfig(count=4, workers=workers, threads=1, seed=3, data_dir=str(tmp_path / "data"))
    outcome = run_task(WhereTask(config), out=tmp_path / "run", progress=False)
    assert outcome.results["squares"] == [0.0, 1.0, 4.0, 9.0]
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as connection:
        records = [json.loads(text) for (text,) in connection.execute("SELECT record FROM runs")]
    assert len(records) == 4
    for record in records:
        assert set(record) == {field.name for field in dataclasses.fields(WhereRecord)}
        assert (record["device"], record["data_dir"], record["seed"], record["threads"]) == (
            "cpu",
            str(tmp_path / "data"),
            3,
            1,
        )
    # inline, the jobs ran in this process; with two workers, in the pool's processes (the context pickled)
    assert {record["pid"] == os.getpid() for record in records} == {workers == 1}


def test_the_context_never_enters_a_key():
    """Two data folders, two seeds of the context: the same specs, the same keys."""
    here = WhereTask(WhereConfig(data_dir="/a", threads=1))
    there = WhereTask(WhereConfig(data_dir="/b", threads=2))
    assert [job_key("where-it-runs", job) for job in here.jobs()] == [
        job_key("where-it-runs", job) for job in there.jobs()
    ]


def _old_spec():
    @dataclass(frozen=True)
    class Spec:
        size: int
        device: str

    return Spec


def _new_spec():
    @dataclass(frozen=True, kw_only=True)
    class Spec:
        size: int
        stored_constants = {"device": "cpu"}

    return Spec


def test_a_field_that_left_the_spec_keeps_the_keys_of_the_runs_stored_with_it():
    old, new = _old_spec(), _new_spec()
    assert job_key("demo", new(size=3)) == job_key("demo", old(3, "cpu"))
    assert job_key("demo", new(size=3)) != job_key("demo", old(3, "cuda"))  # a constant, not a wildcard
    assert job_key("demo", new(size=3)) != job_key("demo", new(size=4))


def test_the_record_type_is_the_stored_schema_and_report_only_leaves_a_broken_record_out(tmp_path):
    out = tmp_path / "run"
    run_task(WhereTask(WhereConfig(count=2, workers=1)), out=out, progress=False)
    with sqlite3.connect(out / "results.sqlite") as connection:
        key, text = connection.execute("SELECT key, record FROM runs ORDER BY key LIMIT 1").fetchone()
        record = json.loads(text)
        record["square"] = "four"
        connection.execute("UPDATE runs SET record = ? WHERE key = ?", (json.dumps(record), key))
    task = WhereTask(WhereConfig(count=2, workers=1))
    assert task.record_fields(WhereJob(index=0), {})["square"] == "number"
    outcome = run_task(task, out=out, progress=False, report_only=True)
    assert outcome.left_out == ((key, "field 'square' holds text 'four', not a number"),)
    assert len(outcome.results["squares"]) == 1
