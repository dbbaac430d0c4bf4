"""Seconds per run of every learned forecaster of ``coin-forecast`` on a large synthetic region graph.

    python benchmarks/forecast.py # 1,000 regions, 800 days, one thread, default settings python
    benchmarks/forecast.py --src OLD/src --set epochs=10 # another source tree (e.g. an older checkout) python
    benchmarks/forecast.py --regions 200 --days 300 --models window-mlp,coin-forecast python
    benchmarks/forecast.py --peer pyg-temporal --datasets chickenpox,PATH.json --seeds 0,1,2 python
    benchmarks/forecast.py --peer pyg-temporal --regions 1000 --days 800 --seeds 0

``--peer pyg-temporal`` puts PyTorch Geometric Temporal's own layers beside ours on the same
windows and split (its protocol: horizon 1, its loader's lags and scaling, the first 20 % of the
snapshots for training, the rest for testing): its ``GConvGRU`` and ``DCRNN`` (``K = 1``, 32
hidden, ReLU, a linear read-out, 200 full-batch epochs of Adam at 0.01 on the per-node MSE: the
loop of its documentation, snapshot by snapshot), against ``pygt-gconv-gru`` (our re-implementation
of the same model and loop, batched over the snapshots) and ``cheb-gru`` (ours) as ``pdenets run
coin-forecast --protocol pyg-temporal`` runs them; MSE and seconds per run of each, one thread.
PyTorch Geometric Temporal is optional (``pip install --no-deps torch-geometric-temporal``; its
``nn.recurrent`` imports ``torch_sparse.SparseTensor`` for one layer we do not use: a stand-in
module is put in its place when torch_sparse is absent). Without it only our side is measured.

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
        values[t] = (
            0.5 * values[t - 1] + 0.35 * weights @ values[t - 1] + seasonal + 0.3 * rng.normal(size=regions)
        )
    return {"FX": np.round(values, 5).tolist(), "edges": [list(pair) for pair in edges]}


def run_coin_forecast(options, out: str, src: str | None, timeout: float | None = None):
    """``pdenets run coin-forecast OPTIONS`` in a fresh interpreter, one thread, one worker, into ``out`` (the
    package found in ``src`` when given); the finished process."""
    command = [
        sys.executable,
        "-m",
        "pdenets.cli",
        "run",
        "coin-forecast",
        *options,
        "--threads",
        "1",
        "--workers",
        "1",
        "--out",
        out,
        "--no-progress",
    ]
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    if src:
        env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def run_model(model: str, dataset: str, root: str, src: str | None, settings, timeout: float) -> dict:
    out = os.path.join(root, model)
    options = ["--dataset", dataset, "--protocol", "ours", "--model", model, "--seeds", "0"]
    for setting in settings:
        options += ["--set", setting]
    start = time.perf_counter()
    try:
        done = run_coin_forecast(options, out, src, timeout)
    except subprocess.TimeoutExpired:
        return {"model": model, "status": f"over {timeout:g} s", "wall": time.perf_counter() - start}
    wall = time.perf_counter() - start
    if done.returncode != 0:
        return {
            "model": model,
            "status": (done.stderr.strip().splitlines() or ["failed"])[-1][:100],
            "wall": wall,
        }
    with open(os.path.join(out, "results.json")) as handle:
        results = json.load(handle)
    label = os.path.splitext(os.path.basename(dataset))[0]
    entry = results["table"][label]["ours"][model]
    record = _record(out)
    return {
        "model": model,
        "status": "ok",
        "wall": wall,
        "seconds": entry["seconds_per_run"],
        "mse": entry["mse"]["mean"],
        "epochs": record.get("epochs"),
        "best_epoch": record.get("best_epoch"),
    }


def _record(out: str) -> dict:
    import sqlite3

    with sqlite3.connect(os.path.join(out, "results.sqlite")) as connection:
        (record,) = connection.execute("SELECT record FROM runs").fetchone()
    return json.loads(record)


def pyg_temporal_layers():
    """PyTorch Geometric Temporal's ``GConvGRU`` and ``DCRNN``, or ``None`` when the package does not
    import."""
    import types

    try:
        import torch_sparse  # noqa: F401
    except ImportError:  # only EvolveGCN needs it: a stand-in so that the package's recurrent layers import
        stand_in = types.ModuleType("torch_sparse")

        class SparseTensor:  # noqa: D401 - a name the package imports, never used here
            pass

        stand_in.SparseTensor = SparseTensor
        sys.modules["torch_sparse"] = stand_in
    try:
        from torch_geometric_temporal.nn.recurrent import DCRNN, GConvGRU
    except ImportError as error:
        print(
            f"PyTorch Geometric Temporal does not import ({error}); measuring pdenets only", file=sys.stderr
        )
        return None
    return {"GConvGRU": GConvGRU, "DCRNN": DCRNN}


def their_run(layer, data, seed: int) -> dict:
    """The documented loop of PyTorch Geometric Temporal with its own layer, on our windows and split."""
    import torch
    from torch.nn import functional as F

    torch.manual_seed(seed)

    class Recurrent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.recurrent = layer(data.lags, 32, 1)
            self.linear = torch.nn.Linear(32, 1)

        def forward(self, x, edge_index, edge_weight):
            return self.linear(F.relu(self.recurrent(x, edge_index, edge_weight)))

    inputs, targets = data.inputs.float(), data.targets[..., 0].float()
    train = data.masks["train"] | data.masks["val"]
    train_rows = train[:, 0, 0].nonzero().squeeze(1).tolist()
    test_rows = data.masks["test"][:, 0, 0].nonzero().squeeze(1).tolist()
    edges = []
    for day in data.graph_days:
        index, weight = data.series.graph_at(day)
        edges.append((index, weight.float()))
    graph_of = data.graph_ids.tolist()
    model = Recurrent()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    start = time.perf_counter()
    model.train()
    for _ in range(200):
        cost = 0
        for row in train_rows:
            index, weight = edges[graph_of[row]]
            cost = cost + torch.mean((model(inputs[row], index, weight).squeeze(-1) - targets[row]) ** 2)
        cost = cost / len(train_rows)
        cost.backward()
        optimizer.step()
        optimizer.zero_grad()
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        errors = [
            torch.mean((model(inputs[row], *edges[graph_of[row]]).squeeze(-1) - targets[row]) ** 2)
            for row in test_rows
        ]
    return {"mse": float(torch.stack(errors).mean()), "seconds": seconds}


def peer_comparison(datasets, data_dir, seeds, root: str, src) -> list:
    """Every dataset: PyTorch Geometric Temporal's layers beside ours on the same windows, MSE and s per
    run."""
    import torch

    from pdenets.data.temporal import load_temporal
    from pdenets.tasks.coin_forecast.protocol import protocol_windows

    torch.set_num_threads(1)
    layers = pyg_temporal_layers() or {}
    rows = []
    for dataset in datasets:
        series = load_temporal(dataset, data_dir)
        data = protocol_windows(series, "pyg-temporal")
        label = series.name
        for name, layer in layers.items():
            runs = [their_run(layer, data, seed) for seed in seeds]
            rows.append(
                {
                    "dataset": label,
                    "side": "PyTorch Geometric Temporal",
                    "model": name,
                    "mse": [r["mse"] for r in runs],
                    "seconds": float(np.mean([r["seconds"] for r in runs])),
                }
            )
            print(
                f"  {label}: theirs {name}: MSE {np.mean(rows[-1]['mse']):.4f}, {rows[-1]['seconds']:.1f} s "
                "per run",
                flush=True,
            )
        out = os.path.join(root, f"ours-{label}")
        options = [
            "--dataset",
            dataset,
            "--protocol",
            "pyg-temporal",
            "--model",
            "pygt-gconv-gru,cheb-gru",
            "--seeds",
            ",".join(map(str, seeds)),
        ] + (["--data-dir", data_dir] if data_dir else [])
        done = run_coin_forecast(options, out, src)
        if done.returncode != 0:
            print(done.stderr[-500:], file=sys.stderr)
            continue
        with open(os.path.join(out, "results.json")) as handle:
            table = json.load(handle)["table"]
        entries = next(iter(table.values()))["pyg-temporal"]
        for model in ("pygt-gconv-gru", "cheb-gru"):
            entry = entries[model]
            rows.append(
                {
                    "dataset": label,
                    "side": "pdenets",
                    "model": model,
                    "mse": [entry["mse"]["mean"]],
                    "mse_std": entry["mse"]["std"],
                    "seconds": entry["seconds_per_run"],
                }
            )
            print(
                f"  {label}: ours {model}: MSE {entry['mse']['mean']:.4f} ± {entry['mse']['std']:.4f}, "
                f"{entry['seconds_per_run']:.1f} s per run",
                flush=True,
            )
    print()
    print("| dataset | side | model | test MSE (mean over seeds) | s per run |")
    print("|---|---|---|---:|---:|")
    for row in rows:
        print(
            f"| {row['dataset']} | {row['side']} | {row['model']} | {np.mean(row['mse']):.4f} "
            f"| {row['seconds']:.1f} |"
        )
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--regions", type=int, default=1000)
    parser.add_argument("--days", type=int, default=800)
    parser.add_argument("--models", default=",".join(MODELS), metavar="A,B")
    parser.add_argument(
        "--src", default=None, metavar="DIR", help="run the pdenets package found in DIR instead"
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="passed to every run")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before a run is stopped")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the rows to this file")
    parser.add_argument(
        "--peer", choices=("pyg-temporal",), default=None, help="beside a peer library's own layers"
    )
    parser.add_argument(
        "--datasets",
        default=None,
        metavar="A,B",
        help="with --peer: series names or files (default: the synthetic series)",
    )
    parser.add_argument("--data-dir", default=None, help="where named series lie (default: $PDENETS_DATA)")
    parser.add_argument("--seeds", default="0", metavar="A,B", help="with --peer: seeds of every model")
    args = parser.parse_args(argv)
    if args.peer:
        with tempfile.TemporaryDirectory(prefix="pdenets-forecast-peer-") as root:
            datasets = args.datasets.split(",") if args.datasets else None
            if datasets is None:
                datasets = [os.path.join(root, f"regions{args.regions}.json")]
                with open(datasets[0], "w") as handle:
                    json.dump(synthetic_series(args.regions, args.days), handle)
            rows = peer_comparison(
                datasets, args.data_dir, [int(s) for s in args.seeds.split(",")], root, args.src
            )
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(rows, handle, indent=1)
        return
    with tempfile.TemporaryDirectory(prefix="pdenets-forecast-") as root:
        dataset = os.path.join(root, f"regions{args.regions}.json")
        document = synthetic_series(args.regions, args.days)
        with open(dataset, "w") as handle:
            json.dump(document, handle)
        print(
            f"synthetic series: {args.regions} regions, {args.days} days, {len(document['edges'])} directed "
            "edges; "
            f"source: {args.src or 'installed pdenets'}; settings: {' '.join(args.set) or 'defaults'}",
            flush=True,
        )
        rows = []
        for model in args.models.split(","):
            rows.append(run_model(model, dataset, root, args.src, args.set, args.timeout))
            row = rows[-1]
            print(
                f"  {model}: {row['status']}, {row.get('seconds', float('nan')):.1f} s per run "
                f"({row['wall']:.1f} s wall)",
                flush=True,
            )
    print()
    print("| model | s per run | wall s | epochs | best epoch | test MSE |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        if row["status"] != "ok":
            print(f"| {row['model']} | {row['status']} | {row['wall']:.1f} | | | |")
            continue
        print(
            f"| {row['model']} | {row['seconds']:.1f} | {row['wall']:.1f} | {row['epochs']} | "
            f"{row['best_epoch']} "
            f"| {row['mse']:.4f} |"
        )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
