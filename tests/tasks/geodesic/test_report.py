"""The geodesic report from hand-made results and runs: the papers' values on the rows they belong to, cells
formatted by how many runs have them, per-stage and per-segment tables, the figure weight decay nearest on a
log scale, and no robustness section when every run diverged."""

import pytest

from pdenets.experiments.plots import plt
from pdenets.experiments.report import Report
from pdenets.experiments.rundir import RunDirectory
from pdenets.experiments.summary import Stats
from pdenets.tasks.geodesic.config import GeodesicConfig
from pdenets.tasks.geodesic.report import PAPER, add_sections
from pdenets.tasks.geodesic.results import GeodesicCell, GeodesicResults, StageScores

KINDS = ("plain", "resnet")


def _cell(train, test, official=(), ots=(0.5,), lsr=(1.25,), lss=(2.0,), runs=None, diverged=0, stages=None):
    return GeodesicCell(
        runs=runs if runs is not None else max(len(test), 1) + diverged,
        diverged=diverged,
        train_accuracy=Stats.of(train),
        test_accuracy=Stats.of(test),
        official_accuracy=Stats.of(official),
        ots=Stats.of(ots),
        lsr=Stats.of(lsr),
        lss=Stats.of(lss),
        stages=stages,
    )


def _record(kind, gamma, seed=0, diverged=False, segments=3, dataset="mnist", architecture="mlp"):
    levels = [0.0, 0.5]
    return {
        "dataset": dataset,
        "architecture": architecture,
        "kind": kind,
        "weight_decay": gamma,
        "seed": seed,
        "diverged": diverged,
        "curve": [{"epoch": 1, "lss": 3.0}, {"epoch": 2, "lss": 2.0}],
        "stages": [{"proportions": [1.0 / segments] * segments}],
        "robustness": {
            attack: {"levels": levels, "accuracy": [0.9, 0.6], "variation": [[0.0, 0.0], [0.1, 0.3]]}
            for attack in ("gaussian", "fgsm")
        },
        "ablation": {"counts": [0, 4], "accuracy": [0.9, 0.456], "block": "block 3"},
        "projection": {"points": [[[0.0, 0.0], [1.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]], "labels": [0, 1]},
    }


class Folder:
    """A run folder that names the figures it is given and draws none to a file."""

    def __init__(self):
        self.names = []

    def save_figure(self, figure, name):
        plt.close(figure)
        self.names.append(name)
        return name


def _report(run_dir, table, records, **settings):
    config = GeodesicConfig(**settings)
    results = GeodesicResults(table=table)
    report = Report("geodesic")
    add_sections(report, config, results, records, run_dir, kind_order=KINDS)
    return report.markdown(), results


def _rows(text):
    lines = text.splitlines()
    headers = {k - 1 for k, line in enumerate(lines) if line.startswith("|---")}
    return [line for k, line in enumerate(lines) if line.startswith("| ") and k not in headers]


def test_the_papers_values_sit_on_their_own_row_and_cells_show_a_spread_only_over_runs(tmp_path):
    table = {
        "cifar10/k1": {
            "0.01": {
                "resnet": _cell([0.95, 0.97], [0.9, 0.8], official=[0.85, 0.87], lss=(2.25,)),
                "plain": _cell([0.9], [0.7], ots=(0.00123,), lsr=(1.234,)),
            },
            "0.02": {"plain": _cell([], [], ots=(), lsr=(), lss=(), runs=1, diverged=1)},
        }
    }
    records = [_record("plain", 0.02, diverged=True, dataset="cifar10", architecture="k1")]
    text, results = _report(RunDirectory(tmp_path), table, records, datasets=["cifar10"], augment=True)
    assert "## cifar10, K1: plain vs ResNet per weight decay" in text
    assert "(CIFAR-10: pad-4 crop + flip)" in text and "test = the last 10,000 training images" in text
    assert _rows(text) == [
        # kinds in the report's order whatever the table's; Table 4's plain and ResNet values at γ = 10⁻²
        "| 0.01 | plain | 90.0 | 70.0 | — | 0.00123 | 1.23 | 2.00 | train 97.2 · test 88.9 · OTS 0.0009 "
        "· LSR 1.27 · LSS 6.71 | 1/1 |",
        "| 0.01 | resnet | 96.0 ± 1.0 | 85.0 ± 5.0 | 86.0 ± 1.0 | 0.5 | 1.25 | 2.25 | train 96.6 · test 88.5 "
        "· OTS 0.0119 · LSR 1.24 · LSS 2.25 | 2/2 |",
        "| 0.02 | plain | — | — | — | — | — | — | — | 0/1 |",  # not in the paper; diverged: nothing measured
    ]
    # every run diverged: the LSS figure only, no robustness section
    assert "Robustness" not in text and results.figures == {"cifar10-k1-lss": "cifar10-k1-lss.png"}
    assert (tmp_path / "cifar10-k1-lss.png").stat().st_size > 1000


def test_the_mnist_table_has_no_official_column_and_the_papers_resnet_value_once():
    table = {
        "mnist/mlp": {
            "0.0005": {"plain": _cell([0.9], [0.8]), "resnet": _cell([0.9], [0.8])},
            "0.001": {"resnet": _cell([0.9], [0.8])},
        }
    }
    records = [_record("resnet", 5e-4, diverged=True)]
    text, _ = _report(Folder(), table, records, width=16, blocks=3)
    header = next(line for line in text.splitlines() if line.startswith("| γ"))
    assert (
        header == "| γ | network | train acc (%) | test acc (%) | OTS | LSR | LSS | paper | runs finished |"
    )
    assert [row.split(" | ")[-2] for row in _rows(text)] == ["—", "OTS 0.96 · LSS 1.12", "—"]
    assert "MLP 784 → 16, 3 blocks v(x) = W₂σ(W₁σ(x)) (ResNet: x + v(x)), → 10." in text
    assert "CIFAR-10" not in text


def test_stages_of_a_k4_network_have_their_own_table():
    stages = [
        StageScores(ots=Stats.of([0.25]), lsr=Stats.of([1.5]), lss=Stats.of([3.14159]), width=4096),
        StageScores(ots=Stats.of([0.125]), lsr=Stats.of([1.0]), lss=Stats.of([2.0]), width=2048),
    ]
    table = {"cifar10/k4": {"0.001": {"resnet": _cell([0.9], [0.9], [0.9], stages=stages)}}}
    records = [_record("resnet", 1e-3, diverged=True, dataset="cifar10", architecture="k4")]
    settings = dict(datasets=["cifar10"], architectures=["k4"], k4_widths=[2, 3, 4, 5])
    text, _ = _report(Folder(), table, records, **settings)
    assert "stages 2/3/4/5 channels at 32², 16², 8², 4²" in text
    assert "| 0.001 | resnet | 4096 | 0.25 | 1.5 | 3.14 |" in text
    assert "| 0.001 | resnet | 2048 | 0.125 | 1 | 2 |" in text
    assert "*Per stage (Fig. 5–6 layout).*" in text
    # Table 6's resnet values at 10⁻³
    assert "test 95.4 · OTS 0.813 · LSR 1.16 · LSS 1.18" in text
    assert PAPER[("cifar10", "k4")][("plain", 0.001)]["ots"].mean == 0.0


def test_the_figures_weight_decay_is_the_nearest_on_a_log_scale_and_its_tables_filled():
    table = {"mnist/mlp": {g: {"plain": _cell([0.9], [0.8])} for g in ("0", "0.0001", "0.001")}}
    records = [
        _record(kind, gamma, segments=3 if kind == "plain" else 2)
        for gamma in (0.0, 1e-4, 1e-3)
        for kind in KINDS
    ]
    records.append(_record("plain", 1e-3, seed=1))
    # 5·10⁻⁴ is 0.30 decades from 10⁻³ and 0.70 from 10⁻⁴; 0 is far on a log scale
    folder = Folder()
    text, results = _report(folder, table, records, figure_weight_decay=5e-4, ablation_block=3)
    assert "### Robustness, unit ablation, tracks (γ = 0.001, seed 0)" in text
    rows = _rows(text)
    # segment shares, the shorter row padded to the widest
    assert "| plain | 1 | 0.333 | 0.333 | 0.333 |" in rows and "| resnet | 1 | 0.500 | 0.500 |  |" in rows
    # the unit ablation: accuracy in percent per number of eliminated units
    assert rows[-2:] == ["| 0 | 90.0 | 90.0 |", "| 4 | 45.6 | 45.6 |"]
    figures = ("ablation", "lss", "robustness", "tracks", "variation")
    assert sorted(results.figures) == [f"mnist-mlp-{name}" for name in figures]
    assert sorted(folder.names) == sorted(f"{name}.png" for name in results.figures)


@pytest.mark.parametrize(("target", "chosen"), [(1e-2, "0.001"), (1e-5, "0.0001"), (0.0, "0")])
def test_the_nearest_weight_decay_for_other_targets(target, chosen):
    records = [_record("resnet", gamma) for gamma in (0.0, 1e-4, 1e-3)]
    table = {"mnist/mlp": {"0": {"resnet": _cell([0.9], [0.8])}}}
    text, _ = _report(Folder(), table, records, figure_weight_decay=target)
    assert f"tracks (γ = {chosen}, seed 0)" in text
