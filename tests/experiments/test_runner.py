"""The engine's contract on a toy task: jobs → store → resume → summary → report."""

import json
import os
import signal
import sqlite3
import subprocess
import time
from dataclasses import replace

import pytest
from toytask import ToyConfig, ToyJob, ToyTask, stored_count, toy_command

from pdenets.cli import main
from pdenets.experiments import JobFailedError, ResultsStore, job_key, run_task
from pdenets.experiments.runner import plan_jobs
from pdenets.experiments.task import get_task


def toy(out, **changes):
    config = ToyConfig(**{"workers": 1, **changes})
    return run_task(ToyTask(config), out=out, progress=False)


def stored(out):
    with ResultsStore(out / "results.sqlite", task="toy") as store:
        return {run.spec["index"]: run for run in store.rows()}


def test_contract_jobs_store_summary_report(tmp_path):
    out = tmp_path / "run"
    outcome = toy(out, count=5)
    assert (outcome.planned, outcome.stored, outcome.new) == (5, 5, 5)
    assert outcome.results["total"] == 0 + 1 + 2 + 3 + 4
    results = json.loads((out / "results.json").read_text())
    assert (results["total"], results["runs_planned"], results["runs_stored"]) == (10, 5, 5)
    runs = stored(out)
    assert sorted(runs) == [0, 1, 2, 3, 4]
    for index, run in runs.items():
        assert run.key == job_key("toy", ToyJob(index, 1.0, 0.0, False, False))
        assert run.status == "ok" and run.record["value"] == index
    columns = (
        sqlite3.connect(out / "results.sqlite")
        .execute('SELECT "index", value FROM runs ORDER BY "index"')
        .fetchall()
    )
    assert columns == [(i, float(i)) for i in range(5)]
    for name in ("config.yaml", "results.json", "runs.csv", "report.md", "report.html", ".pdenets-run"):
        assert (out / name).is_file(), name
    header = (out / "runs.csv").read_text().splitlines()[0]
    assert header == "index,scale,sleep,fail,diverge,marker_dir,value,pid,key,status"
    marker = json.loads((out / ".pdenets-run").read_text())
    assert marker["task"] == "toy" and {"results.json", "report.md", "config.yaml"} <= set(marker["files"])


def test_rerun_resumes_and_grows(tmp_path):
    out = tmp_path / "run"
    assert toy(out, count=3).new == 3
    assert toy(out, count=3).new == 0
    grown = toy(out, count=5)
    assert (grown.new, grown.stored, grown.results["total"]) == (2, 5, 10)


def test_every_spec_field_is_part_of_the_key_except_declared_ones(tmp_path):
    out = tmp_path / "run"
    toy(out, count=3)
    changed = toy(out, count=3, scale=2.0)  # another hyperparameter: other runs, never the stale ones
    assert (changed.new, changed.results["total"]) == (3, 6.0)
    assert toy(out, count=3, marker_dir=str(tmp_path)).new == 0  # declared key=False: same runs
    base = ToyJob(1, 1.0, 0.0, False, False)
    for field_name, value in (
        ("index", 2),
        ("scale", 3.0),
        ("sleep", 0.5),
        ("fail", True),
        ("diverge", True),
    ):
        assert job_key("toy", replace(base, **{field_name: value})) != job_key("toy", base), field_name
    assert job_key("toy", base) != job_key("other-task", base)


def test_diverged_job_is_stored_not_fatal(tmp_path):
    out = tmp_path / "run"
    outcome = toy(out, count=4, diverge_at=1)
    runs = stored(out)
    assert runs[1].status == "diverged" and "NaN" in runs[1].record["error"]
    assert outcome.results == {**outcome.results, "total": 0 + 2 + 3, "diverged": 1}


