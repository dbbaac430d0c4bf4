"""Wall time of every task's ``--quick`` run (the promise: about two minutes on an idle 2-core machine).

    python benchmarks/quick.py                       # every task, fresh run folders under /tmp
    python benchmarks/quick.py --tasks few-shot,synthetic --extra few-shot="--dataset clinc150"

Each run is ``pdenets run TASK --quick --out DIR --no-progress`` in a fresh folder (so
nothing is resumed), one after another; built features and embeddings that the tasks cache
(``$PDENETS_FEATURES``) are used when present, and the table says which runs found them.
The table gives the wall time, the runs stored and whether the two-minute goal is met.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

GOAL_S = 120.0
#: extra options per task for the quick run a new user would type first
DEFAULT_EXTRA = {"few-shot": "--dataset omniglot"}


def task_names():
    from pdenets.experiments.task import registered_tasks

    return sorted(registered_tasks())


def quick_run(task: str, extra: str, root: str, timeout: float):
    out = os.path.join(root, task.replace("/", "-"))
    command = [
        sys.executable,
        "-m",
        "pdenets.cli",
        "run",
        task,
        "--quick",
        "--out",
        out,
        "--no-progress",
        *shlex.split(extra),
    ]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, MPLBACKEND="Agg")
        )
    except subprocess.TimeoutExpired:
        return {
            "task": task,
            "extra": extra,
            "seconds": time.perf_counter() - start,
            "status": f"over {timeout:g} s",
        }
    seconds = time.perf_counter() - start
    summary = re.search(r"\((\d+) new run\(s\), (\d+) of (\d+) stored\)", done.stdout)
    status = "ok" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["failed"])[-1][:80]
    return {
        "task": task,
        "extra": extra,
        "seconds": seconds,
        "status": status,
        "stored": f"{summary.group(2)}/{summary.group(3)}" if summary else "-",
        "built_cache": "building features" in (done.stdout + done.stderr),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=None, metavar="A,B", help="tasks to time (default: all)")
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="TASK=OPTIONS",
        help="extra options of a task's run, e.g. few-shot='--dataset clinc150' (repeatable)",
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="seconds before a run is stopped (default 900)"
    )
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the rows to this file")
    args = parser.parse_args(argv)
    extra = dict(DEFAULT_EXTRA)
    for item in args.extra:
        task, _, options = item.partition("=")
        extra[task] = options
    names = args.tasks.split(",") if args.tasks else task_names()
    rows = []
    print(f"{'task':22s} {'options':22s} {'seconds':>8s} {'stored':>8s} {'goal':>5s}  status")
    with tempfile.TemporaryDirectory(prefix="pdenets-quick-") as root:
        for name in names:
            row = quick_run(name, extra.get(name, ""), root, args.timeout)
            rows.append(row)
            goal = "yes" if row["seconds"] <= GOAL_S and row["status"] == "ok" else "no"
            note = " (built its cached features)" if row.get("built_cache") else ""
            print(
                f"{name:22s} {row['extra']:22s} {row['seconds']:8.1f} {row.get('stored', '-'):>8s} "
                f"{goal:>5s}  "
                f"{row['status']}{note}",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
