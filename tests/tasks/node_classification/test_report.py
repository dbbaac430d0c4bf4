"""The node-classification report from hand-made results: ours beside the paper's Table 1 only where the
paper has the graph, the time per epoch, the stability bounds, the depth study, the protocol's words for a
split file, and the predictions section; every name from a user's file escaped."""

from pdenets.experiments.plots import plt
from pdenets.experiments.report import Report
from pdenets.experiments.summary import PaperValue
from pdenets.tasks.node_classification.config import NodeClassificationConfig
from pdenets.tasks.node_classification.predictions import NodePredictions
from pdenets.tasks.node_classification.report import add_predictions_section, add_sections
from pdenets.tasks.node_classification.results import AccuracyCell, GraphFacts, NodeClassificationResults

PAPER = {"diff-resnet": {"cora": PaperValue(81.5, 0.5, "Table 1")}, "gcn": {"cora": PaperValue(81.4)}}
MINE = "/data/my<g>.npz"  # its label is the file's stem, my<g>


class Folder:
    """A run folder that keeps the figures' reference stars and closes the figures unwritten."""

    def __init__(self):
        self.saved = {}

    def save_figure(self, figure, name):
        self.saved[name] = [
            [
                (line.get_xdata().tolist(), line.get_ydata().tolist())
                for line in ax.get_lines()
                if line.get_marker() == "*"
            ]
            for ax in figure.axes
        ]
        plt.close(figure)
        return name


def _rows(text):
    lines = text.splitlines()
    headers = {k - 1 for k, line in enumerate(lines) if line.startswith("|---")}
    return [line for k, line in enumerate(lines) if line.startswith("| ") and k not in headers]


def _facts(transform="bag-of-words"):
    return GraphFacts(2485, 5069, 1433, 7, 0.0625, 0.98765, feature_transform=transform)


def _build(records=(), depth=None, **settings):
    values = dict(datasets=["cora", MINE], models=["diff-resnet", "gcn"], num_splits=3, num_inits=1)
    values.update(settings)
    table = {
        "cora": {
            "diff-resnet": AccuracyCell(82.26, 1.24, 20, 1.5, 60.0),
            "gcn": AccuracyCell(80.0, 0.0, 1, 0.5, 0.0),
        },
        "my<g>": {"gcn": AccuracyCell(70.0, 2.0, 3, 0.123, 40.0)},
    }
    graphs = {"cora": _facts(), "my<g>": _facts("standardize"), "x": _facts("pca")}
    results = NodeClassificationResults(table=table, depth=depth or {}, graphs=graphs)
    report = Report("nodes")
    folder = Folder()
    add_sections(report, NodeClassificationConfig(**values), results, list(records), folder, PAPER)
    return report.markdown(), results, folder


def test_ours_sits_beside_the_papers_value_only_on_a_graph_the_paper_has():
    text, _, _ = _build()
    assert "## Accuracy (%) on the test nodes, mean ± std over all runs, next to the paper" in text
    header = next(line for line in text.splitlines() if line.startswith("| model"))
    assert header == "| model | cora (pdenets) | cora (paper) | cora difference | my&lt;g&gt; |"
    rows = _rows(text)
    assert rows[0] == "| diff-resnet | 82.3 ± 1.2 (n=20) | 81.5 ± 0.5 | +0.8 | — |"
    assert rows[1] == "| gcn | 80.0 (n=1) | 81.4 | -1.4 | 70.0 ± 2.0 (n=3) |"  # one run: no spread
    assert "*Difference: pdenets mean minus the paper's mean (points).*" in text
    assert "<g>" not in text


def test_no_graph_of_the_paper_means_no_comparison_column_nor_caption():
    text, _, _ = _build(datasets=[MINE])
    assert (
        "## Accuracy (%) on the test nodes, mean ± std over all runs\n" in text
        and "next to the paper" not in text
    )
    assert "| model | my&lt;g&gt; |" in text and "Difference:" not in text


def test_time_per_epoch_and_the_stability_bounds_are_computed_from_the_cells():
    text, _, _ = _build()
    rows = _rows(text)
    assert "| cora | diff-resnet | 1.50 | 60 | 25.0 |" in rows  # 1000 · 1.5 s / 60 epochs
    assert "| cora | gcn | 0.50 | 0 | 500.0 |" in rows  # no epoch counted: per run
    assert "| my&lt;g&gt; | gcn | 0.12 | 40 | 3.1 |" in rows
    assert "| cora | 2485 | 5069 | 1433 | 7 | 0.062 | 0.988 |" in rows
    choices = text.split("## Choices")[1]
    assert "cora: 2,485 nodes; my&lt;g&gt;: 2,485 nodes; x: 2,485 nodes" in choices
    assert "cora: binary bag-of-words, each row divided by its sum" in choices
    assert "my&lt;g&gt;: standardized per feature (mean 0, standard deviation 1 over the nodes)" in choices
    assert "x: pca" in choices  # a transform without words is named as it is
    assert "dropout is applied `before` each diffusion step" in choices


