"""``pdenets run few-shot`` on a small features file: every study, resumable, numbers pinned for the seeds."""

import numpy as np
import pytest
import torch

from pdenets.cli import main
from pdenets.data.fewshot import FeatureSet, save_features
from pdenets.experiments import run_task
from pdenets.tasks.fewshot.task import FewShotConfig, FewShotTask


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


def test_ablation_table_is_complete_and_pinned(features, tmp_path):
    outcome = run_task(small(features), out=tmp_path / "run", progress=False)
    assert list(outcome.results["ablation"]) == [BALANCED]
    table = outcome.results["ablation"][BALANCED]["toy"]
    assert set(table) == {"5-way 1-shot", "5-way 5-shot"}
    for cell in table.values():
        assert set(cell) == {"prototype", "laplacianshot", "convection", "external", "internal"}
        assert all(entry["tasks"] == 40 for entry in cell.values())
    assert (outcome.planned, outcome.stored) == (2 * 5 * 2, 20)
    pinned = {method: round(entry["mean"], 4) for method, entry in table["5-way 1-shot"].items()}
    assert pinned == PINNED_1_SHOT
    claim = outcome.results["claim"]["toy 5-way 1-shot"]
    assert set(claim) == {"convection", "external", "prototype"}
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| Internal convection-diffusion (Diff-ResNet) |" in report
    # rows no cell tells apart are named, with what in the run's settings keeps them together: convection
    # and external are 0.07 points apart at 1 shot here
    from types import SimpleNamespace

    from pdenets.tasks.fewshot.report import indistinct_pairs

    cells = {name: {m: SimpleNamespace(**e) for m, e in cell.items()} for name, cell in table.items()}
    pairs = indistinct_pairs(cells)
    assert ("external", "convection") in [pair[:2] for pair in pairs]
    assert "toy: External convection-diffusion and Convection cannot be told apart" in report
    assert "its regularizer weighs μ = 0.01" in report
    assert report.count("cannot be told apart") == len(pairs)


def test_rows_told_apart_by_nothing_are_explained_by_the_runs_own_settings():
    """Under the library defaults the heads start as nearest prototype (the cause named, `--defaults paper`
    offered); under the paper's, nothing in the settings holds the mechanism back and the report says the
    intervals are what hides it, never suggesting the settings it already has."""
    from pdenets.tasks.fewshot.report import _why_alike

    library = _why_alike("external", FewShotConfig())
    assert "starts as nearest prototype" in library and "`--defaults paper`" in library
    assert "μ = 0.01" in library
    paper = _why_alike("external", FewShotConfig(defaults="paper"))
    assert "starts at random and takes 100 SGD steps" in paper and "μ = 0.01" in paper
    assert "`--defaults paper`" not in paper and "smaller than the intervals" in paper
    internal = _why_alike(
        "internal", FewShotConfig(defaults="paper", method_settings={"internal": {"num_steps": 3}})
    )
    assert "r = 3 steps" in internal and "starts at random" in internal


#: mean 5-way 1-shot accuracy (%) over the 40 tasks of seed 0 on the fixture's features
PINNED_1_SHOT = {
    "prototype": 92.3333,
    "laplacianshot": 97.3333,
    "convection": 91.8667,
    "external": 91.9333,
    "internal": 97.7667,
}


def test_studies_and_resume(features, tmp_path):
    out = tmp_path / "run"
    task = small(
        features,
        studies=["sensitivity", "timing", "picture"],
        sensitivity_tasks=20,
        n_top_values=[4, 8],
        strengths=[0.0, 2.5],
        step_counts=[2, 5],
        timing_layers=[0, 3],
        timing_tasks=20,
    )
    outcome = run_task(task, out=out, progress=False)
    sensitivity = outcome.results["sensitivity"]
    assert {s: sorted(p["value"] for p in points) for s, points in sensitivity.items()} == {
        "n_top": [4, 8],
        "strength": [0.0, 2.5],
        "steps": [2, 5],
    }
    assert sorted(p["layers"] for p in outcome.results["timing"]) == [0, 3]
    for name in ("sensitivity.png", "timing.png", "picture.png"):
        assert (out / name).stat().st_size > 0
    again = run_task(task, out=out, progress=False)
    assert again.new == 0 and again.results["sensitivity"] == sensitivity


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


