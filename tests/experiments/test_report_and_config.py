import json
import math

from pdenets.experiments.report import Report, format_number
from pdenets.experiments.rundir import RunDirectory


def test_results_json_has_no_nan(tmp_path):
    run = RunDirectory(tmp_path)
    run.write_results({"a": math.nan, "b": [1.0, math.inf], "c": {"d": 2}})
    assert json.loads(run.file("results.json").read_text()) == {"a": None, "b": [1.0, None], "c": {"d": 2}}


def test_report_markdown_and_html(tmp_path):
    report = Report("Title <x>")
    report.heading("Part")
    report.paragraph("Use `pdenets` **now**.")
    report.table(["k", "v"], [["a", 0.12345], ["b", 3]], caption="cap")
    report.figure("plot.png", "a plot")
    report.bullets(["one"])
    report.code("make run")
    md_path, html_path = report.write(tmp_path)
    markdown = md_path.read_text()
    page = html_path.read_text()
    assert "| a | 0.123 |" in markdown and "![a plot](plot.png)" in markdown
    assert "Title &lt;x&gt;" in page and "<code>pdenets</code>" in page and "<strong>now</strong>" in page
    assert '<img src="plot.png"' in page and "<td>0.123</td>" in page


def test_inline_markup_bold_italic_code_links_and_plain_asterisks():
    from pdenets.experiments.report import _inline_html

    assert (
        _inline_html("*held-out* and **last** `x*y` [a](b.csv)")
        == '<em>held-out</em> and <strong>last</strong> <code>x*y</code> <a href="b.csv">a</a>'
    )
    assert _inline_html("2 * 3 * 4, a*b*c, x*") == "2 * 3 * 4, a*b*c, x*"


def test_format_number():
    assert format_number(1234567.0) == "1.23e+06"
    assert format_number(0.5) == "0.500"
    assert (
        format_number(None) == "—" and format_number(True) == "yes" and format_number(float("nan")) == "nan"
    )


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
