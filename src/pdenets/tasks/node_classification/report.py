"""The report of ``pdenets run node-classification``: Table 1 next to the paper, the time per run, the graphs'
stability bounds, the depth study (Fig. 5) and the protocol's choices, with the figures ``accuracy.png`` and
``depth.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence

from ...data.transforms import graph_label
from ...experiments.calibration_report import add_calibration_section, expected_accuracy_cell
from ...experiments.plots import box_per_group, errorbar_lines, plt
from ...experiments.report import Report, counted, md_escape
from ...experiments.summary import PaperValue, format_mean_std, paper_and_ours
from .config import NodeClassificationConfig
from .results import AccuracyCell, NodeClassificationResults

__all__ = ["add_sections", "add_predictions_section"]

#: how a graph's features entered the models, in the report's words
_FEATURE_WORDS = {
    "bag-of-words": "binary bag-of-words, each row divided by its sum",
    "row-normalize": "each row divided by the sum of its absolute values (zeros kept)",
    "scale": "each feature divided by its standard deviation over the nodes, not centred (zeros kept)",
    "standardize": "standardized per feature (mean 0, standard deviation 1 over the nodes)",
    "none": "as in the file",
}


def add_sections(
    report: Report,
    config: NodeClassificationConfig,
    results: NodeClassificationResults,
    records: Sequence[Mapping[str, Any]],
    run_dir: Any,
    paper: Mapping[str, Mapping[str, PaperValue]],
) -> None:
    """Add the protocol, the accuracy table and every other section of the node-classification report.

    Draws ``accuracy.png`` (when there are protocol runs), ``calibration.png`` (when their records hold
    their calibration) and ``depth.png`` (when there is a depth study) into ``run_dir`` and records their
    names in ``results.figures``.

    Args:
        report: the report started by the task (its title and the engine's header).
        config: the task's configuration.
        results: the task's summary (``table``, ``depth``, ``graphs``); its ``figures`` gain the figures.
        records: one record per stored run (``experiment``, ``dataset``, ``model``, ``accuracy``, ...).
        run_dir: the run folder (a :class:`~pdenets.experiments.rundir.RunDirectory`).
        paper: the paper's Table 1, ``{model: {dataset: PaperValue}}``, in percent.
    """
    figures = results.figures
    datasets = [graph_label(d) for d in config.datasets]
    protocol = [r for r in records if r["experiment"] == "protocol"]
    if protocol:
        figures["accuracy"] = _accuracy_figure(protocol, datasets, config.models, paper, run_dir)
    if results.depth:
        figures["depth"] = _depth_figure(results.depth, run_dir)
    _protocol(report, config)
    _accuracy_section(report, config, results, datasets, paper)
    calibration = add_calibration_section(
        report, results.calibration, run_dir, items="test nodes", fitted_on="each run's validation nodes"
    )
    if calibration:
        figures["calibration"] = calibration
    _time_section(report, results, datasets, config.models)
    _graph_section(report, results)
    if results.depth:
        report.heading("Depth study (Fig. 5)")
        rows = [
            [md_escape(dataset), model]
            + [_mean_std(points[str(d)]) if str(d) in points else "—" for d in config.depths]
            for dataset, by_model in results.depth.items()
            for model, points in by_model.items()
        ]
        report.table(["dataset", "model"] + [f"{d} layers" for d in config.depths], rows)
        report.figure(figures["depth"], "Accuracy against depth.")
    _choices(report, config, results)


def _protocol(report: Report, config: NodeClassificationConfig) -> None:
    """The splits, initializations and training settings, in prose."""
    sets = (
        f"your split `{md_escape(Path(config.split_file).name)}` (its training, validation and test nodes "
        "exactly)"
        if config.split_file
        else f"{counted(config.num_splits, 'split')} "
        f"({config.train_per_class}/{config.val_per_class} labelled nodes per class for training/validation)"
    )
    report.paragraph(
        f"{sets} × {counted(config.num_inits, 'initialization')} per model and dataset, "
        f"Adam lr {config.lr}, weight decay {config.weight_decay}, early stopping patience "
        f"{config.patience}, at "
        f"most {config.max_epochs} epochs."
        + (
            f" Diff-ResNet diffuses in a learned {config.diffusion_width}-wide space (`--diffuse-in "
            "hidden`), not in the input features as in the paper."
            if config.diffuse_in == "hidden"
            else ""
        )
    )


def _accuracy_section(
    report: Report,
    config: NodeClassificationConfig,
    results: NodeClassificationResults,
    datasets: Sequence[str],
    paper: Mapping[str, Mapping[str, PaperValue]],
) -> None:
    """Every model's accuracy on every dataset, beside the paper's where it has one, and its figure."""
    compared = [d for d in datasets if any(d in paper.get(model, {}) for model in config.models)]
    report.heading(
        "Accuracy (%) on the test nodes, mean ± std over all runs"
        + (", next to the paper" if compared else "")
    )
    headers, rows = ["model"], []
    for dataset in datasets:
        shown = md_escape(dataset)
        if dataset in compared:
            headers += [f"{shown} (pdenets)", f"{shown} (paper)", f"{shown} difference"]
        else:
            headers.append(shown)
    for model in config.models:
        cells = [model]
        for dataset in datasets:
            measured = _measured(results.table.get(dataset, {}).get(model))
            if dataset in compared:
                cells += paper_and_ours(measured, paper.get(model, {}).get(dataset))
            else:
                cells.append(paper_and_ours(measured, None)[0])
        rows.append(cells)
    counts = [
        f"{md_escape(dataset)} {summary.items // summary.runs:,}"
        for dataset in datasets
        for summary in list(results.calibration.get(dataset, {}).values())[:1]
        if summary.runs and summary.items % summary.runs == 0
    ]
    words = [f"Test nodes per run: {'; '.join(counts)}." if counts else ""]
    words.append("Difference: pdenets mean minus the paper's mean (points)." if compared else "")
    report.table(headers, rows, caption=" ".join(word for word in words if word) or None)
    if "accuracy" in results.figures:
        report.figure(
            results.figures["accuracy"],
            "Test accuracy of every run" + ("; red stars: the paper's means." if compared else "."),
        )


def _choices(report: Report, config: NodeClassificationConfig, results: NodeClassificationResults) -> None:
    """What this implementation chose where the paper leaves room."""
    report.heading("Choices")
    report.bullets(
        [
            "Graphs: made undirected, without self-loops, and cut to their largest connected component, as "
            "the paper's code keeps them ("
            + "; ".join(f"{md_escape(name)}: {facts.nodes:,} nodes" for name, facts in results.graphs.items())
            + "). Features: "
            + "; ".join(
                f"{md_escape(name)}: {_FEATURE_WORDS.get(facts.feature_transform, facts.feature_transform)}"
                for name, facts in results.graphs.items()
            )
            + f" (`feature_transform = {config.feature_transform}`).",
            "Diff-ResNet diffuses with W = D̃^-1/2 (A+I) D̃^-1/2 and L = diag(W1) − W, the paper code's "
            f"operator; dropout is applied `{config.dropout_position}` each diffusion step (the paper's "
            "code drops before each step, its text after).",
            "No-Diff-ResNet is the same network with r = 0, hence without dropout (dropout lives in the "
            "diffusion steps).",
            "Baselines: PyG layers with the original papers' settings (GCN 16 hidden, dropout 0.5; "
            "GraphSAGE 64 hidden; GAT 8 heads × 8, dropout 0.6, lr 0.005), trained in the same protocol.",
            "Early stopping: an epoch counts as an improvement when the validation loss does not increase "
            "or the validation accuracy does not decrease; the state of the last improvement is restored.",
        ]
    )


def _accuracy_figure(
    protocol: Sequence[Mapping[str, Any]],
    datasets: Sequence[str],
    models: Sequence[str],
    paper: Mapping[str, Mapping[str, PaperValue]],
    run_dir,
) -> str:
    fig, axes = plt.subplots(
        1, len(datasets), figsize=(4.2 * len(datasets), 3.6), squeeze=False, layout="constrained"
    )
    for ax, dataset in zip(axes[0], datasets):
        values = {
            model: [100 * r["accuracy"] for r in protocol if r["dataset"] == dataset and r["model"] == model]
            for model in models
        }
        values = {model: v for model, v in values.items() if v}
        reference = {model: paper[model][dataset].mean for model in values if dataset in paper.get(model, {})}
        box_per_group(
            ax,
            values,
            reference=reference,
            reference_label="paper",
            title=f"{dataset}: test accuracy per run" + (" (red star: paper mean)" if reference else ""),
            ylabel="accuracy (%)",
        )
    return run_dir.save_figure(fig, "accuracy.png")


def _measured(cell: Optional[AccuracyCell]) -> Optional[Dict[str, float]]:
    """A cell's accuracy as :func:`~pdenets.experiments.summary.paper_and_ours` reads it (``mean``, ``std``,
    ``runs``); ``None`` without a cell."""
    return None if cell is None else {"mean": cell.mean, "std": cell.std, "runs": cell.runs}


def _depth_figure(depth: Dict[str, Dict[str, Dict[str, AccuracyCell]]], run_dir) -> str:
    fig, axes = plt.subplots(
        1, len(depth), figsize=(4.5 * len(depth), 3.4), squeeze=False, layout="constrained"
    )
    for ax, (dataset, by_model) in zip(axes[0], depth.items()):
        series = {}
        for model, points in by_model.items():
            xs = sorted(int(d) for d in points)
            series[model] = (xs, [points[str(d)].mean for d in xs], [points[str(d)].std for d in xs])
        errorbar_lines(
            ax,
            series,
            xlabel="layers (GCN: graph convolutions; Diff-ResNet: diffusion layers r)",
            ylabel="test accuracy (%)",
            title=f"depth study, {dataset}",
            log2_x=True,
        )
    return run_dir.save_figure(fig, "depth.png")


def _time_section(
    report: Report, results: NodeClassificationResults, datasets: Sequence[str], models: Sequence[str]
) -> None:
    report.heading("Time per run")
    rows = []
    for dataset in datasets:
        for model in models:
            cell = results.table.get(dataset, {}).get(model)
            if cell is not None:
                rows.append(
                    [
                        md_escape(dataset),
                        model,
                        f"{cell.seconds_per_run:.2f}",
                        f"{cell.epochs_mean:.0f}",
                        f"{1000 * cell.seconds_per_run / max(cell.epochs_mean, 1):.1f}",
                    ]
                )
    report.table(
        ["dataset", "model", "seconds per run", "epochs per run", "ms per epoch"],
        rows,
        caption="One worker process per run; epochs include the validation pass.",
    )


def _graph_section(report: Report, results: NodeClassificationResults) -> None:
    report.heading("Graphs and stability")
    rows = [
        [
            md_escape(name),
            facts.nodes,
            facts.edges,
            facts.features,
            facts.classes,
            f"{facts.gershgorin_bound:.3f}",
            f"{facts.spectral_bound:.3f}",
        ]
        for name, facts in results.graphs.items()
    ]
    report.table(
        [
            "graph",
            "nodes (LCC)",
            "edges",
            "features",
            "classes",
            "gamma bound (Gershgorin)",
            "gamma bound (2/lambda_max)",
        ],
        rows,
        caption="Explicit diffusion with W = D^-1/2 (A+I) D^-1/2 and L = diag(W1) - W is stable for "
        "gamma up to 2/lambda_max(L); the step size gamma of every diffusion setting must stay below it.",
    )


def _mean_std(cell: AccuracyCell) -> str:
    """A cell's mean accuracy, ± its std where more than one run has it."""
    return format_mean_std(cell.mean, cell.std if cell.runs > 1 else None, 1)


