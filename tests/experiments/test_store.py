"""Run folders never lose a user's files; results stores refuse what is not theirs, untouched."""

import hashlib
import os
import sqlite3

import pytest
from toytask import ToyConfig, ToyTask

from pdenets.experiments import ResultsStore, StoreError, run_task


def toy(out, **options):
    config = ToyConfig(**{"workers": 1, "count": 2, **changes_of(options)})
    return run_task(ToyTask(config), out=out, progress=False, overwrite=options.get("overwrite", False))


def changes_of(options):
    return {k: v for k, v in options.items() if k != "overwrite"}


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


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
    connection.execute(
        "CREATE TABLE runs (key TEXT PRIMARY KEY, experiment TEXT, accuracy REAL, params TEXT)"
    )
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
        assert list(run.spec) == ["z", "a"] and run.flat() == {
            "z": 1,
            "a": 2,
            "value": 0.5,
            "key": "a",
            "status": "ok",
        }
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
        assert [tuple(r) for r in store.query("SELECT key, value FROM runs ORDER BY key")] == [
            ("a", None),
            ("b", 3.0),
        ]
