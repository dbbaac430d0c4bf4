"""``pdenets run few-shot`` on a small features file: every study, resumable, numbers pinned for the seeds."""

import dataclasses
from itertools import product

import numpy as np
import pytest
import torch

from pdenets.data.fewshot import FeatureSet, QueryShape, save_features
from pdenets.experiments import run_task
from pdenets.experiments.config import ConfigError
from pdenets.models.fewshot import ablation_method, method_from_name
from pdenets.tasks.fewshot.config import MAX_TASKS_PER_CELL, FewShotConfig
from pdenets.tasks.fewshot.task import FewShotTask


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    rng = np.random.default_rng(0)
    classes, per_class, dim = 24, 22, 12
    centres = rng.normal(size=(classes, dim)) * 1.3
    values = np.repeat(centres, per_class, 0) + rng.normal(size=(classes * per_class, dim))
    feature_set = FeatureSet(
        torch.tensor(values, dtype=torch.float32),
        torch.arange(classes).repeat_interleave(per_class),
        tuple(f"c{i}" for i in range(classes)),
        base_classes=tuple(range(8)),
        novel_classes=tuple(range(8, 24)),
    )
    return str(save_features(feature_set, tmp_path_factory.mktemp("features") / "toy.npz"))


def small(features, **changes):
    epochs = {name: {"epochs": 30} for name in ("convection", "external", "internal")}
    values = dict(
        datasets=[features],
        tasks=40,
        tasks_per_job=20,
        shots=[1, 5],
        workers=1,
        studies=["ablation"],
        methods=["prototype", "laplacianshot", "convection", "external", "internal"],
        method_settings=epochs,
    )
    values.update(changes)
    return FewShotTask(FewShotConfig(**values))


BALANCED = "balanced, 15 queries per class"


def test_every_setting_reaches_the_job_key(features):
    from pdenets.experiments import job_key

    def keys(**changes):
        task = small(features, **changes)
        task.prepare()
        return {job_key("few-shot", job) for job in task.jobs()}

    base = keys()
    for change in (
        {"preprocessing": "raw"},
        {"seed": 3},
        {"queries": [10]},
        {"query_distributions": ["dirichlet:2"]},
        {"open_set": [1]},
        {"query_modes": ["one-at-a-time"]},
    ):
        assert not base & keys(**change), change
    assert base == keys(workers=2, chunk_size=7)

    def methods_changed(**change):
        settings = {name: {"epochs": 30} for name in ("convection", "external", "internal")}
        for name, values in change.items():
            settings[name] = {**settings.get(name, {}), **values}
        task = small(features, method_settings=settings)
        task.prepare()
        return {job.method for job in task.jobs() if job_key("few-shot", job) not in base}

    # a setting changes the keys of exactly the method it belongs to: the others stay stored
    assert methods_changed(external={"mu": 0.02}) == {"external"}
    assert methods_changed(laplacianshot={"lam": 0.3}) == {"laplacianshot"}
    assert methods_changed(internal={"n_top": 6}, external={"n_top": 6}) == {"external", "internal"}
    assert methods_changed(internal={"num_steps": 4}) == {"internal"}
    assert methods_changed(convection={"lr": 0.05}) == {"convection"}
    # rectification reaches exactly the methods that read prototypes (the heads through their initialization)
    task = small(features, preprocessing="tricks")
    task.prepare()
    rectified = {job.method for job in task.jobs() if job.preprocessing.rectify}
    assert rectified == {"prototype", "convection", "external", "internal"}
    paper = small(features, defaults="paper")
    paper.prepare()
    assert {job.method for job in paper.jobs() if job_key("few-shot", job) not in base} == {
        "laplacianshot",
        "convection",
        "external",
        "internal",
    }


def test_a_method_registered_after_import_is_accepted(features, tmp_path):
    from dataclasses import dataclass

    from pdenets.models.fewshot import FewShotMethod, register_method
    from pdenets.models.fewshot.base import METHOD_CLASSES

    @dataclass(frozen=True)
    class LateSettings:
        pass

    @register_method
    class Late(FewShotMethod):
        name = "late-test"
        is_transductive = False
        settings_class = LateSettings

        def predict_proba(self, batch):
            return torch.full(
                batch.query.shape[:2] + (batch.ways,), 1.0 / batch.ways, dtype=batch.query.dtype
            )

    try:
        outcome = run_task(
            small(features, methods=["late-test"], shots=[1], tasks=5, tasks_per_job=5),
            out=tmp_path / "run",
            progress=False,
        )
        assert outcome.results["ablation"][BALANCED]["toy"]["5-way 1-shot"]["late-test"]["tasks"] == 5
    finally:
        METHOD_CLASSES.unregister("late-test")


