"""A small registered task for the engine's tests: jobs that sleep, fail, diverge or write their pid."""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from pdenets import NonFiniteError
from pdenets.experiments import Report, Task, TaskConfig, register_task


@dataclass
class ToyConfig(TaskConfig):
    count: int = field(default=6, metadata={"help": "number of jobs"})
    scale: float = field(default=1.0, metadata={"help": "value of job i: i * scale"})
    sleep: float = 0.0
    fail_at: int = -1
    diverge_at: int = -1
    marker_dir: Optional[str] = None


@dataclass(frozen=True)
class ToyJob:
    index: int
    scale: float
    sleep: float
    fail: bool
    diverge: bool
    marker_dir: Optional[str] = field(default=None, metadata={"key": False})


@register_task
class ToyTask(Task):
    name = "toy"
    description = "engine test task"
    config_class = ToyConfig
    columns = {"index": "INTEGER", "value": "REAL"}
    shortcuts = {"n": "count"}

    @classmethod
    def quick_config(cls) -> ToyConfig:
        return ToyConfig(count=2)

    def jobs(self) -> List[ToyJob]:
        c = self.config
        return [
            ToyJob(i, c.scale, c.sleep, i == c.fail_at, i == c.diverge_at, c.marker_dir)
            for i in range(c.count)
        ]

    @staticmethod
    def run_job(spec: ToyJob) -> Dict[str, Any]:
        if spec.marker_dir:
            Path(spec.marker_dir, f"{os.getpid()}-{spec.index}").write_text(str(os.getpid()))
        time.sleep(spec.sleep)
        if spec.fail:
            raise RuntimeError(f"job {spec.index} exploded")
        if spec.diverge:
            raise NonFiniteError("the loss became NaN")
        return {"value": spec.index * spec.scale, "pid": os.getpid()}

    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        ok = [r for r in records if r["status"] == "ok"]
        return {"total": sum(r["value"] for r in ok), "diverged": len(records) - len(ok)}

    def report(self, results, records, run_dir) -> None:
        report = Report("toy")
        report.table(["index", "value"], [[r["index"], r.get("value")] for r in records])
        report.write(run_dir)


# ----------------------------------------------------------------------------------------
# running the toy task from the command line in a child process (interruption tests)

HELPERS = str(Path(__file__).resolve().parent)


def toy_command(out, *options) -> List[str]:
    """``pdenets run toy --out OUT --no-progress OPTIONS`` in a fresh interpreter that can import this
    module."""
    script = (
        f"import sys; sys.path.insert(0, {HELPERS!r}); import toytask; from pdenets.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    return [sys.executable, "-c", script, "run", "toy", "--out", str(out), "--no-progress", *options]


def stored_count(database) -> int:
    """Stored runs, read without creating the file (a plain connect would create an empty one)."""
    if not database.exists():
        return 0
    try:
        connection = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
        return connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.Error:
        return 0
