"""Seconds per run of every learned forecaster of ``coin-forecast`` on a large synthetic region graph.

    python benchmarks/forecast.py                         # 1,000 regions, 800 days, one thread, default settings
    python benchmarks/forecast.py --src OLD/src --set epochs=10   # another source tree (e.g. an older checkout)
    python benchmarks/forecast.py --regions 200 --days 300 --models window-mlp,coin-forecast

The series is made here (nothing is downloaded): regions at random points of the unit square,
each linked to its 3 nearest neighbours (symmetrized: about 6 directed edges per region, the
``FX`` + ``edges`` JSON layout), values ``x_{t+1} = 0.5 x_t + 0.35 W x_t + seasonal term +
noise`` with ``W`` the row-normalized graph, so diffusion across regions is part of the truth.
Each model runs as a user would run it, ``pdenets run coin-forecast --dataset FILE --protocol
ours --model M --seeds 0 --threads 1 --workers 1`` in a fresh folder; the table gives the
seconds of the run itself (the record's ``seconds``: training and prediction, not loading),
the wall time of the command, epochs run, the best epoch and the test MSE.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

MODELS = ("window-mlp", "coin-forecast", "window-gcn", "cheb-gru", "pygt-gconv-gru")


def synthetic_series(regions: int, days: int, seed: int = 0, neighbours: int = 3) -> dict:
    """A ``FX`` + ``edges`` JSON document: a kNN graph of random points and a series that diffuses on it."""
    rng = np.random.default_rng(seed)
    points = rng.random((regions, 2))
    distance = ((points[:, None, :] - points[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(distance, np.inf)
    nearest = np.argsort(distance, axis=1)[:, :neighbours]
    pairs = {(int(i), int(j)) for i in range(regions) for j in nearest[i]}
    pairs |= {(j, i) for i, j in pairs}
    edges = sorted(pairs)
    weights = np.zeros((regions, regions))
    for i, j in edges:
        weights[i, j] = 1.0
    weights /= weights.sum(1, keepdims=True)
    phase = rng.random(regions) * 2 * np.pi
    values = np.zeros((days, regions))
    values[0] = rng.normal(size=regions)
    for t in range(1, days):
        seasonal = 0.3 * np.sin(2 * np.pi * t / 52 + phase)
        values[t] = 0.5 * values[t - 1] + 0.35 * weights @ values[t - 1] + seasonal + 0.3 * rng.normal(size=regions)
    return {"FX": np.round(values, 5).tolist(), "edges": [list(pair) for pair in edges]}


def run_model(model: str, dataset: str, root: str, src: str | None, settings, timeout: float) -> dict:
    out = os.path.join(root, model)
    command = [sys.executable, "-m", "pdenets.cli", "run", "coin-forecast", "--dataset", dataset, "--protocol", "ours",
               "--model", model, "--seeds", "0", "--threads", "1", "--workers", "1", "--out", out, "--no-progress"]
    for setting in settings:
        command += ["--set", setting]
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    if src:
        env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"model": model, "status": f"over {timeout:g} s", "wall": time.perf_counter() - start}
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {"model": model, "status": (done.stderr.strip().splitlines() or ["failed"])[-1][:100], "wall": wall}
    with open(os.path.join(out, "results.json")) as handle:
        results = json.load(handle)
    label = os.path.splitext(os.path.basename(dataset))[0]
    entry = results["table"][label]["ours"][model]
    record = _record(out)
    return {"model": model, "status": "ok", "wall": wall, "seconds": entry["seconds_per_run"],
            "mse": entry["mse"]["mean"], "epochs": record.get("epochs"), "best_epoch": record.get("best_epoch")}


def _record(out: str) -> dict:
    import sqlite3

    with sqlite3.connect(os.path.join(out, "results.sqlite")) as connection:
        (record,) = connection.execute("SELECT record FROM runs").fetchone()
    return json.loads(record)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--regions", type=int, default=1000)
    parser.add_argument("--days", type=int, default=800)
    parser.add_argument("--models", default=",".join(MODELS), metavar="A,B")
    parser.add_argument("--src", default=None, metavar="DIR", help="run the pdenets package found in DIR instead")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="passed to every run")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before a run is stopped")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the rows to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pdenets-forecast-") as root:
        dataset = os.path.join(root, f"regions{args.regions}.json")
        document = synthetic_series(args.regions, args.days)
        with open(dataset, "w") as handle:
            json.dump(document, handle)
        print(f"synthetic series: {args.regions} regions, {args.days} days, {len(document['edges'])} directed edges; "
              f"source: {args.src or 'installed pdenets'}; settings: {' '.join(args.set) or 'defaults'}", flush=True)
        rows = []
        for model in args.models.split(","):
            rows.append(run_model(model, dataset, root, args.src, args.set, args.timeout))
            row = rows[-1]
            print(f"  {model}: {row['status']}, {row.get('seconds', float('nan')):.1f} s per run "
                  f"({row['wall']:.1f} s wall)", flush=True)
    print()
    print("| model | s per run | wall s | epochs | best epoch | test MSE |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        if row["status"] != "ok":
            print(f"| {row['model']} | {row['status']} | {row['wall']:.1f} | | | |")
            continue
        print(f"| {row['model']} | {row['seconds']:.1f} | {row['wall']:.1f} | {row['epochs']} | {row['best_epoch']} "
              f"| {row['mse']:.4f} |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
