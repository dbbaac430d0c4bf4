"""Every registered task runs its ``--quick`` configuration, shrunk to toy size, end to end.

The run goes through the engine as ``pdenets run TASK --quick`` does (validate, prepare, plan, run, summarize,
report), and the report must carry the engine's header and settings table and show only figures it wrote.
``test_quick_configs.py`` plans the unshrunk quick configurations; this module runs them.
"""

import dataclasses
import json
import re
import sqlite3

import numpy as np
import pytest
import torch
from datafiles import CHICKENPOX, CORA_NPZ, MNIST, cifar10, requires_data

from pdenets.data.fewshot import FeatureSet, save_features
from pdenets.experiments import TaskResults, run_task
from pdenets.experiments.rundir import to_plain
from pdenets.experiments.task import registered_tasks

#: what shrinks each task's quick configuration to a few seconds (the settings, not the code paths, get
#: smaller)
TOY = {
    "coin-claims": dict(samples=400, sigmas=[0.5], drop_rates=[0.25]),
    "coin-forecast": dict(
        datasets=["chickenpox"],
        models=["linear", "window-mlp", "coin-forecast"],
        epochs=1,
        diffusion_step_sizes=[0.0, 0.5],
        diffusion_num_steps=[1, 2],
    ),
    "coin-tabular": dict(labels_per_class=[5], splits=1, epochs=5),
    "few-shot": dict(
        tasks=20,
        tasks_per_job=20,
        shots=[1],
        studies=["ablation"],
        methods=["prototype", "laplacianshot", "internal"],
        method_settings={"internal": {"epochs": 5}},
    ),
    "geodesic": dict(
        weight_decays=[0.0],
        figure_weight_decay=0.0,
        epochs=1,
        train_limit=256,
        test_limit=128,
        track_points=40,
        robustness_points=40,
        projection_points=20,
        ablation_counts=[0, 8],
    ),
    "image-classification": dict(
        models=["resnet-44", "hamiltonian-74"],
        epochs=1,
        train_limit=200,
        test_limit=200,
        flops_models=["resnet-44"],
    ),
    "node-classification": dict(num_splits=1, max_epochs=3, patience=2),
    "synthetic": dict(
        datasets=["moon"],
        points_per_class=40,
        test_points_per_class=40,
        epochs=2,
        paper_epochs=2,
        feature_epochs=[0, 2],
        xor_points_per_disc=20,
        xor_seeds=[0],
        xor_steps=20,
        xor_report_steps=[1, 20],
        paper_script_check=False,
    ),
}
BUILTIN = sorted(name for name, task in registered_tasks().items() if task.__module__.startswith("pdenets."))
#: the data files each toy run reads (the others need none); without them it skips, naming the first missing
#: one
NEEDS = {
    "coin-forecast": (CHICKENPOX,),
    "geodesic": MNIST,
    "image-classification": cifar10(0, 40, 50),
    "node-classification": (CORA_NPZ,),
}


def test_every_builtin_task_has_a_toy_size():
    assert sorted(TOY) == BUILTIN, "give every built-in task its toy-size settings in TOY"


@pytest.fixture(scope="module")
def fewshot_features(tmp_path_factory):
    """A features file of 24 well-separated classes (8 base, 16 novel) in place of embedded Omniglot."""
    rng = np.random.default_rng(0)
    classes, per_class = 24, 20
    values = np.repeat(rng.normal(size=(classes, 8)) * 1.5, per_class, 0) + rng.normal(
        size=(classes * per_class, 8)
    )
    feature_set = FeatureSet(
        torch.tensor(values, dtype=torch.float32),
        torch.arange(classes).repeat_interleave(per_class),
        tuple(f"c{i}" for i in range(classes)),
        base_classes=tuple(range(8)),
        novel_classes=tuple(range(8, 24)),
    )
    return str(save_features(feature_set, tmp_path_factory.mktemp("features") / "toy.npz"))


