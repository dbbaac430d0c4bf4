"""``pdenets run synthetic --quick``: a complete run directory with the numbers pinned for its seeds."""

import json
import math

import pytest

from pdenets.experiments import Stats
from pdenets.tasks.synthetic.results import (
    ClassificationCell,
    PaperScriptCount,
    SyntheticResults,
    XorDiffusion,
)
from pdenets.tasks.synthetic.task import (
    VARIANTS,
    SyntheticConfig,
    SyntheticTask,
)


def test_summarize_builds_typed_results_whose_plain_form_keeps_the_keys_and_their_order():
    """Hand-made records: two seeds of one cell, one of another, two XOR seeds, then the paper scripts."""
    task = SyntheticTask(SyntheticConfig(xor_steps=1, xor_report_steps=[1]))
    cell = {
        "part": "classification",
        "dataset": "moon",
        "optimizer": "sgd-plain",
        "variant": "resnet",
        "train_accuracy": 1.0,
        "train_accuracy_at_paper_epochs": 0.9,
        "test_accuracy_at_paper_epochs": 0.7,
        "diverged_at_epoch": None,
    }
    records = [
        {"part": "xor", "seed": 0, "distance": [1.0, 1.0], "diameter": [2.0, 1.0], "cross_edges": 0},
        {"part": "xor", "seed": 1, "distance": [1.0, 2.0], "diameter": [2.0, 0.5], "cross_edges": 3},
        {**cell, "seed": 0, "test_accuracy": 0.8, "seconds": 1.0},
        {**cell, "seed": 1, "test_accuracy": 1.0, "diverged_at_epoch": 7, "seconds": 3.0},
        {**cell, "variant": "diff-resnet", "seed": 0, "test_accuracy": 0.5, "seconds": 2.0},
    ]
    results = task.summarize(records)
    assert isinstance(results, SyntheticResults) and results.paper_script is None
    resnet = results.classification["moon"]["sgd-plain"]["resnet"]
    # test accuracy over the two seeds: mean (0.8 + 1.0) / 2, population std |1.0 - 0.8| / 2
    assert (resnet.test_accuracy.mean, resnet.test_accuracy.std) == pytest.approx((0.9, 0.1), abs=1e-12)
    assert resnet.train_accuracy == Stats(1.0, 0.0, 1.0, 1.0, 1.0, 2)
    assert (resnet.runs, resnet.perfect_train_runs, resnet.perfect_test_runs, resnet.diverged_runs) == (
        2,
        2,
        1,
        1,
    )
    assert resnet.seconds_per_run == 2.0
    assert results.classification["moon"]["sgd-plain"]["diff-resnet"].test_accuracy.count == 1
    # L/D after one step: 1/1 for seed 0 and 2/0.5 for seed 1; D: 1 and 0.5; L: 1 and 2
    assert results.xor is not None
    assert results.xor.L_over_D_per_seed == {"0": {"step_1": 1.0}, "1": {"step_1": 4.0}}
    assert (results.xor.L_over_D_median, results.xor.D_median, results.xor.L_median) == (
        {"step_1": 2.5},
        {"step_1": 0.75},
        {"step_1": 1.5},
    )
    assert results.xor.seeds_with_edges_between_discs == 1

    plain = results.to_dict()
    assert list(plain) == ["xor", "classification", "figures"]
    assert list(plain["xor"]) == [
        "L_over_D_median",
        "L_over_D_per_seed",
        "D_median",
        "L_median",
        "seeds_with_edges_between_discs",
    ]
    assert list(plain["classification"]["moon"]["sgd-plain"]) == ["resnet", "diff-resnet"]
    entry = plain["classification"]["moon"]["sgd-plain"]["resnet"]
    assert list(entry) == [
        "runs",
        "train_accuracy",
        "test_accuracy",
        "test_accuracy_at_paper_epochs",
        "train_accuracy_at_paper_epochs",
        "perfect_train_runs",
        "perfect_test_runs",
        "diverged_runs",
        "seconds_per_run",
    ]
    assert entry["test_accuracy"] == Stats.of([0.8, 1.0]).as_dict()
    assert list(entry["test_accuracy"]) == ["mean", "std", "min", "max", "median", "count"]

    script = {"part": "paper-script", "dataset": "moon"}
    script.update({variant: {"correct": 900, "reference": 877, "seconds": 0.5} for variant in VARIANTS})
    with_script = task.summarize(records + [script])
    assert with_script.paper_script is not None and with_script.paper_script["moon"]["resnet"].correct == 900
    plain = with_script.to_dict()
    assert list(plain) == ["xor", "classification", "paper_script", "figures"]
    assert plain["paper_script"] == {
        "moon": {variant: {"correct": 900, "reference": 877, "seconds": 0.5} for variant in VARIANTS}
    }
    assert list(task.summarize(records[2:]).to_dict()) == ["classification", "figures"]


def seed_run(train, test, diverged_at_epoch=None, seconds=1.0):
    return {
        "train_accuracy": train,
        "test_accuracy": test,
        "train_accuracy_at_paper_epochs": train / 2,
        "test_accuracy_at_paper_epochs": test / 2,
        "diverged_at_epoch": diverged_at_epoch,
        "seconds": seconds,
    }


