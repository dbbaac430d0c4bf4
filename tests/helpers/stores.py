"""Stored runs as an older version or a hand edit leaves them: change one record of a run folder's store."""

import json
import sqlite3
from pathlib import Path
from typing import Any, Callable, Dict, Optional


def edit_record(
    run_dir: Path,
    edit: Callable[[Dict[str, Any]], None],
    where: Optional[Callable[[Dict], bool]] = None,
    key: Optional[str] = None,
) -> str:
    """Apply ``edit`` to the record of the first stored run whose spec ``where`` accepts, or of the run
    ``key`` (default: the first run); returns its key."""
    with sqlite3.connect(Path(run_dir) / "results.sqlite") as db:
        rows = db.execute("SELECT key, spec, record FROM runs WHERE status = 'ok' ORDER BY rowid").fetchall()
        for found, spec, record in rows:
            if (key is None or found == key) and (where is None or where(json.loads(spec))):
                changed = json.loads(record)
                edit(changed)
                db.execute("UPDATE runs SET record = ? WHERE key = ?", (json.dumps(changed), found))
                return found
    raise AssertionError("no stored run matches")


def drop_field(name: str) -> Callable[[Dict[str, Any]], None]:
    """An edit that removes ``name`` (``"coin.val_mse"``: inside a nested record)."""

    def edit(record: Dict[str, Any]) -> None:
        *parents, last = name.split(".")
        for parent in parents:
            record = record[parent]
        del record[last]

    return edit


def set_field(name: str, value: Any) -> Callable[[Dict[str, Any]], None]:
    """An edit that writes ``value`` into ``name``."""

    def edit(record: Dict[str, Any]) -> None:
        *parents, last = name.split(".")
        for parent in parents:
            record = record[parent]
        record[last] = value

    return edit
