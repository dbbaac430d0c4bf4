"""The report of ``pdenets run few-shot``: the ablation tables, the official Omniglot runs, the sweeps' tables
and figures (Figs. 6–10 of the Diff-ResNet paper), with the paper's and the published numbers for context.

:func:`add_sections` takes the task's configuration, results and records and adds its sections to a
:class:`~pdenets.experiments.report.Report` the task started (the task writes it).
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ...experiments.plots import CLASS_COLORS, errorbar_lines, plt, scatter_classes
from ...experiments.report import Report, counted, md_escape
from ...experiments.summary import PaperValue, format_mean_std
from ...features.datasets import FEWSHOT_DATASETS
from .config import FewShotConfig
from .protocol import clear_wins
from .results import FewShotResults, SweepPoint, TimingPoint

__all__ = [
    "add_sections",
    "shape_label",
    "METHOD_NAMES",
    "PAPER_METHODS",
    "PAPER_TABLE2",
    "PUBLISHED_RUN_ERRORS",
]

#: the methods' names in tables
METHOD_NAMES = {
    "prototype": "Nearest prototype",
    "laplacianshot": "LaplacianShot",
    "convection": "Convection",
    "external": "External convection-diffusion",
    "internal": "Internal convection-diffusion (Diff-ResNet)",
    "bd-cspn": "BD-CSPN",
    "pt-map": "PT-MAP",
    "tim": "TIM-GD",
    "alpha-tim": "α-TIM",
    "paddle": "PADDLE",
    "ensemble": "Ensemble",
    "adaptive": "Adaptive (the default)",
}
#: the mark of a result whose method assumes balanced queries, on a query set that is not balanced
ASSUMPTION_MARK = "†"


def shape_label(queries: int, distribution: str, open_set: int, mode: str) -> str:
    """The name of a query-set shape in tables, e.g. ``"dirichlet:2, 15 queries per class + 2 open-set
    classes"``."""
    label = f"{distribution}, {queries} quer{'y' if queries == 1 else 'ies'} per class"
    if open_set:
        label += f" + {open_set} open-set class{'' if open_set == 1 else 'es'}"
    return label + (", one query at a time" if mode == "one-at-a-time" else "")


PAPER_METHODS = ("prototype", "laplacianshot", "convection", "external", "internal")
_SOURCE = "Diff-ResNet paper, Table 2 (miniImageNet, ResNet-18, 5-way, 1,000 tasks)"
#: Table 2, miniImageNet with a ResNet-18 backbone: the paper's numbers for context (other data, other
#: backbone).
PAPER_TABLE2 = {
    ("prototype", 1): PaperValue(57.09, None, _SOURCE),
    ("prototype", 5): PaperValue(79.30, None, _SOURCE),
    ("laplacianshot", 1): PaperValue(57.81, None, _SOURCE),
    ("laplacianshot", 5): PaperValue(79.54, None, _SOURCE),
    ("convection", 1): PaperValue(53.04, None, _SOURCE),
    ("convection", 5): PaperValue(79.58, None, _SOURCE),
    ("external", 1): PaperValue(55.30, None, _SOURCE),
    ("external", 5): PaperValue(79.55, None, _SOURCE),
    ("internal", 1): PaperValue(68.47, None, _SOURCE),
    ("internal", 5): PaperValue(80.02, None, _SOURCE),
}
_LAKE = "Lake et al., Science 2015 (20 one-shot runs)"
_KOCH = "Koch et al., ICML DL workshop 2015"
#: Published error rates (%) on the 20 official Omniglot one-shot runs.
PUBLISHED_RUN_ERRORS = {
    "Modified Hausdorff distance": PaperValue(38.8, None, _LAKE),
    "Siamese ConvNet (Koch et al. 2015)": PaperValue(8.0, None, _KOCH),
    "People": PaperValue(4.5, None, _LAKE),
    "Bayesian program learning": PaperValue(3.3, None, _LAKE),
}


