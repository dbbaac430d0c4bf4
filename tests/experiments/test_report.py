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