def test_bad_requests_fail_before_anything_is_written(features, tmp_path, capsys):
    out = tmp_path / "run"
    for argv, message in (
        (["--way", "20"], "20-way tasks but"),
        (["--set", "methods=[knn]"], "methods must be one of"),
        (["--preprocessing", "centre", "--dataset", features + "x"], "missing features file"),
        (["--shot", "0"], "shots must be >= 1"),
        (["--way", "1"], "ways must be >= 2"),
        (["--tasks", str(10**12)], "tasks=1000000000000 is more than 10,000,000 tasks per cell"),
        (["--set", "method_settings.internal.num_step=3"], "num_step"),
        (["--set", "method_settings.tim.lr=-1"], "lr must be > 0"),
        (["--set", "method_settings.knn.lr=1"], "unknown method"),
        (["--query-distributions", "zipf"], "use 'balanced' or 'dirichlet:A'"),
        (["--query-distributions", "dirichlet:0"], "concentration A > 0"),
        (["--query-modes", "alone"], "query_modes must be one of"),
        (["--open-set", "-1"], "open_set"),
    ):
        code = main(["run", "few-shot", "--dataset", features, "--out", str(out), "--no-progress"] + argv)
        assert code == 2 and message in capsys.readouterr().err, argv
    assert not out.exists()


@pytest.mark.parametrize("method", ["prototype", "laplacianshot", "convection", "external", "internal"])
def test_every_setting_of_an_episode_job_reaches_the_result(features, method):
    """Each key setting of an episode job, method settings and preprocessing entry by entry, changes the
    accuracies or the mean log-likelihood of the true class."""
    import dataclasses

    from ..helpers.spec_sensitivity import assert_every_key_setting_matters

    task = small(features, methods=[method], shots=[1], tasks=6, tasks_per_job=6)
    task.prepare()
    spec = dataclasses.replace(
        task.jobs()[0], preprocessing=dataclasses.replace(task.jobs()[0].preprocessing, centre=True)
    )
    assert_every_key_setting_matters(
        FewShotTask.run_job,
        spec,
        changes={
            "settings.init": "random",
            "settings.knn": 5,
            "settings.n_top": 6,
            "settings.num_steps": 3,
            "settings.epochs": 5,
            "settings.lr": 0.5,
            "settings.weight_decay": 0.1,
            "settings.temperature": 1.0,
            "settings.momentum": 0.0,
            "settings.lam": 2.0,
            "settings.mu": 0.5,
            "settings.alpha": 0.5,
            "settings.sigma_neighbor": 2,
            "settings.step_size": 0.9,
            "settings.iterations": 1,
            "distribution": "dirichlet:2",
            "open_set": 1,
            "query_mode": "one-at-a-time",
        },
        skip={
            "device": "one device on a CPU-only machine",
            "method": "each method has its own settings; the five are checked one by one",
            "study": "the study a job belongs to (a table's name); its settings are checked",
            "dataset": "the features file's display name; the data is the fingerprinted file",
            "fingerprint": "identifies the features file, which is read from the non-key path",
            "variable": "the studied value shown in the table; it is one of the settings checked",
            "settings.separate_support": "no two support points are neighbours in the fixture's separated "
            "tasks; "
            "tests/models/test_fewshot_reference.py checks the graph and the head",
            **(
                {
                    "preprocessing.rectify": "jobs of a method that reads no prototypes carry it off "
                    "(Preprocessing.for_method); its own settings.rectify is checked"
                }
                if method == "laplacianshot"
                else {}
            ),
        },
        ignore=("seconds", "seconds_per_task"),
    )