def add_predictions_section(report: Report, written: Sequence[Any]) -> None:
    """The predictions files written beside the report (:class:`~.predictions.NodePredictions`), and what
    they hold; nothing where none was written."""
    if not written:
        return
    report.heading("Predictions")
    report.paragraph(
        "Every node of the largest component, by its id in your file, with its split, its label where "
        "known, the predicted class and each class's probability. They come from each model's first run "
        "(split 0, initialization 0), trained again with that run's seeds: the test accuracy recomputed "
        "from the file is that run's."
    )
    calibrated = all(entry.temperature != 1.0 for entry in written)
    report.paragraph(
        "The accuracy to expect on the unlabelled nodes is the mean of their predicted class's probability, "
        "with a 95 % interval for that many right-or-wrong predictions; "
        + (
            "the probabilities are calibrated (the logits divided by the temperature fitted on the run's "
            "validation nodes, `--calibrate`), so it is as good as the calibration above."
            if calibrated
            else "the probabilities are as trained, so it is only as good as their calibration (see "
            "*Calibration*; `--calibrate` writes calibrated ones)."
        )
    )
    rows = [
        [
            md_escape(entry.graph),
            md_escape(entry.model),
            f"`{entry.file}`",
            f"{entry.nodes:,}",
            f"{entry.test_nodes:,}",
            "—" if entry.test_accuracy is None else f"{100 * entry.test_accuracy:.2f}",
            "—" if entry.stored_accuracy is None else f"{100 * entry.stored_accuracy:.2f}",
            f"{entry.unlabelled:,}",
            expected_accuracy_cell(entry.expected_unlabelled),
        ]
        for entry in written
    ]
    report.table(
        [
            "graph",
            "model",
            "file",
            "nodes predicted",
            "test nodes",
            "their acc. (file)",
            "stored run",
            "unlabelled nodes",
            "their expected acc.",
        ],
        rows,
        caption="Accuracy (%) of the first run on its test nodes, recomputed from the file and as stored; "
        "the accuracy to expect on the unlabelled nodes (%, 95 % interval), from the file's probabilities.",
        align="lllrrrrrr",
    )
    folders = [entry.model_folder for entry in written if entry.model_folder]
    if folders:
        report.paragraph(
            "The models of these predictions are kept in "
            + ", ".join(f"`{folder}/`" for folder in folders)
            + " (weights in safetensors and a manifest): `pdenets predict RUN_DIR --dataset GRAPH --model "
            "NAME --out P.csv` classifies the nodes of this graph or a grown one with the same features."
        )
    outside = {entry.graph: entry.outside for entry in written if entry.outside}
    for graph, ids in outside.items():
        shown = ", ".join(md_escape(node[:40]) for node in ids[:5])
        report.paragraph(
            f"{md_escape(graph)}: {len(ids):,} node(s) outside the largest component are left out of the "
            f"protocol's graph and get no prediction ({shown}{', …' if len(ids) > 5 else ''})."
        )
