"""A report is safe to open whatever the user's files call things: every name from a file (node, class,
column, file or folder names) is shown as written, never read as Markdown or HTML. Each task that reads a
user's files runs ``--quick`` on data whose names are script, link, image and HTML-comment payloads; its
``report.md`` must hold none of them as markup, and its ``report.html`` must hold only the tags the report
builder writes, no comment, links only to the run folder's files, anchors or web pages, and images only of
the run folder's figures."""

import html
import re
from html.parser import HTMLParser
from pathlib import Path

from pdenets.cli import main

from ..helpers import foreign_data

#: what the report builder writes, and nothing else
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "li",
    "table", "caption", "thead", "tbody", "tr", "th", "td", "figure", "img", "figcaption", "pre", "code",
    "strong", "em", "a",
}  # fmt: skip
SCRIPT = "<script>alert(1)</script>"
LINK = "[click](javascript:alert(1))"
IMAGE = "![x](javascript:alert(2))"
COMMENT = "<!-- hidden -->"
#: the payloads as names a file may hold: no comma (CSV), no slash (file names), no white space (edge lists)
NAMES = {
    "script": "<script>alert(1)<",
    "link": LINK,
    "image": IMAGE,
    "comment": "<!--hidden-->",
}


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.hrefs, self.sources, self.comments, self.text = set(), [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        attributes = dict(attrs)
        if tag == "a":
            self.hrefs.append(attributes.get("href", ""))
        if tag == "img":
            self.sources.append(attributes.get("src", ""))
        unexpected = set(attributes) - {"href", "src", "alt", "lang", "charset", "style"}
        assert not unexpected, (tag, attrs)

    def handle_comment(self, data):
        self.comments.append(data)

    def handle_data(self, data):
        self.text.append(data)


def check_report(out: Path, shown: tuple):
    """``report.md`` and ``report.html`` of the run in ``out`` hold no markup from a name, and show the names
    ``shown`` as written."""
    markdown = (out / "report.md").read_text(encoding="utf-8")
    for markup in ("<script", "<!--", "](javascript:", "![x]("):
        assert markup not in markdown, (markup, markdown[max(0, markdown.find(markup) - 80) :][:200])
    page = _Page()
    document = (out / "report.html").read_text(encoding="utf-8")
    page.feed(document)
    assert page.tags <= ALLOWED_TAGS, page.tags - ALLOWED_TAGS
    assert not page.comments, page.comments
    for href in page.hrefs:
        assert re.fullmatch(r"#[\w.~-]+|https?://\S+|[\w.~%+-][\w.~/%+-]*", href), href
        assert ".." not in href.split("/") and not href.lower().startswith("javascript")
    for source in page.sources:
        assert (out / source).is_file(), source
    assert "javascript:" not in " ".join(page.hrefs + page.sources)
    text = html.unescape("".join(page.text))
    for name in shown:
        assert name in text, (name, text[:2000])


def test_a_forecast_report_shows_hostile_sensor_and_folder_names_as_text(tmp_path, monkeypatch):
    monkeypatch.setenv("PDENETS_DATA", str(tmp_path / "no-data"))
    data = tmp_path / "data"
    data.mkdir()
    sensors = (SCRIPT, LINK, IMAGE, COMMENT)
    folder = foreign_data.traffic_folder(data, sensors=6, steps=96, stem=NAMES["link"], names=sensors)
    out = tmp_path / "run"
    argv = ["run", "coin-forecast", "--quick", "--dataset", str(folder), "--out", str(out), "--no-progress"]
    argv += ["--models", "last-value,linear", "--set", f"entity={NAMES['comment']}"]
    assert main(argv) == 0
    check_report(out, (SCRIPT, LINK, IMAGE, NAMES["link"]))


def test_a_tabular_report_shows_hostile_class_column_and_file_names_as_text(tmp_path, monkeypatch):
    monkeypatch.setenv("PDENETS_DATA", str(tmp_path / "no-data"))
    columns = (SCRIPT, LINK, IMAGE, COMMENT, "current")
    path = foreign_data.tabular_csv(
        tmp_path, rows=120, stem=NAMES["image"], columns=columns, classes=(NAMES["script"], COMMENT)
    )
    out = tmp_path / "run"
    argv = ["run", "coin-tabular", "--quick", "--dataset", str(path), "--out", str(out), "--no-progress"]
    assert main(argv + ["--set", "label_column=status"]) == 0
    check_report(out, (NAMES["image"], NAMES["script"], COMMENT, SCRIPT, LINK))


def test_a_graph_report_shows_a_hostile_file_name_as_text(tmp_path, monkeypatch):
    monkeypatch.setenv("PDENETS_DATA", str(tmp_path / "no-data"))
    stem = "".join(NAMES.values())  # every payload in one file name
    path = foreign_data.graph_edge_list(tmp_path, stem=stem, labels=tuple(NAMES.values())[:3])
    out = tmp_path / "run"
    argv = ["run", "node-classification", "--quick", "--dataset", str(path), "--out", str(out)]
    assert main(argv + ["--no-progress", "--models", "gcn", "--set", "max_epochs=5"]) == 0
    check_report(out, (stem,))


def test_a_fewshot_report_shows_a_hostile_file_name_as_text(tmp_path, monkeypatch):
    monkeypatch.setenv("PDENETS_DATA", str(tmp_path / "no-data"))
    stem = "".join(NAMES.values())
    path = foreign_data.fewshot_features(tmp_path, classes=12, per_class=20, stem=stem, names=(SCRIPT,))
    out = tmp_path / "run"
    argv = ["run", "few-shot", "--quick", "--dataset", str(path), "--out", str(out), "--no-progress"]
    assert main(argv + ["--methods", "prototype"]) == 0
    check_report(out, (stem,))
