"""The report sections of ``pdenets run geodesic``: tables in the papers' layout (ours beside theirs) and
figures.

One section per dataset and network: the plain/ResNet table per weight decay (accuracies, OTS, LSR, LSS and
the paper's values), the per-stage scores, the LSS after every epoch (Fig. 2 layout), and at the weight decay
nearest ``figure_weight_decay`` the segment proportions (Tables 2–3), robustness and variation rates (Fig. 8),
the unit ablation (Fig. 7) and the 2-D projection of some tracks (Fig. 3). :data:`PAPER` holds the papers'
values shown beside ours.

Examples:
    >>> PAPER[("cifar10", "k1")][("plain", 0.01)]["train_accuracy"].mean  # Table 4: plain network, γ = 10⁻²
    97.2
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from ...experiments.plots import plt
from ...experiments.report import Report
from ...experiments.summary import PaperValue, Stats
from .config import GeodesicConfig
from .results import GeodesicResults

__all__ = ["PAPER", "add_sections"]

#: the order of the networks in each row of the papers' tables: plain network, then ResNet
PAPER_PAIR = ("plain", "resnet")
SCORES = ("ots", "lsr", "lss")


def _paper_rows(source: str, names: Tuple[str, ...], rows: Dict[float, Tuple[float, ...]]):
    """``{(kind, γ): {metric: PaperValue}}`` from rows of plain/ResNet pairs in the order of ``names``."""
    table: Dict[Tuple[str, float], Dict[str, PaperValue]] = {}
    for gamma, values in rows.items():
        for offset, kind in enumerate(PAPER_PAIR):
            table[(kind, gamma)] = {
                name: PaperValue(values[2 * i + offset], None, source) for i, name in enumerate(names)
            }
    return table


#: The papers' numbers: MNIST (text of §5.2), CIFAR-10 K = 1 (Table 4), CIFAR-10 K = 4 (Table 6; means over
#: the four stages). Table 4's last row is printed as γ = 2·10⁻² after 10⁻¹; it is read here as 2·10⁻¹.
PAPER: Dict[Tuple[str, str], Dict[Tuple[str, float], Dict[str, PaperValue]]] = {
    ("mnist", "mlp"): {
        ("resnet", 5e-4): {
            "lss": PaperValue(1.12, None, "geodesic paper §5.2"),
            "ots": PaperValue(0.96, None, "geodesic paper §5.2"),
        }
    },
    ("cifar10", "k1"): _paper_rows(
        "geodesic paper, Table 4",
        ("train_accuracy", "test_accuracy", *SCORES),
        {
            0.0: (52.1, 63.0, 53.5, 66.3, 9.0e-4, 0.681, 78.5, 3.71, 20.2, 3.79),
            1e-4: (53.0, 64.6, 54.9, 67.5, 2.3e-3, 0.329, 67.9, 3.30, 19.1, 3.60),
            5e-4: (55.6, 64.9, 57.0, 67.7, 2.1e-3, 0.753, 51.2, 3.57, 18.9, 3.68),
            1e-3: (55.6, 67.5, 57.0, 70.3, 1.0e-3, 0.826, 28.8, 3.81, 15.4, 3.90),
            5e-3: (86.2, 85.9, 82.4, 82.9, 8.0e-4, 0.0242, 2.26, 2.07, 7.26, 2.70),
            1e-2: (97.2, 96.6, 88.9, 88.5, 9.0e-4, 0.0119, 1.27, 1.24, 6.71, 2.25),
            5e-2: (86.6, 93.7, 81.9, 88.1, 1.1e-3, 0.0155, 1.07, 1.19, 7.94, 2.28),
            1e-1: (92.1, 89.1, 88.0, 86.1, 5.0e-4, 0.0272, 1.04, 1.22, 5.77, 2.66),
            2e-1: (81.0, 78.8, 79.0, 78.2, 2.4e-3, 0.009, 1.04, 1.17, 5.08, 3.15),
        },
    ),
    ("cifar10", "k4"): _paper_rows(
        "geodesic paper, Table 6",
        ("test_accuracy", *SCORES),
        {
            0.0: (89.3, 94.1, 5.5e-3, 1.0, 3.40, 1.30, 4.66, 1.40),
            5e-4: (92.6, 95.2, 1.75e-3, 1.0, 3.33, 1.17, 3.87, 1.21),
            1e-3: (94.0, 95.4, 0.0, 0.813, 2.55, 1.16, 3.62, 1.18),
            5e-3: (92.2, 95.5, 1.25e-3, 0.760, 2.13, 1.49, 3.36, 1.70),
            1e-2: (91.2, 95.0, 0.0188, 0.950, 1.88, 1.56, 3.63, 1.87),
        },
    ),
}


_ARCHITECTURE_TEXT = {
    "mlp": "MLP 784 → {width}, {blocks} blocks v(x) = W₂σ(W₁σ(x)) (ResNet: x + v(x)), → 10",
    "k1": (
        "CNN K = 1: stride-2 3×3 stem 3×32×32 → 32×16×16, 10 blocks of two 3×3 convolutions, global pool, → "
        "10"
    ),
    "k4": "CNN K = 4: stages {k4} channels at 32², 16², 8², 4², 5 blocks each, stride-2 1×1 projections, → "
    "10",
}


def _accuracy_cell(stats: Stats) -> str:
    """An accuracy's mean in percent (± its std when more than one run has it); ``"—"`` when none has."""
    if not stats.count:
        return "—"
    return f"{stats.mean * 100:.1f}" + (f" ± {stats.std * 100:.1f}" if stats.count > 1 else "")


