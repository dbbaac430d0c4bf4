"""A run on a user's own data is reported in the user's words: each task that takes the user's files runs
``--quick`` on data of its kind that is none of the papers' (named users in teams, named intents, machines
and their status, speed sensors read every 5 minutes), and its report must name that data and never a paper's
dataset or that dataset's words (Cora, Omniglot, counties, COVID, breast cancer ...). The *Settings* section
at the end lists the choices a setting accepts, the built-in datasets among them, and is left out."""

import json
import re

import pytest

from pdenets.cli import main

from ..helpers import foreign_data

#: a paper's word as a word (``region`` but not ``regional`` is fine either way; ``cora`` not in ``coral``)
PAPER_WORD = re.compile(r"\b(" + "|".join(re.escape(w) for w in foreign_data.PAPER_WORDS) + r")\b", re.I)

CASES = {
    "node-classification": (
        foreign_data.graph_edge_list,
        ["friends", "standardized per feature"],
    ),
    "few-shot": (foreign_data.fewshot_features, ["support_intents"]),
    "coin-tabular": (foreign_data.tabular_csv, ["machines", "failed", "running", "vibration"]),
    "coin-forecast": (
        foreign_data.traffic_folder,
        [
            "ring_road",
            "12 nodes named detector_700",
            "288 rows 5 minutes apart, from 2026-03-02 00:00 to 2026-03-02 23:55 (column time)",
            "values (not counts)",
        ],
    ),
}


def _report_text(out):
    text = (out / "report.md").read_text(encoding="utf-8")
    return text.split("\n## Settings")[0]


@pytest.mark.parametrize("task", sorted(CASES))
def test_a_report_on_the_users_data_speaks_of_it_and_of_no_paper_dataset(task, tmp_path, monkeypatch):
    monkeypatch.setenv("PDENETS_DATA", str(tmp_path / "no-data"))  # no built-in dataset can slip in
    write, expected = CASES[task]
    data = tmp_path / "data"
    data.mkdir()
    path = write(data)
    out = tmp_path / "run"
    assert main(["run", task, "--quick", "--dataset", str(path), "--out", str(out), "--no-progress"]) == 0
    text = _report_text(out)
    title = text.splitlines()[0]
    assert path.stem in title, title
    for words in expected:
        assert words in text, (task, words)
    found = sorted({m.group(0).lower() for m in PAPER_WORD.finditer(text)})
    context = [text[max(0, m.start() - 60) : m.end() + 40] for m in PAPER_WORD.finditer(text)][:3]
    assert not found, f"{task} report speaks of {found}: {context}"
    # statements that need several seeds or splits are not printed on one
    assert not re.search(r"\b1 (seeds|splits|initializations|runs)\b", text), task


def test_the_forecast_report_uses_the_named_entity_and_the_sensors_names(tmp_path, monkeypatch):
    monkeypatch.setenv("PDENETS_DATA", str(tmp_path / "no-data"))
    data = tmp_path / "data"
    data.mkdir()
    path = foreign_data.traffic_folder(data)
    out = tmp_path / "run"
    argv = ["run", "coin-forecast", "--quick", "--dataset", str(path), "--out", str(out), "--no-progress"]
    assert main(argv + ["--set", "entity=sensor", "--models", "linear"]) == 0
    text = _report_text(out)
    assert "12 sensors named detector_700" in text and "for the four sensors with the largest" in text
    assert "log(1 + y)" not in text and "by more than one std" not in text  # no log1p, one seed
    # a CSV folder has no PyTorch Geometric Temporal loader: its protocol is not run unless asked for
    assert "pyg-temporal" not in text and "## ring_road — ours protocol" in text
    results = json.loads((out / "results.json").read_text())
    assert list(results["table"]["ring_road"]) == ["ours"]
    # one seed: no spread is printed, in the tables or the verdicts
    assert "±" not in text.split("## ring_road")[1]


def test_asking_for_the_pyg_temporal_protocol_on_a_csv_folder_warns_and_says_what_it_is(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    path = foreign_data.traffic_folder(data, sensors=4, steps=96)
    out = tmp_path / "run"
    argv = ["run", "coin-forecast", "--quick", "--dataset", str(path), "--out", str(out), "--no-progress"]
    assert main(argv + ["--models", "linear", "--set", "protocols=[ours, pyg-temporal]"]) == 0
    error = capsys.readouterr().err
    assert (
        "pdenets: warning: " in error
        and "no PyTorch Geometric Temporal loader exists for a CSV folder" in error
    )
    text = _report_text(out)
    assert "## ring_road — pyg-temporal protocol" in text
    assert "MSE on the values as stored (not scaled)" in text and "loader gives it" not in text