def test_every_query_set_shape_has_its_table_and_marks_broken_assumptions(features, tmp_path):
    out = tmp_path / "run"
    task = small(
        features,
        methods=["prototype", "pt-map", "paddle"],
        shots=[1],
        tasks=20,
        queries=[3],
        query_distributions=["balanced", "dirichlet:2"],
        open_set=[0, 2],
        query_modes=["together", "one-at-a-time"],
    )
    outcome = run_task(task, out=out, progress=False)
    shapes = outcome.results["shapes"]
    assert len(shapes) == 8 and sum(facts["balanced"] for facts in shapes.values()) == 1
    open_set = outcome.results["ablation"]["dirichlet:2, 3 queries per class + 2 open-set classes"]["toy"]
    entry = open_set["5-way 1-shot"]["paddle"]
    assert entry["tasks"] == 20 and 0.5 < entry["open_auroc"] <= 1 and 0 <= entry["open_rejected"] <= 1
    report = (out / "report.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith(("| PT-MAP |", "| PADDLE |"))]
    marked = [row.split(" |")[0] for row in rows if "†" in row]
    assert marked == ["| PT-MAP"] * 7  # every shape but the balanced one, from the query sets drawn
    assert "query sets drawn" in report
    assert "one query at a time" in report and "assumes balanced queries" in report
    # one query at a time: the same tasks, every query its own task; PT-MAP falls back to its inductive
    # counterpart
    single = outcome.results["ablation"]["balanced, 3 queries per class, one query at a time"]["toy"][
        "5-way 1-shot"
    ]
    together = outcome.results["ablation"]["balanced, 3 queries per class"]["toy"]["5-way 1-shot"]
    assert single["prototype"]["mean"] == pytest.approx(together["prototype"]["mean"])
    assert single["pt-map"]["mean"] != together["pt-map"]["mean"]


def test_the_mark_follows_the_query_sets_drawn_not_the_shape_asked_for(features, tmp_path):
    # 22 samples a class, 1 shot, 21 queries a class: the Dirichlet proportions asked for cannot be drawn,
    # every class gives all it has, so every query set is balanced and PT-MAP keeps its promise unmarked
    task = small(
        features, methods=["prototype", "pt-map"], shots=[1], tasks=10, tasks_per_job=10, queries=[21],
        query_distributions=["dirichlet:0.5", "dirichlet:2"],
    )  # fmt: skip
    outcome = run_task(task, out=tmp_path / "capped", progress=False)
    capped = outcome.results["ablation"]["dirichlet:0.5, 21 queries per class"]["toy"]["5-way 1-shot"]
    assert capped["pt-map"]["unbalanced_share"] == 0 and capped["pt-map"]["empty_class_share"] == 0
    assert "†" not in (tmp_path / "capped" / "report.md").read_text()
    task = small(
        features, methods=["prototype", "pt-map"], shots=[1], tasks=10, tasks_per_job=10, queries=[3],
        query_distributions=["dirichlet:0.5"],
    )  # fmt: skip
    outcome = run_task(task, out=tmp_path / "skewed", progress=False)
    skewed = outcome.results["ablation"]["dirichlet:0.5, 3 queries per class"]["toy"]["5-way 1-shot"]
    assert skewed["pt-map"]["unbalanced_share"] == 1.0 and 0 < skewed["pt-map"]["empty_class_share"] <= 1
    assert "| PT-MAP | " in (tmp_path / "skewed" / "report.md").read_text()
    assert "†" in (tmp_path / "skewed" / "report.md").read_text()


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


def _episodes(method, accuracies, seconds_per_task, study="ablation", variable=None, **shape):
    """A stored episode job's flattened record (spec and record fields), 5-way 1-shot on ``toy``."""
    record = dict(
        study=study,
        dataset="toy",
        ways=5,
        shots=1,
        method=method,
        variable=variable,
        queries=15,
        distribution="balanced",
        open_set=0,
        query_mode="together",
        accuracies=accuracies,
        log_likelihoods=[-0.5] * len(accuracies),
        seconds=seconds_per_task * len(accuracies),
        seconds_per_task=seconds_per_task,
        query_sets=len(accuracies),
        unbalanced_query_sets=0,
        empty_class_query_sets=0,
    )
    record.update(shape)
    return record


def test_summarize_returns_typed_results_whose_plain_form_is_pinned():
    from pdenets.tasks.fewshot.results import (
        ClearWin,
        FewShotResults,
        QueryShapeFacts,
        SweepPoint,
        TimingPoint,
    )

    z = 1.959963984540054  # the normal quantile of a 95 % interval
    open_set = dict(
        distribution="dirichlet:2",
        open_set=2,
        open_auroc=[0.8, 0.6],
        open_rejected=[0.5, 0.25],
        known_rejected=[0.1, 0.0],
        unbalanced_query_sets=2,
        empty_class_query_sets=1,
    )
    records = [
        _episodes("internal", [0.9, 0.8], 0.002),
        _episodes("internal", [1.0, 0.9], 0.004),
        _episodes("prototype", [0.6, 0.7], 0.001),
        _episodes("convection", [0.9, 0.9], 0.003),
        _episodes("internal", [0.4, 0.6], 0.002, **open_set),
        _episodes("internal", [0.5, 1.0], 0.002, study="n_top", variable=4),
        _episodes("internal", [0.5, 1.0], 0.005, study="timing", variable=10.0),
        {"method": "internal", "errors": [0.2, 0.3], "error_rate": 0.25},
        {"shots": 1, "before": [[0.0, 0.0]], "after": [[0.0, 0.0]], "labels": [0], "support": 1},
        {"shots": 5, "before": [[0.0, 0.0]], "after": [[0.0, 0.0]], "labels": [0], "support": 1},
    ]
    results = FewShotTask(FewShotConfig()).summarize(records)
    assert isinstance(results, FewShotResults)

    balanced, dirichlet = BALANCED, "dirichlet:2, 15 queries per class + 2 open-set classes"
    assert list(results.ablation) == [balanced, dirichlet]
    assert results.shapes == {
        balanced: QueryShapeFacts(15, "balanced", 0, "together", True),
        dirichlet: QueryShapeFacts(15, "dirichlet:2", 2, "together", False),
    }
    cell = results.ablation[balanced]["toy"]["5-way 1-shot"]
    assert list(cell) == ["internal", "prototype", "convection"]
    # internal: the four tasks of its two jobs, 0.9 0.8 1.0 0.9 (sample std √(0.02/3)); time: the jobs' mean
    internal = cell["internal"]
    assert internal.mean == pytest.approx(90.0) and internal.tasks == 4
    assert internal.ci95 == pytest.approx(100 * z * (0.02 / 3) ** 0.5 / 2)
    assert internal.seconds_per_task == pytest.approx(0.003)
    assert internal.seconds_per_1000_tasks == pytest.approx(3.0)
    assert internal.open_auroc is None and internal.known_rejected is None
    assert cell["prototype"].mean == pytest.approx(65.0)
    assert cell["prototype"].ci95 == pytest.approx(100 * z * 0.05)
    opened = results.ablation[dirichlet]["toy"]["5-way 1-shot"]["internal"]
    assert (opened.mean, opened.tasks) == (pytest.approx(50.0), 2)
    assert (opened.open_auroc, opened.open_rejected, opened.known_rejected) == pytest.approx(
        (0.7, 0.375, 0.05)
    )
    # the † mark follows the query sets drawn: both of this cell's broke balance, one left a class empty
    assert (opened.unbalanced_share, opened.empty_class_share) == (1.0, 0.5)
    assert opened.breaks_assumption_of("pt-map") and not opened.breaks_assumption_of("prototype")
    assert internal.unbalanced_share == 0.0 and not internal.breaks_assumption_of("pt-map")

    ((sweep, points),) = results.sensitivity.items()
    (point,) = points
    assert sweep == "n_top" and isinstance(point, SweepPoint) and point.value == 4
    assert point.episodes.mean == pytest.approx(75.0) and point.episodes.tasks == 2
    (timing,) = results.timing
    assert isinstance(timing, TimingPoint) and timing.layers == 10 and isinstance(timing.layers, int)
    assert timing.episodes.seconds_per_1000_tasks == pytest.approx(5.0)
    assert results.official_runs["internal"].error_rate == pytest.approx(25.0)
    assert results.official_runs["internal"].per_run == pytest.approx([20.0, 30.0])
    assert results.picture_shots == [1, 5]
    # the claim: the balanced table only; external was not run
    ((claimed, wins),) = results.claim.items()
    assert claimed == "toy 5-way 1-shot" and list(wins) == ["convection", "prototype"]
    assert wins["convection"] == ClearWin(pytest.approx(0.0), False)
    assert wins["prototype"].difference == pytest.approx(25.0) and wins["prototype"].clearly

    plain = results.to_dict()
    assert list(plain) == [
        "ablation",
        "shapes",
        "sensitivity",
        "timing",
        "official_runs",
        "picture_shots",
        "claim",
        "figures",
    ]
    episode_keys = ["mean", "ci95", "tasks", "seconds_per_task", "seconds_per_1000_tasks"]
    open_keys = ["open_auroc", "open_rejected", "known_rejected"]
    drawn_keys = ["unbalanced_share", "empty_class_share"]
    assert list(plain["ablation"][balanced]["toy"]["5-way 1-shot"]["internal"]) == episode_keys + drawn_keys
    assert (
        list(plain["ablation"][dirichlet]["toy"]["5-way 1-shot"]["internal"])
        == episode_keys + open_keys + drawn_keys
    )
    assert plain["shapes"][dirichlet] == {
        "queries": 15,
        "distribution": "dirichlet:2",
        "open_set": 2,
        "query_mode": "together",
        "balanced": False,
    }
    assert list(plain["sensitivity"]["n_top"][0]) == ["value"] + episode_keys + drawn_keys
    assert list(plain["timing"][0]) == ["layers"] + episode_keys + drawn_keys
    assert list(plain["official_runs"]["internal"]) == ["error_rate", "per_run"]
    assert plain["claim"]["toy 5-way 1-shot"]["prototype"] == {
        "difference": pytest.approx(25.0),
        "clearly": True,
    }
    assert plain["picture_shots"] == [1, 5]

    without_pictures = FewShotTask(FewShotConfig()).summarize(records[:4]).to_dict()
    assert "picture_shots" not in without_pictures
    assert list(without_pictures) == [
        "ablation",
        "shapes",
        "sensitivity",
        "timing",
        "official_runs",
        "claim",
        "figures",
    ]
    assert without_pictures["sensitivity"] == {} and without_pictures["timing"] == []