def _score_cell(stats: Stats, digits: str) -> str:
    """A score's mean in the format ``digits`` (e.g. ``".2f"``); ``"—"`` when no run has it."""
    return format(stats.mean, digits) if stats.count else "—"


def _paper_cell(paper: Dict[str, PaperValue]) -> str:
    labels = {"train_accuracy": "train", "test_accuracy": "test", "ots": "OTS", "lsr": "LSR", "lss": "LSS"}
    return " · ".join(f"{labels[m]} {paper[m].mean:.3g}" for m in labels if m in paper) or "—"


def _nearest(values: List[float], target: float) -> float:
    return min(values, key=lambda value: (abs(np.log10(value + 1e-12) - np.log10(target + 1e-12)), value))


def add_sections(
    report: Report,
    config: GeodesicConfig,
    results: GeodesicResults,
    records: List[Dict[str, Any]],
    run_dir,
    *,
    kind_order: Sequence[str],
) -> None:
    """Add the geodesic study's prose, tables and figures to ``report``; the figures' file names go into
    ``results.figures``.

    Args:
        report: the report the task started (the engine's header already in it).
        config: the task's configuration.
        results: the task's summary; ``results.table`` maps ``"dataset/architecture"`` → ``γ`` → network
            kind → the cell (statistics of each metric, and the stages of networks of several stages).
        records: one dict per run (the job's settings and what it computed).
        run_dir: the run folder the figures are saved in.
        kind_order: the network kinds in the order their rows and figures show them (``plain``, ``resnet``).
    """
    _protocol(report, config)
    for group, gammas in results.table.items():
        dataset, architecture = group.split("/")
        report.heading(
            f"{dataset}, {architecture.upper() if architecture != 'mlp' else 'MLP'}: plain vs ResNet per "
            "weight decay"
        )
        report.paragraph(
            _ARCHITECTURE_TEXT[architecture].format(
                width=config.width, blocks=config.blocks, k4="/".join(map(str, config.k4_widths))
            )
            + "."
        )
        _score_tables(report, dataset, architecture, gammas, kind_order)
        members = [r for r in records if r["dataset"] == dataset and r["architecture"] == architecture]
        name = f"{dataset}-{architecture}"
        results.figures[f"{name}-lss"] = _lss_figure(members, run_dir, f"{name}-lss.png")
        report.figure(
            results.figures[f"{name}-lss"],
            "Mean LSS of the tracked training images after every epoch (Fig. 2 "
            "layout), one line per weight decay; solid ResNet, dashed plain.",
        )
        done = [r for r in members if not r["diverged"]]
        if done:
            _one_run_sections(report, config, done, name, run_dir, results.figures, kind_order)


def _protocol(report: Report, config: GeodesicConfig) -> None:
    """The training and scoring protocol, in prose."""
    report.paragraph(
        f"SGD lr {config.lr}, momentum {config.momentum}, batch {config.batch_size}, {config.epochs} epochs, "
        f"weight decay γ, {config.init} initialization; {config.train_limit or 'all'} training images"
        f"{' (CIFAR-10: pad-4 crop + flip)' if config.augment and 'cifar10' in config.datasets else ''}. "
        f"Scores on the tracks of {config.track_points} fixed training images through the blocks (OTS: exact "
        "assignment between a stage's input and output; K = 4: means over the four stages). Seeds "
        f"{config.seeds}."
    )
    if "cifar10" in config.datasets:
        report.paragraph(
            "CIFAR-10: trained on the first 40,000 training images; **test = the last 10,000 training "
            "images, held out**; 'official' = the 1,000 official test images available."
        )