@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=requires_data(*NEEDS[name]) if name in NEEDS else ()) for name in BUILTIN],
)
def test_quick_config_runs_end_to_end_at_toy_size(name, tmp_path, fewshot_features, device):
    # device: needs few-shot's heads (the toy run's "internal") to train with their initial parameters on the
    # features' device (models/fewshot/heads.py: initial_parameters draws them on the CPU), and coin-claims to
    # read config.device (its checks run on the CPU whatever the device)
    task_class = registered_tasks()[name]
    changes = dict(TOY[name], workers=1, device=str(device))  # the run's jobs train and evaluate there
    if name == "few-shot":
        changes["datasets"] = [fewshot_features]
    task = task_class(dataclasses.replace(task_class.quick_config(), **changes))
    outcome = run_task(task, out=tmp_path / "run", progress=False)

    assert outcome.stored == outcome.planned > 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["runs_stored"] == results["runs_planned"] == outcome.planned
    # typed, frozen results whose plain form is results.json (NaN written as null), figures included
    assert isinstance(outcome.summary, TaskResults) and dataclasses.is_dataclass(outcome.summary)
    assert type(outcome.summary).__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert results == json.loads(json.dumps(to_plain(outcome.summary.to_dict())))
    shown_figures = outcome.summary.figures
    assert all((tmp_path / "run" / name).is_file() for name in _figure_names(shown_figures))
    report = (tmp_path / "run" / "report.md").read_text()
    lines = report.splitlines()
    assert lines[0].startswith("# pdenets — ")
    assert lines[2].startswith(f"`pdenets run {name}`: {outcome.planned} of {outcome.planned} ")
    settings = report[report.index("\n## Settings\n") :]
    left_out = task.settings_left_out()  # settings that do nothing for this run are named, not tabled
    assert all(
        f"| {item.name} |" in settings or (item.name in left_out and item.name in settings)
        for item in dataclasses.fields(task.config)
    )
    assert "## Settings" not in report[: report.index("\n## Settings\n")], (
        "the settings table comes once, at the end"
    )
    shown = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report)
    assert all((tmp_path / "run" / figure).is_file() for figure in shown)
    assert (tmp_path / "run" / "report.html").is_file()
    assert outcome.left_out == (), "the task's record_fields declare a field its own jobs do not write"
    _damaged_records_are_left_out_and_named(task, tmp_path / "run", outcome.stored)


def _damaged_records_are_left_out_and_named(task, run, stored):
    """``--report-only`` on a store where one run lacks a field the task reads and another holds text in a
    number's place: both are left out and named (key and field), the rest is reported."""
    from pdenets.experiments.task import job_key

    from ..helpers.stores import drop_field, edit_record, set_field

    specs = {job_key(task.name, spec): spec for spec in task.jobs()}
    with sqlite3.connect(run / "results.sqlite") as db:
        rows = db.execute("SELECT key, record FROM runs WHERE status = 'ok' ORDER BY rowid").fetchall()
    key, record = rows[0][0], json.loads(rows[0][1])
    fields = task.record_fields(specs[key], record)
    assert fields, f"{task.name} declares no record fields"
    field = next(iter(fields))
    edit_record(run, drop_field(field), key=key)
    damaged = {key: f"field {field!r} is missing"}
    if len(rows) > 1:
        other, other_record = rows[1][0], json.loads(rows[1][1])
        name, kind = next(iter(task.record_fields(specs[other], other_record).items()))
        wrong = 7 if kind == "text" else "damaged"
        edit_record(run, set_field(name, wrong), key=other)
        damaged[other] = f"field {name!r} holds"
    outcome = run_task(task, out=run, report_only=True, progress=False)
    assert dict(outcome.left_out).keys() == damaged.keys()
    for key, problem in outcome.left_out:
        assert problem.startswith(damaged[key]), problem
    report = (run / "report.md").read_text()
    assert all(f"`{key}`: {damaged[key]}" in report for key in damaged)
    assert json.loads((run / "results.json").read_text())["runs_stored"] == stored


def _figure_names(figures):
    """Every file name in a report's ``figures`` entry (a name, or lists and mappings of names)."""
    if isinstance(figures, str):
        return [figures]
    values = figures.values() if isinstance(figures, dict) else figures
    return [name for value in values for name in _figure_names(value)]
