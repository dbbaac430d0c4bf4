"""Command-line interface.

    pdenets run <task> [--quick] [--out DIR] [--set key=value ...] [--<alias> value ...]
    pdenets reproduce <table> [--quick] [--out DIR] ...
    pdenets tasks
"""

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
from .tasks import REPRODUCTIONS, TASKS, get_task

__all__ = ["main", "build_parser"]


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=None, help="run directory (default runs/<name>-<time>)")
    parser.add_argument("--quick", action="store_true", help="small version (about a minute on 2 cores)")
    parser.add_argument("--config", type=Path, default=None, help="YAML file of config keys (or a run's config.yaml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key (YAML value; dotted keys for nested fields); repeatable")
    parser.add_argument("--device", default=None, help="torch device, e.g. cpu or cuda (default: config)")
    parser.add_argument("--data-dir", type=Path, default=None, help="data directory (default $PDENETS_DATA)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pdenets",
        description="PDE-inspired deep learning: run the papers' experiments and write reports.",
        epilog="Task shortcuts (e.g. --dataset cora,citeseer --model diff-resnet,gcn --workers 2 "
               "--ray-address auto) set config fields; see `pdenets tasks`.",
    )
    parser.add_argument("--version", action="version", version=f"pdenets {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a task and write a run directory with results and a report")
    run.add_argument("task", choices=sorted(TASKS), help="task to run")
    _common_options(run)
    reproduce = commands.add_parser("reproduce", help="reproduce a paper table with one command")
    reproduce.add_argument("table", choices=sorted(REPRODUCTIONS), help="which table")
    _common_options(reproduce)
    commands.add_parser("tasks", help="list the tasks, their shortcuts and the reproducible tables")
    return parser


def _alias_overrides(spec, extra: List[str], fields) -> List[str]:
    """Turn ``--dataset cora,citeseer`` into ``datasets=[cora, citeseer]`` using the task's aliases."""
    overrides, index = [], 0
    while index < len(extra):
        token = extra[index]
        if not token.startswith("--"):
            raise ValueError(f"unexpected argument {token!r}")
        name, _, value = token[2:].partition("=")
        target = spec.aliases.get(name)
        if target is None:
            known = ", ".join(f"--{a}" for a in sorted(spec.aliases)) or "none"
            raise ValueError(f"unknown option {token!r} for task {spec.name} (shortcuts: {known})")
        if not value:
            switch = isinstance(fields.get(target), bool)
            if switch and (index + 1 >= len(extra) or extra[index + 1].startswith("--")):
                value = "true"  # a bare switch such as --report-only
            elif index + 1 >= len(extra):
                raise ValueError(f"{token} needs a value")
            else:
                index += 1
                value = extra[index]
        if isinstance(fields.get(target), list):
            value = "[" + ", ".join(v.strip() for v in value.split(",") if v.strip()) + "]"
        overrides.append(f"{target}={value}")
        index += 1
    return overrides


def _resolve(args, extra: List[str]):
    if args.command == "reproduce":
        entry = REPRODUCTIONS[args.table]
        spec = get_task(entry.task)
        module = spec.load()
        base = getattr(module, entry.quick if args.quick else entry.full)()
        name = f"reproduce-{args.table}"
    else:
        spec = get_task(args.task)
        base = spec.quick_config() if args.quick else spec.config()
        name = args.task
    config = load_config(spec.config, args.config, base=base)
    fields = config_to_dict(config)
    overrides = _alias_overrides(spec, extra, fields) + list(args.overrides)
    if args.device is not None:
        overrides.append(f"device={args.device}")
    if args.data_dir is not None and "data_dir" in fields:
        overrides.append(f"data_dir={args.data_dir}")
    return spec, name, apply_overrides(config, overrides)


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "tasks":
        for name, spec in sorted(TASKS.items()):
            shortcuts = " ".join(f"--{alias}" for alias in sorted(spec.aliases))
            print(f"{name:20s} {spec.description}\n{'':20s} shortcuts: {shortcuts}")
        for name, entry in sorted(REPRODUCTIONS.items()):
            print(f"reproduce {name:10s} {entry.description}")
        return 0
    try:
        spec, name, config = _resolve(args, extra)
    except (ValueError, KeyError) as error:
        parser.error(str(error))
    if args.print_config:
        print(json.dumps(config_to_dict(config), indent=2))
        return 0
    out = args.out or Path("runs") / f"{name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    run_dir = RunDirectory(out)
    run_dir.write_config(spec.name, config_to_dict(config) | {"quick": bool(args.quick)})
    start = time.perf_counter()
    try:
        spec.run(config, run_dir, progress=not args.no_progress)
    except (ValueError, FileNotFoundError, ImportError) as error:
        print(f"pdenets: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\npdenets: interrupted; finished runs are kept in {run_dir.path} — rerun the same command to "
              "resume", file=sys.stderr)
        return 130
    print(f"done in {time.perf_counter() - start:.1f} s; report: {run_dir.file('report.html')}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
