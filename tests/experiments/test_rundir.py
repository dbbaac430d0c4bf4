"""Run folders never lose a user's files; results stores refuse what is not theirs, untouched."""

import hashlib
import json
import os
import subprocess
import sys

import pytest
from toytask import ToyConfig, ToyTask

from pdenets.experiments import RunDirectory, RunDirectoryError, run_task
from pdenets.experiments.rundir import LOCK, MARKER, atomic_write, atomic_write_text, default_run_path


def toy(out, **options):
    config = ToyConfig(**{"workers": 1, "count": 2, **changes_of(options)})
    return run_task(ToyTask(config), out=out, progress=False, overwrite=options.get("overwrite", False))


def changes_of(options):
    return {k: v for k, v in options.items() if k != "overwrite"}


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(folder):
    return {p.name: digest(p) for p in folder.iterdir() if p.is_file()}


def test_out_that_is_a_file_is_refused(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    with pytest.raises(RunDirectoryError, match="is a file, not a folder"):
        toy(target)
    assert target.read_text() == "mine"


def test_foreign_folder_is_refused_naming_its_files_and_left_untouched(tmp_path):
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "chapter1.tex").write_text("text")
    (folder / "results.json").write_text('{"mine": 1}')
    before = snapshot(folder)
    with pytest.raises(
        RunDirectoryError,
        match=r"not empty and holds no pdenets run \(found: chapter1.tex, "
        r"results.json\).*--overwrite",
    ):
        toy(folder)
    assert snapshot(folder) == before and sorted(p.name for p in folder.iterdir()) == [
        "chapter1.tex",
        "results.json",
    ]


def test_overwrite_writes_into_a_foreign_folder_and_keeps_other_files(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep")
    toy(folder, overwrite=True)
    assert (folder / "keep.txt").read_text() == "keep" and (folder / "results.json").is_file()


def test_another_tasks_run_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    toy(out)
    marker = json.loads((out / MARKER).read_text())
    marker["task"] = "synthetic"  # as if another task had written it
    (out / MARKER).write_text(json.dumps(marker))
    with pytest.raises(RunDirectoryError, match="holds a pdenets run of task 'synthetic', not 'toy'"):
        toy(out)
    (out / "mine.txt").write_text("x")
    outcome = toy(out, overwrite=True)
    assert outcome.new == 2 and (out / "mine.txt").read_text() == "x"  # its store was replaced, not resumed
    assert json.loads((out / MARKER).read_text())["task"] == "toy"


def test_same_task_resumes(tmp_path):
    out = tmp_path / "run"
    assert toy(out).new == 2
    assert toy(out, count=3).new == 1


def test_damaged_marker_is_refused(tmp_path):
    out = tmp_path / "run"
    toy(out)
    (out / MARKER).write_text("{not json")
    with pytest.raises(RunDirectoryError, match="is damaged"):
        toy(out)


def test_unwritable_and_uncreatable_out(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RunDirectoryError, match="cannot create the run folder"):
        toy(blocker / "run")
    folder = tmp_path / "readonly"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode: False if str(path) == str(folder) else real_access(path, mode)
    )
    with pytest.raises(RunDirectoryError, match="is not writable"):
        toy(folder)
    assert list(folder.iterdir()) == []


def test_default_names_never_collide(tmp_path):
    first, second, third = (default_run_path("toy", tmp_path) for _ in range(3))
    assert len({first, second, third}) == 3 and all(p.is_dir() for p in (first, second, third))
    assert second.name == first.name + "-2"


def test_a_locked_folder_is_refused_with_the_holder(tmp_path):
    out = tmp_path / "run"
    with RunDirectory.open(out, task="toy"):
        with pytest.raises(
            RunDirectoryError, match=rf"in use by another pdenets run \(pid {os.getpid()} .*task toy"
        ):
            toy(out)
    assert toy(out).new == 2  # released on exit