def describe(label: str, path: Any, features: Any) -> str:
    """A features file in words, as Markdown: its name, rows, dimension, classes (named when few) and the
    unlabelled rows it holds.

    Examples:
        >>> import torch
        >>> from pdenets.data.fewshot import FeatureSet
        >>> features = FeatureSet(torch.zeros(4, 8), torch.tensor([0, 1, 1, 0]), ("<b>a</b>", "b"))
        >>> describe("mine", "mine.npz", features)
        '**mine** (`mine.npz`): 4 labelled rows of 8 dimensions, 2 classes (&lt;b&gt;a&lt;/b&gt;, b)'
    """
    taken = set(features.base_classes) | set(features.val_classes)
    ids = features.novel_classes or [c for c in range(features.num_classes) if c not in taken]
    novel = [features.class_names[c] for c in ids]
    text = (
        f"**{md_escape(label)}** (`{md_escape(Path(str(path)).name)}`): "
        f"{counted(len(features.labels), 'labelled row')} of {counted(features.dim, 'dimension')}, "
        f"{counted(len(novel), 'class')}"
    )
    if features.base_classes:
        text += f" drawn into tasks (and {counted(len(features.base_classes), 'base class')})"
    if len(novel) <= 12:
        text += " (" + ", ".join(md_escape(name) for name in novel) + ")"
    if features.unlabelled is not None:
        text += (
            f"; {counted(features.unlabelled.shape[0], 'unlabelled row')}, classified by "
            "`pdenets predict few-shot`"
        )
    return text


def add_sections(
    report: Report,
    config: FewShotConfig,
    results: FewShotResults,
    records: Sequence[Mapping[str, Any]],
    run_dir,
    described: Optional[Mapping[str, str]] = None,
) -> None:
    """Add the few-shot sections to ``report``: the methods' settings, the ablation tables and the paper's
    claim, the official one-shot runs, the sensitivity and timing sweeps and the before/after picture (each
    when run).

    The figures are written into ``run_dir`` and their file names added to ``results.figures``.

    Args:
        report: the report the task started (its title and the engine's header).
        config: the task's configuration (a ``FewShotConfig``: ``methods``, ``tasks``, ``queries``,
            ``preprocessing``, ``defaults`` and its ``method(name)``).
        results: the task's summarized results; its ``figures`` gain the figures drawn.
        records: the stored records (the picture study's projections are read from them).
        run_dir: the run folder the figures are saved into.
        described: each dataset in words (:func:`describe`), shown first.

    Returns:
        Nothing; ``report`` and ``results`` are changed in place.
    """
    figures = results.figures
    paper = _paper_data(config)
    if described:
        report.bullets(list(described.values()))
    report.paragraph(
        f"Preprocessing `{config.preprocessing}`; `{config.defaults}` method defaults. Accuracies in %, "
        "mean ± 95 % confidence interval (1.96 σ/√n) over tasks. Settings per method:"
    )
    report.bullets(
        [
            f"**{METHOD_NAMES.get(name, name)}**: {_describe(config.method(name).settings)}"
            for name in config.methods
        ]
    )
    if results.ablation:
        _ablation_section(report, results, config)
    if results.official_runs:
        _official_section(report, results)
    if results.sensitivity:
        _sensitivity_section(report, results, run_dir, paper)
    if results.timing:
        _timing_section(report, results, run_dir, paper)
    pictures = [r for r in records if "before" in r]
    if pictures:
        figures["picture"] = _picture_figure(pictures, run_dir)
        report.heading("One task before and after diffusion" + (" (Fig. 6)" if paper else ""))
        report.figure(
            figures["picture"],
            "2-D PCA of one 5-way task's features before and after r diffusion steps "
            "on its graph (stars: support, dots: queries; colours: classes).",
        )


#: the ablation's pairs whose difference is what a mechanism adds (the second row's method, then the first's)
ABLATION_PAIRS = (
    ("convection", "prototype"),
    ("external", "convection"),
    ("internal", "convection"),
    ("internal", "external"),
)


