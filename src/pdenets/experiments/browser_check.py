"""Open a run's ``report.html`` in headless Chromium: every image loads, every link resolves, nothing
overflows.

What a reader sees is checked, not the HTML text: the page is rendered by a real browser
(Debian's ``chromium`` and ``chromium-driver`` packages, driven by ``selenium``; nothing is
downloaded at run time), and

* every ``<img>`` must be a file of the run folder (or a ``data:`` URL) and have finished loading with a
  non-zero natural size;
* every link is resolved against the report's URL (:func:`classify_target`): an ``http``, ``https`` or
  ``mailto`` link is another site's; any other must name an existing file inside the run folder, every
  ``#anchor`` an element; ``file:`` URLs leading elsewhere, ``../`` out of the folder, ``javascript:`` and
  protocol-relative ``//host`` links are problems;
* no table or code block may be wider than the page (a wide table scrolls off the screen);

and a full-page screenshot is saved for a person to look at. Links to other sites are listed,
not fetched.

Examples:
    >>> from pdenets.experiments.browser_check import browser_available, check_report
    >>> if browser_available():                                      # doctest: +SKIP
    ...     outcome = check_report("runs/claims/report.html", screenshot="claims.png")
    ...     assert not outcome.problems, outcome.problems
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple, Union
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

from .rundir import RunDirectoryError, resolve_inside

__all__ = ["ReportCheck", "browser_available", "check_report", "classify_target"]

#: schemes of links to other sites: listed, never fetched
_EXTERNAL_SCHEMES = ("http", "https", "mailto")

#: where Debian's packages put the browser and its driver
_BROWSERS = ("chromium", "chromium-browser", "google-chrome")
_DRIVERS = ("chromedriver",)

_INSPECT = """
const page = document.documentElement.clientWidth;
const images = Array.from(document.images).map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0,
                                                     i.naturalWidth, i.naturalHeight]);
const links = Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'));
const ids = Array.from(document.querySelectorAll('[id]')).map(e => e.id);
const wide = Array.from(document.querySelectorAll('table, pre')).filter(
    e => e.getBoundingClientRect().right > page + 1).map(
    e => [e.tagName.toLowerCase(), Math.round(e.getBoundingClientRect().width),
          (e.innerText || '').split('\\n')[0].slice(0, 60)]);
return {images: images, links: links, ids: ids, wide: wide, page: page,
        height: document.documentElement.scrollHeight};
