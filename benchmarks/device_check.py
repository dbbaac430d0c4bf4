"""One command that says how pdenets runs on a device: the suite's device tests, CPU against the device side
by side on the same machine, and what the paper's CIFAR-10 table would cost there.

    python benchmarks/device_check.py --prepare                  # here: wheels + small data files -> .device/
    python3 benchmarks/device_check.py --device cuda --out OUT   # on the GPU machine (carry .device)
    python benchmarks/device_check.py --device cpu --smoke --out /tmp/check   # the same code paths, toy sizes

It runs from the source tree (``src`` is put on the path; nothing is installed into the machine's Python).
``--prepare`` downloads, into ``.device/wheels``, the pure-Python and compiled wheels a bare GPU image lacks
(OmegaConf, lap, POT; for Python 3.12 on x86-64) and copies the small data files the check reads
(Cora, chickenpox, MNIST and three CIFAR-10 chunks: about 22 MiB) into ``.device/data``; the check
installs the wheels into ``.device/site`` when an import is missing and reads its data from ``.device/data``
when ``$PDENETS_DATA`` has none. The whole of CIFAR-10 does not travel: the timed image epochs run on
images of CIFAR-10's shape (the time of an epoch does not depend on the pixels).

Sections, each timed on the CPU and on ``--device`` in the same process (medians, CUDA synchronized):

* **tests** — ``pytest -m device --device D`` (every test that takes the device fixture: operators, layers,
  models, analysis, each task's ``--quick`` run), with the counts and the reasons of the skips;
* **cora** — one Diff-ResNet epoch on Cora (training step and evaluation; r = 20, γ = 0.25);
* **block graphs** — one epoch on the 2,097,152- and 20,000,000-node block graphs (r = 20, 64 features,
  adjoint backward) with the device's peak memory; the CPU runs the 2M graph (the 20M CPU epoch, 17 minutes
  on 2 cores, is left to ``benchmarks/graph.py``);
* **few-shot** — 10,000 5-way 1-shot tasks (15 queries, 64-d features) with PT-MAP and ``internal``;
* **cifar** — one epoch (50,000 images, batch 100, pad-crop-flip, SGD with the L2 and smoothness penalties) of
  the paper-width Hamiltonian-74 and its nonlocal-diffusion variant, fp32 and ``amp`` (bfloat16); the CPU
  epoch is estimated from a few batches;
* **chickenpox** — one coin-forecast run of ``cheb-gru`` on chickenpox (our protocol, seed 0);
* **estimate** — the wall time of the task's full CIFAR-10 table on this device (its models, seeds and
  epochs), from the measured epochs (a ResNet's from the Hamiltonian's, scaled by FLOPs).

It writes ``OUT/device_check.json`` and ``OUT/device_check.md`` after every section (a check cut short keeps
what it measured) and prints as its last line::

    device check: device D, tests P passed F failed S skipped, cora epoch X ms, 20M-node epoch Y s, \
cifar epoch Z s

(one line; broken here to fit).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / ".device"
#: the wheels a bare GPU image lacks (its torch, numpy, scipy, torch-geometric, pytest are used as they are)
WHEELS = ("omegaconf==2.3.0", "antlr4-python3-runtime==4.9.3", "lap==0.5.12", "POT==0.9.5")
#: the data files the check reads, relative to the data folder: Cora and chickenpox for the timings, and
#: what each task's ``--quick`` test reads (MNIST, three CIFAR-10 chunks); about 22 MiB
DATA_FILES = (
    "npz/cora.npz",
    "temporal/chickenpox.json",
    *(f"mnist/MNIST/raw/{p}-{k}-ubyte.gz" for p in ("train", "t10k") for k in ("images-idx3", "labels-idx1")),
    "cifar10/convnetjs_png/cifar10_labels.json",
    *(f"cifar10/convnetjs_png/cifar10_batch_{b}.png" for b in (0, 40, 50)),
)
SMOKE_TEST_FILES = ("tests/operators/test_diffusion.py", "tests/nn/test_diffusion.py")


def prepare() -> None:
    """Download the wheels for the GPU image's Python and copy the small data files into ``.device/``."""
    wheels = BUNDLE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    platforms = [
        f"--platform={name}"
        for name in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any")
    ]
    for requirement in WHEELS:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
        command += ["--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(wheels)]
        if subprocess.run([*command, requirement]).returncode != 0:  # pure Python, published as sdist only
            build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels)]
            subprocess.run([*build, requirement], check=True)
    source = Path(os.environ.get("PDENETS_DATA") or Path.home() / ".cache" / "pdenets")
    for name in DATA_FILES:
        target = BUNDLE / "data" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (source / name).is_file():
            shutil.copyfile(source / name, target)
        else:
            print(f"not bundled (missing in {source}): {name}")
    sizes = sum(path.stat().st_size for path in BUNDLE.rglob("*") if path.is_file())
    print(f"{BUNDLE}: {sizes / 2**20:.1f} MiB (carry it: git-ignored, {len(list(wheels.iterdir()))} wheels)")


