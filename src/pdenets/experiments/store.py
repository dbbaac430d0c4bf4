"""Results store: every finished run is one row of a SQLite table, written the moment it ends.

One store per run directory (``DIR/results.sqlite``), one task per store. A row holds

* ``key`` — the hash of the job spec (what ran), unique;
* ``task`` — the task's registered name;
* ``spec`` and ``record`` — the job spec and what the run returned, as JSON;
* ``status`` (``ok`` or ``diverged``), ``seconds``, ``created``;
* the columns the task declares for queries (``dataset``, ``accuracy``, ...), copied from
  the spec or the record.

A rerun skips the keys already stored; a run killed at any moment (even ``kill -9``)
loses at most the runs in flight, and a key is never stored twice. A file that is not a
pdenets store (another program's database, a store of another task, a corrupt or
truncated file) is refused with :class:`StoreError` before anything is written to it.

Examples:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "results.sqlite")
    >>> with ResultsStore(path, task="demo", columns={"accuracy": "REAL"}) as store:
    ...     store.add("k1", {"seed": 0}, {"accuracy": 0.5})
    ...     store.add("k1", {"seed": 0}, {"accuracy": 0.7})        # same key: ignored
    ...     [row.record["accuracy"] for row in store.rows()]
    True
    False
    [0.5]
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Union

from .._io import new_temporary_file

__all__ = [
    "ResultsStore",
    "StoredRun",
    "StoreError",
    "STORE_FILENAME",
    "STORE_FORMAT",
    "STORE_VERSION",
    "UNREADABLE",
]

STORE_FILENAME = "results.sqlite"
STORE_FORMAT = "pdenets-results"
STORE_VERSION = 2
_SQLITE_HEADER = b"SQLite format 3\x00"
_BASE_COLUMNS = {
    "key": "TEXT PRIMARY KEY",
    "task": "TEXT NOT NULL",
    "spec": "TEXT NOT NULL",
    "record": "TEXT NOT NULL",
    "status": "TEXT NOT NULL",
    "seconds": "REAL",
    "created": "TEXT DEFAULT CURRENT_TIMESTAMP",
}
_COLUMN_TYPES = ("TEXT", "INTEGER", "REAL")


class StoreError(ValueError):
    """A results file that is corrupt, foreign (not a pdenets store, or another task's) or unusable.

    A ``ValueError`` raised by :class:`ResultsStore` before anything is written to the file;
    the message names the file and the problem.
    """


@dataclass(frozen=True)
class StoredRun:
    """One stored run: its key, spec and record (decoded JSON), status and duration.

    Returned by :meth:`ResultsStore.rows`; :meth:`flat` gives the one-dict-per-run form that
    tasks summarize.

    Args:
        key: the job's store key (:func:`~pdenets.experiments.task.job_key`).
        spec: the job spec as a dict.
        record: what the job returned.
        status: ``"ok"`` or ``"diverged"``.
        seconds: how long the job ran, or ``None``.

    Examples:
        >>> StoredRun("k1", {"seed": 0}, {"accuracy": 0.5}, "ok", 1.5).flat()
        {'seed': 0, 'accuracy': 0.5, 'key': 'k1', 'status': 'ok'}
    """

    key: str
    spec: Dict[str, Any]
    record: Dict[str, Any]
    status: str
    seconds: Optional[float]

    def flat(self) -> Dict[str, Any]:
        """Spec fields, then record fields, then ``key`` and ``status``: one dict per run."""
        return {**self.spec, **self.record, "key": self.key, "status": self.status}


def _check_identifier(name: str, kind: str) -> None:
    if not name.isidentifier() or name.lower() in _BASE_COLUMNS:
        raise ValueError(
            f"{kind} {name!r} cannot be a store column (a Python identifier other than "
            f"{', '.join(_BASE_COLUMNS)})"
        )


def _refuse(path: Path, problem: str) -> StoreError:
    return StoreError(f"{path}: {problem}. The file was left untouched; move it away or choose another --out")


def _inspect(path: Path, task: str) -> Dict[str, str]:
    """Read-only checks of an existing store file; returns its column names and types."""
    try:
        with path.open("rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except OSError as error:
        raise _refuse(path, f"cannot be read ({error.strerror})") from None
    if header != _SQLITE_HEADER:
        raise _refuse(path, "is not a SQLite database (it may be truncated or another program's file)")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise _refuse(path, f"cannot be opened ({error})") from None
    try:
        check = connection.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise _refuse(path, f"is a corrupt SQLite database ({check})")
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables or "runs" not in tables:
            found = ", ".join(sorted(tables)) or "none"
            raise _refuse(
                path,
                f"is not a pdenets results store (tables: {found}; an older pdenets, or another "
                "program, wrote it)",
            )
        meta = dict(connection.execute("SELECT name, value FROM meta").fetchall())
        if meta.get("format") != STORE_FORMAT:
            raise _refuse(path, f"is not a pdenets results store (format {meta.get('format')!r})")
        if meta.get("version") != str(STORE_VERSION):
            raise _refuse(
                path,
                f"is a pdenets results store of version {meta.get('version')}, this pdenets reads "
                f"version {STORE_VERSION}",
            )
        if meta.get("task") != task:
            raise _refuse(path, f"holds runs of task {meta.get('task')!r}, not {task!r}")
        columns = {row[1]: row[2] for row in connection.execute("PRAGMA table_info(runs)")}
    except sqlite3.DatabaseError as error:
        raise _refuse(path, f"is not a readable SQLite database ({error})") from None
    finally:
        connection.close()
    missing = [name for name in _BASE_COLUMNS if name not in columns]
    if missing:
        raise _refuse(path, f"lacks the columns {missing}")
    return columns


def _create(path: Path, task: str, columns: Mapping[str, str]) -> None:
    """Create an empty store atomically: a half-created file never carries the final name."""
    handle, temporary = new_temporary_file(path, ".results-")
    os.close(handle)
    try:
        connection = sqlite3.connect(temporary)
        definitions = ", ".join(f'"{name}" {kind}' for name, kind in {**_BASE_COLUMNS, **columns}.items())
        with connection:
            connection.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT)")
            connection.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("format", STORE_FORMAT), ("version", str(STORE_VERSION)), ("task", task)],
            )
            connection.execute(f"CREATE TABLE runs ({definitions})")
        connection.close()
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class ResultsStore:
    """The SQLite table of one task's finished runs (see the module docstring).

    Args:
        path: the database file (created if missing).
        task: the task name; a store of another task is refused.
        columns: extra query columns ``name -> SQL type`` (``TEXT``, ``INTEGER``, ``REAL``),
            filled from the spec or record field of the same name; a column missing from an
            existing store is added (default: ``None``, no extra columns).

    Raises:
        StoreError: the file is corrupt, not a pdenets store, a store of another task, or
            cannot be read or created.
        ValueError: a column name is not a Python identifier (or is a built-in column
            name) or its type is not one of ``TEXT``, ``INTEGER``, ``REAL``.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "results.sqlite")
        >>> with ResultsStore(path, task="demo") as store:
        ...     store.add("k1", {"seed": 0}, {"accuracy": 0.5})
        ...     store.count()
        True
        1
    """

    def __init__(self, path: Union[str, Path], *, task: str, columns: Optional[Mapping[str, str]] = None):
        self.path = Path(path)
        self.task = task
        self.columns = dict(columns or {})
        for name, kind in self.columns.items():
            _check_identifier(name, "column")
            if kind.upper() not in _COLUMN_TYPES:
                raise ValueError(f"column {name!r} has type {kind!r}; use one of {_COLUMN_TYPES}")
        if self.path.exists():
            existing = _inspect(self.path, task)
        else:
            _create(self.path, task, self.columns)
            existing = {**_BASE_COLUMNS, **self.columns}
        self._connection = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        for name, kind in self.columns.items():  # a task that declares a new query column later
            if name not in existing:
                self._connection.execute(f'ALTER TABLE runs ADD COLUMN "{name}" {kind}')

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(
        self,
        key: str,
        spec: Mapping[str, Any],
        record: Mapping[str, Any],
        *,
        status: str = "ok",
        seconds: Optional[float] = None,
    ) -> bool:
        """Store one finished run at once; ``False`` if its key is already stored."""
        values: Dict[str, Any] = {
            "key": key,
            "task": self.task,
            "spec": json.dumps(spec, allow_nan=False),
            "record": json.dumps(record, allow_nan=False),
            "status": status,
            "seconds": seconds,
        }
        for name in self.columns:
            value = record.get(name, spec.get(name))
            values[name] = (
                value if value is None or isinstance(value, (str, int, float)) else json.dumps(value)
            )
        names = ", ".join(f'"{name}"' for name in values)
        marks = ", ".join("?" for _ in values)
        cursor = self._connection.execute(
            f"INSERT OR IGNORE INTO runs ({names}) VALUES ({marks})", list(values.values())
        )
        return cursor.rowcount == 1

    def keys(self) -> Set[str]:
        return {row[0] for row in self._connection.execute("SELECT key FROM runs")}

    def count(self) -> int:
        return int(self._connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def rows(self, keys: Optional[Iterable[str]] = None) -> List[StoredRun]:
        """Stored runs in insertion order, or in the order of ``keys`` (missing keys skipped)."""
        cursor = self._connection.execute(
            "SELECT key, spec, record, status, seconds FROM runs ORDER BY rowid"
        )
        runs = {
            key: _stored_run(key, spec, record, status, seconds)
            for key, spec, record, status, seconds in cursor
        }
        if keys is None:
            return list(runs.values())
        return [runs[key] for key in keys if key in runs]

    def query(self, sql: str, parameters: Iterable[Any] = ()) -> List[sqlite3.Row]:
        """Read-only SQL over the ``runs`` table (e.g. ``SELECT model, AVG(accuracy) ... GROUP BY model``)."""
        cursor = self._connection.cursor()
        cursor.row_factory = sqlite3.Row
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            raise ValueError("query() runs SELECT statements only")
        return cursor.execute(sql, tuple(parameters)).fetchall()


#: the status of a stored run whose spec or record cannot be read as JSON (edited by hand, cut short)
UNREADABLE = "unreadable"


def _stored_run(key: str, spec: Any, record: Any, status: str, seconds: Optional[float]) -> StoredRun:
    """One row of the store; a spec or record that is not JSON gives a run of status :data:`UNREADABLE` whose
    record holds only the ``error`` (the runner leaves it out, naming its key), never a bare decode error for
    the whole store."""
    decoded = []
    for name, text in (("spec", spec), ("record", record)):
        try:
            decoded.append(json.loads(text))
        except (TypeError, ValueError) as error:
            problem = f"its stored {name} is not JSON ({error})"
            return StoredRun(key, decoded[0] if decoded else {}, {"error": problem}, UNREADABLE, seconds)
    return StoredRun(key, decoded[0], decoded[1], status, seconds)
