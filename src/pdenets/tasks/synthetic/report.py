"""The report of ``pdenets run synthetic``: the XOR diffusion table and figure, the classification
table with its figures (accuracy curves and features per set and optimizer), the check against the
paper's scripts, and ``curves.csv``."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import numpy as np

from ...analysis.diffusion_path import ratio_path
from ...experiments.plots import grouped_bars, mean_band, plt, scatter_classes
from ...experiments.report import Report, counted
from ...experiments.summary import format_mean_std
from .config import SyntheticConfig
from .results import PaperScriptCount, SyntheticResults, XorDiffusion

__all__ = ["add_sections"]

#: Bar and line colours of the two networks, in the order of ``variants`` (without, then with diffusion).
_COLORS = ("#7f7f7f", "#1f77b4")


def add_sections(
    report: Report,
    config: SyntheticConfig,
    results: SyntheticResults,
    records: List[Dict[str, Any]],
    run_dir,
    variants: Sequence[str],
) -> None:
    """Add the setting, the XOR, classification and paper-script sections and their figures to ``report``.

    Also writes ``curves.csv`` (train and test accuracy of every classification run after every epoch).

    Args:
        report: the report started by the task.
        config: the task's configuration.
        results: the task's results; the names of the figures drawn are added to ``results.figures``.
        records: the runs, each with its ``part`` (``xor``, ``classification`` or ``paper-script``).
        run_dir: the run folder the figures and ``curves.csv`` are saved in.
        variants: the networks' names in display order: without, then with diffusion.
    """
    figures = results.figures
    report.paragraph(
        "Weights: Gaussian kernel on the n_top-nearest-neighbour graph (self included: "
        f"{config.include_self}), "
        f"`{config.normalization}` normalization; explicit diffusion with sparse operators. Configuration: "
        "`config.yaml`; all numbers: `results.json`, `runs.csv`, `curves.csv`."
    )
    xor = [r for r in records if r["part"] == "xor"]
    if xor and results.xor is not None:
        figures["xor"] = _xor_figure(xor, config, run_dir)
        _xor_section(report, xor, results.xor, config, figures["xor"])
    runs = [r for r in records if r["part"] == "classification"]
    if runs:
        run_dir.write_csv(
            "curves.csv",
            [
                {
                    "dataset": r["dataset"],
                    "optimizer": r["optimizer"],
                    "variant": r["variant"],
                    "seed": r["seed"],
                    "epoch": epoch,
                    "train_accuracy": train,
                    "test_accuracy": test,
                }
                for r in runs
                for epoch, (train, test) in enumerate(zip(r["train_curve"], r["test_curve"]))
            ],
        )
        for name in config.datasets:
            for optimizer in config.optimizers:
                if any(r["dataset"] == name and r["optimizer"] == optimizer for r in runs):
                    figures[f"{name}_{optimizer}"] = _dataset_figure(
                        name, optimizer, runs, config, run_dir, variants
                    )
        figures["summary"] = _summary_figure(results, config, run_dir, variants)
        _classification_section(report, results, config, figures, variants)
    if results.paper_script is not None:
        _paper_script_section(report, results.paper_script, variants)


def _ratio(record: Dict[str, Any]) -> np.ndarray:
    return ratio_path(record["distance"], record["diameter"])


def _xor_figure(records: Sequence[Dict[str, Any]], config: SyntheticConfig, run_dir) -> str:
    shown = next((r for r in records if r["cross_edges"] == 0), records[0])
    steps = sorted(int(step) for step in shown["positions"])
    fig = plt.figure(figsize=(3.0 * len(steps), 6.4), layout="constrained")
    grid = fig.add_gridspec(2, len(steps))
    for column, step in enumerate(steps):
        scatter_classes(
            fig.add_subplot(grid[0, column]),
            shown["positions"][str(step)],
            shown["labels"],
            title="raw data" if step == 0 else f"after {step} steps",
        )
    axes = [fig.add_subplot(grid[1, : len(steps) // 2]), fig.add_subplot(grid[1, len(steps) // 2 :])]
    x = np.arange(config.xor_steps + 1)
    for record in records:
        style = "-" if record["cross_edges"] == 0 else ":"
        edges = record["cross_edges"]
        label = f"seed {record['seed']}" + ("" if edges == 0 else f" ({edges} cross edges)")
        axes[0].semilogy(x, np.maximum(record["diameter"], 1e-16), style, linewidth=1, label=label)
        axes[1].semilogy(x, _ratio(record), style, linewidth=1)
    axes[0].set_title("largest subclass diameter D(t)", fontsize=9)
    axes[1].set_title("distance-diameter ratio L(t)/D(t)", fontsize=9)
    for ax in axes:
        ax.set_xlabel("diffusion steps")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6, ncol=2)
    fig.suptitle(f"XOR under pure diffusion (points: seed {shown['seed']})", fontsize=10)
    return run_dir.save_figure(fig, "xor.png")


def _xor_section(report: Report, records, xor: XorDiffusion, config: SyntheticConfig, figure: str) -> None:
    report.heading("XOR: pure diffusion (Fig. 3)")
    steps = config.xor_report_steps
    rows = [
        [str(r["seed"]), r["cross_edges"], float(_ratio(r)[0])] + [float(_ratio(r)[s]) for s in steps]
        for r in records
    ]
    medians = xor.L_over_D_median
    rows.append(
        ["**median**", "", float(np.median([r[2] for r in rows]))] + [medians[f"step_{s}"] for s in steps]
    )
    report.table(
        ["seed", "edges between discs", "L/D at 0"] + [f"L/D at {s}" for s in steps],
        rows,
        caption=f"Distance-diameter ratio under diffusion (n_top {config.xor_n_top}, "
        f"sigma {config.xor_sigma}, "
        f"gamma {config.xor_step_size}).",
    )
    report.paragraph(
        "Prop. 1 assumes that each subclass (disc) is a connected component of the graph. Where the kNN "
        "graph joins two discs (column 2 > 0) those discs diffuse toward a common point, D(t) stops "
        "shrinking and L/D levels off; where it does not, D(t) decays exponentially and L/D grows without "
        "bound."
    )
    report.figure(
        figure,
        f"XOR: points after {', '.join(map(str, steps))} diffusion steps; D(t) and L(t)/D(t) "
        "for every seed (dotted: graphs with edges between discs).",
    )


def _dataset_figure(
    name: str, optimizer: str, runs, config: SyntheticConfig, run_dir, variants: Sequence[str]
) -> str:
    colors = dict(zip(variants, _COLORS))
    rows = [r for r in runs if r["dataset"] == name and r["optimizer"] == optimizer]
    shown = {r["variant"]: r for r in rows if r.get("snapshots")}
    epochs = [e for e in config.feature_epochs if e <= config.epochs]
    fig = plt.figure(figsize=(2.8 * (len(epochs) + 1), 8.0), layout="constrained")
    grid = fig.add_gridspec(3, len(epochs) + 1)
    example = next(iter(shown.values()), None)
    if example is not None:
        scatter_classes(fig.add_subplot(grid[0, 0]), example["points"], example["labels"], title="raw data")
    ax = fig.add_subplot(grid[0, 1:])
    x = np.arange(config.epochs + 1)
    for variant in variants:
        members = [r for r in rows if r["variant"] == variant]
        for key, style in (("train_curve", "-"), ("test_curve", "--")):
            if members:
                mean_band(
                    ax,
                    x,
                    np.array([r[key] for r in members]),
                    label=f"{variant} {key.split('_')[0]}",
                    color=colors[variant],
                    linestyle=style,
                )
    ax.axvline(config.paper_epochs, color="k", linewidth=0.6, alpha=0.4)
    ax.set_ylim(0.3, 1.02)
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    ax.set_title(
        f"accuracy vs epoch (mean and range over {counted(len(config.seeds), 'seed')}; line: epoch "
        f"{config.paper_epochs})",
        fontsize=9,
    )
    for row, variant in enumerate(variants, start=1):
        snapshots = shown[variant]["snapshots"] if variant in shown and example is not None else {}
        for column, epoch in enumerate(epochs):
            sub = fig.add_subplot(grid[row, column + 1])
            if example is not None and str(epoch) in snapshots:  # no snapshots without an example
                scatter_classes(
                    sub, snapshots[str(epoch)], example["labels"], title=f"{variant}, epoch {epoch}"
                )
        fig.add_subplot(grid[row, 0]).axis("off")
        fig.axes[-1].text(
            0.5, 0.5, "features before\nthe classifier\n" + variant, ha="center", va="center", fontsize=9
        )
    fig.suptitle(f"{name}: {optimizer} (seed {config.seed + config.seeds[0]} features)", fontsize=10)
    return run_dir.save_figure(fig, f"{name}_{optimizer}.png")


def _summary_figure(
    results: SyntheticResults, config: SyntheticConfig, run_dir, variants: Sequence[str]
) -> str:
    colors = dict(zip(variants, _COLORS))
    table = results.classification
    groups = [(d, o) for d in config.datasets for o in config.optimizers if o in table.get(d, {})]
    fig, ax = plt.subplots(figsize=(1.6 * len(groups) + 2, 3.4), layout="constrained")
    nan = float("nan")  # a variant without a stored run in a group (left out of the store) draws no bar
    series = {
        variant: (
            [table[d][o][variant].test_accuracy.mean if variant in table[d][o] else nan for d, o in groups],
            [table[d][o][variant].test_accuracy.std if variant in table[d][o] else nan for d, o in groups],
        )
        for variant in variants
    }
    grouped_bars(
        ax,
        [f"{d}\n{o}" for d, o in groups],
        series,
        colors=colors,
        ylabel=f"held-out test accuracy (epoch {config.epochs})",
        ylim=(
            min(0.4, *(mean - 0.05 for means, _ in series.values() for mean in means if mean == mean)),
            1.02,
        ),
    )  # every bar
    ax.axhline(0.5, color="k", linewidth=0.5, alpha=0.5)
    return run_dir.save_figure(fig, "summary.png")


def _classification_section(
    report: Report,
    results: SyntheticResults,
    config: SyntheticConfig,
    figures: Dict[str, str],
    variants: Sequence[str],
) -> None:
    report.heading("Moon, circle, spiral: 18-parameter ResNet with and without diffusion (Figs. 4, 11, 12)")
    report.paragraph(
        f"{counted(len(config.seeds), 'seed')}; each trains on {2 * config.points_per_class} points (full "
        f"batch, {config.epochs} epochs, weight decay {config.weight_decay}) and is tested on a held-out "
        f"sample of {2 * config.test_points_per_class} points from another seed, diffused on its own graph. "
        "Accuracies: mean ± std over seeds; 'perfect' counts seeds with 100 % on that split; 'at "
        f"{config.paper_epochs}' is the accuracy after the paper's 20 steps. A run whose loss, parameters "
        "or outputs become non-finite stops and keeps its last finite parameters ('diverged')."
    )
    rows = []
    for name, by_optimizer in results.classification.items():
        for optimizer, by_variant in by_optimizer.items():
            for variant in variants:
                entry = by_variant.get(variant)
                if entry is None:
                    continue
                rows.append(
                    [
                        name,
                        optimizer,
                        variant,
                        entry.train_accuracy.format(),
                        entry.test_accuracy.format(),
                        format_mean_std(entry.test_accuracy_at_paper_epochs.mean),
                        f"{entry.perfect_test_runs}/{entry.runs}",
                        f"{entry.diverged_runs}/{entry.runs}",
                        f"{entry.seconds_per_run:.2f}",
                    ]
                )
    report.table(
        [
            "set",
            "optimizer",
            "model",
            "train acc",
            "test acc",
            f"test acc at {config.paper_epochs}",
            "perfect test",
            "diverged",
            "s/run",
        ],
        rows,
    )
    report.figure(figures["summary"], "Held-out test accuracy, mean ± std over seeds.")
    for name in config.datasets:
        for optimizer in config.optimizers:
            if f"{name}_{optimizer}" in figures:
                report.figure(
                    figures[f"{name}_{optimizer}"],
                    f"{name}, {optimizer}: raw data; accuracy vs epoch (solid train, dashed test); "
                    "features before the classifier at several epochs without (middle row) and with "
                    "(bottom row) diffusion.",
                )


def _paper_script_section(
    report: Report, paper_script: Dict[str, Dict[str, PaperScriptCount]], variants: Sequence[str]
) -> None:
    report.heading("Check against the paper's scripts")
    report.paragraph(
        "The scripts' own data (evenly spaced curve parameters, NumPy legacy seed), initialization seed, "
        "row-normalized weights with self in the top-k, and 20 full-batch SGD steps with a fresh optimizer "
        "per step. Correct predictions of 1000 training points after 20 steps:"
    )
    without, with_diffusion = variants
    rows = [
        [
            name,
            entry[without].reference,
            entry[without].correct,
            entry[with_diffusion].reference,
            entry[with_diffusion].correct,
            f"{entry[with_diffusion].seconds:.2f}",
        ]
        for name, entry in paper_script.items()
    ]
    report.table(
        [
            "set",
            "ResNet (scripts)",
            "ResNet (pdenets)",
            "Diff-ResNet (scripts)",
            "Diff-ResNet (pdenets)",
            "Diff-ResNet seconds (pdenets)",
        ],
        rows,
    )
