"""The synthetic report from hand-made runs: the XOR table's L/D per seed and median, the classification
table and curves.csv from the runs' curves, the paper-script counts, and the figures each part draws."""

import csv

import numpy as np

from pdenets.experiments.plots import plt
from pdenets.experiments.report import Report
from pdenets.experiments.rundir import RunDirectory
from pdenets.tasks.synthetic.config import SyntheticConfig
from pdenets.tasks.synthetic.report import add_sections
from pdenets.tasks.synthetic.results import (
    ClassificationCell,
    PaperScriptCount,
    SyntheticResults,
    XorDiffusion,
)

VARIANTS = ("resnet", "diff-resnet")


class Folder(RunDirectory):
    """A run folder that writes its tables and names its figures without drawing them to a file."""

    def __init__(self, path):
        super().__init__(path)
        self.figures = []

    def save_figure(self, figure, name, **_):
        plt.close(figure)
        self.figures.append(name)
        return name


def _rows(text):
    lines = text.splitlines()
    headers = {k - 1 for k, line in enumerate(lines) if line.startswith("|---")}
    return [line for k, line in enumerate(lines) if line.startswith("| ") and k not in headers]


def _xor_record(seed, cross_edges, distance, diameter):
    points = [[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]]
    return {
        "part": "xor",
        "seed": seed,
        "cross_edges": cross_edges,
        "distance": distance,
        "diameter": diameter,
        "positions": {"0": points, "2": points, "3": points},
        "labels": [0, 0, 1, 1],
    }


def test_the_xor_table_shows_each_seeds_distance_diameter_ratio_and_the_medians(tmp_path):
    config = SyntheticConfig(xor_steps=3, xor_report_steps=[2, 3], datasets=[], xor_n_top=5, xor_sigma=0.25)
    records = [
        _xor_record(0, 0, [1.0, 1.0, 1.0, 1.0], [2.0, 1.0, 0.5, 0.0]),  # D reaches 0: a huge, finite ratio
        _xor_record(1, 3, [2.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.8]),
        _xor_record(2, 0, [1.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.25, 0.125]),
    ]
    xor = XorDiffusion(
        L_over_D_median={"step_2": 4.0, "step_3": 8.0},
        L_over_D_per_seed={},
        D_median={},
        L_median={},
        seeds_with_edges_between_discs=1,
    )
    results = SyntheticResults(xor=xor, classification={}, paper_script=None)
    report = Report("synthetic")
    folder = Folder(tmp_path)
    add_sections(report, config, results, records, folder, VARIANTS)
    text = report.markdown()
    assert "| seed | edges between discs | L/D at 0 | L/D at 2 | L/D at 3 |" in text
    assert _rows(text) == [
        "| 0 | 0 | 0.500 | 2.000 | 1e+300 |",  # L / max(D, 1e-300)
        "| 1 | 3 | 2.000 | 1.000 | 1.250 |",
        "| 2 | 0 | 2.000 | 4.000 | 8.000 |",
        "| **median** |  | 2.000 | 4.000 | 8.000 |",  # the first column's median; the others the results'
    ]
    assert "(n_top 5, sigma 0.25, gamma 1.0)" in text
    assert results.figures == {"xor": "xor.png"} and folder.figures == ["xor.png"]
    assert (
        "Classification" not in text
        and "paper's scripts" not in text
        and not (tmp_path / "curves.csv").exists()
    )


def _run(dataset, optimizer, variant, seed, train, test, snapshots=None):
    return {
        "part": "classification",
        "dataset": dataset,
        "optimizer": optimizer,
        "variant": variant,
        "seed": seed,
        "train_curve": train,
        "test_curve": test,
        "snapshots": snapshots or {},
        "points": [[0.0, 0.0], [1.0, 1.0]],
        "labels": [0, 1],
    }