def _use_bundle() -> None:
    """Put ``src`` and, where an import is missing, the bundled wheels on the path; point at bundled data."""
    sys.path.insert(0, str(ROOT / "src"))
    site = BUNDLE / "site"
    missing = []
    for module in ("omegaconf", "lap", "ot"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    wheels = sorted((BUNDLE / "wheels").glob("*.whl")) if (BUNDLE / "wheels").is_dir() else []
    if missing and wheels:
        command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
        subprocess.run([*command, "--upgrade", "--target", str(site), *map(str, wheels)], check=True)
    if site.is_dir():
        sys.path.insert(1, str(site))
    paths = [str(ROOT / "src"), *([str(site)] if site.is_dir() else []), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    data = os.environ.get("PDENETS_DATA")
    if (not data or not Path(data, DATA_FILES[0]).is_file()) and (BUNDLE / "data").is_dir():
        os.environ["PDENETS_DATA"] = str(BUNDLE / "data")
    os.environ.setdefault("MPLBACKEND", "Agg")


# ----------------------------------------------------------------------------------------------------
# timing


def _synchronize(device: Any) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def timed(function: Callable[[], Any], device: Any, repeats: int, warmup: int = 1) -> float:
    """Median seconds of ``function()`` on ``device`` (synchronized) after ``warmup`` calls."""
    for _ in range(warmup):
        function()
    _synchronize(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        _synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _peak_reset(device: Any) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _peak_gib(device: Any) -> Optional[float]:
    import torch

    if torch.device(device).type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    return None


# ----------------------------------------------------------------------------------------------------
# sections


def check_tests(device: str, smoke: bool, out: Path, timeout: float) -> Dict[str, Any]:
    """``pytest -m device --device D``: counts, and every skip reason with its count."""
    report = out / "tests.xml"
    paths = list(SMOKE_TEST_FILES) if smoke else ["tests"]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "device"]
    command += ["--device", device, f"--junitxml={report}", *paths]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        tail = (done.stdout + done.stderr).strip().splitlines()[-30:]
    except subprocess.TimeoutExpired:
        tail = [f"stopped after {timeout:g} s"]
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    skips: Dict[str, int] = {}
    failures: List[str] = []
    if report.is_file():
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            name = f"{case.get('classname')}::{case.get('name')}"
            skipped = case.find("skipped")
            if case.find("failure") is not None or case.find("error") is not None:
                counts["failed"] += 1
                failures.append(name)
            elif skipped is not None:
                counts["skipped"] += 1
                reason = re.sub(r"^[^:]*:\d+: ", "", skipped.get("message") or "skipped")
                skips[reason] = skips.get(reason, 0) + 1
            else:
                counts["passed"] += 1
    return {
        **counts,
        "seconds": time.perf_counter() - start,
        "skip_reasons": skips,
        "failures": failures[:50],
        "output_tail": tail,
    }


def _diff_resnet(features: int, classes: int, weights: Any, num_steps: int = 20):
    import torch

    from pdenets.models import DiffResNet

    torch.manual_seed(0)
    return DiffResNet(
        features,
        classes,
        block="graph",
        num_steps=num_steps,
        step_size=0.25,
        dropout=0.25,
        dropout_position="before",
        weights=weights,
        check_stability=False,
    )


def _graph_epoch(model: Any, inputs: Any, labels: Any, train: Any) -> Callable[[], None]:
    import torch
    from torch.nn import functional as F

    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

    def epoch() -> None:
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(inputs)[train], labels[train]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            model(inputs)

    return epoch


def check_cora(devices: List[str], smoke: bool) -> Dict[str, Any]:
    """One Diff-ResNet epoch on Cora (or a block graph of its size where Cora is not in the data folder)."""
    import torch

    try:
        from pdenets.data.transforms import prepared_graph

        graph = prepared_graph("cora", None)
        x, labels, weights, source = graph.x_sparse, graph.y, graph.weights, "cora"
    except Exception as error:  # noqa: BLE001 - no Cora: a stand-in of its size, said so
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from _graphs import block_graph_csr

        x, labels, weights = block_graph_csr(2708, 7, 4, 1433)
        source = f"block graph of Cora's size (cora: {type(error).__name__})"
    train = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(0))[:140]
    result: Dict[str, Any] = {"graph": source, "nodes": int(x.shape[0])}
    for device in devices:
        model = _diffresnet_on(x.shape[1], int(labels.max()) + 1, weights, device)
        inputs, targets, rows = x.to(device), labels.to(device), train.to(device)
        seconds = timed(_graph_epoch(model, inputs, targets, rows), device, 3 if smoke else 20, warmup=2)
        result[f"{_kind(device)}_ms"] = 1000 * seconds
    return result


def _diffresnet_on(features: int, classes: int, weights: Any, device: str, num_steps: int = 20):
    return _diff_resnet(features, classes, weights, num_steps).to(device)


def _kind(device: str) -> str:
    return "cpu" if device == "cpu" else "device"


def check_block_graphs(devices: List[str], smoke: bool) -> Dict[str, Any]:
    """One epoch (adjoint backward) of the block graphs; the CPU runs the smaller one only."""
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _graphs import block_graph_csr

    sizes = (20_000, 200_000) if smoke else (2_097_152, 20_000_000)
    rows: List[Dict[str, Any]] = []
    for size in sizes:
        start = time.perf_counter()
        x, labels, weights = block_graph_csr(size, 5, 10, 64)
        row: Dict[str, Any] = {"nodes": size, "build_s": time.perf_counter() - start}
        train = torch.randperm(size, generator=torch.Generator().manual_seed(0))[:100]
        for device in devices:
            if device == "cpu" and size == sizes[-1] and len(devices) > 1:
                row["cpu_s"] = None  # the largest graph's CPU epoch: benchmarks/graph.py --trial
                continue
            _peak_reset(device)
            model = _diffresnet_on(64, 5, weights, device)
            epoch = _graph_epoch(model, x.to(device), labels.to(device), train.to(device))
            row[f"{_kind(device)}_s"] = timed(epoch, device, 1, warmup=1)
            if _peak_gib(device) is not None:
                row["device_peak_gib"] = _peak_gib(device)
            del model, epoch
            if torch.device(device).type == "cuda":
                torch.cuda.empty_cache()
        rows.append(row)
        del x, labels, weights
    return {"graphs": rows}


def check_fewshot(devices: List[str], smoke: bool) -> Dict[str, Any]:
    """10,000 5-way 1-shot tasks (64-d, 15 queries) with PT-MAP and internal, on each device."""
    import torch

    from pdenets.models.fewshot import Preprocessing, classify

    count = 100 if smoke else 10_000
    generator = torch.Generator().manual_seed(0)
    centres = torch.randn(count, 5, 64, generator=generator) * (3.0 / 8)
    support = centres + torch.randn(count, 5, 64, generator=generator) / 8
    query = centres.repeat_interleave(15, 1) + torch.randn(count, 75, 64, generator=generator) / 8
    labels = torch.arange(5).expand(count, -1)
    truth = torch.arange(5).repeat_interleave(15).expand(count, -1)
    result: Dict[str, Any] = {"tasks": count}
    for method in ("pt-map", "internal"):
        for device in devices:
            # the CPU solves a tenth of the tasks (its time scaled up) where a device solves them all
            part = count if device != "cpu" or smoke or len(devices) == 1 else count // 10
            s, y, q = support[:part].to(device), labels[:part].to(device), query[:part].to(device)

            def solve() -> Any:
                return classify(s, y, q, 5, method, Preprocessing(normalize=True), chunk_size=1000)

            start = time.perf_counter()
            probabilities = solve()
            _synchronize(device)
            result[f"{method}_{_kind(device)}_s"] = (time.perf_counter() - start) * count / part
            result[f"{method}_{_kind(device)}_tasks_timed"] = part
            accuracy = float((probabilities.argmax(-1).cpu() == truth[:part]).float().mean())
            result[f"{method}_{_kind(device)}_accuracy"] = accuracy
    return result


def _image_model(name: str, smoke: bool) -> Any:
    from pdenets.models.image_networks import ImageArchitecture, build_image_model

    architecture = ImageArchitecture(
        units=(1, 1, 1) if smoke else (6, 6, 6),
        widths=(8, 16, 16) if smoke else (32, 64, 112),
        step_size=0.06,
        resnet_depth=8 if smoke else 44,
        resnet_widths=(8, 16, 16) if smoke else (16, 32, 64),
        lam=0.1,
        s=0.5,
        subsample=2,
        stages=2,
    )
    return build_image_model(
        name, architecture, channels=3, classes=10, size=32, segmentation=False, head="pool"
    )


def check_cifar(devices: List[str], smoke: bool) -> Dict[str, Any]:
    """The task's first epoch of the paper-width Hamiltonian-74 and its nonlocal-diffusion variant, fp32 and
    amp: SGD at the schedule's warm-up rate, momentum, the L2 and smoothness penalties of its defaults.

    A row whose loss became NaN or inf keeps its time (the epoch ran to its end) with ``finite: false``."""
    import torch

    from pdenets import NonFiniteError
    from pdenets.data.vision import pad_crop_flip
    from pdenets.models.training import train_epoch
    from pdenets.tasks.image_classification.config import ImageClassificationConfig
    from pdenets.tasks.image_classification.task import paper_learning_rate

    config = ImageClassificationConfig()
    images = 200 if smoke else 50_000
    steps = -(-images // config.batch_size)
    lr = paper_learning_rate(0, steps, config.epochs, config.lr)  # the first epoch: the warm-up rate
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(images, 3, 32, 32, generator=generator)
    targets = torch.randint(0, 10, (images,), generator=generator)
    rows = []
    for name in ("hamiltonian-74", "hamiltonian-74-diffusion"):
        for device in devices:
            for amp in (False, True):
                if device == "cpu" and amp and not smoke:
                    continue  # the CPU row is fp32 (bfloat16 autocast on a CPU is not what a GPU user runs);
                    # the smoke run takes the amp path on the CPU too, so that it is exercised before a GPU
                torch.manual_seed(0)
                model = _image_model(name, smoke).to(device)
                optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=config.momentum)

                def penalty(model: Any = model) -> Any:
                    return config.l2 * model.l2_penalty() + config.smoothness * model.smoothness_penalty()

                subset = images if device != "cpu" or smoke else 300  # the CPU: 3 batches, scaled up
                start = time.perf_counter()
                try:
                    epoch = train_epoch(
                        model,
                        optimizer,
                        inputs[:subset],
                        targets[:subset],
                        batch_size=config.batch_size,
                        generator=torch.Generator().manual_seed(0),
                        augment=pad_crop_flip,
                        penalty=penalty,
                        device=device,
                        amp=amp,
                    )
                except NonFiniteError:  # raised after the epoch's last step: its time is still an epoch's
                    epoch = {"loss": math.nan}
                _synchronize(device)
                seconds = (time.perf_counter() - start) * images / subset
                rows.append(
                    {
                        "model": name,
                        "device": _kind(device),
                        "amp": amp,
                        "epoch_s": seconds,
                        "estimated_from_images": None if subset == images else subset,
                        "loss": epoch["loss"],
                        "finite": math.isfinite(epoch["loss"]),
                    }
                )
    return {"images": images, "lr": lr, "rows": rows}


def check_chickenpox(devices: List[str], smoke: bool) -> Dict[str, Any]:
    """One coin-forecast run of cheb-gru on chickenpox (our protocol, seed 0)."""
    from pdenets.tasks.coin_forecast.config import CoinForecastConfig
    from pdenets.tasks.coin_forecast.task import CoinForecastTask

    result: Dict[str, Any] = {}
    for device in devices:
        config = CoinForecastConfig(
            datasets=["chickenpox"],
            protocols=["ours"],
            models=["cheb-gru"],
            seeds=[0],
            device=device,
            workers=1,
            epochs=3 if smoke else 200,
        )
        from pdenets.experiments.records import record_dict

        task = CoinForecastTask(config)
        task.prepare()
        (spec,) = task.jobs()
        start = time.perf_counter()
        record = task.run_job(spec, task.local_context())
        _synchronize(device)
        result[f"{_kind(device)}_s"] = time.perf_counter() - start
        result[f"{_kind(device)}_test_mse"] = record_dict(record)["mse"]  # the task's typed record
    return result


def estimate_table(cifar: Dict[str, Any], smoke: bool) -> Dict[str, Any]:
    """The wall time of the task's full CIFAR-10 table on the device, from the measured fp32 epochs."""
    from pdenets.models.image_networks import count_flops
    from pdenets.tasks.image_classification.config import ImageClassificationConfig

    config = ImageClassificationConfig()
    measured = {
        (row["model"], row["amp"]): row["epoch_s"]
        for row in cifar.get("rows", [])
        if row["device"] == "device"
    }
    if not measured:
        measured = {(row["model"], row["amp"]): row["epoch_s"] for row in cifar.get("rows", [])}
    hamiltonian = measured.get(("hamiltonian-74", False))
    nonlocal_epoch = measured.get(("hamiltonian-74-diffusion", False))
    if hamiltonian is None or nonlocal_epoch is None:
        return {"error": "no measured epochs"}
    flops_h = count_flops(_image_model("hamiltonian-74", smoke), (3, 32, 32))
    per_model = {}
    for model in config.models:
        if model.startswith("hamiltonian-74-"):
            per_model[model] = nonlocal_epoch
        elif model == "hamiltonian-74":
            per_model[model] = hamiltonian
        else:  # a ResNet: the Hamiltonian's epoch scaled by the forward FLOPs
            per_model[model] = hamiltonian * count_flops(_image_model(model, smoke), (3, 32, 32)) / flops_h
    epochs_per_model = len(config.seeds) * config.epochs * (40_000 / 50_000)  # the task trains on 40,000
    hours = sum(per_model.values()) * epochs_per_model / 3600
    return {
        "models": per_model,
        "seeds": len(config.seeds),
        "epochs": config.epochs,
        "hours": hours,
        "hours_with_5_seeds": hours * 5 / len(config.seeds),
    }


# ----------------------------------------------------------------------------------------------------
# the report


def _markdown(results: Dict[str, Any]) -> str:
    device = results["device"]
    lines = [f"# Device check: {results['device_name']}", ""]
    lines.append(f"`{results['command']}` — torch {results['torch']}, Python {results['python']}.")
    lines.append("")
    tests = results.get("tests")
    if tests:
        lines += [
            "## Tests",
            "",
            f"`pytest -m device --device {device}`: **{tests['passed']} passed, {tests['failed']} failed, "
            f"{tests['skipped']} skipped** in {tests['seconds']:.0f} s.",
            "",
        ]
        for reason, count in sorted(tests["skip_reasons"].items(), key=lambda item: -item[1]):
            lines.append(f"- skipped ×{count}: {reason}")
        for name in tests["failures"]:
            lines.append(f"- FAILED {name}")
        lines.append("")
    lines += [
        "## CPU against the device, same machine",
        "",
        "| workload | CPU | device | speed-up |",
        "|---|---|---|---|",
    ]

    def row(label: str, cpu: Optional[float], dev: Optional[float], unit: str) -> None:
        cells = [f"{v:,.3g} {unit}" if v is not None else "—" for v in (cpu, dev)]
        ratio = f"{cpu / dev:.1f}×" if cpu and dev else "—"
        lines.append(f"| {label} | {cells[0]} | {cells[1]} | {ratio} |")

    cora = results.get("cora", {})
    if "cpu_ms" in cora:
        row(
            f"Diff-ResNet epoch, {cora['graph']} ({cora['nodes']:,} nodes)",
            cora["cpu_ms"],
            cora.get("device_ms"),
            "ms",
        )
    for graph in results.get("block_graphs", {}).get("graphs", []):
        peak = f", device peak {graph['device_peak_gib']:.2f} GiB" if graph.get("device_peak_gib") else ""
        row(
            f"block-graph epoch, {graph['nodes']:,} nodes{peak}",
            graph.get("cpu_s"),
            graph.get("device_s"),
            "s",
        )
    fewshot = results.get("fewshot", {})
    for method in ("pt-map", "internal"):
        if f"{method}_cpu_s" in fewshot:
            row(
                f"few-shot {method}, {fewshot['tasks']:,} tasks"
                + (
                    " (CPU from a tenth)"
                    if fewshot.get(f"{method}_cpu_tasks_timed", 0) < fewshot["tasks"]
                    else ""
                ),
                fewshot[f"{method}_cpu_s"],
                fewshot.get(f"{method}_device_s"),
                "s",
            )
    cifar = results.get("cifar", {})
    by = {(r["model"], r["device"], r["amp"]): r for r in cifar.get("rows", [])}
    for model in ("hamiltonian-74", "hamiltonian-74-diffusion"):
        cpu = by.get((model, "cpu", False))
        for amp in (False, True):
            dev = by.get((model, "device", amp))
            if (cpu and not amp) or dev:
                note = " (CPU from a few batches)" if cpu and cpu["estimated_from_images"] and not amp else ""
                diverged = [r for r in (cpu if not amp else None, dev) if r and not r.get("finite", True)]
                note += ", loss NaN/inf on " + " and ".join(r["device"] for r in diverged) if diverged else ""
                row(
                    f"CIFAR-10 epoch, {model}, {'amp (bfloat16)' if amp else 'fp32'}{note}",
                    cpu["epoch_s"] if cpu and not amp else None,
                    dev["epoch_s"] if dev else None,
                    "s",
                )
    chickenpox = results.get("chickenpox", {})
    if "cpu_s" in chickenpox:
        row(
            "coin-forecast cheb-gru on chickenpox, one run",
            chickenpox["cpu_s"],
            chickenpox.get("device_s"),
            "s",
        )
    if cifar.get("lr") is not None:
        lines += ["", f"The CIFAR-10 epochs train at the schedule's first-epoch rate, lr = {cifar['lr']:g}."]
    estimate = results.get("estimate", {})
    if "hours" in estimate:
        lines += [
            "",
            f"**The CIFAR-10 table** ({len(estimate['models'])} models × {estimate['seeds']} seeds × "
            f"{estimate['epochs']} epochs on 40,000 images) would take **{estimate['hours']:.1f} h** on this "
            f"device in fp32 ({estimate['hours_with_5_seeds']:.1f} h with the paper's 5 seeds).",
        ]
    for name, error in results.get("errors", {}).items():
        lines += ["", f"**{name} failed:** `{error}`"]
    return "\n".join(lines) + "\n"


def last_line(results: Dict[str, Any]) -> str:
    tests = results.get("tests", {})
    cora = results.get("cora", {})
    graphs = results.get("block_graphs", {}).get("graphs", [])
    largest = graphs[-1] if graphs else {}
    cifar = {
        (r["model"], r["device"], r["amp"]): r["epoch_s"] for r in results.get("cifar", {}).get("rows", [])
    }
    kind = "cpu" if results["device"] == "cpu" else "device"

    def number(value: Optional[float], digits: int) -> str:
        return "n/a" if value is None else f"{value:.{digits}f}"

    return (
        f"device check: device {results['device']}, tests {tests.get('passed', 0)} passed "
        f"{tests.get('failed', 0)} failed {tests.get('skipped', 0)} skipped, cora epoch "
        f"{number(cora.get(f'{kind}_ms'), 1)} ms, 20M-node epoch {number(largest.get(f'{kind}_s'), 2)} s, "
        f"cifar epoch {number(cifar.get(('hamiltonian-74', kind, False)), 1)} s"
    )


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--device", default="cuda", help="the device to check against the CPU (default cuda)")
    parser.add_argument(
        "--smoke", action="store_true", help="the same code paths at toy sizes (about 2 minutes)"
    )
    parser.add_argument(
        "--out", default="device-check", help="folder of device_check.json/.md (default ./device-check)"
    )
    parser.add_argument(
        "--prepare", action="store_true", help="bundle wheels and data into .device/ and stop"
    )
    parser.add_argument(
        "--sections",
        default="tests,cora,block,fewshot,cifar,chickenpox,estimate",
        help="the sections to run, comma-separated (default: all)",
    )
    parser.add_argument("--tests-timeout", type=float, default=240.0, help="seconds for the test section")
    args = parser.parse_args(argv)
    if args.prepare:
        prepare()
        return 0
    _use_bundle()
    import torch

    device = str(torch.device(args.device))
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        print(f"device check: --device {device}, but this torch ({torch.__version__}) sees no CUDA device")
        return 2
    devices = ["cpu"] if device == "cpu" else ["cpu", device]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: Dict[str, Any] = {
        "device": device,
        "device_name": torch.cuda.get_device_name(device)
        if device.startswith("cuda")
        else platform.processor() or "CPU",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu_threads": torch.get_num_threads(),
        "smoke": args.smoke,
        "command": " ".join(
            ["python", "benchmarks/device_check.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "errors": {},
    }
    sections = [name.strip() for name in args.sections.split(",") if name.strip()]
    work: Dict[str, Callable[[], Dict[str, Any]]] = {
        "tests": lambda: check_tests(device, args.smoke, out, args.tests_timeout),
        "cora": lambda: check_cora(devices, args.smoke),
        "block": lambda: check_block_graphs(devices, args.smoke),
        "fewshot": lambda: check_fewshot(devices, args.smoke),
        "cifar": lambda: check_cifar(devices, args.smoke),
        "chickenpox": lambda: check_chickenpox(devices, args.smoke),
        "estimate": lambda: estimate_table(results.get("cifar", {}), args.smoke),
    }
    keys = {"block": "block_graphs"}
    for name in sections:
        if name not in work:
            parser.error(f"unknown section {name!r}; choose from {', '.join(work)}")
        start = time.perf_counter()
        try:
            results[keys.get(name, name)] = work[name]()
        except Exception as error:  # noqa: BLE001 - one section failing must not lose the others
            results["errors"][name] = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
        (out / "device_check.json").write_text(json.dumps(results, indent=1, default=str))
        (out / "device_check.md").write_text(_markdown(results))
    print(_markdown(results))
    print(last_line(results))
    return 1 if results["errors"] or results.get("tests", {}).get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