def indistinct_pairs(cells: Mapping[str, Mapping[str, Any]]) -> List[tuple]:
    """The ablation pairs of one table that no cell tells apart: ``(method, other, largest gap)`` where in
    every cell both ran, neither clearly beats the other (:func:`~.protocol.clear_wins`: a gap beyond the
    sum of the two 95 % half-widths).

    Examples:
        >>> from pdenets.tasks.fewshot.results import EpisodeSummary
        >>> summary = lambda mean: EpisodeSummary(mean, 0.5, 100, 0.01, 10.0)
        >>> indistinct_pairs({"5-way 1-shot": {"prototype": summary(90.0), "convection": summary(90.2),
        ...                                    "external": summary(93.0)}})
        [('convection', 'prototype', 0.20000000000000284)]
    """
    found = []
    for method, other in ABLATION_PAIRS:
        shared = [cell for cell in cells.values() if method in cell and other in cell]
        ahead = [clear_wins(cell, method, [other])[other] for cell in shared]
        behind = [clear_wins(cell, other, [method])[method] for cell in shared]
        if shared and not any(win.clearly for win in ahead + behind):
            found.append((method, other, max(abs(win.difference) for win in ahead)))
    return found


def _why_alike(method: str, config: FewShotConfig) -> str:
    """What in this run's settings keeps ``method``'s row near the row it adds a mechanism to."""
    settings: Any = config.method(method).settings  # a head's settings (the pairs' methods are heads)
    reasons = []
    if getattr(settings, "init", None) == "prototype":
        reasons.append(
            f"the head starts as nearest prototype (init = prototype) and takes {settings.epochs} SGD "
            f"steps at rate {settings.lr:g}"
        )
    if method == "external":
        reasons.append(f"its regularizer weighs μ = {settings.mu:g}")
    if method == "internal":
        steps = "10 (one shot) or 5" if settings.num_steps is None else settings.num_steps
        reasons.append(f"its diffusion runs r = {steps} steps of γ = {settings.step_size:g}")
    if getattr(settings, "init", None) == "random":  # the paper's start: the settings hold nothing back
        reasons.insert(
            0, f"the head starts at random and takes {settings.epochs} SGD steps at rate {settings.lr:g}"
        )
        return (
            "In this run "
            + "; ".join(reasons)
            + ": on these features what the mechanism adds is smaller than the intervals; more tasks "
            "(`--tasks`) narrow them."
        )
    reasons.append(
        "`--defaults paper` (a random start and 100 steps, as the published ablation trains) or larger "
        "values in `method_settings` give the mechanism room to move the predictions"
    )
    return "In this run " + "; ".join(reasons) + "."


def _describe(settings) -> str:
    values = [f"{item.name} {getattr(settings, item.name)}" for item in fields(settings)]
    return ", ".join(values).replace("None", "auto") or "none"


def _sensitivity_section(report: Report, results: FewShotResults, run_dir, paper: Any) -> None:
    """The internal head's accuracy against ``n_top``, ``rγ`` and ``r``: table and figure."""
    results.figures["sensitivity"] = _sensitivity_figure(results.sensitivity, run_dir)
    report.heading(
        "Sensitivity" + (" (Figs. 7–9)" if paper else "") + ": internal convection-diffusion, 5-way 1-shot"
    )
    rows = [
        [
            study,
            format_mean_std(point.value, digits=2),
            format_mean_std(point.episodes.mean, point.episodes.ci95, 2),
            point.episodes.tasks,
        ]
        for study, points in results.sensitivity.items()
        for point in points
    ]
    report.table(
        ["sweep", "value", "accuracy (%)", "tasks"],
        rows,
        caption="n_top counts the point itself (n_top − 1 entries kept, sigma = ⌊n_top/2⌋-th entry); "
        "strength = r·γ at γ = 0.5; steps = r at r·γ = 5 (γ = min(1, 5/r)).",
    )
    report.figure(
        results.figures["sensitivity"],
        "Accuracy against n_top, total strength rγ and the number of steps r "
        "at fixed rγ (error bars: 95 % CI).",
    )


