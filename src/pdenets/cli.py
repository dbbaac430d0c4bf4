"""Command-line interface: ``pdenets run <task> [--quick] [--out DIR] [--set key=value ...]``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import List, Optional

from . import __version__
from .experiments.config import apply_overrides, config_to_dict, load_config
from .experiments.rundir import RunDirectory
from .tasks import TASKS, get_task

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pdenets",
        description="PDE-inspired deep learning: run the papers' experiments and write reports.",
    )
    parser.add_argument("--version", action="version", version=f"pdenets {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a task and write a run directory with results and a report")
    run.add_argument("task", choices=sorted(TASKS), help="task to run")
    run.add_argument("--out", type=Path, default=None, help="run directory (default runs/<task>-<time>)")
    run.add_argument("--quick", action="store_true", help="small version (about a minute on 2 cores)")
    run.add_argument("--config", type=Path, default=None, help="YAML file of config keys (or a run's config.yaml)")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override a config key (YAML value; dotted keys for nested fields); repeatable")
    run.add_argument("--device", default=None, help="torch device, e.g. cpu or cuda (default: config)")
    run.add_argument("--data-dir", type=Path, default=None, help="data directory (default $PDENETS_DATA)")
    run.add_argument("--no-progress", action="store_true", help="hide progress bars")
    run.add_argument("--print-config", action="store_true", help="print the resolved config and exit")

    commands.add_parser("tasks", help="list the tasks")
    return parser


def _resolve_config(args):
    spec = get_task(args.task)
    base = spec.quick_config() if args.quick else spec.config()
    config = load_config(spec.config, args.config, base=base)
    overrides: List[str] = list(args.overrides)
    fields = config_to_dict(config)
    if args.device is not None:
        overrides.append(f"device={args.device}")
    if args.data_dir is not None and "data_dir" in fields:
        overrides.append(f"data_dir={args.data_dir}")
    return spec, apply_overrides(config, overrides)


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "tasks":
        for name, spec in sorted(TASKS.items()):
            print(f"{name:20s} {spec.description}")
        return 0
    try:
        spec, config = _resolve_config(args)
    except (ValueError, KeyError) as error:
        parser.error(str(error))
    if args.print_config:
        print(json.dumps(config_to_dict(config), indent=2))
        return 0
    out = args.out or Path("runs") / f"{args.task}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    run_dir = RunDirectory(out)
    run_dir.write_config(args.task, config_to_dict(config) | {"quick": bool(args.quick)})
    start = time.perf_counter()
    try:
        spec.run(config, run_dir, progress=not args.no_progress)
    except (ValueError, FileNotFoundError) as error:
        print(f"pdenets: error: {error}", file=sys.stderr)
        return 2
    print(f"done in {time.perf_counter() - start:.1f} s; report: {run_dir.file('report.html')}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
