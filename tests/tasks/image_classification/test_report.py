"""The image-classification report from hand-made results: the median (min–max) per test metric, the
paper's Table 1 and Table 4 numbers beside the right models and only on CIFAR-10, the held-out note, and the
eigenvalue figure drawn from the first run with spectra, sorted, with its positive fractions."""

import numpy as np

from pdenets.experiments.plots import plt
from pdenets.experiments.report import Report
from pdenets.models.image_networks import NetworkCost
from pdenets.tasks.image_classification.config import ImageClassificationConfig
from pdenets.tasks.image_classification.report import add_sections, eigenvalue_figure
from pdenets.tasks.image_classification.results import (
    ImageCell,
    ImageClassificationResults,
    MetricSpread,
)


class Folder:
    """A run folder that keeps the last figure it is given (and closes it)."""

    def save_figure(self, figure, name):
        self.figure = figure
        self.axes = [
            (ax.get_title(), [np.asarray(line.get_ydata()).tolist() for line in ax.get_lines()])
            for ax in figure.axes
        ]
        plt.close(figure)
        return name


def _rows(text):
    lines = text.splitlines()
    headers = {k - 1 for k, line in enumerate(lines) if line.startswith("|---")}
    return [line for k, line in enumerate(lines) if line.startswith("| ") and k not in headers]


def _cell(parameters, metrics):
    """A model's cell: test metric → (median, mean, min, max) over the seeds."""
    spreads = {name: MetricSpread(*values) for name, values in metrics.items()}
    return ImageCell(parameters=parameters, runs=3, seconds_per_run=12.6, metrics=spreads)


def _report(table, flops=None, records=(), **settings):
    config = ImageClassificationConfig(**settings)
    results = ImageClassificationResults(table=table, flops=flops or {})
    report = Report("images")
    folder = Folder()
    add_sections(report, config, results, list(records), folder)
    return report.markdown(), results, folder


def test_the_accuracy_table_gives_the_median_and_range_beside_table_1_on_cifar10():
    spread = {"held-out accuracy": (91.234, 90.0, 89.5, 92.75), "official accuracy": (88.0, 88.0, 87.0, 89.0)}
    table = {
        "cifar10": {
            "resnet-44": _cell(661_338, spread),
            "hamiltonian-74-log": _cell(1_500_000, spread),
            "mine": _cell(10, spread),
        },
        "canvas": {"resnet-44": _cell(661_338, {"test accuracy": (50.0, 50.0, 50.0, 50.0)})},
    }
    text, _, _ = _report(table, test_limit=2_500)
    header = next(line for line in text.splitlines() if line.startswith("| model") and "held-out" in line)
    assert header == (
        "| model | parameters (M) | held-out accuracy (%) | official accuracy (%) | paper (full scale) "
        "| s per run | seeds |"
    )
    assert _rows(text)[:4] == [
        "| resnet-44 | 0.661 | 91.23 (89.50–92.75) | 88.00 (87.00–89.00) | 92.64 | 13 | 3 |",
        "| hamiltonian-74-log | 1.500 | 91.23 (89.50–92.75) | 88.00 (87.00–89.00) | 92.88 | 13 | 3 |",
        "| mine | 0.000 | 91.23 (89.50–92.75) | 88.00 (87.00–89.00) | — | 13 | 3 |",
        "| resnet-44 | 0.661 | 50.00 (50.00–50.00) | — | 13 | 3 |",  # no paper figure off CIFAR-10
    ]
    assert "the first 2,500 of the **last 10,000 training images, held out**" in text
    assert text.count("held out** from training") == 1  # said of CIFAR-10 only


def test_the_settings_paragraph_says_the_precision_and_the_flops_table_the_paper_numbers():
    flops = {
        "paper scale": {"resnet-44": NetworkCost(98.31, 661_338), "mine": NetworkCost(5.04, 10)},
        "this run": {"resnet-44": NetworkCost(1.26, 1_000), "mine": NetworkCost(0.06, 10)},
    }
    table = {"canvas": {"mine": _cell(10, {"test accuracy": (1.0, 1.0, 1.0, 1.0)})}}
    text, _, folder = _report(table, flops, flops_models=["resnet-44", "mine"], amp=True, epochs=7)
    assert "7 epochs" in text and "bfloat16 mixed precision (`--amp`)." in text
    assert "## FLOPs (Table 4 layout): multiply-adds of one 32×32 image" in text
    assert "| model | paper scale (M) | this run (M) | paper (M) |" in text
    assert "| resnet-44 | 98.3 | 1.3 | 98.3 |" in text and "| mine | 5.0 | 0.1 | — |" in text
    assert "Eigenvalues" not in text and not hasattr(folder, "figure")  # no run has spectra: no figure
    plain, _, _ = _report(table, flops, flops_models=[])
    assert "FLOPs" not in plain and "mixed precision" not in plain


def test_the_eigenvalue_figure_is_drawn_from_the_first_run_with_spectra():
    def block(unit, real, symmetric, fraction, symmetric_fraction):
        return dict(unit=unit, stage=unit, real=real, symmetric=symmetric, positive_fraction=fraction,
                    symmetric_positive_fraction=symmetric_fraction)  # fmt: skip

    blocks = [block(1, [0.5, -1.0, 2.0], [3.0, -2.0], 2 / 3, 0.5), block(2, [-0.25], [-0.5], 0.0, 0.0)]
    records = [
        {"dataset": "cifar10", "model": "resnet-44", "seed": 0, "spectra": []},
        {"dataset": "cifar10", "model": "hamiltonian-74-diffusion", "seed": 2, "spectra": blocks},
        {"dataset": "cifar10", "model": "hamiltonian-74-log", "seed": 0, "spectra": blocks[:1]},
    ]
    table = {"canvas": {"mine": _cell(10, {"test accuracy": (1.0, 1.0, 1.0, 1.0)})}}
    text, results, folder = _report(table, records=records)
    assert results.figures == {"eigenvalues": "eigenvalues.png"}
    assert "*hamiltonian-74-diffusion on cifar10 (seed 2): real parts" in text
    # two rows (𝒦 and its symmetric part), one column per block; values sorted
    titles = [title for title, _ in folder.axes]
    assert titles == [
        "unit 1 K1 Re: +0.67",
        "unit 2 K2 Re: +0.00",
        "unit 1 K1 sym: +0.50",
        "unit 2 K2 sym: +0.00",
    ]
    sorted_real = folder.axes[0][1][0]
    assert sorted_real == [-1.0, 0.5, 2.0] and folder.axes[2][1][0] == [-2.0, 3.0]


def test_the_eigenvalue_figure_is_written_to_the_run_folder(tmp_path):
    from pdenets.experiments.rundir import RunDirectory

    block = {"unit": 1, "stage": 1, "real": list(np.linspace(-1, 1, 5)), "symmetric": [1.0],
             "positive_fraction": 0.4, "symmetric_positive_fraction": 1.0}  # fmt: skip
    name = eigenvalue_figure(("cifar10", "m", 0, [block]), RunDirectory(tmp_path))
    assert name == "eigenvalues.png" and (tmp_path / name).stat().st_size > 1000
