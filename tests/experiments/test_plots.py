import json
import re

from pdenets.experiments.rundir import RunDirectory


def test_csv_and_figures_are_recorded_in_the_marker(tmp_path):
    from pdenets.experiments.plots import plt

    with RunDirectory.open(tmp_path / "run", task="demo") as run:
        run.write_csv("rows.csv", [{"a": 1, "b": None}, {"a": 2, "c": "x"}])
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0])
        assert run.save_figure(fig, "line.png") == "line.png"
    assert run.file("rows.csv").read_text() == "a,b,c\n1,,\n2,,x\n"
    assert run.file("line.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    marker = json.loads(run.file(".pdenets-run").read_text())
    assert marker["files"] == ["line.png", "rows.csv"] and marker["task"] == "demo"


def test_a_figure_name_from_a_label_is_a_plain_file_name():
    from pdenets.experiments.rundir import file_name_for

    assert file_name_for("ring_road", "-forecasts.png") == "ring_road-forecasts.png"
    odd = [file_name_for(label, ".png") for label in ("a:b", "a/b", "../a", "<x>", "a b", "a_b")]
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+\.png", name) for name in odd) and len(set(odd)) == len(odd)
    assert len(file_name_for("x" * 10_000, ".png")) <= 80 + 9 + 4
