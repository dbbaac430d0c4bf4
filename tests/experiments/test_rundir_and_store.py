"""Run folders never lose a user's files; results stores refuse what is not theirs, untouched."""

import hashlib
import json
import os
import sqlite3
import subprocess
import sys

import pytest
from toytask import ToyConfig, ToyTask

from pdenets.experiments import ResultsStore, RunDirectory, RunDirectoryError, StoreError, run_task
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
    with pytest.raises(RunDirectoryError, match=r"not empty and holds no pdenets run \(found: chapter1.tex, "
                                                r"results.json\).*--overwrite"):
        toy(folder)
    assert snapshot(folder) == before and sorted(p.name for p in folder.iterdir()) == ["chapter1.tex", "results.json"]


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
    monkeypatch.setattr(os, "access", lambda path, mode: False if str(path) == str(folder) else real_access(path, mode))
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
        with pytest.raises(RunDirectoryError, match=rf"in use by another pdenets run \(pid {os.getpid()} .*task toy"):
            toy(out)
    assert toy(out).new == 2  # released on exit


def test_the_lock_dies_with_its_process(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pdenets.experiments.rundir import RunDirectory; "
        f"d = RunDirectory.open({str(out)!r}, task='toy'); print('locked', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
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


# ----------------------------------------------------------------------------------------
# results stores


def _other_programs_database(path):
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE invoices (id INTEGER, amount REAL)")
    connection.execute("INSERT INTO invoices VALUES (1, 9.5)")
    connection.commit()
    connection.close()


def _old_pdenets_store(path):
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE runs (key TEXT PRIMARY KEY, experiment TEXT, accuracy REAL, params TEXT)")
    connection.commit()
    connection.close()


FOREIGN = [
    ("another program's database", _other_programs_database, "not a pdenets results store (tables: invoices"),
    ("an older pdenets store", _old_pdenets_store, "an older pdenets, or another program, wrote it"),
    ("a zero-byte file", lambda p: p.write_bytes(b""), "is not a SQLite database"),
    ("random bytes", lambda p: p.write_bytes(os.urandom(4096)), "is not a SQLite database"),
    ("a text file", lambda p: p.write_text("accuracy,0.9\n"), "is not a SQLite database"),
]


@pytest.mark.parametrize("what, make, message", FOREIGN, ids=[case[0] for case in FOREIGN])
def test_foreign_stores_are_refused_and_not_modified(tmp_path, what, make, message):
    path = tmp_path / "results.sqlite"
    make(path)
    before = digest(path)
    with pytest.raises(StoreError) as caught:
        ResultsStore(path, task="toy")
    assert message in str(caught.value) and "left untouched" in str(caught.value)
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]


def test_truncated_and_other_task_stores_are_refused(tmp_path):
    path = tmp_path / "results.sqlite"
    with ResultsStore(path, task="toy") as store:
        for index in range(200):
            store.add(f"k{index}", {"index": index}, {"value": "x" * 200})
    with pytest.raises(StoreError, match="holds runs of task 'toy', not 'synthetic'"):
        ResultsStore(path, task="synthetic")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    before = digest(path)
    with pytest.raises(StoreError, match="corrupt|not a readable"):
        ResultsStore(path, task="toy")
    assert digest(path) == before


def test_a_run_folder_with_a_foreign_store_fails_before_any_run(tmp_path):
    out = tmp_path / "run"
    toy(out)
    _other_programs_database_path = out / "results.sqlite"
    for name in ("results.sqlite", "results.sqlite-wal", "results.sqlite-shm"):
        (out / name).unlink(missing_ok=True)
    _other_programs_database(_other_programs_database_path)
    before = digest(_other_programs_database_path)
    with pytest.raises(StoreError, match="not a pdenets results store"):
        toy(out)
    assert digest(_other_programs_database_path) == before


def test_store_rows_keep_field_order_and_query_is_read_only(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite", task="toy", columns={"value": "REAL"}) as store:
        assert store.add("a", {"z": 1, "a": 2}, {"value": 0.5})
        assert not store.add("a", {"z": 1, "a": 2}, {"value": 0.9})
        run = store.rows()[0]
        assert list(run.spec) == ["z", "a"] and run.flat() == {"z": 1, "a": 2, "value": 0.5, "key": "a",
                                                              "status": "ok"}
        assert [tuple(r) for r in store.query("SELECT key, value FROM runs")] == [("a", 0.5)]
        with pytest.raises(ValueError, match="SELECT"):
            store.query("DELETE FROM runs")
    with pytest.raises(ValueError, match="cannot be a store column"):
        ResultsStore(tmp_path / "s.sqlite", task="toy", columns={"key": "TEXT"})
    assert sqlite3.connect(tmp_path / "r.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_store_gains_a_newly_declared_column(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultsStore(path, task="toy") as store:
        store.add("a", {"i": 1}, {"value": 2.0})
    with ResultsStore(path, task="toy", columns={"value": "REAL"}) as store:
        store.add("b", {"i": 2}, {"value": 3.0})
        assert [tuple(r) for r in store.query("SELECT key, value FROM runs ORDER BY key")] == [("a", None),
                                                                                              ("b", 3.0)]