def _score_tables(
    report: Report, dataset: str, architecture: str, gammas: Dict[Any, Any], kind_order: Sequence[str]
) -> None:
    """The accuracies and scores of every weight decay and network kind beside the paper's, and per stage
    where the networks have several."""
    paper = PAPER.get((dataset, architecture), {})
    rows = []
    for gamma, kinds in gammas.items():
        for kind in kind_order:
            if kind not in kinds:
                continue
            cell = kinds[kind]
            accuracies = [cell.train_accuracy, cell.test_accuracy]
            if dataset == "cifar10":
                accuracies.append(cell.official_accuracy)
            rows.append(
                [gamma, kind]
                + [_accuracy_cell(stats) for stats in accuracies]
                + [_score_cell(cell.ots, ".3g"), _score_cell(cell.lsr, ".2f"), _score_cell(cell.lss, ".2f")]
                + [_paper_cell(paper.get((kind, float(gamma)), {})), f"{cell.finished}/{cell.runs}"]
            )
    report.table(
        ["γ", "network", "train acc (%)", "test acc (%)"]
        + (["official test (%)"] if dataset == "cifar10" else [])
        + ["OTS", "LSR", "LSS", "paper", "runs finished"],
        rows,
    )
    stage_rows = [
        [gamma, kind, stage.width] + [f"{stats.mean:.3g}" for stats in (stage.ots, stage.lsr, stage.lss)]
        for gamma, kinds in gammas.items()
        for kind in kind_order
        if kind in kinds
        for stage in kinds[kind].stages or []
    ]
    if stage_rows:
        report.table(
            ["γ", "network", "stage width", "OTS", "LSR", "LSS"],
            stage_rows,
            caption="Per stage (Fig. 5–6 layout).",
        )


def _one_run_sections(
    report: Report,
    config: GeodesicConfig,
    done: List[Dict[str, Any]],
    name: str,
    run_dir,
    figures: Dict[str, str],
    kind_order: Sequence[str],
) -> None:
    """Robustness, unit ablation and tracks of one finished run of each kind (the weight decay nearest the
    figures' and the first seed)."""
    figure_gamma = _nearest(sorted({r["weight_decay"] for r in done}), config.figure_weight_decay)
    found = {
        kind: next((r for r in done if r["weight_decay"] == figure_gamma and r["kind"] == kind), None)
        for kind in kind_order
    }
    chosen = {kind: r for kind, r in found.items() if r is not None}
    report.heading(
        f"Robustness, unit ablation, tracks (γ = {figure_gamma:g}, seed {min(r['seed'] for r in done)})",
        3,
    )
    proportion_rows = [
        [kind, stage_index + 1] + [f"{v:.3f}" for v in stage["proportions"]]
        for kind, r in chosen.items()
        for stage_index, stage in enumerate(r["stages"])
    ]
    width = max(len(row) for row in proportion_rows) - 2
    report.table(
        ["network", "stage"] + [f"segment {i + 1}" for i in range(width)],
        [row + [""] * (width + 2 - len(row)) for row in proportion_rows],
        caption="Mean share of each segment in its track's length (Tables 2–3 layout).",
    )
    figures[f"{name}-robustness"] = _robustness_figure(chosen, run_dir, f"{name}-robustness.png")
    report.figure(
        figures[f"{name}-robustness"],
        "Accuracy on test images with Gaussian noise σ and FGSM ε (top), and the variation rate of the "
        "last block's output V(n) (bottom; eq. 49, appendix 7.2, Fig. 8 layout).",
    )
    figures[f"{name}-variation"] = _variation_figure(chosen, run_dir, f"{name}-variation.png")
    report.figure(
        figures[f"{name}-variation"],
        "Variation rate along the tracks (l = 0 is the first block's "
        "input) at the largest noise level of each attack.",
    )
    ablation = {kind: r["ablation"] for kind, r in chosen.items()}
    figures[f"{name}-ablation"] = _ablation_figure(ablation, run_dir, f"{name}-ablation.png")
    report.figure(
        figures[f"{name}-ablation"],
        f"Unit ablation of block {config.ablation_block} (appendix 7.1, Fig. 7 layout): test accuracy "
        "when the k most important units of each class (largest class means) are set back to their "
        "values before the block; the class of a point is the intact network's prediction.",
    )
    report.table(
        ["k eliminated"] + list(ablation),
        [
            [k] + [f"{100 * ablation[kind]['accuracy'][i]:.1f}" for kind in ablation]
            for i, k in enumerate(next(iter(ablation.values()))["counts"])
        ],
    )
    figures[f"{name}-tracks"] = _tracks_figure(chosen, run_dir, f"{name}-tracks.png")
    report.figure(
        figures[f"{name}-tracks"],
        "Tracks of test images through the first stage, projected to 2-D by "
        "one random Gaussian matrix (Fig. 3 layout); colour = class, "
        "dot = input of the first block.",
    )


