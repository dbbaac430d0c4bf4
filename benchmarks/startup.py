"""Command-line start-up: ``pdenets`` commands that only print against ``python -c "import torch"``.

    python benchmarks/startup.py                                  # 9 rounds
    python benchmarks/startup.py --compare-with /tmp/before/src   # another source tree beside this one

(``git worktree add /tmp/before <commit>`` gives an older tree to compare with.)

Each round runs every command once as a fresh process, in an order shifted by one each
round (so a background load hits all commands alike); the table gives the median wall time
per command and its ratio to the median of ``import torch``. Every pdenets command needs
torch (the task configs hold tensors' dtypes and devices); the goal is that the rest —
argument parsing, task configs, the registry — costs at most 30 % on top of it. Bytecode
caching is on (``PYTHONDONTWRITEBYTECODE`` is dropped for the runs), as after ``pip install``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c 'import torch'": [sys.executable, "-c", "import torch"],
    "pdenets --help": [sys.executable, "-m", "pdenets.cli", "--help"],
    "pdenets tasks": [sys.executable, "-m", "pdenets.cli", "tasks"],
    "pdenets run few-shot --help": [sys.executable, "-m", "pdenets.cli", "run", "few-shot", "--help"],
    "pdenets run node-classification --help": [
        sys.executable,
        "-m",
        "pdenets.cli",
        "run",
        "node-classification",
        "--help",
    ],
}
REFERENCE = "python -c 'import torch'"


def wall_time(command, environment) -> float:
    start = time.perf_counter()
    completed = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment
    )
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{completed.stderr}")
    return elapsed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="fresh processes per command (default 9)")
    parser.add_argument(
        "--compare-with",
        default=None,
        metavar="SRC",
        help="also time the pdenets package found in this folder (e.g. an older checkout's src)",
    )
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the medians to this file")
    args = parser.parse_args(argv)
    # as on a user's machine, where pip compiles the package: bytecode is cached (the warm-up run writes it)
    base = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    base["MPLBACKEND"] = "Agg"
    trees = {"this tree": base}
    if args.compare_with:
        source = os.path.abspath(args.compare_with)
        if not os.path.isdir(os.path.join(source, "pdenets")):
            parser.error(f"--compare-with {args.compare_with}: no pdenets package in that folder")
        trees["compared"] = dict(
            base, PYTHONPATH=os.pathsep.join(filter(None, [source, base.get("PYTHONPATH")]))
        )
    cases = [(tree, name) for name in COMMANDS for tree in trees if tree == "this tree" or name != REFERENCE]
    times = {case: [] for case in cases}
    for tree, name in cases:  # warm the file cache once
        wall_time(COMMANDS[name], trees[tree])
    for round_index in range(args.rounds):
        shift = round_index % len(cases)
        for tree, name in cases[shift:] + cases[:shift]:
            times[(tree, name)].append(wall_time(COMMANDS[name], trees[tree]))
    reference = statistics.median(times[("this tree", REFERENCE)])
    rows = {
        f"{name} [{tree}]" if name != REFERENCE else name: {
            "median_s": statistics.median(values),
            "ratio": statistics.median(values) / reference,
        }
        for (tree, name), values in times.items()
    }
    print(f"{'command':56s} {'median s':>9s} {'× import torch':>15s}")
    for name, row in rows.items():
        print(f"{name:56s} {row['median_s']:9.2f} {row['ratio']:15.2f}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
