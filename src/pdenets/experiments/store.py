"""Results store: every finished run is one row of a SQLite table, written the moment it ends.

The database (WAL journal, one writer: the process that schedules the runs) lives in the
run directory. Each row has a unique ``key`` (what ran: dataset, model, hyperparameters,
split, initialization), so

* a rerun of the same command skips the keys already present and continues;
* a run killed at any moment (even ``kill -9``) loses at most the runs in flight, and a
  key is never stored twice.

Reports are built from the rows.

Example:
    >>> import tempfile, os
    >>> store = ResultsStore(os.path.join(tempfile.mkdtemp(), "results.sqlite"))
    >>> store.add({"key": "a", "experiment": "demo", "accuracy": 0.5})
    True
    >>> store.add({"key": "a", "experiment": "demo", "accuracy": 0.7})   # same key: ignored
    False
    >>> [row["accuracy"] for row in store.rows()]
    [0.5]
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Union

__all__ = ["ResultsStore", "STORE_FILENAME"]

STORE_FILENAME = "results.sqlite"

_COLUMNS = {
    "key": "TEXT PRIMARY KEY",
    "experiment": "TEXT",
    "dataset": "TEXT",
    "model": "TEXT",
    "depth": "INTEGER",
    "split": "INTEGER",
    "init": "INTEGER",
    "accuracy": "REAL",
    "val_accuracy": "REAL",
    "epochs": "INTEGER",
    "seconds": "REAL",
    "params": "TEXT",
    "extra": "TEXT",
    "created": "TEXT DEFAULT CURRENT_TIMESTAMP",
}


class ResultsStore:
    """A SQLite table of finished runs (see the module docstring)."""

    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        columns = ", ".join(f"{name} {kind}" for name, kind in _COLUMNS.items())
        self._connection.execute(f"CREATE TABLE IF NOT EXISTS runs ({columns})")

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, record: Mapping[str, Any]) -> bool:
        """Insert one finished run at once; returns ``False`` if its key is already stored."""
        if "key" not in record:
            raise ValueError("a run record needs a 'key'")
        values = {}
        extra = {}
        for name, value in record.items():
            if name in _COLUMNS and name != "created":
                values[name] = json.dumps(value, sort_keys=True) if name == "params" and not isinstance(value, str) \
                    else value
            else:
                extra[name] = value
        if extra:
            values["extra"] = json.dumps(extra, sort_keys=True, default=str)
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        cursor = self._connection.execute(f"INSERT OR IGNORE INTO runs ({names}) VALUES ({marks})",
                                          list(values.values()))
        return cursor.rowcount == 1

    def keys(self, experiment: Optional[str] = None) -> Set[str]:
        if experiment is None:
            rows = self._connection.execute("SELECT key FROM runs")
        else:
            rows = self._connection.execute("SELECT key FROM runs WHERE experiment = ?", (experiment,))
        return {row[0] for row in rows}

    def count(self, experiment: Optional[str] = None) -> int:
        if experiment is None:
            return int(self._connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
        return int(self._connection.execute("SELECT COUNT(*) FROM runs WHERE experiment = ?",
                                            (experiment,)).fetchone()[0])

    def rows(self, experiment: Optional[str] = None) -> List[Dict[str, Any]]:
        """All rows as dicts (``params``/``extra`` decoded), in insertion order."""
        query = "SELECT * FROM runs" + (" WHERE experiment = ?" if experiment else "") + " ORDER BY rowid"
        cursor = self._connection.execute(query, (experiment,) if experiment else ())
        names = [column[0] for column in cursor.description]
        out = []
        for row in cursor:
            item = dict(zip(names, row))
            for name in ("params", "extra"):
                if item.get(name):
                    item[name] = json.loads(item[name])
            if isinstance(item.get("extra"), dict):
                for key, value in item.pop("extra").items():
                    item.setdefault(key, value)
            out.append(item)
        return out

    def add_many(self, records: Iterable[Mapping[str, Any]]) -> int:
        return sum(self.add(record) for record in records)