def _timing_section(report: Report, results: FewShotResults, run_dir, paper: Any) -> None:
    """Time per task and accuracy against the diffusion layers: table and figure."""
    results.figures["timing"] = _timing_figure(results.timing, run_dir)
    report.heading("Time per task against diffusion layers" + (" (Fig. 10)" if paper else ""))
    rows = [
        [
            p.layers,
            f"{1000 * p.episodes.seconds_per_task:.2f}",
            format_mean_std(p.episodes.mean, p.episodes.ci95, 2),
        ]
        for p in sorted(results.timing, key=lambda p: p.layers)
    ]
    report.table(
        ["diffusion layers r", "ms per task (batched)", "accuracy (%)"],
        rows,
        caption="rγ = 2 (γ = 1 for r = 1); tasks trained together in batches; measured inside a worker "
        "process, so other jobs may share the machine.",
    )
    report.figure(
        results.figures["timing"], "Time per task and accuracy against the number of diffusion layers."
    )


def _ablation_section(report: Report, results: FewShotResults, config: FewShotConfig) -> None:
    """Every method's accuracy, one table per query-set shape and dataset, the time of each method, and the
    paper's claim where the data is the paper's."""
    paper = _paper_data(config)
    report.heading(
        ("Ablation (Table 2 layout)" if paper else "Accuracy of each method")
        + ", one table per query-set shape"
    )
    marked = False
    for shape, tables in results.ablation.items():
        report.heading(shape.capitalize(), level=3)
        for dataset, cells in tables.items():
            marked = _ablation_table(report, config, dataset, cells, results.shapes[shape].open_set) or marked
    if marked:
        report.paragraph(
            f"{ASSUMPTION_MARK} the method assumes balanced queries (every class of the task as many, "
            "none from elsewhere) and some query sets of this cell, as drawn, are not: its result shows what "
            "the assumption costs, not what the method does on the query sets it was made for."
        )
    _method_times(report, results, config)
    if paper:  # a benchmark, not the user's data
        _paper_context(report)
        if results.claim:
            _claim(report, results.claim)


def _ablation_table(
    report: Report, config: FewShotConfig, dataset: str, cells: Mapping[str, Any], open_set: int
) -> bool:
    """One dataset's table under one shape (and the pairs of methods it cannot tell apart); whether a cell
    is marked as breaking its method's assumption."""
    marked = False
    columns = list(cells)
    rows = []
    for method in config.methods:
        row = [METHOD_NAMES.get(method, method)]
        for cell in columns:
            entry = cells[cell].get(method)
            text = "—"
            if entry is not None:
                text = format_mean_std(entry.mean, entry.ci95, 2)
                if entry.breaks_assumption_of(method):  # from the query sets drawn, not the request
                    text += f" {ASSUMPTION_MARK}"
                    marked = True
                if entry.tasks != config.tasks:  # a partial run says how many tasks it has so far
                    text += f" ({entry.tasks} tasks)"
                if entry.open_auroc is not None:
                    text += f", AUROC {entry.open_auroc:.2f}"
            row.append(text)
        rows.append(row)
    rows.append(["query sets drawn: unequal counts or open-set queries / a class without any"])
    for cell in columns:
        drawn = next(iter(cells[cell].values()))
        unbalanced, empty = drawn.unbalanced_share or 0.0, drawn.empty_class_share or 0.0
        rows[-1].append(f"{100 * unbalanced:.0f} % / {100 * empty:.0f} %")
    caption = (
        f"{md_escape(dataset)}: accuracy (%) over {config.tasks} tasks per cell unless marked; "
        "— : not run yet. "
        "The last row: the shares of the query sets as drawn (and solved) whose support classes got "
        "unequal numbers of queries or that hold open-set queries, and in which a class got none "
        "(every method of a cell sees the same tasks)."
    )
    if open_set:
        caption += (
            " Accuracy counts the queries of the support's classes; AUROC: how well the top "
            "probability tells them from the open-set queries (0.5: not at all)."
        )
    report.table([md_escape(dataset)] + columns, rows, caption=caption)
    for first, second, gap in indistinct_pairs(cells):
        report.paragraph(
            f"{md_escape(dataset)}: {METHOD_NAMES.get(first, first)} and "
            f"{METHOD_NAMES.get(second, second)} "
            f"cannot be told apart in this table: in every cell they differ by at most {gap:.2f} "
            f"points, within their 95 % intervals. {_why_alike(first, config)}"
        )
    return marked


