"""``pdenets explain`` and ``pdenets suggest-labels`` on a saved node model: the files they write by the
graph's ids (the shares adding up to each node's margin, the suggestions among the unlabelled nodes), and the
requests refused in one line: a tabular model, no ids, a budget beyond the unlabelled nodes, an existing
``--out``."""

import csv
import json

import numpy as np
import pytest

from pdenets import __version__
from pdenets.cli import main
from pdenets.estimators import DiffusionNodeClassifier
from pdenets.saved_model import MODEL_FORMAT

from .graph_fixtures import write_sbm_npz


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved Diff-ResNet of a graph file with 150 of its 180 nodes unlabelled."""
    folder = tmp_path_factory.mktemp("decisions")
    path = write_sbm_npz(folder / "graph.npz", embedded=True, features=6)
    arrays = dict(np.load(path))
    labels = arrays["labels"].copy()
    labels[np.arange(180) % 6 != 0] = -1
    np.savez(path, **{**arrays, "labels": labels})
    model = DiffusionNodeClassifier(max_epochs=40, progress=False).fit(str(path))
    return model.save(folder / "run" / "model-diff-resnet"), path


def _rows(path):
    with open(path, newline="") as stream:
        return list(csv.DictReader(stream))


def test_explain_writes_each_nodes_shares_adding_up_to_its_margin(saved, tmp_path, capsys):
    folder, graph = saved
    out = tmp_path / "why.csv"
    assert (
        main(
            [
                "explain",
                str(folder.parent),
                "--dataset",
                str(graph),
                "--ids",
                "5,0,5",
                "--top",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "2 node(s) of" in printed and printed.startswith("5: ")
    rows = _rows(out)
    assert [row["id"] for row in rows] == ["5"] * 5 + ["0"] * 5
    for node in ("5", "0"):
        mine = [row for row in rows if row["id"] == node]
        assert sum(float(row["share"]) for row in mine) == pytest.approx(float(mine[0]["margin"]), abs=1e-4)
    assert any(row["contributor"] == "0 (itself)" and row["contributor_label"] for row in rows)


def test_suggest_labels_writes_unlabelled_nodes_by_the_criterion(saved, tmp_path, capsys):
    folder, graph = saved
    out = tmp_path / "next.csv"
    argv = [
        "suggest-labels",
        str(folder),
        "--dataset",
        str(graph),
        "--budget",
        "7",
        "--criterion",
        "uncertainty",
    ]
    assert main([*argv, "--out", str(out)]) == 0
    assert "7 of the 150 unlabelled nodes" in capsys.readouterr().out
    rows = _rows(out)
    assert [row["rank"] for row in rows] == [str(rank) for rank in range(1, 8)]
    assert all(int(row["id"]) % 6 != 0 for row in rows)
    uncertainty = [float(row["uncertainty"]) for row in rows]
    assert uncertainty == sorted(uncertainty, reverse=True)


def _refused(capsys, argv):
    code = main(argv)
    error = capsys.readouterr().err
    assert code == 2 and error.count("\n") == 1, (code, error)
    return error


def test_the_requests_that_cannot_work_are_refused_in_one_line(saved, tmp_path, capsys):
    folder, graph = saved
    out = tmp_path / "out.csv"
    common = ["--dataset", str(graph), "--out", str(out)]
    assert "give the nodes to explain with --ids" in _refused(capsys, ["explain", str(folder), *common])
    assert "budget must be a whole number in [1, 150]" in _refused(
        capsys, ["suggest-labels", str(folder), *common, "--budget", "151"]
    )
    assert "node id(s) not in the graph: '9999'" in _refused(
        capsys, ["explain", str(folder), *common, "--ids", "9999"]
    )
    out.write_text("mine")
    assert "exists; pass --overwrite" in _refused(capsys, ["explain", str(folder), *common, "--ids", "1"])
    assert out.read_text() == "mine"
    tabular = tmp_path / "run" / "model-coin"
    tabular.mkdir(parents=True)
    manifest = {"format": MODEL_FORMAT, "pdenets": __version__, "task": "coin-tabular"}
    (tabular / "model.json").write_text(json.dumps(manifest))
    error = _refused(capsys, ["explain", str(tabular), *common, "--ids", "1", "--overwrite"])
    assert "a coin-tabular model; explain answers for node-classification models" in error
