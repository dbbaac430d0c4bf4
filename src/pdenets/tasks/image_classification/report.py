"""The report sections of ``pdenets run image-classification``: accuracies, FLOPs and nonlocal spectra.

:func:`add_sections` adds to a report the task has started: a paragraph on the architecture and
training settings, one table per data set (median over seeds, beside the paper's Table 1 on
CIFAR-10), the FLOPs table in the layout of the paper's Table 4, and the eigenvalues of the
nonlocal blocks of the first run that has them (:func:`eigenvalue_figure`, Figs. 7–8 of Bohn,
Griebel & Kannan, *Deep Neural Networks and PIDE discretizations*). The paper's numbers are
:data:`PAPER_TABLE1` and :data:`PAPER_FLOPS`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from ...experiments.plots import plt
from ...experiments.report import Report
from ...experiments.summary import PaperValue
from ...models.image_networks import NetworkCost
from .config import ImageClassificationConfig
from .results import ImageCell, ImageClassificationResults

__all__ = ["PAPER_TABLE1", "PAPER_FLOPS", "add_sections", "eigenvalue_figure"]

_T1 = "PIDE paper, Table 1 (CIFAR-10, median of 5 seeds, 200 epochs)"
#: test accuracy (%) of the full-scale networks on CIFAR-10
PAPER_TABLE1 = {
    "resnet-44": PaperValue(92.64, None, _T1),
    "preresnet-20": PaperValue(92.35, None, _T1),
    "hamiltonian-74": PaperValue(92.75, None, _T1),
    "hamiltonian-74-diffusion": PaperValue(93.27, None, _T1),
    "hamiltonian-74-fractional": PaperValue(93.21, None, _T1),
    "hamiltonian-74-inverse-fractional": PaperValue(93.08, None, _T1),
    "hamiltonian-74-log": PaperValue(92.88, None, _T1),
}
_T4 = "PIDE paper, Table 4 (CIFAR-10, M multiply-adds)"
#: multiply-adds (millions) of one 32 × 32 image through the full-scale networks
PAPER_FLOPS = {
    "resnet-44": PaperValue(98.3, None, _T4),
    "hamiltonian-74": PaperValue(159.6, None, _T4),
    "hamiltonian-74-diffusion": PaperValue(192.9, None, _T4),
    "hamiltonian-74-fractional": PaperValue(193.4, None, _T4),
    "hamiltonian-74-inverse-fractional": PaperValue(193.2, None, _T4),
    "hamiltonian-74-log": PaperValue(193.6, None, _T4),
}


def add_sections(
    report: Report,
    config: ImageClassificationConfig,
    results: ImageClassificationResults,
    records: List[Dict[str, Any]],
    run_dir,
) -> None:
    """Add the settings paragraph, the accuracy and FLOPs tables and the eigenvalue figure to ``report``.

    Args:
        report: the report the task started (its title and the engine's header).
        config: the task's configuration.
        results: the task's results; the figure's file name is added to ``results.figures``.
        records: the stored runs, each with its ``dataset``, ``model``, ``seed`` and ``spectra``.
        run_dir: the run folder (a :class:`~pdenets.experiments.rundir.RunDirectory`) the figure is saved in.
    """
    figures = results.figures
    report.paragraph(
        f"Units {config.units}, widths {config.widths}, h = {config.step_size}, λ = {config.lam}, s = "
        f"{config.s}, subsampling {config.subsample}, {config.stages} stages; ResNet v1 depth "
        f"{config.resnet_depth} (widths {config.resnet_widths}); {config.epochs} epochs, batch "
        f"{config.batch_size}, SGD (momentum {config.momentum}) with the paper's piecewise learning rate "
        f"scaled to the epochs, L2 {config.l2} (ResNets {config.l2_resnet}), smoothness "
        f"{config.smoothness}; seeds {config.seeds}"
        + ("; forward passes in bfloat16 mixed precision (`--amp`)." if config.amp else ".")
    )
    for dataset, models in results.table.items():
        _accuracy_table(report, dataset, models, config.test_limit)
    if config.flops_models:
        _flops_table(report, config.flops_models, results.flops)
    spectra = [(r["dataset"], r["model"], r["seed"], r["spectra"]) for r in records if r.get("spectra")]
    if spectra:
        figures["eigenvalues"] = eigenvalue_figure(spectra[0], run_dir)
        report.heading("Eigenvalues of the nonlocal blocks' 𝒦₁, 𝒦₂ (Figs. 7–8)")
        report.figure(
            figures["eigenvalues"],
            f"{spectra[0][1]} on {spectra[0][0]} (seed {spectra[0][2]}): real "
            "parts of the eigenvalues of each 1×1 convolution 𝒦 (top) and the "
            "eigenvalues of its symmetric part (bottom); + = fraction positive.",
        )


def _accuracy_table(report: Report, dataset: str, models: Dict[str, ImageCell], test_limit) -> None:
    """The median (min–max) of every test metric of every model on ``dataset``."""
    report.heading(f"{dataset}: median over seeds")
    if dataset == "cifar10":
        limit = test_limit or 10_000
        report.paragraph(
            f"Test sets: *held-out* = the first {min(limit, 10_000):,} of the **last 10,000 training "
            "images, held out** from training (the offline data lacks 9,000 of the official test "
            "images); *official* = the 1,000 official test images available."
        )
    tests = list(next(iter(models.values())).metrics)
    rows = []
    for model, entry in models.items():
        row = [model, f"{entry.parameters / 1e6:.3f}"]
        row += [
            f"{entry.metrics[t].median:.2f} ({entry.metrics[t].min:.2f}–{entry.metrics[t].max:.2f})"
            for t in tests
        ]
        paper = PAPER_TABLE1.get(model) if dataset == "cifar10" else None
        rows.append(row + [paper.format(2) if paper else "—", f"{entry.seconds_per_run:.0f}", entry.runs])
    report.table(
        ["model", "parameters (M)"]
        + [f"{t} (%)" for t in tests]
        + ["paper (full scale)", "s per run", "seeds"],
        rows,
        caption="Median (min–max) over seeds. The paper's column is its full-scale 200-epoch result on the "
        "official test set, for orientation only.",
    )


def _flops_table(report: Report, models: Sequence[str], flops: Dict[str, Dict[str, NetworkCost]]) -> None:
    """Multiply-adds of ``models`` at every scale of ``flops``, beside the paper's Table 4."""
    report.heading("FLOPs (Table 4 layout): multiply-adds of one 32×32 image")
    rows = []
    for model in models:
        paper = PAPER_FLOPS.get(model)
        rows.append(
            [model]
            + [f"{flops[scale][model].mflops:.1f}" for scale in flops]
            + [paper.format(1) if paper else "—"]
        )
    report.table(
        ["model"] + [f"{scale} (M)" for scale in flops] + ["paper (M)"],
        rows,
        caption="Counted with torch.utils.flop_counter.FlopCounterMode (which sees the nonlocal blocks' "
        "matrix products), halved to multiply-adds.",
    )


def eigenvalue_figure(spectrum: Tuple[str, str, int, List[Dict[str, Any]]], run_dir) -> str:
    """Plot the sorted eigenvalues of every 𝒦 of one run's nonlocal blocks as ``eigenvalues.png``.

    Args:
        spectrum: ``(dataset, model, seed, blocks)``; each block (one column of the figure) holds its
            ``unit``, ``stage``, the ``real`` parts of the eigenvalues of 𝒦 and the eigenvalues of its
            ``symmetric`` part, and the fractions of each that are positive.
        run_dir: the run folder (a :class:`~pdenets.experiments.rundir.RunDirectory`) the figure is saved in.

    Returns:
        The file name of the figure in ``run_dir``.
    """
    _, _, _, blocks = spectrum
    fig, axes = plt.subplots(
        2, len(blocks), figsize=(2.6 * len(blocks), 5), squeeze=False, layout="constrained"
    )
    for column, block in enumerate(blocks):
        for row, (key, fraction) in enumerate(
            (("real", "positive_fraction"), ("symmetric", "symmetric_positive_fraction"))
        ):
            ax = axes[row][column]
            values = np.sort(np.asarray(block[key]))
            ax.plot(values, "o", markersize=3)
            ax.axhline(0, color="k", linewidth=0.6)
            ax.set_title(
                f"unit {block['unit']} K{block['stage']} {'Re' if row == 0 else 'sym'}: "
                f"+{block[fraction]:.2f}",
                fontsize=8,
            )
            ax.grid(alpha=0.3)
    return run_dir.save_figure(fig, "eigenvalues.png")