def _method_times(report: Report, results: FewShotResults, config: FewShotConfig) -> None:
    """The seconds per 1,000 tasks of every method, in the first cell."""
    timing = [
        (shape, dataset, cell, method, entry.seconds_per_1000_tasks)
        for shape, tables in results.ablation.items()
        for dataset, cells in tables.items()
        for cell, methods in cells.items()
        for method, entry in methods.items()
    ]
    if not timing:
        return
    first = timing[0][:3]
    rows = [
        [METHOD_NAMES.get(method, method), f"{seconds:.2f}"]
        for shape, dataset, cell, method, seconds in timing
        if (shape, dataset, cell) == first
    ]
    report.table(
        ["method", "s per 1,000 tasks"],
        rows,
        caption=f"{md_escape(first[1])}, {first[2]}, {first[0]}: time of the method alone (batched), "
        f"measured in a worker with {config.threads or 'cores / workers'} torch thread(s); other jobs "
        "may have shared the machine (benchmarks/fewshot_peers.py measures alone).",
    )


def _claim(report: Report, verdicts: Mapping[str, Any]) -> None:
    """The Diff-ResNet paper's 1-shot claim, checked table by table."""
    lines = []
    for table, beats in verdicts.items():
        parts = [
            f"{other} {win.difference:+.2f} points ({'clearly' if win.clearly else 'not clearly'})"
            for other, win in beats.items()
        ]
        lines.append(f"{md_escape(table)}: internal vs " + ", ".join(parts))
    others = list(dict.fromkeys(other for beats in verdicts.values() for other in beats))
    report.paragraph(
        "The Diff-ResNet paper's 1-shot claim, for the methods that ran — internal convection-diffusion "
        f"clearly beats {', '.join(METHOD_NAMES.get(m, m).lower() for m in others)} ('clearly': the gap "
        "exceeds the sum of the two 95 % half-widths):"
    )
    report.bullets(lines)


def _official_section(report: Report, results: FewShotResults) -> None:
    report.heading("Omniglot: the 20 official one-shot runs (Lake et al. 2015)")
    rows = [
        [f"pdenets: {METHOD_NAMES.get(m, m)}", f"{errors.error_rate:.1f}"]
        for m, errors in results.official_runs.items()
    ]
    rows += [[f"published: {name}", value.format(1)] for name, value in PUBLISHED_RUN_ERRORS.items()]
    report.table(
        ["method", "error rate (%)"],
        rows,
        caption="20-way 1-shot from the evaluation alphabets, never seen in training; the backbone was "
        "trained on every background character of the two small zips (242).",
    )


def _sensitivity_figure(sensitivity: Dict[str, List[SweepPoint]], run_dir) -> str:
    titles = {
        "n_top": "n_top (the point itself counted)",
        "strength": "total strength rγ (γ = 0.5)",
        "steps": "steps r (rγ = 5)",
    }
    studies = [s for s in ("n_top", "strength", "steps") if s in sensitivity]
    fig, axes = plt.subplots(
        1, len(studies), figsize=(4.2 * len(studies), 3.3), squeeze=False, layout="constrained"
    )
    for ax, study in zip(axes[0], studies):
        points = sorted(sensitivity[study], key=lambda p: p.value)
        errorbar_lines(
            ax,
            {
                "internal": (
                    [p.value for p in points],
                    [p.episodes.mean for p in points],
                    [p.episodes.ci95 for p in points],
                )
            },
            xlabel=titles[study],
            ylabel="accuracy (%)",
            title=titles[study],
        )
    return run_dir.save_figure(fig, "sensitivity.png")