def test_the_classification_runs_give_the_table_the_curves_file_and_one_figure_per_set_and_optimizer(
    tmp_path,
):
    config = SyntheticConfig(
        datasets=["moon", "spiral"], epochs=2, paper_epochs=1, seeds=[0, 1], feature_epochs=[0, 2, 5]
    )
    optimizer = "sgd-plain"
    snapshots = {"0": [[0.0, 0.0], [1.0, 1.0]], "2": [[0.5, 0.5], [1.0, 1.0]]}
    runs = [
        _run("moon", optimizer, "resnet", 0, [0.5, 0.75, 1.0], [0.5, 0.5, 0.9], snapshots),
        _run("moon", optimizer, "resnet", 1, [0.5, 0.75, 0.8], [0.5, 0.5, 0.7]),
        _run("moon", optimizer, "diff-resnet", 0, [0.5, 0.9, 1.0], [0.5, 0.9, 1.0], snapshots),
    ]
    record = dict(train_accuracy_at_paper_epochs=0.75, diverged_at_epoch=None, seconds=1.234)
    cells = {
        "resnet": ClassificationCell.of(
            [dict(record, train_accuracy=1.0, test_accuracy=0.9, test_accuracy_at_paper_epochs=0.5),
             dict(record, train_accuracy=0.8, test_accuracy=0.7, test_accuracy_at_paper_epochs=0.5,
                  diverged_at_epoch=2, seconds=2.0)]
        ),
        "diff-resnet": ClassificationCell.of(
            [dict(record, train_accuracy=1.0, test_accuracy=1.0, test_accuracy_at_paper_epochs=0.9)]
        ),
    }  # fmt: skip
    results = SyntheticResults(xor=None, classification={"moon": {optimizer: cells}}, paper_script=None)
    report = Report("synthetic")
    folder = Folder(tmp_path)
    add_sections(report, config, results, runs, folder, VARIANTS)
    text = report.markdown()
    assert _rows(text) == [
        "| moon | sgd-plain | resnet | 0.900 ± 0.100 | 0.800 ± 0.100 | 0.500 | 0/2 | 1/2 | 1.62 |",
        "| moon | sgd-plain | diff-resnet | 1.000 | 1.000 | 0.900 | 1/1 | 0/1 | 1.23 |",
    ]
    assert (
        "| set | optimizer | model | train acc | test acc | test acc at 1 | perfect test | diverged | s/run |"
        in text
    )
    assert "2 seeds; each trains on 1000 points (full batch, 2 epochs" in text
    # figures: one per set and optimizer with runs, and the summary; spiral has none
    assert results.figures == {"moon_sgd-plain": "moon_sgd-plain.png", "summary": "summary.png"}
    assert folder.figures == ["moon_sgd-plain.png", "summary.png"]
    with open(tmp_path / "curves.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 3 * 3  # every run, epochs 0, 1, 2
    assert rows[4] == {
        "dataset": "moon", "optimizer": "sgd-plain", "variant": "resnet", "seed": "1", "epoch": "1",
        "train_accuracy": "0.75", "test_accuracy": "0.5",
    }  # fmt: skip


def test_the_paper_script_counts_sit_beside_the_scripts_own(tmp_path):
    counts = {
        "moon": {
            "resnet": PaperScriptCount(correct=812, reference=810, seconds=0.5),
            "diff-resnet": PaperScriptCount(correct=1000, reference=1000, seconds=1.239),
        }
    }
    results = SyntheticResults(xor=None, classification={}, paper_script=counts)
    report = Report("synthetic")
    add_sections(report, SyntheticConfig(), results, [], Folder(tmp_path), VARIANTS)
    text = report.markdown()
    assert "## Check against the paper's scripts" in text
    assert _rows(text) == ["| moon | 810 | 812 | 1000 | 1000 | 1.24 |"]
    assert results.figures == {}


def test_the_summary_figure_leaves_out_a_variant_without_runs(tmp_path):
    config = SyntheticConfig(datasets=["circle"], epochs=1, seeds=[0], feature_epochs=[0])
    optimizer = "sgd-momentum"
    record = dict(train_accuracy=1.0, test_accuracy=0.6, train_accuracy_at_paper_epochs=1.0,
                  test_accuracy_at_paper_epochs=0.6, diverged_at_epoch=None, seconds=1.0)  # fmt: skip
    cells = {"resnet": ClassificationCell.of([record])}
    results = SyntheticResults(xor=None, classification={"circle": {optimizer: cells}}, paper_script=None)
    runs = [_run("circle", optimizer, "resnet", 0, [0.5, 1.0], [0.5, 0.6])]
    drawn = {}

    class Looking(Folder):
        def save_figure(self, figure, name, **_):
            if name == "summary.png":
                (ax,) = figure.axes
                drawn["bars"] = [round(patch.get_height(), 6) for patch in ax.patches]
                drawn["ylim"] = ax.get_ylim()
            return super().save_figure(figure, name)

    add_sections(Report("synthetic"), config, results, runs, Looking(tmp_path), VARIANTS)
    heights = np.asarray(drawn["bars"], dtype=float)
    assert heights[0] == 0.6 and np.isnan(heights[1:]).all()  # diff-resnet: no run, no bar
    assert drawn["ylim"][0] == 0.4  # min(0.4, 0.6 − 0.05)
