"""``pdenets run coin-forecast`` and ``coin-tabular``: protocols checked against direct computations, toy
runs."""

import numpy as np
import pytest

from pdenets.cli import main
from pdenets.experiments import ConfigError, run_task
from pdenets.experiments.store import ResultsStore
from pdenets.tasks.coin_tabular.task import CoinTabularConfig, CoinTabularTask, labelled_split


def _records(run_dir, task):
    with ResultsStore(run_dir / "results.sqlite", task=task) as store:
        return [row.flat() for row in store.rows()]


def test_labelled_splits_are_stratified_reproducible_and_distinct():
    labels = np.array([0] * 30 + [1] * 50 + [2] * 20)
    split = labelled_split(labels, 5, seed=3)
    assert np.bincount(labels[split]).tolist() == [5, 5, 5]
    assert np.array_equal(split, labelled_split(labels, 5, seed=3))
    assert not np.array_equal(split, labelled_split(labels, 5, seed=4))
    with pytest.raises(ConfigError, match="class 2 has 20 samples"):
        labelled_split(labels, 20, seed=0)


def test_tabular_run_on_a_csv_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = ["a,b,c,kind"]
    for label, centre in (("benign", -1.5), ("malignant", 1.5)):
        for _ in range(60):
            x = rng.normal(centre, 1.0, size=3)
            rows.append(f"{x[0]:.5f},{x[1]:.5f},{x[2]:.5f},{label}")
    path = tmp_path / "blobs.csv"
    path.write_text("\n".join(rows) + "\n")
    config = CoinTabularConfig(
        datasets=[str(path)],
        labels_per_class=[5],
        splits=2,
        epochs=30,
        hidden_features=16,
        workers=1,
        threads=1,
    )
    outcome = run_task(CoinTabularTask(config), out=tmp_path / "run", progress=False)
    table = outcome.results["table"]["blobs"]["5"]
    assert set(table) == {"coin", "mlp", "label-spreading"} and all(e["splits"] == 2 for e in table.values())
    assert all(e["mean"] > 85 for e in table.values())  # two well-separated blobs
    assert all(r["unlabelled"] == 110 for r in _records(tmp_path / "run", "coin-tabular"))
    assert "COIN > MLP on splits" in (tmp_path / "run" / "report.md").read_text()
    assert (tmp_path / "run" / "blobs-accuracy.png").stat().st_size > 1000
    path.write_text("a,kind\n1.0,x\nfoo,y\n")
    assert main(["run", "coin-tabular", "--dataset", str(path), "--out", str(tmp_path / "y")]) == 2
    assert "line 3, column 'a': 'foo' is not a number" in capsys.readouterr().err
    path.write_text("a,kind\n1.0,x\n2.0,x\n")
    with pytest.raises(ValueError, match="has 1 class"):
        CoinTabularTask(CoinTabularConfig(datasets=[str(path)])).prepare()


@pytest.mark.parametrize("model", ["coin", "mlp", "label-spreading"])
def test_every_setting_of_a_tabular_job_reaches_the_result(tmp_path, model):
    from ...helpers.spec_sensitivity import assert_every_key_setting_matters

    rng = np.random.default_rng(0)
    for name, spread in (("blobs.csv", 1.0), ("wider.csv", 2.0)):
        rows = ["a,b,c,kind,other"]
        for label, centre in ((0, -1.0), (1, 1.0)):  # two label columns: "kind" by blob, "other" by parity
            for index in range(30):
                x = rng.normal(centre, spread, size=3)
                rows.append(f"{x[0]:.5f},{x[1]:.5f},{x[2]:.5f},{label},{index % 2}")
        (tmp_path / name).write_text("\n".join(rows) + "\n")
    config = CoinTabularConfig(
        datasets=[str(tmp_path / "blobs.csv")],
        labels_per_class=[3],
        splits=1,
        epochs=5,
        hidden_features=8,
        label_column="kind",
        models=[model],
    )
    spec = CoinTabularTask(config).jobs()[0]
    assert_every_key_setting_matters(
        CoinTabularTask.run_job,
        spec,
        changes={
            "dataset": str(tmp_path / "wider.csv"),
            "label_column": "other",
            "diffusion.sigma_neighbor": 2,
            "mlp.dropout": 0.5,
            "spreading.spreading_alpha": 0.5,
        },
        skip={
            "model": "each model has its own settings; the three are checked one by one",
            "split_digest": "the digest of the user's split, checked against it "
            "(tests/tasks/coin_tabular/test_split.py: an edited file, other runs)",
        },
    )
