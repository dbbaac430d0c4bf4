"""Node-classification protocol: pinned down piece by piece on a tiny graph, then end to end."""

import json
import math

import pytest

from pdenets.experiments.results import RunFacts
from pdenets.tasks.node_classification.config import NodeClassificationConfig
from pdenets.tasks.node_classification.results import AccuracyCell, GraphFacts, NodeClassificationResults
from pdenets.tasks.node_classification.task import NodeClassificationTask

from ...graph_fixtures import write_sbm_npz


@pytest.fixture()
def graph(tmp_path):
    return str(write_sbm_npz(tmp_path / "sbm.npz"))


def task(graph, **changes):
    values = dict(
        datasets=[graph],
        models=["diff-resnet"],
        num_splits=1,
        num_inits=1,
        max_epochs=20,
        patience=5,
        train_per_class=10,
        val_per_class=10,
        workers=1,
    )
    values.update(changes)
    return NodeClassificationTask(NodeClassificationConfig(**values))


def test_summarize_gives_typed_cells_whose_plain_form_keeps_the_keys_and_their_order(graph):
    from pdenets.tasks.node_classification.results import AccuracyCell, GraphFacts, NodeClassificationResults

    def run(experiment, dataset, model, depth, accuracy, seconds, epochs):
        return {
            "experiment": experiment,
            "dataset": dataset,
            "model": model,
            "depth": depth,
            "accuracy": accuracy,
            "seconds": seconds,
            "epochs": epochs,
        }

    import torch

    from pdenets.analysis.calibration import held_out_calibration, reliability_bins

    generator = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(60, 3, generator=generator), torch.randint(0, 3, (60,), generator=generator)
    halves = [
        held_out_calibration(
            logits, labels, fit_on=torch.arange(20), measure_on=torch.arange(start, start + 20)
        )
        for start in (20, 40)
    ]
    records = [
        {**run("protocol", "cora", "diff-resnet", None, 0.8, 1.0, 10), **halves[0]},
        {**run("protocol", "cora", "diff-resnet", None, 0.9, 3.0, 20), **halves[1]},
        run("protocol", "sbm", "gcn", None, 0.5, 2.0, 7),
        run("depth", "sbm", "gcn", 4, 0.7, 1.0, 5),
        run("depth", "sbm", "gcn", 4, None, 3.0, 5),  # a run without an accuracy: left out of mean, std and n
    ]
    summarizer = task(graph)
    summarizer.prepare()
    results = summarizer.summarize(records)
    assert isinstance(results, NodeClassificationResults)
    cora = results.table["cora"]["diff-resnet"]
    assert isinstance(cora, AccuracyCell) and cora.runs == 2
    assert (cora.mean, cora.std, cora.seconds_per_run, cora.epochs_mean) == pytest.approx(
        (85.0, 5.0, 2.0, 15.0)
    )
    assert (cora.paper_mean, cora.paper_std) == (82.1, 1.1)  # Table 1
    assert results.table["sbm"]["gcn"].paper_mean is None  # no paper value for this graph
    deep = results.depth["sbm"]["gcn"]["4"]
    assert (deep.mean, deep.std, deep.runs, deep.paper_mean) == (pytest.approx(70.0), 0.0, 1, None)
    facts = results.graphs["sbm"]
    assert isinstance(facts, GraphFacts) and facts.classes == 3 and facts.nodes <= 180
    assert 0 < facts.gershgorin_bound <= facts.spectral_bound

    # the calibration of the two runs' test nodes together; none for a model whose records hold none
    calibration = results.calibration["cora"]["diff-resnet"]
    together = reliability_bins(torch.softmax(logits[20:].double(), 1), labels[20:])
    assert calibration.ece == pytest.approx(together.error(), abs=1e-9) and calibration.items == 40
    assert calibration.temperature == halves[0]["temperature"] and calibration.runs == 2
    assert list(results.calibration) == ["cora"]

    plain = results.to_dict()
    assert list(plain) == ["table", "depth", "graphs", "calibration", "figures"]
    cell_keys = ["mean", "std", "runs", "seconds_per_run", "epochs_mean"]
    assert list(plain["table"]["cora"]["diff-resnet"]) == cell_keys + ["paper_mean", "paper_std"]
    assert list(plain["table"]["sbm"]["gcn"]) == cell_keys
    assert plain["depth"] == {"sbm": {"gcn": {"4": {k: getattr(deep, k) for k in cell_keys}}}}
    assert list(plain["graphs"]["sbm"]) == [
        "nodes",
        "edges",
        "features",
        "classes",
        "gershgorin_bound",
        "spectral_bound",
        "feature_transform",
    ]
    assert json.loads(json.dumps(plain)) == plain