def _lss_figure(records, run_dir, filename: str) -> str:
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    gammas = sorted({r["weight_decay"] for r in records})
    colors = plt.cm.viridis(np.linspace(0, 0.9, max(1, len(gammas))))
    first_seed = min((r["seed"] for r in records), default=0)
    for record in sorted(records, key=lambda r: (r["weight_decay"], r["kind"], r["seed"])):
        if record["seed"] != first_seed or not record["curve"]:
            continue
        color = colors[gammas.index(record["weight_decay"])]
        epochs = [point["epoch"] for point in record["curve"]]
        ax.plot(
            epochs,
            [point["lss"] for point in record["curve"]],
            "-" if record["kind"] == "resnet" else "--",
            color=color,
            marker="o",
            markersize=3,
            label=f"{record['kind']} γ={record['weight_decay']:g}",
        )
    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_ylabel("LSS")
    ax.set_yscale(
        "log"
    )  # LSS ≥ 1 spans orders of magnitude across weight decays; ticks read as plain numbers
    from matplotlib.ticker import FuncFormatter

    plain_numbers = FuncFormatter(lambda value, _: f"{value:g}")
    ax.yaxis.set_major_formatter(plain_numbers)
    ax.yaxis.set_minor_formatter(plain_numbers)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2, loc="best", framealpha=0.9)
    return run_dir.save_figure(fig, filename)


_STYLE = {"plain": ("tab:red", "--"), "resnet": ("tab:blue", "-")}


def _robustness_figure(chosen, run_dir, filename: str) -> str:
    fig, axes = plt.subplots(2, 2, figsize=(8, 6), layout="constrained", sharex="col")
    for column, (attack, label) in enumerate((("gaussian", "Gaussian noise σ"), ("fgsm", "FGSM ε"))):
        for kind, record in chosen.items():
            curve = record["robustness"][attack]
            color, style = _STYLE[kind]
            axes[0, column].plot(
                curve["levels"],
                [100 * a for a in curve["accuracy"]],
                style,
                color=color,
                marker="o",
                label=kind,
            )
            axes[1, column].plot(
                curve["levels"],
                [v[-1] for v in curve["variation"]],
                style,
                color=color,
                marker="o",
                label=kind,
            )
        axes[0, column].set_ylabel("test accuracy (%)")
        axes[1, column].set_ylabel("variation rate V(n)")
        axes[1, column].set_xlabel(label)
        for ax in axes[:, column]:
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    return run_dir.save_figure(fig, filename)


def _variation_figure(chosen, run_dir, filename: str) -> str:
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), layout="constrained")
    for ax, (attack, label) in zip(axes, (("gaussian", "σ"), ("fgsm", "ε"))):
        for kind, record in chosen.items():
            curve = record["robustness"][attack]
            color, style = _STYLE[kind]
            rates = curve["variation"][-1]
            ax.plot(
                range(len(rates)),
                rates,
                style,
                color=color,
                marker="o",
                label=f"{kind}, {label} = {curve['levels'][-1]:g}",
            )
        ax.set_xlabel("layer l along the tracks")
        ax.set_ylabel("variation rate")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return run_dir.save_figure(fig, filename)


def _ablation_figure(ablation, run_dir, filename: str) -> str:
    fig, ax = plt.subplots(figsize=(5, 3.4), layout="constrained")
    for kind, curve in ablation.items():
        color, style = _STYLE[kind]
        ax.plot(
            curve["counts"], [100 * a for a in curve["accuracy"]], style, color=color, marker="o", label=kind
        )
    ax.set_xlabel(f"eliminated units of {next(iter(ablation.values()))['block']}")
    ax.set_ylabel("test accuracy (%)")
    ax.grid(alpha=0.3)
    ax.legend()
    return run_dir.save_figure(fig, filename)


def _tracks_figure(chosen, run_dir, filename: str) -> str:
    fig, axes = plt.subplots(
        1, len(chosen), figsize=(4.2 * len(chosen), 4), layout="constrained", squeeze=False
    )
    colors = plt.cm.tab10(np.arange(10))
    for ax, (kind, record) in zip(axes[0], chosen.items()):
        points = np.asarray(record["projection"]["points"])
        for track, label in zip(points, record["projection"]["labels"]):
            ax.plot(track[:, 0], track[:, 1], "-", color=colors[label % 10], linewidth=0.7, alpha=0.7)
            ax.plot(track[0, 0], track[0, 1], "o", color=colors[label % 10], markersize=2)
        ax.set_title(f"{kind}: {points.shape[1] - 1} segments")
        ax.set_xticks([])
        ax.set_yticks([])
    return run_dir.save_figure(fig, filename)