def test_the_lock_dies_with_its_process(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from pdenets.experiments.rundir import RunDirectory; "
                f"d = RunDirectory.open({str(out)!r}, task='toy'); print('locked', flush=True); "
                "time.sleep(60)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(RunDirectoryError, match="in use"):
        toy(out)
    holder.kill()
    holder.wait()
    assert toy(out).new == 2


def test_atomic_writes_leave_the_old_file_or_the_new_one(tmp_path):
    target = tmp_path / "results.json"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as stream:
            stream.write("half of the new")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_nothing_but_the_lock_and_marker_is_kept_from_a_refused_start(tmp_path):
    out = tmp_path / "run"
    with RunDirectory.open(out, task="toy") as run_dir:
        assert run_dir.resumed is False
    assert sorted(p.name for p in out.iterdir()) == [LOCK, MARKER]
    assert toy(out).new == 2  # a folder holding only our marker is a run of this task


@pytest.mark.parametrize("link", ["dangling", "loop"])
def test_a_runs_root_that_is_a_symlink_to_nothing_is_named(tmp_path, link):
    target = tmp_path / ("nowhere" if link == "dangling" else "runs")
    (tmp_path / "runs").symlink_to(target)
    problem = (
        "which does not exist" if link == "dangling" else "which loops (the links lead back to themselves)"
    )
    with pytest.raises(RunDirectoryError) as caught:
        run_task(ToyTask(ToyConfig(workers=1, count=1)), runs_root=tmp_path / "runs", progress=False)
    assert str(caught.value) == (
        f"runs folder {tmp_path / 'runs'} is a symlink to {target}, {problem}; create the "
        "target or choose another runs folder"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


@pytest.mark.parametrize("name", ["../outside.txt", "sub/../../outside.txt", "/etc/passwd", "escape/x.txt"])
def test_a_file_name_that_leads_outside_the_run_folder_is_refused(tmp_path, name):
    from pdenets.experiments.rundir import resolve_inside

    folder = tmp_path / "run"
    directory = RunDirectory(folder)
    (folder / "escape").symlink_to(tmp_path)
    with pytest.raises(RunDirectoryError) as caught:
        directory.write_text(name, "x")
    target = (folder / name).resolve()
    assert str(caught.value) == (
        f"{name!r} leads outside the folder {folder} (to {target}); give the name of a file inside it"
    )
    assert resolve_inside(folder, "plots/a.png") == folder.resolve() / "plots" / "a.png"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"] and not (tmp_path / "outside.txt").exists()


@pytest.mark.parametrize(
    "name, error, message",
    [
        (
            "file:///etc/x.png",
            ValueError,
            "figure 'file:///etc/x.png' is not a file name relative to the report's "
            "folder; save the figure into the run folder and give its name",
        ),
        (
            "javascript:alert(1)",
            ValueError,
            "figure 'javascript:alert(1)' is not a file name relative to the report's "
            "folder; save the figure into the run folder and give its name",
        ),
        (
            "/usr/share/x.png",
            ValueError,
            "figure '/usr/share/x.png' is not a file name relative to the report's folder; "
            "save the figure into the run folder and give its name",
        ),
    ],
)
def test_a_report_figure_must_be_a_file_name(name, error, message):
    from pdenets.experiments.report import Report

    with pytest.raises(error) as caught:
        Report("demo").figure(name, "a caption")
    assert str(caught.value) == message


def test_a_report_figure_outside_its_folder_is_refused_before_anything_is_written(tmp_path):
    from pdenets.experiments.report import Report

    report = Report("demo")
    report.figure("../elsewhere.png", "a caption")
    with pytest.raises(RunDirectoryError) as caught:
        report.write(tmp_path / "run")
    assert str(caught.value).startswith(f"'../elsewhere.png' leads outside the folder {tmp_path / 'run'}")
    assert list((tmp_path / "run").iterdir()) == []