@pytest.mark.parametrize(
    "changes",
    [
        dict(n_top_values=[3]),
        dict(ways=[2]),
        dict(tasks=MAX_TASKS_PER_CELL, sensitivity_tasks=MAX_TASKS_PER_CELL, timing_tasks=MAX_TASKS_PER_CELL),
        dict(open_set=[0, 1], timing_layers=[0], backbone_seed=0),
        dict(strengths=[0.0]),
        dict(query_distributions=["balanced", "dirichlet:0.5"]),
        dict(query_modes=["one-at-a-time"]),
    ],
)
def test_values_at_the_edge_of_each_bound_are_accepted(changes):
    FewShotConfig(**changes).validate()


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(n_top_values=[4, 2]), "n_top_values must be >= 3"),
        (dict(ways=[5, 1]), "ways must be >= 2: a 1-way task has nothing to classify"),
        (dict(tasks=MAX_TASKS_PER_CELL + 1), "tasks=10000001 is more than 10,000,000 tasks per cell"),
        (dict(timing_tasks=MAX_TASKS_PER_CELL + 1), "timing_tasks=10000001 is more than"),
        (dict(sensitivity_tasks=0), "sensitivity_tasks must be >= 1, got 0"),
        (dict(open_set=[-1]), "open_set must be >= 0"),
        (dict(strengths=[-0.5]), "strengths must be >= 0"),
        (dict(fixed_strength=0.0), "fixed_strength must be > 0"),
        (dict(shots=[]), "shots must not be empty"),
        (dict(query_modes=["alone"]), r"query_modes must be one of \['together', 'one-at-a-time'\]"),
        (dict(query_distributions=["uniform"]), "query_distributions: query distribution 'uniform'"),
        (dict(query_distributions=["dirichlet:0"]), "query_distributions: .*concentration A > 0"),
        (dict(defaults="mine"), r"defaults must be one of \['library', 'paper'\]"),
        (dict(studies=["speed"]), "studies must be one of"),
        (dict(method_settings={"nope": {}}), "method_settings.nope: unknown method"),
        (dict(method_settings={"internal": {"bogus": 1}}), "method_settings.internal: .*'bogus'"),
    ],
)
def test_a_value_past_a_bound_is_refused_naming_the_setting(changes, message):
    with pytest.raises(ConfigError, match=message):
        FewShotConfig(**changes).validate()


def test_shapes_are_every_combination_in_the_order_of_the_settings():
    config = FewShotConfig(
        queries=[10, 15],
        query_distributions=["balanced", "dirichlet:2"],
        open_set=[0, 1],
        query_modes=["together", "one-at-a-time"],
    )
    shapes = config.shapes()
    assert len(shapes) == 2 * 2 * 2 * 2
    expected = [
        (queries, QueryShape(spread, open_set), mode)
        for queries, spread, open_set, mode in product(
            [10, 15], ["balanced", "dirichlet:2"], [0, 1], ["together", "one-at-a-time"]
        )
    ]
    assert shapes == expected
    assert FewShotConfig().shapes() == [(15, QueryShape("balanced", 0), "together")]


def test_a_method_takes_the_chosen_defaults_then_its_settings_then_the_changes():
    settings = {"internal": {"num_steps": 4, "step_size": 0.25}}
    library = FewShotConfig(method_settings=settings)
    paper = FewShotConfig(method_settings=settings, defaults="paper")
    assert (
        library.method("internal").settings
        == method_from_name("internal", num_steps=4, step_size=0.25).settings
    )
    assert (
        paper.method("internal").settings == ablation_method("internal", num_steps=4, step_size=0.25).settings
    )
    assert library.method("internal").settings != paper.method("internal").settings
    changed = library.method("internal", num_steps=7).settings
    assert (changed.num_steps, changed.step_size) == (7, 0.25)  # the change wins, the other setting stays
    assert library.method("prototype").settings == method_from_name("prototype").settings


def test_quick_config_changes_only_the_task_counts_the_sweeps_and_the_backbone_epochs():
    quick, full = FewShotTask.quick_config(), FewShotConfig()
    changed = {f.name for f in dataclasses.fields(full) if getattr(quick, f.name) != getattr(full, f.name)}
    assert changed == {
        "tasks",
        "tasks_per_job",
        "sensitivity_tasks",
        "n_top_values",
        "strengths",
        "step_counts",
        "timing_layers",
        "timing_tasks",
        "backbone_epochs",
    }
    assert (quick.tasks, quick.tasks_per_job, quick.backbone_epochs) == (50, 50, 3)
    for sweep in ("n_top_values", "strengths", "step_counts", "timing_layers"):  # two-point sweeps
        assert len(getattr(quick, sweep)) == 2 and set(getattr(quick, sweep)) <= set(getattr(full, sweep))
    quick.validate()
