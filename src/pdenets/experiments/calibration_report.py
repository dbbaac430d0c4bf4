"""The calibration part of a classification report: a table of the expected calibration error as trained and
with temperature scaling, and a reliability diagram, per dataset and model
(:class:`~pdenets.analysis.calibration.CalibrationSummary`, summarized from the runs' records)."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from ..analysis.calibration import CalibrationSummary, ReliabilityBins
from .plots import plt
from .report import Report, md_escape

__all__ = ["add_calibration_section", "reliability_figure", "draw_reliability", "expected_accuracy_cell"]


def expected_accuracy_cell(estimate: Optional[Sequence[float]]) -> str:
    """A table cell of :func:`~pdenets.analysis.calibration.expected_accuracy`'s ``(estimate, low, high)``, in
    percent: ``"90.0 [85.0, 95.0]"`` (``"—"`` for ``None``)."""
    if estimate is None:
        return "—"
    mean, low, high = (100 * value for value in estimate)
    return f"{mean:.1f} [{low:.1f}, {high:.1f}]"


def add_calibration_section(
    report: Report,
    calibration: Mapping[str, Mapping[str, CalibrationSummary]],
    run_dir,
    *,
    items: str,
    fitted_on: str,
    option: Optional[str] = "--calibrate",
    note: str = "",
) -> str:
    """A *Calibration* heading, its table and its reliability diagram; nothing where nothing was measured.

    Args:
        report: the report.
        calibration: dataset → model → summary.
        run_dir: the run folder the figure is saved in.
        items: what the error is measured on, in words (``"test nodes"``).
        fitted_on: what the temperature is fitted on (``"each run's validation nodes"``).
        option: the setting that makes the predictions calibrated (``None``: none does).
        note: a sentence more for the paragraph.

    Returns:
        The figure's file name (``""`` without one).
    """
    if not any(calibration.values()):
        return ""
    report.heading("Calibration")
    report.paragraph(
        f"Is a prediction given with confidence 0.9 right nine times in ten? The expected calibration error "
        f"(ECE: the gap between accuracy and confidence over 15 equal confidence bins, weighted by the "
        f"items in each; 0 is calibrated) on the {items} of every run, as trained and with temperature "
        f"scaling: the logits divided by one number fitted on {fitted_on}, which leaves every "
        "prediction as it is."
        + (f" {note}" if note else "")
        + (
            f" `{option}` gives the calibrated probabilities in the predictions files and saved models."
            if option
            else ""
        )
    )
    rows = [
        [
            md_escape(dataset),
            md_escape(model),
            f"{summary.runs:,}",
            f"{summary.items:,}",
            f"{100 * summary.ece:.2f}",
            f"{100 * summary.calibrated_ece:.2f}",
            f"{summary.temperature:.3g}",
        ]
        for dataset, models in calibration.items()
        for model, summary in models.items()
    ]
    report.table(
        ["data", "model", "runs", items, "ECE as trained (%)", "ECE calibrated (%)", "temperature (median)"],
        rows,
        caption=f"ECE of all runs' {items} together. A temperature above 1: the model was over-confident, "
        "its probabilities are softened; below 1: under-confident, they are sharpened.",
        align="llrrrrr",
    )
    name = reliability_figure(calibration, run_dir)
    report.figure(
        name,
        f"Reliability: accuracy against confidence on the {items} (solid: as trained; dashed: calibrated; "
        "the diagonal is calibrated).",
    )
    return name


def draw_reliability(ax, bins: ReliabilityBins, *, label: str, color=None, linestyle: str = "-") -> None:
    """Accuracy against mean confidence of the non-empty bins, on ``[0, 1]²`` with the diagonal."""
    confidence, accuracy = np.array(bins.confidence()), np.array(bins.accuracy())
    shown = np.isfinite(confidence)
    ax.plot(
        confidence[shown],
        accuracy[shown],
        marker="o",
        markersize=3,
        color=color,
        linestyle=linestyle,
        label=label,
    )
    ax.plot([0, 1], [0, 1], color="0.6", linewidth=0.8, zorder=0)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.grid(alpha=0.3)


def reliability_figure(calibration: Mapping[str, Mapping[str, CalibrationSummary]], run_dir) -> str:
    """One panel per dataset, a line per model as trained and calibrated, one legend below; saved as
    ``calibration.png``. A panel starts at its lowest confidence bin (``1/C`` at the least)."""
    datasets = [dataset for dataset, models in calibration.items() if models]
    columns = min(len(datasets), 4)
    rows = -(-len(datasets) // columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(3.6 * columns + 0.6, 3.5 * rows + 0.5), squeeze=False, layout="constrained"
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    models = list(dict.fromkeys(model for dataset in datasets for model in calibration[dataset]))
    for ax, dataset in zip(axes.flat, datasets):
        lowest = 1.0
        for model, summary in calibration[dataset].items():
            color = colors[models.index(model) % len(colors)]
            draw_reliability(ax, summary.reliability, label=model, color=color)
            draw_reliability(
                ax, summary.calibrated_reliability, label=f"{model}, calibrated", color=color, linestyle="--"
            )
            filled = [
                edge for edge, count in zip(summary.reliability.edges, summary.reliability.counts) if count
            ]
            lowest = min([lowest, *filled])
        ax.set_xlim(np.floor(10 * lowest) / 10, 1)
        ax.set_title(dataset, fontsize=10)
    for ax in list(axes.flat)[len(datasets) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), fontsize=8)
    return run_dir.save_figure(fig, "calibration.png")