def _timing_figure(timing: List[TimingPoint], run_dir) -> str:
    points = sorted(timing, key=lambda p: p.layers)
    fig, ax = plt.subplots(figsize=(5, 3.4), layout="constrained")
    layers = [p.layers for p in points]
    ax.plot(
        layers,
        [1000 * p.episodes.seconds_per_task for p in points],
        "o-",
        color="#d62728",
        label="ms per task",
    )
    ax.set_xlabel("diffusion layers r")
    ax.set_ylabel("ms per task", color="#d62728")
    twin = ax.twinx()
    twin.errorbar(
        layers,
        [p.episodes.mean for p in points],
        yerr=[p.episodes.ci95 for p in points],
        fmt="s--",
        color="#1f77b4",
        capsize=3,
    )
    twin.set_ylabel("accuracy (%)", color="#1f77b4")
    ax.grid(alpha=0.3)
    return run_dir.save_figure(fig, "timing.png")


def _picture_figure(pictures, run_dir) -> str:
    from matplotlib.lines import Line2D  # plotting is imported where a figure is drawn, not with the task

    fig, axes = plt.subplots(
        len(pictures), 2, figsize=(7, 3.4 * len(pictures)), squeeze=False, layout="constrained"
    )
    for row, picture in zip(axes, pictures):
        labels = np.asarray(picture["labels"])
        support = picture["support"]
        for ax, key, title in ((row[0], "before", "before diffusion"), (row[1], "after", "after diffusion")):
            points = np.asarray(picture[key])
            scatter_classes(
                ax, points[support:], labels[support:], title=f"{picture['shots']}-shot, {title}", size=10
            )
            ax.scatter(
                points[:support, 0],
                points[:support, 1],
                marker="*",
                s=160,
                edgecolors="k",
                c=CLASS_COLORS[labels[:support] % len(CLASS_COLORS)],
                linewidths=0.6,
            )
    classes = sorted({int(label) for label in np.asarray(pictures[0]["labels"])})
    handles = [
        Line2D(
            [],
            [],
            marker="*",
            linestyle="",
            markersize=11,
            markerfacecolor="white",
            color="k",
            label="support",
        ),
        Line2D([], [], marker="o", linestyle="", markersize=5, color="0.4", label="queries"),
    ] + [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markersize=6,
            color=CLASS_COLORS[c % len(CLASS_COLORS)],
            label=f"class {c + 1} of the task",
        )
        for c in classes
    ]
    fig.legend(
        handles=handles, loc="outside lower center", ncol=min(len(handles), 4), fontsize=8, frameon=False
    )
    return run_dir.save_figure(fig, "picture.png")


def _paper_data(config: FewShotConfig) -> bool:
    """Whether the run holds one of the paper's benchmarks (the paper's figures and claims are spoken of)."""
    return any(dataset.lower() in FEWSHOT_DATASETS for dataset in config.datasets)


def _paper_context(report: Report) -> None:
    """The paper's Table 2 (other data and backbone), beside a run on one of the built-in benchmarks."""
    report.paragraph(
        "For context, the paper's Table 2 on miniImageNet with a ResNet-18 (raw features, 5-way): "
        + "; ".join(
            f"{METHOD_NAMES[m]} {PAPER_TABLE2[(m, 1)].format(2)} (1-shot) / "
            f"{PAPER_TABLE2[(m, 5)].format(2)} (5-shot)"
            for m in PAPER_METHODS
        )
        + ". Other data and backbone: compare orderings, not values."
    )
