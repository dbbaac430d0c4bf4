"""The coin-tabular report from hand-made results: a dataset in words with its class counts, one row per
number of labels with the paired COIN-vs-MLP count, no plot for the user's single split, the predictions
table; every name from the user's file escaped."""

from dataclasses import replace

import numpy as np

from pdenets.data.tabular import TabularData
from pdenets.experiments.plots import plt
from pdenets.experiments.report import Report
from pdenets.experiments.rundir import RunDirectory
from pdenets.experiments.summary import Stats
from pdenets.tasks.coin_tabular.config import CoinTabularConfig
from pdenets.tasks.coin_tabular.report import accuracy_figure, add_predictions_section, add_sections, describe
from pdenets.tasks.coin_tabular.results import AccuracyCell, CoinTabularResults, PairedComparison


def _cell(*accuracies):
    return AccuracyCell(Stats.of(accuracies, scale=100), splits=len(accuracies))


def _rows(text):
    """The body rows of every table (no header, no rule)."""
    lines = text.splitlines()
    headers = {k - 1 for k, line in enumerate(lines) if line.startswith("|---")}
    return [line for k, line in enumerate(lines) if line.startswith("| ") and k not in headers]


def test_a_dataset_is_described_with_its_class_counts_and_unlabelled_rows():
    labels = np.array([0, 1, 1, -1, 2, 1, -1])
    table = TabularData("m<1>", np.zeros((7, 2)), labels, ["a|b", "ok", "*x*"], ["f_1", "[g]"])
    assert describe(table) == (
        "**m&lt;1&gt;** — 7 samples, 2 features (f_1, \\[g\\]), 3 classes (a\\|b 1, ok 3, \\*x\\* 1); "
        "2 samples without a label, predicted"
    )
    # more than six features or classes: counted, not listed
    many = TabularData("w", np.zeros((8, 7)), np.arange(8) % 7, [f"c{k}" for k in range(7)], list("abcdefg"))
    assert describe(many) == "**w** — 8 samples, 7 features, 7 classes"
    one = TabularData("o", np.zeros((1, 1)), np.array([0]), ["only"], ["x"])
    assert describe(one) == "**o** — 1 sample, 1 feature (x), 1 class (only 1)"


def test_each_number_of_labels_is_a_row_with_the_paired_count_and_the_fewest_splits(tmp_path):
    table = {
        "toy": {
            "10": {"coin": _cell(0.9, 0.8), "mlp": _cell(0.85, 0.75)},
            "5": {
                "coin": replace(_cell(0.7, 0.8, 0.9), scored_rows=1200),
                "mlp": replace(_cell(0.6), scored_rows=1180),  # the fewest rows a split of the row scores
                "label-spreading": _cell(0.5, 0.5),
            },
        }
    }
    paired = {"toy/5": PairedComparison(pairs=3, wins=2, mean_gain=1.234)}
    results = CoinTabularResults(table=table, coin_vs_mlp=paired)
    report = Report("tabular")
    config = CoinTabularConfig(datasets=["toy.csv"], labels_per_class=[5, 10], splits=3)
    add_sections(report, config, results, ["coin", "mlp", "label-spreading"], RunDirectory(tmp_path), {})
    text = report.markdown()
    assert "## toy: accuracy (%) on the held-out labelled rows, mean ± std over splits" in text
    header = next(line for line in text.splitlines() if line.startswith("| labels per class"))
    assert (
        header == "| labels per class | rows scored | coin | mlp | label-spreading "
        "| COIN > MLP on splits (mean gain) | splits |"
    )
    # sorted by number, not text; a spread only over several splits; the fewest splits of the row
    assert _rows(text) == [
        "| 5 | 1,180 | 80.00 ± 8.16 | 60.00 | 50.00 ± 0.00 | 2/3 (+1.23) | 1 |",
        "| 10 | — | 85.00 ± 5.00 | 80.00 ± 5.00 | — | — | 2 |",
    ]
    assert "Per split, k labelled samples per class" in text and "stands in" not in text
    assert results.figures == {"toy": "toy-accuracy.png"}
    assert (tmp_path / "toy-accuracy.png").stat().st_size > 1000


