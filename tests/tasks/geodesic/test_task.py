"""The geodesic study end to end at toy scale: MNIST MLP pairs and CIFAR-10 K = 1 / K = 4 CNN pairs."""

import pytest
from datafiles import MNIST, cifar10, requires_data

from pdenets.experiments import run_task
from pdenets.experiments.store import ResultsStore
from pdenets.tasks.geodesic.task import GeodesicConfig, GeodesicTask


def _records(run):
    with ResultsStore(run / "results.sqlite", task="geodesic", columns=GeodesicTask.columns) as store:
        return [row.flat() for row in store.rows()]


@requires_data(*MNIST)
def test_mnist_study_scores_robustness_ablation_and_figures(tmp_path):
    config = GeodesicConfig(
        weight_decays=[0.0, 0.0005],
        width=16,
        blocks=3,
        epochs=1,
        train_limit=500,
        test_limit=200,
        track_points=50,
        robustness_points=60,
        projection_points=20,
        noise_levels=[0.0, 1.0],
        fgsm_levels=[0.0, 0.1],
        ablation_counts=[0, 4, 100],
        workers=1,
        threads=1,
    )
    outcome = run_task(GeodesicTask(config), out=tmp_path / "run", progress=False)
    table = outcome.results["table"]["mnist/mlp"]
    assert set(table) == {"0", "0.0005"} and set(table["0"]) == {"plain", "resnet"}
    for kinds in table.values():
        for entry in kinds.values():
            assert entry["lss"]["mean"] >= 1 and 0 <= entry["ots"]["mean"] <= 1 and entry["lsr"]["mean"] >= 1
    (stored,) = [r for r in _records(tmp_path / "run") if r["kind"] == "resnet" and r["weight_decay"] == 0.0]
    assert stored["ablation"]["counts"] == [0, 4, 16]  # clamped to the block width 16, duplicates merged
    gaussian = stored["robustness"]["gaussian"]
    assert gaussian["variation"][0] == [0.0] * 4 and len(gaussian["variation"][1]) == 4  # 3 blocks: l = 0..3
    assert len(stored["stages"][0]["proportions"]) == 3
    assert sum(stored["stages"][0]["proportions"]) == pytest.approx(1.0)
    report = (tmp_path / "run" / "report.md").read_text()
    assert report.count("OTS 0.96 · LSS 1.12") == 1  # the paper's value sits on the γ = 5e-4 ResNet row only
    for figure in ("lss", "robustness", "variation", "ablation", "tracks"):
        assert (tmp_path / "run" / f"mnist-mlp-{figure}.png").stat().st_size > 1000


@requires_data(*cifar10(0, 40, 50))
def test_cifar_pairs_k1_and_k4_are_scored_per_stage(tmp_path):
    config = GeodesicConfig(
        datasets=["cifar10"],
        architectures=["k1", "k4"],
        k4_widths=[2, 3, 4, 5],
        weight_decays=[0.01],
        epochs=1,
        train_limit=64,
        test_limit=40,
        track_points=12,
        robustness_points=10,
        projection_points=5,
        noise_levels=[0.0, 0.1],
        fgsm_levels=[0.0, 0.01],
        ablation_counts=[0, 10],
        workers=1,
        threads=1,
    )
    outcome = run_task(GeodesicTask(config), out=tmp_path / "run", progress=False)
    k4 = outcome.results["table"]["cifar10/k4"]["0.01"]["resnet"]
    assert [stage["width"] for stage in k4["stages"]] == [2 * 32 * 32, 3 * 16 * 16, 4 * 8 * 8, 5 * 4 * 4]
    records = _records(tmp_path / "run")
    k1 = [r for r in records if r["architecture"] == "k1"]
    assert all(len(r["stages"]) == 1 and r["stages"][0]["width"] == 32 * 16 * 16 for r in k1)
    assert all(0 <= r["official_accuracy"] <= 1 for r in records)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "held out" in report and "train 97.2 · test 88.9" in report  # Table 4's plain row at γ = 0.01


@requires_data(*MNIST)
def test_every_setting_of_a_geodesic_job_reaches_the_result():
    from pdenets.tasks.geodesic.task import run_geodesic_job

    from ...helpers.spec_sensitivity import assert_every_key_setting_matters

    config = GeodesicConfig(
        weight_decays=[0.01],
        width=8,
        blocks=2,
        epochs=1,
        train_limit=200,
        test_limit=100,
        track_points=30,
        robustness_points=40,
        projection_points=10,
        noise_levels=[0.0, 1.0],
        fgsm_levels=[0.0, 0.1],
        ablation_counts=[0, 4],
        batch_size=50,
    )
    spec = GeodesicTask(config).jobs()[0]
    assert_every_key_setting_matters(
        run_geodesic_job,
        spec,
        changes={
            "kind": "resnet" if spec.kind == "plain" else "plain",
            "init": "torch",
            "noise_levels": (0.0, 0.5),
            "fgsm_levels": (0.0, 0.05),
            "ablation_counts": (0, 2),
            "ablation_block": 1,
            "momentum": 0.5,
        },
        skip={
            "dataset": "selects the data and its architectures "
            "(test_cifar_pairs_k1_and_k4_are_scored_per_stage)",
            "architecture": "selects the network, with its own settings (width / blocks / k4_widths)",
            "k4_widths": "None for the MLP: the widths of architecture k4 only",
            "augment": "CIFAR-10 only: the task plans MNIST jobs with augment=False",
        },
        ignore=("seconds", "seconds_total"),
    )
