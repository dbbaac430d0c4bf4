import json
import math
import re

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


PAYLOADS = [
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "![x](javascript:alert(1))",
    "<!-- hidden -->",
    "a|b\nc",
    "**bold** _lean_ `tick` # heading",
    "1. first",
    "- item",
    "R&D &lt;",
]


def test_user_text_is_literal_in_markdown_and_html(tmp_path):
    """Escaped by :func:`md_escape`, a name is shown as written in every block, and no tag, comment, link or
    image comes from it; the report's own links still work."""
    import html

    from pdenets.experiments.report import _inline_html, md_escape

    report = Report("Run on " + md_escape(PAYLOADS[0]))
    for text in PAYLOADS:
        shown = md_escape(text)
        assert (
            "<" not in shown
            and "](" not in shown
            and "\n" not in shown
            and "|" not in shown.replace("\\|", "")
        )
        assert html.unescape(re.sub(r"<[^>]+>", "", _inline_html(shown))) == " ".join(text.split())
        report.heading(shown)
        report.paragraph(f"The node {shown} and [the runs](runs.csv).")
        report.bullets([shown])
        report.table(["name", shown], [[shown, 1.0]], caption=shown)
    markdown, page = report.markdown(), report.html()
    for markup in ("<script", "<!--", "](javascript:", "![x]("):
        assert markup not in markdown
    assert "<script" not in page and "<!--" not in page and "<img" not in page  # the names show as text
    assert page.count('<a href="runs.csv">the runs</a>') == len(PAYLOADS)
    assert "href=" not in page.replace('href="runs.csv"', "")
    assert "<title>Run on &lt;script&gt;alert(1)&lt;/script&gt;</title>" in page
    assert markdown.count("\n| name |") == len(PAYLOADS)  # a | or a new line in a name never breaks a table


def test_only_the_reports_own_targets_become_links():
    from pdenets.experiments.report import _inline_html

    kept = "[a](runs.csv) [b](#figure) [c](https://example.org/x) [d](plots/a.png)"
    assert _inline_html(kept).count("<a href=") == 4
    for target in ("javascript:alert(1)", "JaVaScRiPt:x", "file:///etc/passwd", "../x.csv", "/etc/passwd",
                   "data:text/html,x", "java&#9;script:x", "//evil.example"):  # fmt: skip
        assert "<a " not in _inline_html(f"[t]({target})"), target
    assert "<img" not in _inline_html("![t](plot.png)")  # images come from Report.figure alone


def test_a_code_block_fence_outlasts_the_texts_backticks():
    report = Report("Demo")
    report.code("```\nrm -rf\n```")
    assert "````\n```\nrm -rf\n```\n````" in report.markdown()


def test_a_figure_name_from_a_label_is_a_plain_file_name():
    from pdenets.experiments.rundir import file_name_for

    assert file_name_for("ring_road", "-forecasts.png") == "ring_road-forecasts.png"
    odd = [file_name_for(label, ".png") for label in ("a:b", "a/b", "../a", "<x>", "a b", "a_b")]
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+\.png", name) for name in odd) and len(set(odd)) == len(odd)
    assert len(file_name_for("x" * 10_000, ".png")) <= 80 + 9 + 4