def test_the_users_own_split_has_one_row_and_no_plot(tmp_path):
    results = CoinTabularResults(
        table={"machines": {"0": {"coin": _cell(0.9), "mlp": _cell(0.8)}}},
        coin_vs_mlp={"machines/0": PairedComparison(pairs=1, wins=1, mean_gain=10.0)},
    )
    report = Report("tabular")
    config = CoinTabularConfig(datasets=["machines.csv"], split_file="/data/<my>split.csv")
    described = {"machines": "**machines** — 20 samples"}
    add_sections(
        report, config, results, ["coin", "mlp", "label-spreading"], RunDirectory(tmp_path), described
    )
    text = report.markdown()
    assert _rows(text) == ["| your split | — | 90.00 | 80.00 | 1/1 (+10.00) | 1 |"]
    assert "The data: **machines** — 20 samples." in text
    assert "Your split: its training rows are the labelled ones" in text
    assert "Your split: the training and test rows of `&lt;my&gt;split.csv`." in text
    assert results.figures == {} and not list(tmp_path.glob("*.png"))


def test_the_breast_cancer_stand_in_is_said_and_an_unread_dataset_named_escaped(tmp_path):
    table = {"breast-cancer": {"5": {"coin": _cell(0.9)}}, "a_b*": {"5": {"coin": _cell(0.8)}}}
    report = Report("tabular")
    config = CoinTabularConfig(datasets=["breast-cancer"])
    add_sections(
        report, config, CoinTabularResults(table=table, coin_vs_mlp={}), ["coin"], RunDirectory(tmp_path)
    )
    text = report.markdown()
    assert "The data: **breast-cancer**; **a_b\\***. The COIN paper's prostate-cancer data" in text
    assert "## a_b\\*: accuracy" in text


def test_the_accuracy_figure_draws_means_and_spreads_against_the_labels_per_class():
    settings = {"20": {"coin": _cell(0.9, 0.7)}, "5": {"coin": _cell(0.6), "mlp": _cell(0.5, 0.3)}}

    class Folder:
        def save_figure(self, figure, name):
            self.figure = figure
            return name

    folder = Folder()
    name = accuracy_figure(settings, ["coin", "mlp"], "m/x", folder)
    assert name.startswith("m_x-") and name.endswith("-accuracy.png")  # a file name, whatever the label
    (ax,) = folder.figure.axes
    assert ax.get_xticks().tolist() == [5, 20]
    coin, mlp = ax.containers
    np.testing.assert_allclose(np.asarray(coin.lines[0].get_ydata(), float), [60.0, 80.0])
    # the mlp: 40 ± 10 at 5 labels, no cell at 20 labels: no point
    np.testing.assert_allclose(np.asarray(mlp.lines[0].get_ydata(), float), [40.0, np.nan])
    lower, upper = (np.asarray(segment) for segment in mlp.lines[2][0].get_segments()[0])
    assert (lower.tolist(), upper.tolist()) == ([5.0, 30.0], [5.0, 50.0])
    assert coin.lines[0].get_linewidth() == 2.2 and mlp.lines[0].get_linewidth() == 1.2
    assert ax.get_title() == "m/x"
    plt.close(folder.figure)


def test_the_predictions_section_lists_each_file_and_where_its_model_is_kept():
    report = Report("tabular")
    add_predictions_section(report, [])
    assert report.markdown() == "# tabular\n"
    entry = dict(
        dataset="wines<x>",
        model="coin",
        file="predictions-coin.csv",
        labels_per_class=5,
        rows=1234,
        unlabelled=17,
        test_accuracy=0.91234,
        stored_accuracy=None,
        model_folder="model-coin",
    )
    yours = dict(
        entry, labels_per_class=0, model_folder="", test_rows=300, expected_unlabelled=(0.9, 0.8, 1.0)
    )
    add_predictions_section(report, [entry, yours])
    text = report.markdown()
    assert _rows(text) == [
        "| wines&lt;x&gt; | coin | `predictions-coin.csv` | 5 | 1,234 | 0 | 91.23 | — | 17 | — |",
        "| wines&lt;x&gt; | coin | `predictions-coin.csv` | your split | 1,234 | 300 | 91.23 | — | 17 | "
        "90.0 [80.0, 100.0] |",
    ]
    assert "kept in `model-coin/` (weights" in text and text.count("`model-") == 1
