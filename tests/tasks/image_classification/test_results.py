"""``pdenets run image-classification`` at toy scale: CIFAR-10 and canvas segmentation, resume, report, config
checks."""

import dataclasses
import json
import math

import pytest

from pdenets.models.image_networks import NetworkCost
from pdenets.tasks.image_classification.config import ImageClassificationConfig
from pdenets.tasks.image_classification.results import ImageCell, ImageClassificationResults, MetricSpread
from pdenets.tasks.image_classification.task import ImageClassificationTask


def test_image_results_are_typed_and_their_plain_form_pins_the_numbers():
    from pdenets.models.image_networks import NetworkCost

    task = ImageClassificationTask(ImageClassificationConfig(flops_models=[]))
    records = [
        {
            "dataset": "canvas",
            "model": "resnet-44",
            "parameters": 10,
            "seconds": seconds,
            "tests": {"test": {"accuracy": accuracy, "mean_iou": iou}},
        }
        for seconds, accuracy, iou in ((1.0, 0.5, 0.25), (3.0, 0.7, 0.35), (5.0, 0.9, 0.15))
    ]
    results = task.summarize(records)
    cell = results.table["canvas"]["resnet-44"]
    assert (cell.parameters, cell.runs, cell.seconds_per_run) == (10, 3, 3.0)
    spread = cell.metrics["test accuracy"]
    assert (spread.median, spread.mean, spread.min, spread.max) == pytest.approx((70.0, 70.0, 50.0, 90.0))
    assert cell.metrics["test mean_iou"].median == pytest.approx(25.0)
    plain = results.to_dict()
    assert list(plain) == ["table", "flops", "figures"]
    assert list(plain["table"]["canvas"]["resnet-44"]) == [
        "parameters",
        "runs",
        "seconds_per_run",
        "test accuracy",
        "test mean_iou",
    ]
    assert list(plain["table"]["canvas"]["resnet-44"]["test accuracy"]) == ["median", "mean", "min", "max"]
    assert plain["flops"] == {}  # no FLOPs models configured
    cost = NetworkCost(1.5, 7)
    flat = dataclasses.replace(results, flops={"this run": {"resnet-44": cost}}).to_dict()
    assert flat["flops"] == {"this run": {"resnet-44": {"mflops": 1.5, "parameters": 7}}}


def run(dataset, model, seconds, tests, parameters=100):
    return {"dataset": dataset, "model": model, "parameters": parameters, "seconds": seconds, "tests": tests}


def summarize(records):
    return ImageClassificationTask(ImageClassificationConfig(flops_models=[])).summarize(records)


def test_each_metric_is_spread_over_the_seeds_in_percent():
    records = [
        run("cifar10", "resnet-44", s, {"held-out": {"accuracy": a}, "official": {"accuracy": o}})
        for s, a, o in ((1.0, 0.1, 0.2), (2.0, 0.6, 0.4), (4.0, 0.5, 0.6), (9.0, 0.9, 0.8))
    ]
    cell = summarize(records).table["cifar10"]["resnet-44"]
    assert (cell.parameters, cell.runs, cell.seconds_per_run) == (100, 4, 4.0)
    assert list(cell.metrics) == ["held-out accuracy", "official accuracy"]
    held_out = cell.metrics["held-out accuracy"]
    # 10, 60, 50, 90: the median of an even count is the mean of the middle two, (50 + 60) / 2
    assert held_out.median == pytest.approx(55.0, abs=1e-12) and held_out.mean == pytest.approx(
        52.5, abs=1e-12
    )
    assert (held_out.min, held_out.max) == pytest.approx((10.0, 90.0), abs=1e-12)
    assert cell.metrics["official accuracy"] == MetricSpread(
        pytest.approx(50.0), pytest.approx(50.0), pytest.approx(20.0), pytest.approx(80.0)
    )


def test_a_seed_without_a_finite_value_is_left_out_of_the_spread():
    records = [
        run("canvas", "resnet-44", 1.0, {"test": {"accuracy": accuracy}})
        for accuracy in (float("nan"), 0.5, 0.75)
    ]
    cell = summarize(records).table["canvas"]["resnet-44"]
    spread = cell.metrics["test accuracy"]
    assert cell.runs == 3  # stored runs, the diverged one included
    assert (spread.median, spread.mean, spread.min, spread.max) == pytest.approx((62.5, 62.5, 50.0, 75.0))
    none = summarize([run("canvas", "m", 1.0, {"test": {"accuracy": float("nan")}})]).table["canvas"]["m"]
    assert all(math.isnan(value) for value in vars(none.metrics["test accuracy"]).values())


def test_cells_are_grouped_by_data_set_then_model_in_the_order_of_the_runs():
    records = [
        run("canvas", "hamiltonian-74", 1.0, {"test": {"accuracy": 0.5}}, parameters=7),
        run("cifar10", "resnet-44", 1.0, {"held-out": {"accuracy": 0.5}}),
        run("canvas", "resnet-44", 3.0, {"test": {"accuracy": 0.25}}),
        run("canvas", "hamiltonian-74", 3.0, {"test": {"accuracy": 1.0}}, parameters=7),
    ]
    table = summarize(records).table
    assert list(table) == ["canvas", "cifar10"] and list(table["canvas"]) == ["hamiltonian-74", "resnet-44"]
    hamiltonian = table["canvas"]["hamiltonian-74"]
    assert (hamiltonian.parameters, hamiltonian.runs, hamiltonian.seconds_per_run) == (7, 2, 2.0)
    assert hamiltonian.metrics["test accuracy"].mean == pytest.approx(75.0)


def test_the_plain_form_reads_back_to_the_same_results():
    cell = ImageCell(
        parameters=12,
        runs=3,
        seconds_per_run=1.5,
        metrics={
            "test accuracy": MetricSpread(70.0, 68.0, 50.0, 84.0),
            "test mean_iou": MetricSpread(1, 2, 0, 3),
        },
    )
    results = ImageClassificationResults(
        table={"canvas": {"resnet-44": cell}, "cifar10": {"resnet-44": ImageCell(5, 1, 2.0)}},
        flops={"this run": {"resnet-44": NetworkCost(1.5, 12)}},
    )
    plain = json.loads(json.dumps(results.to_dict()))
    assert plain["table"]["cifar10"]["resnet-44"] == {"parameters": 5, "runs": 1, "seconds_per_run": 2.0}
    fixed = ("parameters", "runs", "seconds_per_run")
    rebuilt = ImageClassificationResults(
        table={
            data: {
                model: ImageCell(
                    *(entry[name] for name in fixed),
                    {k: MetricSpread(**v) for k, v in entry.items() if k not in fixed},
                )
                for model, entry in models.items()
            }
            for data, models in plain["table"].items()
        },
        flops={
            scale: {m: NetworkCost(**c) for m, c in costs.items()} for scale, costs in plain["flops"].items()
        },
    )
    assert rebuilt == results