def test_a_classification_cell_counts_perfect_and_diverged_runs_at_their_boundaries():
    cell = ClassificationCell.of(
        [
            seed_run(1.0, 0.9, seconds=1.0),
            seed_run(0.999, 1.0, diverged_at_epoch=0, seconds=2.0),  # diverged at epoch 0 still diverged
            seed_run(1.0, 0.8, diverged_at_epoch=5, seconds=6.0),
        ]
    )
    assert cell.runs == 3 and cell.seconds_per_run == 3.0
    assert (cell.perfect_train_runs, cell.perfect_test_runs, cell.diverged_runs) == (2, 1, 2)
    # test accuracy 0.9, 1.0, 0.8: mean 0.9, squared deviations 0, 0.01, 0.01 over three seeds (ddof = 0)
    assert cell.test_accuracy.mean == pytest.approx(0.9, abs=1e-12)
    assert cell.test_accuracy.std == pytest.approx(math.sqrt(0.02 / 3), abs=1e-12)
    assert cell.test_accuracy_at_paper_epochs.mean == pytest.approx(0.45, abs=1e-12)
    assert (cell.train_accuracy.min, cell.train_accuracy.median) == (0.999, 1.0)


def test_xor_statistics_are_medians_over_the_seeds_at_the_reported_steps():
    records = [
        {"seed": 0, "distance": [1.0, 9.0, 3.0], "diameter": [2.0, 9.0, 0.5], "cross_edges": 0},
        {"seed": 1, "distance": [2.0, 9.0, 2.0], "diameter": [1.0, 9.0, 1.0], "cross_edges": 2},
        {"seed": 2, "distance": [1.0, 9.0, 4.0], "diameter": [4.0, 9.0, 1.0], "cross_edges": 0},
    ]
    xor = XorDiffusion.of(records, steps=[0, 2])
    # L/D at step 0: 0.5, 2, 0.25; at step 2: 6, 2, 4 (step 1 is not reported)
    assert xor.L_over_D_per_seed == {
        "0": {"step_0": 0.5, "step_2": 6.0},
        "1": {"step_0": 2.0, "step_2": 2.0},
        "2": {"step_0": 0.25, "step_2": 4.0},
    }
    assert xor.L_over_D_median == {"step_0": 0.5, "step_2": 4.0}
    assert xor.D_median == {"step_0": 2.0, "step_2": 1.0}
    assert xor.L_median == {"step_0": 1.0, "step_2": 3.0}
    assert xor.seeds_with_edges_between_discs == 1
    collapsed = XorDiffusion.of([{"seed": 4, "distance": [1.0], "diameter": [0.0], "cross_edges": 0}], [0])
    assert math.isfinite(collapsed.L_over_D_median["step_0"]) and collapsed.L_over_D_median["step_0"] > 1e299


def test_a_paper_script_count_reads_its_three_fields():
    entry = {"correct": 950, "reference": 948, "seconds": 0.25, "loss": 0.1}
    assert PaperScriptCount.of(entry) == PaperScriptCount(950, 948, 0.25)
    with pytest.raises(KeyError, match="reference"):
        PaperScriptCount.of({"correct": 950, "seconds": 0.25})


def test_the_plain_form_reads_back_to_the_same_results():
    cell = ClassificationCell.of([seed_run(1.0, 0.75, seconds=2.0), seed_run(0.5, 0.25, 3, seconds=4.0)])
    xor = XorDiffusion.of(
        [{"seed": 0, "distance": [1.0, 2.0], "diameter": [2.0, 1.0], "cross_edges": 1}], [1]
    )
    results = SyntheticResults(
        xor=xor,
        classification={"moon": {"sgd-plain": {"resnet": cell}}},
        paper_script={"moon": {"resnet": PaperScriptCount(900, 877, 0.5)}},
    )
    plain = json.loads(json.dumps(results.to_dict()))
    stats = {
        "train_accuracy",
        "test_accuracy",
        "test_accuracy_at_paper_epochs",
        "train_accuracy_at_paper_epochs",
    }
    rebuilt = SyntheticResults(
        xor=XorDiffusion(**plain["xor"]),
        classification={
            data: {
                optimizer: {
                    network: ClassificationCell(
                        **{k: Stats(**v) if k in stats else v for k, v in entry.items()}
                    )
                    for network, entry in networks.items()
                }
                for optimizer, networks in optimizers.items()
            }
            for data, optimizers in plain["classification"].items()
        },
        paper_script={
            d: {n: PaperScriptCount(**c) for n, c in ns.items()} for d, ns in plain["paper_script"].items()
        },
    )
    assert rebuilt == results
    assert plain["classification"]["moon"]["sgd-plain"]["resnet"]["test_accuracy"] == {
        "mean": 0.5,
        "std": 0.25,
        "min": 0.25,
        "max": 0.75,
        "median": 0.5,
        "count": 2,
    }
    assert "xor" not in SyntheticResults(xor=None, classification={}, paper_script=None).to_dict()
