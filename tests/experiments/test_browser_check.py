"""Reports opened in headless Chromium: the checker finds a broken image, a dead link and a table that
overflows the page, and a real task's --quick report has none of them. Skipped, saying what to install,
where no browser is installed."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from pdenets.experiments.browser_check import browser_available, check_report  # noqa: E402
from pdenets.experiments.report import Report  # noqa: E402

missing = browser_available()
pytestmark = pytest.mark.skipif(missing is not None, reason=f"browser check skipped: {missing}")


def _figure(path):
    fig, axis = plt.subplots(figsize=(3, 2))
    axis.plot([0, 1], [1, 0])
    fig.savefig(path, dpi=80)
    plt.close(fig)


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


def test_a_quick_task_report_reads_well_in_a_browser(tmp_path):
    from pdenets.experiments import run_task
    from pdenets.tasks.coin_claims import CoinClaimsConfig, CoinClaimsTask

    run_task(CoinClaimsTask(CoinClaimsConfig(samples=500, sigmas=[0.5, 1.0], workers=1)), out=tmp_path / "run",
             progress=False)
    outcome = check_report(tmp_path / "run" / "report.html", screenshot=tmp_path / "claims.png")
    assert outcome.problems == [] and outcome.images >= 1