def test_the_protocol_paragraph_names_the_users_split_and_the_hidden_diffusion():
    text, _, _ = _build(split_file="/data/<s>plit.csv", num_inits=1, diffuse_in="hidden", diffusion_width=48)
    assert text.count("your split `&lt;s&gt;plit.csv` (its training, validation and test nodes exactly) × 1 "
                      "initialization per model and dataset") == 1  # fmt: skip
    assert "Diff-ResNet diffuses in a learned 48-wide space" in text
    plain, _, _ = _build(num_splits=1, num_inits=2, train_per_class=5, val_per_class=7)
    assert "1 split (5/7 labelled nodes per class for training/validation) × 2 initializations" in plain
    assert "learned" not in plain


def test_the_figures_are_drawn_for_protocol_runs_and_a_depth_study_with_the_papers_stars():
    records = [
        {"experiment": "protocol", "dataset": "cora", "model": model, "accuracy": accuracy}
        for model, accuracy in (("diff-resnet", 0.8), ("diff-resnet", 0.84), ("gcn", 0.79))
    ] + [{"experiment": "depth", "dataset": "cora", "model": "gcn", "accuracy": 0.5}]
    depth = {
        "cora": {
            "gcn": {"2": AccuracyCell(80.0, 1.0, 5, 1.0, 10.0), "16": AccuracyCell(40.0, 5.0, 1, 1.0, 10.0)},
        }
    }
    text, results, folder = _build(records, depth, datasets=["cora"], depths=[2, 4, 16])
    assert results.figures == {"accuracy": "accuracy.png", "depth": "depth.png"}
    # one box per model; the paper's means as stars at their boxes
    assert folder.saved["accuracy.png"] == [[([1], [81.5]), ([2], [81.4])]]
    assert "| cora | gcn | 80.0 ± 1.0 | — | 40.0 |" in _rows(text)  # one run at 16 layers: no spread
    assert "![Accuracy against depth.](depth.png)" in text
    none, results, folder = _build()
    assert results.figures == {} and folder.saved == {} and "Depth study" not in none


def test_the_predictions_section_lists_each_file_and_the_nodes_left_out():
    report = Report("nodes")
    add_predictions_section(report, [])
    assert report.markdown() == "# nodes\n"
    outside = tuple(f"node-{k}-" + "x" * 50 for k in range(7))
    written = [
        NodePredictions(
            "my<g>",
            "gcn",
            "predictions.csv",
            12345,
            67,
            outside,
            0.81234,
            None,
            "model-gcn",
            1000,
            (0.9, 0.85, 0.95),
        ),
        NodePredictions("cora", "diff-resnet", "p2.csv", 10, 0, (), None, 0.5),
    ]
    add_predictions_section(report, written)
    text = report.markdown()
    assert _rows(text) == [
        "| my&lt;g&gt; | gcn | `predictions.csv` | 12,345 | 1,000 | 81.23 | — | 67 | 90.0 [85.0, 95.0] |",
        "| cora | diff-resnet | `p2.csv` | 10 | 0 | — | 50.00 | 0 | — |",
    ]
    assert "the probabilities are as trained, so it is only as good as their calibration" in text
    assert "kept in `model-gcn/` (weights in safetensors" in text
    paragraph = next(line for line in text.splitlines() if "outside the largest component" in line)
    shown = ", ".join(f"node-{k}-" + "x" * 33 for k in range(5))  # the first five ids, 40 characters each
    assert paragraph == (
        "my&lt;g&gt;: 7 node(s) outside the largest component are left out of the protocol's graph and get "
        f"no prediction ({shown}, …)."
    )


def test_five_nodes_left_out_are_all_named_without_an_ellipsis():
    report = Report("nodes")
    outside = tuple(f"n{k}" for k in range(5))
    add_predictions_section(report, [NodePredictions("g", "gcn", "p.csv", 3, 0, outside, None, None)])
    assert "get no prediction (n0, n1, n2, n3, n4)." in report.markdown()
    assert "kept in" not in report.markdown()