def test_failing_job_stops_the_run_and_keeps_finished_ones(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(JobFailedError, match=r"toy job \(index=2, .*\) failed: RuntimeError: job 2 exploded"):
        toy(out, count=5, fail_at=2)
    assert sorted(stored(out)) == [0, 1]
    resumed = toy(out, count=5)
    assert (resumed.new, resumed.stored) == (3, 5)


def test_pool_and_inline_give_the_same_records(tmp_path):
    inline = toy(tmp_path / "inline", count=6, sleep=0.2)
    pool = toy(tmp_path / "pool", count=6, sleep=0.2, workers=2, threads=1)
    assert inline.results["total"] == pool.results["total"] == 15
    pids = {run.record["pid"] for run in stored(tmp_path / "pool").values()}
    assert os.getpid() not in pids and len(pids) == 2
    assert {run.record["pid"] for run in stored(tmp_path / "inline").values()} == {os.getpid()}


def test_report_only_runs_nothing(tmp_path):
    out = tmp_path / "run"
    toy(out, count=2)
    outcome = run_task(ToyTask(ToyConfig(count=4, workers=1)), out=out, report_only=True, progress=False)
    assert (outcome.new, outcome.stored, outcome.planned) == (0, 2, 4)
    with pytest.raises(ValueError, match="--report-only"):
        run_task(ToyTask(ToyConfig(count=4)), out=None, report_only=True, progress=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds no stored runs"):
        run_task(ToyTask(ToyConfig(count=4)), out=empty, report_only=True, progress=False)
    assert list(empty.iterdir()) == []  # nothing written


def test_planning_is_bounded():
    from pdenets.experiments import ConfigError
    from pdenets.experiments.runner import MAX_PLANNED_JOBS, plan_jobs

    class Many(ToyTask):
        def jobs(self):
            return [None] * (MAX_PLANNED_JOBS + 1)

    with pytest.raises(ConfigError, match="plans 1,000,001 runs, more than 1,000,000"):
        plan_jobs(Many(ToyConfig(count=1)))


def test_duplicate_jobs_and_clashing_records_are_task_bugs(tmp_path):
    class Twice(ToyTask):
        def jobs(self):
            return super().jobs() * 2

    with pytest.raises(ValueError, match="planned the same job twice"):
        plan_jobs(Twice(ToyConfig(count=2)))

    class Clash(ToyTask):
        @staticmethod
        def run_job(spec):
            return {"index": 5}

    with pytest.raises(TypeError, match=r"repeats the spec field\(s\) \['index'\]"):
        run_task(Clash(ToyConfig(count=1, workers=1)), out=tmp_path / "c", progress=False)


def test_registry_finds_the_toy_task_and_lists_names_on_a_typo():
    assert get_task("toy") is ToyTask
    with pytest.raises(KeyError, match="unknown task 'tyo' .*valid: .*synthetic.*toy"):
        get_task("tyo")


def test_kill_9_then_rerun_ends_with_exactly_the_uninterrupted_results(tmp_path):
    out = tmp_path / "run"
    options = ["--count", "8", "--sleep", "0.25", "--workers", "1"]
    process = subprocess.Popen(
        toy_command(out, *options), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 60
    while time.time() < deadline and stored_count(out / "results.sqlite") < 2:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    interrupted_at = stored_count(out / "results.sqlite")
    assert 2 <= interrupted_at < 8
    subprocess.run(
        toy_command(out, *options), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    keys = sqlite3.connect(out / "results.sqlite").execute("SELECT key FROM runs").fetchall()
    assert len(keys) == 8 == len(set(keys))
    fresh = toy(tmp_path / "fresh", count=8, sleep=0.25)
    resumed = json.loads((out / "results.json").read_text())
    assert resumed["total"] == fresh.results["total"] == 28
    assert {r.key for r in stored(out).values()} == {r.key for r in stored(tmp_path / "fresh").values()}


def test_ray_address_without_ray_is_a_clear_error(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(ImportError, match=r"pip install 'pdenets\[distributed\]'"):
        toy(tmp_path / "run", count=2, ray_address="auto")


def test_report_only_never_replaces_a_report_by_one_of_fewer_runs(tmp_path, capsys):
    """``--report-only`` with settings that plan fewer of the stored runs (another scale, fewer jobs) keeps
    the report and its config as they are and names the settings that differ; settings that plan more (runs
    to come) or the run's own config.yaml rebuild it."""
    out = tmp_path / "run"
    assert main(["run", "toy", "--n", "4", "--out", str(out), "--no-progress"]) == 0
    before = {name: (out / name).read_bytes() for name in ("report.md", "config.yaml", "results.json")}
    for changed in (["--n", "2"], ["--set", "scale=2.0"]):
        capsys.readouterr()
        assert main(["run", "toy", "--out", str(out), "--report-only", *changed]) == 2
        error = capsys.readouterr().err
        planned = "2 of the 4" if changed[0] == "--n" else "0 of the 4"
        assert f"--report-only: these settings plan {planned} runs stored in {out}" in error
        setting = "count: 4 stored, 2 given" if changed[0] == "--n" else "scale: 1.0 stored, 2.0 given"
        assert setting in error and "so it is kept as it is" in error and error.count("\n") == 1
        assert {name: (out / name).read_bytes() for name in before} == before
    assert main(["run", "toy", "--out", str(out), "--report-only", "--n", "6"]) == 0  # two runs to come
    results = json.loads((out / "results.json").read_text())
    assert (results["runs_planned"], results["runs_stored"]) == (6, 4)
    assert main(["run", "toy", "--out", str(out), "--report-only", "--config", str(out / "config.yaml")]) == 0


@pytest.mark.parametrize("progress", [False, True])
def test_prepare_knows_whether_the_run_shows_progress(tmp_path, progress):
    """``--no-progress`` reaches the task's own preparation (a features file built before the runs)."""
    seen = []

    class Preparing(ToyTask):
        def prepare(self):
            seen.append(self.progress)

    run_task(Preparing(ToyConfig(count=1, workers=1)), out=tmp_path / "p", progress=progress)
    assert seen == [progress]
