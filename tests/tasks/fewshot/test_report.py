"""The few-shot report on a user's features file speaks of that file: its name, size, dimension and class
names; no paper table, figure or claim; no setting that did nothing for it; a legend on its PCA figure. On
one of the paper's benchmarks, the paper's layout and context come back."""

import re

import numpy as np
import pytest
import torch

from pdenets.cli import main
from pdenets.data.fewshot import FeatureSet
from pdenets.tasks.fewshot.config import FewShotConfig
from pdenets.tasks.fewshot.report import _paper_data, _picture_figure, describe

from ...helpers import foreign_data

PAPER_LINES = re.compile(r"Table \d|Fig(s)?\. \d|paper's|the paper\b|Diff-ResNet paper", re.I)


@pytest.fixture(scope="module")
def user_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fewshot-report")
    path = foreign_data.fewshot_features(folder, classes=12, per_class=20, dim=16, names=("refund <now>",))
    out = folder / "run"
    command = ["run", "few-shot", "--quick", "--dataset", str(path), "--out", str(out), "--no-progress"]
    assert main(command) == 0  # every study that runs on a features file: ablation, sweeps, timing, picture
    return path, out


def test_the_report_names_the_file_its_size_dimension_and_classes(user_run):
    path, out = user_run
    text = (out / "report.md").read_text(encoding="utf-8")
    body = text.split("\n## Settings")[0]
    assert f"`{path.name}`" in body
    assert "240 labelled rows of 16 dimensions, 12 classes" in body
    assert "refund &lt;now&gt;" in body and "refund <now>" not in body  # the user's text, escaped
    assert "intent_11" in body


def test_no_paper_table_figure_or_claim_on_a_users_file(user_run):
    _, out = user_run
    body = (out / "report.md").read_text(encoding="utf-8").split("\n## Settings")[0]
    found = [line for line in body.splitlines() if PAPER_LINES.search(line)]
    assert not found, found
    assert "One task before and after diffusion" in body  # the picture study ran, without "(Fig. 6)"


def test_settings_that_did_nothing_are_left_out_of_the_settings_table(user_run):
    _, out = user_run
    settings = (out / "report.md").read_text(encoding="utf-8").split("\n## Settings")[1]
    rows = {line.split("|")[1].strip() for line in settings.splitlines() if line.startswith("| ")}
    assert {"backbone_epochs", "backbone_seed", "features_dir"}.isdisjoint(rows)
    assert {"methods", "tasks", "seed"} <= rows


def test_the_pca_figure_has_a_legend_for_support_queries_and_classes(user_run):
    _, out = user_run
    assert (out / "picture.png").is_file()

    class Folder:
        def save_figure(self, figure, name):
            self.figure = figure
            return name

    points = np.random.default_rng(0).normal(size=(8, 2)).tolist()
    picture = {
        "labels": [0, 1, 2, 0, 1, 2, 0, 1],
        "support": 3,
        "shots": 1,
        "before": points,
        "after": points,
    }
    folder = Folder()
    assert _picture_figure([picture], folder) == "picture.png"
    (legend,) = folder.figure.legends
    labels = [text.get_text() for text in legend.get_texts()]
    assert labels == [
        "support",
        "queries",
        "class 1 of the task",
        "class 2 of the task",
        "class 3 of the task",
    ]


def test_only_the_papers_benchmarks_bring_the_papers_context():
    assert _paper_data(FewShotConfig(datasets=["omniglot"]))
    assert _paper_data(FewShotConfig(datasets=["Omniglot"]))
    assert not _paper_data(FewShotConfig(datasets=["/data/omniglot_like.npz"]))


def test_describe_counts_named_and_many_classes():
    features = FeatureSet(torch.zeros(30, 5), torch.arange(30) % 15, tuple(f"c{k}" for k in range(15)))
    text = describe("mine", "/a/b/mine.npz", features)
    assert text.startswith("**mine** (`mine.npz`): 30 labelled rows of 5 dimensions, 15 classes")
    assert "c14" not in text  # more than 12 classes: counted, not listed
    few = FeatureSet(torch.zeros(3, 2), torch.tensor([0, 1, 1]), ("one", "two"))
    assert describe("x", "x.npz", few).endswith("2 classes (one, two)")
    assert np.isclose(len(few.labels), 3)
