"""The report of ``pdenets run coin-tabular``: accuracy tables per dataset, the paired COIN-vs-MLP count, a
plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ...data.tabular import TabularData
from ...experiments.calibration_report import add_calibration_section, expected_accuracy_cell
from ...experiments.plots import plt
from ...experiments.report import Report, counted, md_escape
from ...experiments.rundir import file_name_for
from .config import CoinTabularConfig
from .results import AccuracyCell, CoinTabularResults

__all__ = ["add_sections", "accuracy_figure", "describe", "add_predictions_section"]

#: the COIN paper's own data, when the run holds its stand-in
_STAND_IN = (
    "The COIN paper's prostate-cancer data is not available offline; scikit-learn's bundled breast-cancer "
    "set stands in for it."
)


def describe(table: TabularData) -> str:
    """A dataset in words, as Markdown: its samples, features and classes (named, escaped, when few).

    Examples:
        >>> import numpy as np
        >>> describe(TabularData("machines", np.zeros((3, 2)), np.array([0, 1, 1]), ["failed", "running"],
        ...                      ["vibration", "current"]))
        '**machines** — 3 samples, 2 features (vibration, current), 2 classes (failed 1, running 2)'
    """
    features = counted(table.features.shape[1], "feature")
    if table.features.shape[1] <= 6:
        features += f" ({', '.join(md_escape(name) for name in table.feature_names)})"
    counts = np.bincount(table.labels[table.labels >= 0], minlength=table.num_classes)
    classes = counted(table.num_classes, "class")
    if table.num_classes <= 6:
        named = (f"{md_escape(name)} {count}" for name, count in zip(table.class_names, counts))
        classes += " (" + ", ".join(named) + ")"
    unlabelled = int((table.labels < 0).sum())
    words = f"**{md_escape(table.name)}** — {counted(len(table.labels), 'sample')}, {features}, {classes}"
    return words + (f"; {counted(unlabelled, 'sample')} without a label, predicted" if unlabelled else "")


def add_sections(
    report: Report,
    config: CoinTabularConfig,
    results: CoinTabularResults,
    models_in_order: Sequence[str],
    run_dir,
    described: Optional[Mapping[str, str]] = None,
) -> None:
    """Add the setting, one accuracy table and one figure per dataset to ``report``.

    Args:
        report: the report started by the task.
        config: the task's configuration.
        results: the task's results; the figure names are added to its ``figures``.
        models_in_order: the models in the order of the table's columns.
        run_dir: the run folder the figures are saved in.
        described: each dataset (its label) in words (:func:`describe`), where it could be read.
    """
    described = dict(described or {})
    data = (
        "; ".join(described.get(label, f"**{md_escape(label)}**") for label in results.table) or "none stored"
    )
    stand_in = f" {_STAND_IN}" if "breast-cancer" in results.table or "breast-cancer" in described else ""
    report.paragraph(
        f"The data: {data}.{stand_in} "
        + (
            "Your split: its training rows are the labelled ones, its test rows are scored. "
            if any("0" in settings for settings in results.table.values())
            else "Per split, k labelled samples per class train; the other rows with a label are held out "
            "and scored; rows without a label are predicted. "
        )
        + f"MLP: {config.layers} layers of width {config.hidden_features}, dropout "
        f"{config.dropout}; COIN: the same MLP, then r = {config.num_steps} diffusion steps (γ = "
        f"{config.step_size}) on the Gaussian {config.n_top}-NN graph of all samples (bandwidth: distance "
        f"to neighbour {config.sigma_neighbor}, rows normalized), then a linear classifier; {config.epochs} "
        f"epochs of Adam (lr {config.lr}, weight decay {config.weight_decay}). LabelSpreading: kNN kernel, "
        f"{config.n_top} neighbours, α = {config.spreading_alpha}."
    )
    figures = results.figures
    for dataset, settings in results.table.items():
        label = md_escape(dataset)
        report.heading(f"{label}: accuracy (%) on the held-out labelled rows, mean ± std over splits")
        models = [m for m in models_in_order if any(m in s for s in settings.values())]
        rows = []
        for per_class, entries in sorted(settings.items(), key=lambda item: int(item[0])):
            counts = [entry.scored_rows for entry in entries.values() if entry.scored_rows is not None]
            row: List[Any] = [per_class if per_class != "0" else "your split"]
            row.append(f"{min(counts):,}" if counts else "—")
            for model in models:
                entry = entries.get(model)
                row.append(entry.accuracy.format(2) if entry else "—")
            paired = results.coin_vs_mlp.get(f"{dataset}/{per_class}")
            row.append(f"{paired.wins}/{paired.pairs} ({paired.mean_gain:+.2f})" if paired else "—")
            row.append(min(entry.splits for entry in entries.values()))
            rows.append(row)
        yours = (
            f" Your split: the training and test rows of `{md_escape(Path(config.split_file).name)}`."
            if config.split_file
            else " Your split: the training and test rows of the table's split column."
        )
        report.table(
            ["labels per class", "rows scored"] + models + ["COIN > MLP on splits (mean gain)", "splits"],
            rows,
            caption="Scored: the rows with a label that a split does not train on, the same for every "
            "model (rows without a label are predicted, not scored); the paired column counts splits where "
            "COIN is more accurate than the MLP alone." + (yours if "0" in settings else ""),
        )
        if set(settings) == {"0"}:  # the user's split: one split, nothing to plot against
            continue
        figures[dataset] = accuracy_figure(settings, models, dataset, run_dir)
        report.figure(figures[dataset], f"{label}: accuracy vs labels per class (mean ± std over splits).")
    reliability = add_calibration_section(
        report,
        results.calibration,
        run_dir,
        items="held-out labelled rows",
        fitted_on="the other half of the split's held-out labelled rows",
        option=None,
        note="A table has no validation rows: each split's held-out rows are halved at random and each half "
        "is measured with the temperature fitted on the other.",
    )
    if reliability:
        figures["calibration" if "calibration" not in results.table else "calibration (figure)"] = reliability


def accuracy_figure(
    settings: Dict[str, Dict[str, AccuracyCell]], models: Sequence[str], dataset: str, run_dir
) -> str:
    """Accuracy against labelled samples per class, one line per model (mean ± std over splits).

    Args:
        settings: labels per class (as text) → model → its accuracy over the splits (one dataset's table).
        models: the models drawn, in legend order.
        dataset: the dataset's label, the figure's title.
        run_dir: the run folder the PNG is saved in.

    Returns:
        The file name of the saved figure.
    """
    fig, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
    counts = sorted(int(k) for k in settings)
    for model in models:
        cells = [settings[str(k)].get(model) for k in counts]
        means = [cell.accuracy.mean if cell else np.nan for cell in cells]
        stds = [cell.accuracy.std if cell else np.nan for cell in cells]
        ax.errorbar(
            counts,
            means,
            yerr=stds,
            marker="o",
            capsize=3,
            label=model,
            linewidth=2.2 if model == "coin" else 1.2,
        )
    ax.set_xlabel("labelled samples per class")
    ax.set_ylabel("accuracy on held-out labelled rows (%)")
    ax.set_xticks(counts)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(dataset)
    return run_dir.save_figure(fig, file_name_for(dataset, "-accuracy.png"))


def add_predictions_section(report: Report, written: Sequence[Mapping[str, Any]]) -> None:
    """The predictions files written beside the report and what they hold; nothing where none was written."""
    if not written:
        return
    report.heading("Predictions")
    report.paragraph(
        "Every row, by its id in your file (its line number where no id column is named), with its split "
        "(train: the labelled rows drawn; test: the other rows with a label; unlabelled: an empty label "
        "cell), its label where known, the predicted class and each class's probability. They come from "
        "each model's first split with the first number of labels per class, trained again with that "
        "split's seed: the test accuracy recomputed from the file is that split's. With your split (a split "
        "column or split_file), train and test are your rows, and a labelled row in neither has no split."
    )
    report.paragraph(
        "The accuracy to expect on the rows without a label is the mean of their predicted class's "
        "probability, calibrated by a temperature fitted on the held-out labelled rows (the file keeps the "
        "probabilities as trained), with a 95 % interval for that many right-or-wrong predictions: it is as "
        "good as the calibration (*Calibration* above)."
    )
    rows = [
        [
            md_escape(entry["dataset"]),
            md_escape(entry["model"]),
            f"`{entry['file']}`",
            str(entry["labels_per_class"]) if entry["labels_per_class"] else "your split",
            f"{entry['rows']:,}",
            f"{entry.get('test_rows', 0):,}",
            "—" if entry["test_accuracy"] is None else f"{100 * entry['test_accuracy']:.2f}",
            "—" if entry["stored_accuracy"] is None else f"{100 * entry['stored_accuracy']:.2f}",
            f"{entry['unlabelled']:,}",
            expected_accuracy_cell(entry.get("expected_unlabelled")),
        ]
        for entry in written
    ]
    report.table(
        [
            "data",
            "model",
            "file",
            "labels per class",
            "rows",
            "held-out labelled rows",
            "their acc. (file)",
            "stored split",
            "rows without a label",
            "their expected acc.",
        ],
        rows,
        caption="Accuracy (%) of the first split on its held-out labelled rows, recomputed from the file and "
        "as stored; the accuracy to expect on the rows without a label (%, 95 % interval).",
        align="lllrrrrrrr",
    )
    folders = [entry["model_folder"] for entry in written if entry.get("model_folder")]
    if folders:
        report.paragraph(
            "The models of these predictions are kept in "
            + ", ".join(f"`{folder}/`" for folder in folders)
            + " (weights in safetensors, a manifest with their settings, the features' scaling and the class "
            "names): `pdenets predict RUN_DIR --dataset NEW.csv --model NAME --out P.csv` classifies new "
            "rows with the same columns."
        )