FACTS = GraphFacts(nodes=5, edges=4, features=3, classes=2, gershgorin_bound=0.5, spectral_bound=0.8)


@pytest.fixture()
def summarizer():
    task = NodeClassificationTask(NodeClassificationConfig(datasets=["cora"], workers=1))
    task.facts = {"sbm": FACTS}  # what prepare() records of each graph (loading one is not tested here)
    return task


def run(experiment, dataset, model, accuracy, seconds=1.0, epochs=10, depth=None):
    return {
        "experiment": experiment,
        "dataset": dataset,
        "model": model,
        "depth": depth,
        "accuracy": accuracy,
        "seconds": seconds,
        "epochs": epochs,
    }


def test_a_cell_is_the_mean_and_population_std_of_its_runs_in_percent(summarizer):
    records = [
        run("protocol", "cora", "gcn", 0.8, seconds=1.0, epochs=10),
        run("protocol", "cora", "gcn", 0.9, seconds=2.0, epochs=40),
        run("protocol", "cora", "gcn", 0.7, seconds=6.0, epochs=100),
    ]
    cell = summarizer.summarize(records).table["cora"]["gcn"]
    # 80, 90, 70: mean 80, squared deviations 0, 100, 100 over three runs (ddof = 0)
    assert cell.mean == pytest.approx(80.0, abs=1e-12)
    assert cell.std == pytest.approx(math.sqrt(200 / 3), abs=1e-12)
    assert (cell.runs, cell.seconds_per_run, cell.epochs_mean) == (3, 3.0, 50.0)
    assert (cell.paper_mean, cell.paper_std) == (81.5, 1.3)  # GCN on Cora, Table 1


def test_a_cell_without_any_accuracy_is_nan_and_depth_cells_carry_no_paper_value(summarizer):
    records = [
        run("protocol", "sbm", "gat", None, seconds=2.0),
        run("depth", "cora", "diff-resnet", 0.5, depth=8),
        run("depth", "cora", "diff-resnet", 0.75, depth=8),
        run("depth", "cora", "diff-resnet", 0.25, depth=16),
    ]
    results = summarizer.summarize(records)
    empty = results.table["sbm"]["gat"]
    assert math.isnan(empty.mean) and math.isnan(empty.std)
    assert empty.seconds_per_run == 2.0 and empty.paper_mean is None  # no paper value for this graph
    depth = results.depth["cora"]["diff-resnet"]
    assert list(depth) == ["8", "16"]  # depths as text, in the order of the runs
    assert (depth["8"].mean, depth["8"].std) == pytest.approx((62.5, 12.5))
    assert depth["8"].paper_mean is None and depth["16"].paper_std is None  # Cora has one only in Table 1
    assert results.graphs == {"sbm": FACTS}


def test_paper_values_are_left_out_one_by_one_and_the_plain_form_reads_back():
    facts = FACTS
    assert facts.feature_transform == "bag-of-words"
    results = NodeClassificationResults(
        table={"cora": {"gcn": AccuracyCell(81.0, 1.5, 4, 2.0, 30.0, paper_mean=81.5)}},
        depth={"cora": {"gcn": {"2": AccuracyCell(70.0, 0.0, 1, 1.0, 12.0)}}},
        graphs={"cora": facts},
        run=RunFacts(5, 5, 9.5),
    )
    plain = json.loads(json.dumps(results.to_dict()))
    assert list(plain["table"]["cora"]["gcn"])[-1] == "paper_mean"  # paper_std None: left out alone
    assert "paper_mean" not in plain["depth"]["cora"]["gcn"]["2"]
    rebuilt = NodeClassificationResults(
        table={g: {m: AccuracyCell(**c) for m, c in ms.items()} for g, ms in plain["table"].items()},
        depth={
            g: {m: {d: AccuracyCell(**c) for d, c in ds.items()} for m, ds in ms.items()}
            for g, ms in plain["depth"].items()
        },
        graphs={g: GraphFacts(**f) for g, f in plain["graphs"].items()},
        run=RunFacts(plain["runs_planned"], plain["runs_stored"], plain["wall_seconds"]),
    )
    assert rebuilt == results
