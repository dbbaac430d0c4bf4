"""Reports opened in headless Chromium: the checker finds a broken image, a dead link and a table that
overflows the page, and a real task's --quick report has none of them. Skipped, saying what to install,
where no browser is installed. The classification of every ``src`` and ``href`` is tested without a
browser."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from pdenets.experiments import browser_check  # noqa: E402
from pdenets.experiments.browser_check import browser_available, check_report, classify_target  # noqa: E402
from pdenets.experiments.report import Report  # noqa: E402

missing = browser_available()
needs_browser = pytest.mark.skipif(missing is not None, reason=f"browser check skipped: {missing}")


def _figure(path):
    fig, axis = plt.subplots(figsize=(3, 2))
    axis.plot([0, 1], [1, 0])
    fig.savefig(path, dpi=80)
    plt.close(fig)


@needs_browser
def test_a_good_report_passes_and_each_defect_is_named(tmp_path):
    good = Report("good")
    good.paragraph("See [the data](runs.csv) and [the figure](#figure).")
    good.figure("curve.png", "a curve")
    good.table(["a", "b"], [[1, 2.5], [3, 4.25]])
    _figure(tmp_path / "curve.png")
    (tmp_path / "runs.csv").write_text("a,b\n")
    good.write(tmp_path)
    html = (tmp_path / "report.html").read_text().replace("<figure>", '<figure id="figure">', 1)
    (tmp_path / "report.html").write_text(html)
    outcome = check_report(tmp_path / "report.html", screenshot=tmp_path / "good.png")
    assert outcome.problems == [] and outcome.images == 1 and outcome.links == 2
    assert outcome.screenshot.stat().st_size > 5000 and outcome.page_size[0] == 1280

    bad_dir = tmp_path / "bad"
    bad = Report("bad")
    bad.paragraph("See [the data](missing.csv), [nowhere](#nowhere) and [a site](https://example.org).")
    bad.figure("absent.png", "never drawn")
    bad.table([f"a very long column header number {i}" for i in range(30)], [list(range(30))])
    bad_dir.mkdir()
    bad.write(bad_dir)
    problems = " | ".join(check_report(bad_dir / "report.html").problems)
    assert "image 'absent.png' did not load" in problems
    assert "link 'missing.csv' names no file" in problems and "link '#nowhere' names no element" in problems
    assert "a table" in problems and "overflows the 1280 px page" in problems
    assert "example.org" not in problems  # other sites are listed, not fetched


@needs_browser
def test_a_quick_task_report_reads_well_in_a_browser(tmp_path):
    from pdenets.experiments import run_task
    from pdenets.tasks.coin_claims.task import CoinClaimsConfig, CoinClaimsTask

    run_task(
        CoinClaimsTask(CoinClaimsConfig(samples=500, sigmas=[0.5, 1.0], workers=1)),
        out=tmp_path / "run",
        progress=False,
    )
    outcome = check_report(tmp_path / "run" / "report.html", screenshot=tmp_path / "claims.png")
    assert outcome.problems == [] and outcome.images >= 1


TARGETS = [
    # (target, image?, kind, detail or message)
    ("runs.csv", False, "file", "{run}/runs.csv"),
    ("sub/../runs.csv", False, "file", "{run}/runs.csv"),
    ("#top", False, "anchor", "top"),
    ("report.html#top", False, "anchor", "top"),
    ("https://example.org/a", False, "external", "https://example.org/a"),
    ("mailto:someone@example.org", False, "external", "mailto:someone@example.org"),
    ("curve.png", True, "file", "{run}/curve.png"),
    ("data:image/png;base64,iVBORw0KGgo=", True, "inline", ""),
    ("missing.csv", False, "problem", "link 'missing.csv' names no file beside the report"),
    ("../outside.html", False, "problem", "link '../outside.html' leads outside the run folder"),
    ("file:///etc/passwd", False, "problem", "link 'file:///etc/passwd' leads outside the run folder"),
    ("file://{run}/runs.csv", False, "file", "{run}/runs.csv"),
    (
        "javascript:alert(1)",
        False,
        "problem",
        "link 'javascript:alert(1)' is a javascript: URL; links must name "
        "files of the run folder or web pages (http, https, mailto)",
    ),
    (
        "//evil.example/x",
        False,
        "problem",
        "link '//evil.example/x' names a file on another machine (evil.example)",
    ),
    ("escape/secret.txt", False, "problem", "link 'escape/secret.txt' leads outside the run folder"),
    (
        "file:///usr/share/pixmaps/x.png",
        True,
        "problem",
        "image 'file:///usr/share/pixmaps/x.png' leads outside the run folder",
    ),
    ("../../etc/x.png", True, "problem", "image '../../etc/x.png' leads outside the run folder"),
    ("/abs/x.png", True, "problem", "image '/abs/x.png' leads outside the run folder"),
    (
        "https://example.org/x.png",
        True,
        "problem",
        "image 'https://example.org/x.png' is another site's URL; images must name files of the run folder",
    ),
    (None, True, "problem", "an image without a src"),
]


@pytest.mark.parametrize("target, image, kind, detail", TARGETS, ids=[f"{t}-{i}" for t, i, _, _ in TARGETS])
def test_every_src_and_href_is_resolved_against_the_report(tmp_path, target, image, kind, detail):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("report.html", "runs.csv", "curve.png"):
        (run / name).write_text("x")
    (tmp_path / "secret.txt").write_text("x")
    (run / "escape").symlink_to(tmp_path)
    target = target.replace("{run}", str(run.resolve())) if target else target
    found = classify_target(run / "report.html", target, image=image)
    assert found == (kind, detail.replace("{run}", str(run.resolve())))


def test_the_check_reports_links_and_images_that_leave_the_run_folder(tmp_path, monkeypatch):
    """check_report with a stand-in browser that reports what a page holds."""
    import sys
    import types

    run = tmp_path / "run"
    run.mkdir()
    (run / "report.html").write_text("<html></html>")
    (run / "runs.csv").write_text("a\n")
    seen = {
        "images": [["file:///usr/share/pixmaps/x.png", True, 300, 200], ["curve.png", True, 300, 200]],
        "links": ["runs.csv", "../outside.html", "javascript:alert(1)", "https://example.org", "#nowhere"],
        "ids": [],
        "wide": [],
        "page": 1280,
        "height": 900,
    }

    class Driver:
        def __init__(self, **options):
            pass

        def set_page_load_timeout(self, seconds):
            pass

        def get(self, url):
            pass

        def execute_script(self, script):
            return seen

        def quit(self):
            pass

    webdriver = types.ModuleType("selenium.webdriver")
    webdriver.Chrome = Driver
    webdriver.ChromeOptions = type(
        "Options", (), {"binary_location": None, "add_argument": lambda self, a: None}
    )
    service = types.ModuleType("selenium.webdriver.chrome.service")
    service.Service = lambda path: None
    selenium = types.ModuleType("selenium")
    selenium.webdriver = webdriver
    for name, module in (
        ("selenium", selenium),
        ("selenium.webdriver", webdriver),
        ("selenium.webdriver.chrome", types.ModuleType("selenium.webdriver.chrome")),
        ("selenium.webdriver.chrome.service", service),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(browser_check, "browser_available", lambda: None)
    monkeypatch.setattr(browser_check, "_which", lambda names: "/bin/true")
    outcome = check_report(run / "report.html")
    assert outcome.problems == [
        "image 'file:///usr/share/pixmaps/x.png' leads outside the run folder",
        "link '../outside.html' leads outside the run folder",
        "link 'javascript:alert(1)' is a javascript: URL; links must name files of the run folder or web "
        "pages "
        "(http, https, mailto)",
        "link '#nowhere' names no element of the page",
    ]
    assert outcome.external_links == ["https://example.org"]