"""


@dataclass
class ReportCheck:
    """What :func:`check_report` saw: ``problems`` (empty when the report reads well) and the figures."""

    report: Path
    images: int = 0
    links: int = 0
    external_links: List[str] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)
    page_size: Tuple[int, int] = (0, 0)
    screenshot: Optional[Path] = None


def classify_target(
    report: Union[str, Path], target: Optional[str], *, image: bool = False
) -> Tuple[str, str]:
    """What a link's ``href`` (or, with ``image``, an image's ``src``) in ``report`` points to.

    ``target`` is resolved against the report's ``file:`` URL, as the browser resolves it. The run folder is
    the report's folder.

    Args:
        report: the ``report.html`` file.
        target: the attribute's text as written in the page (``None``: the attribute is missing).
        image: ``target`` is an image's ``src``: other sites are not allowed, a ``data:`` URL is.

    Returns:
        ``(kind, detail)``: ``("anchor", id)`` for ``#id``; ``("external", url)`` for a link to another site;
        ``("inline", "")`` for an image's ``data:`` URL; ``("file", path)`` for an existing file inside the
        run folder; ``("problem", message)`` for anything else.

    Examples:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> (folder / "runs.csv").write_text("a\\n")
        2
        >>> page = folder / "report.html"
        >>> classify_target(page, "runs.csv")[0], classify_target(page, "#top")
        ('file', ('anchor', 'top'))
        >>> classify_target(folder / "report.html", "../../etc/passwd")[1]
        "link '../../etc/passwd' leads outside the run folder"
    """
    what = "image" if image else "link"
    if target is None or not target.strip():
        return "problem", "an image without a src" if image else "a link without an href"
    report = Path(report).resolve()
    folder = report.parent
    if target.startswith("#") and not image:
        return "anchor", target[1:]
    url = urlsplit(urljoin(report.as_uri(), target.strip()))
    scheme = url.scheme.lower()
    if scheme in _EXTERNAL_SCHEMES and not image:
        return "external", target
    if scheme == "data" and image:
        return "inline", ""
    if scheme != "file":
        kind = "another site's" if scheme in _EXTERNAL_SCHEMES else f"a {scheme}:"
        return (
            "problem",
            f"{what} {target!r} is {kind} URL; {'images' if image else 'links'} must name files of "
            "the run folder" + ("" if image else " or web pages (http, https, mailto)"),
        )
    if url.netloc not in ("", "localhost"):
        return "problem", f"{what} {target!r} names a file on another machine ({url.netloc})"
    path = Path(url2pathname(unquote(url.path)))
    try:
        inside = resolve_inside(folder, path)
    except RunDirectoryError:
        return "problem", f"{what} {target!r} leads outside the run folder"
    if not image and not inside.exists():
        return "problem", f"{what} {target!r} names no file beside the report"
    if not image and inside == report and url.fragment:
        return "anchor", url.fragment
    return "file", str(inside)


def _which(names) -> Optional[str]:
    return next((path for path in map(shutil.which, names) if path), None)


def browser_available() -> Optional[str]:
    """Why no check can run (``None`` when Chromium, its driver and selenium are all here)."""
    if _which(_BROWSERS) is None or _which(_DRIVERS) is None:
        return "no headless Chromium: apt-get install chromium chromium-driver"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install selenium"
    return None


def check_report(
    report: Union[str, Path],
    *,
    screenshot: Union[str, Path, None] = None,
    width: int = 1280,
    timeout: float = 30.0,
) -> ReportCheck:
    """Render ``report`` in headless Chromium at ``width`` pixels and check its images, links and widths.

    Args:
        report: a ``report.html`` (its images and linked files beside it).
        screenshot: where to save a PNG of the whole page (default: none).
        width: the window width in CSS pixels (1280: a laptop screen).
        timeout: seconds to wait for the page and its images.

    Raises:
        RuntimeError: no browser to run (the message says what to install).
        FileNotFoundError: ``report`` does not exist.
    """
    missing = browser_available()
    if missing:
        raise RuntimeError(missing)
    report = Path(report).resolve()
    if not report.is_file():
        raise FileNotFoundError(f"no report at {report}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    browser = _which(_BROWSERS)
    assert browser is not None  # browser_available() found it
    options.binary_location = browser
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},900",
        "--hide-scrollbars",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(_which(_DRIVERS)), options=options)
    outcome = ReportCheck(report)
    try:
        driver.set_page_load_timeout(timeout)
        driver.get(report.as_uri())
        seen = driver.execute_script(_INSPECT)
        outcome.images, outcome.links = len(seen["images"]), len(seen["links"])
        outcome.page_size = (int(seen["page"]), int(seen["height"]))
        for source, loaded, natural_width, natural_height in seen["images"]:
            kind, detail = classify_target(report, source, image=True)
            if kind == "problem":
                outcome.problems.append(detail)
            elif not loaded:
                outcome.problems.append(f"image {source!r} did not load")
            elif min(natural_width, natural_height) < 50:
                outcome.problems.append(
                    f"image {source!r} is {natural_width}x{natural_height} pixels: unreadable"
                )
        for target in seen["links"]:
            kind, detail = classify_target(report, target)
            if kind == "anchor" and detail not in seen["ids"]:
                outcome.problems.append(f"link {target!r} names no element of the page")
            elif kind == "external":
                outcome.external_links.append(target)
            elif kind == "problem":
                outcome.problems.append(detail)
        for tag, element_width, first_line in seen["wide"]:
            outcome.problems.append(
                f"a {tag} {element_width} px wide overflows the {seen['page']} px page ({first_line!r})"
            )
        if screenshot is not None:
            driver.set_window_size(width, min(int(seen["height"]) + 250, 30_000))
            outcome.screenshot = Path(screenshot)
            outcome.screenshot.parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(outcome.screenshot))
    finally:
        driver.quit()
    return outcome


def _main(argv=None) -> int:  # python -m pdenets.experiments.browser_check REPORT.html [SCREENSHOT.png]
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(
            "usage: python -m pdenets.experiments.browser_check REPORT.html [SCREENSHOT.png]", file=sys.stderr
        )
        return 2
    missing = browser_available()
    if missing:
        print(f"skipped: {missing}")
        return 0
    outcome = check_report(argv[0], screenshot=argv[1] if len(argv) > 1 else None)
    print(
        f"{outcome.report}: {outcome.images} images, {outcome.links} links "
        f"({len(outcome.external_links)} to other sites), page {outcome.page_size[0]}x{outcome.page_size[1]} "
        "px" + (f", screenshot {outcome.screenshot}" if outcome.screenshot else "")
    )
    for problem in outcome.problems:
        print(f"  problem: {problem}")
    return 1 if outcome.problems else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
