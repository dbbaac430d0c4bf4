"""The formulas of the API site render, offline: the site is built (``mkdocs build --strict``, as
``make docs`` does) and its pages with formulas (the ``pdenets.nn`` API page and the COIN guide among
them) are opened in headless Chromium, where MathJax, shipped with the site, must have typeset every
formula. A page fails on raw ``.. math::`` or ``:math:`` text, raw ``$$``, ``\\[`` or ``\\(`` delimiters
or TeX commands in its text, an ``arithmatex`` element without MathJax's output, a TeX error, a MathJax
that did not load, or a script from another site. Planted defects show that the check can fail.

Skipped, saying what to install, where mkdocs (``pip install -e '.[docs]'``) or the browser is missing,
or where MathJax is neither in ``docs/javascripts/vendor`` nor can be fetched (``docs/hooks/mathjax.py``).
The docstrings and guides are checked for reStructuredText math without either."""

import html as html_module
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scripts import load_script

from pdenets.experiments.browser_check import browser_available

ROOT = Path(__file__).resolve().parents[1]
#: pages opened in the browser whatever they hold; every other page with a formula is opened too
PAGES = ("api/nn/index.html", "coin/index.html")
MATHJAX = "javascripts/vendor/mathjax/tex-svg-full.js"

#: what a reader must never see as text (outside code): reStructuredText math, TeX delimiters, TeX commands
RAW_MATH = re.compile(r"\.\. math::|:math:`|\$\$|\\[\[\]()]|\\[A-Za-z]{2,}")

_INSPECT = """
const done = arguments[arguments.length - 1];
const raw = new RegExp(arguments[0]);
const skip = 'pre, code, script, style, textarea, mjx-container';
function report(mathjax) {
  const formulas = Array.from(document.querySelectorAll('.arithmatex'));
  const untypeset = formulas.filter(f => !f.querySelector('mjx-container'))
      .map(f => f.textContent.trim().slice(0, 80));
  const errors = Array.from(document.querySelectorAll('mjx-merror, [data-mml-node="merror"]'))
      .map(e => e.getAttribute('data-mjx-error') || e.textContent.slice(0, 80));
  const text = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest(skip)) continue;
    const found = raw.exec(node.textContent);
    if (found) {
      const start = Math.max(0, found.index - 30);
      text.push(node.textContent.slice(start, found.index + 50).replace(/\\s+/g, ' ').trim());
    }
  }
  const scripts = Array.from(document.scripts).filter(s => s.src && !s.src.startsWith('file:'))
      .map(s => s.src);
  done({mathjax: mathjax, formulas: formulas.length, untypeset: untypeset, errors: errors, text: text,
        scripts: scripts});
}
// the script may still be on its way on a busy machine: wait for it (up to 10 s) before calling it missing
const deadline = Date.now() + 10000;
function whenStarted() {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(() => report(MathJax.version), e => report('failed: ' + e));
  } else if (Date.now() < deadline) {
    setTimeout(whenStarted, 100);
  } else {
    report(null);
  }
}
whenStarted();
"""


def _missing_docs_tools():
    for module, extra in (
        ("mkdocs", "mkdocs"),
        ("material", "mkdocs-material"),
        ("mkdocstrings", "mkdocstrings"),
    ):
        if importlib.util.find_spec(module) is None:
            return f"{extra} is not installed (pip install -e '.[docs]')"
    return None


def _docs_hook(name):
    """The module ``docs/hooks/<name>.py`` (the hooks are files mkdocs loads, not a package)."""
    return load_script(f"docs/hooks/{name}.py", f"pdenets_docs_{name}")


def _mathjax_hook():
    return _docs_hook("mathjax")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The whole site, built strict as ``make docs`` builds it (about 10 s on two cores)."""
    missing = _missing_docs_tools()
    if missing:
        pytest.skip(f"docs site check skipped: {missing}")
    try:
        _mathjax_hook().ensure(ROOT / "docs")
    except RuntimeError as error:
        pytest.skip(f"docs site check skipped: {error}")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def browser():
    missing = browser_available()
    if missing:
        pytest.skip(f"docs site check skipped: {missing}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome")))
    )
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_script_timeout(60)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def formula_problems(driver, page):
    """What keeps the formulas of ``page`` (an HTML file) from reading as formulas: one line each."""
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(Path(page).resolve().as_uri())
    seen = driver.execute_async_script(_INSPECT, RAW_MATH.pattern)
    problems = []
    if not seen["mathjax"] or seen["mathjax"].startswith("failed"):
        problems.append(
            f"MathJax did not load ({seen['mathjax'] or 'no MathJax.startup'}): its script ({MATHJAX}, "
            "fetched by docs/hooks/mathjax.py) is missing or broken"
        )
    if seen["untypeset"]:
        first = seen["untypeset"][0]
        problems.append(
            f"{len(seen['untypeset'])} of {seen['formulas']} formulas not typeset, e.g. {first!r}"
        )
    problems += [f"TeX error: {error}" for error in seen["errors"]]
    problems += [f"raw math in the text: {text}" for text in seen["text"]]
    problems += [f"script from another site (the site must work offline): {src}" for src in seen["scripts"]]
    problems += [
        f"browser: {entry['message'][:200]}"
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and "mathjax" in entry["message"].lower()
    ]
    return problems


def _pages_with_formulas(site):
    pages = {site / page for page in PAGES}
    pages |= {
        page for page in site.rglob("*.html") if 'class="arithmatex"' in page.read_text(encoding="utf-8")
    }
    return sorted(pages)


def test_docstrings_and_guides_write_math_for_arithmatex():
    """``$...$`` and ``$$`` blocks, which the API site renders; reStructuredText math would print as text."""
    sources = sorted((ROOT / "src" / "pdenets").rglob("*.py")) + sorted((ROOT / "docs").glob("*.md"))
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\.\. math::|:math:`", line)
    ]
    assert not found, "write $...$ or a $$ block instead:\n" + "\n".join(found)


def test_the_built_site_ships_mathjax_and_no_raw_math(site):
    assert (site / MATHJAX).stat().st_size > 1_000_000
    assert not (site / "hooks").exists()
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert ".. math::" not in html and ":math:`" not in html, f"{page}: reStructuredText math"
        if 'class="arithmatex"' in html:
            assert re.search(r'<script src="[./]*' + re.escape(MATHJAX) + '"', html), f"{page}: no {MATHJAX}"


def test_every_formula_renders_in_a_browser(site, browser):
    pages = _pages_with_formulas(site)
    assert len(pages) >= 3, pages  # nn, models and the COIN guide hold formulas
    problems = [
        f"{page.relative_to(site)}: {line}" for page in pages for line in formula_problems(browser, page)
    ]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


@pytest.fixture
def plant(site):
    """Writes a copy of the nn page beside it, changed by ``edit`` (its relative links still resolve);
    the planted pages are removed after the test, so the other tests of the module see the built site."""
    planted = []

    def write(name, edit):
        page = site / "api" / "nn" / name
        original = (site / "api" / "nn" / "index.html").read_text(encoding="utf-8")
        page.write_text(edit(original), encoding="utf-8")
        planted.append(page)
        return page

    yield write
    for page in planted:
        page.unlink(missing_ok=True)


def test_the_check_fails_on_unrendered_formulas(browser, plant):
    """Each planted defect is named: MathJax missing, raw reStructuredText, raw TeX, a TeX error, a CDN."""
    no_mathjax = plant("no-mathjax.html", lambda html: html.replace(MATHJAX, MATHJAX + ".missing"))
    problems = " | ".join(formula_problems(browser, no_mathjax))
    assert "MathJax did not load" in problems and re.search(r"(\d+) of \1 formulas not typeset", problems)

    def raw(html):
        paragraph = "<p>.. math::</p><p>$$ x = 1 $$</p><p>and \\( y \\)</p><p>and \\mathrm{FC}_1 x</p>"
        broken = '<div class="arithmatex">\\[ x^2^3 \\]</div>'
        return html.replace('<div class="md-content"', paragraph + broken + '<div class="md-content"', 1)

    problems = " | ".join(formula_problems(browser, plant("raw.html", raw)))
    assert "raw math in the text: .. math::" in problems and "raw math in the text: $$ x = 1 $$" in problems
    assert "\\( y \\)" in problems and "\\mathrm{FC}_1" in problems
    assert "TeX error: Double exponent" in problems

    cdn = '<script src="https://cdn.example.invalid/mathjax@3/es5/tex-svg.js"></script>'
    problems = " | ".join(
        formula_problems(browser, plant("cdn.html", lambda h: h.replace("</body>", cdn + "</body>")))
    )
    assert "script from another site" in problems and "cdn.example.invalid" in problems


#: a Sphinx role left as text in a page: what a reader must never see
ROLE_TEXT = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):")


def test_no_role_is_left_as_text_and_every_cross_reference_lands_on_an_entry(site):
    """The docstrings' :class:/:func:/... roles become links whose target exists (or code, for an object of
    another library)."""
    anchors = {
        page: set(re.findall(r'id="([^"]+)"', page.read_text(encoding="utf-8")))
        for page in site.rglob("*.html")
    }
    left, broken, links = [], [], 0
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        left += [f"{page.relative_to(site)}: {m.group(0)}" for m in ROLE_TEXT.finditer(html)]
        for href in re.findall(r'class="autorefs" href="([^"]+)"', html):
            links += 1
            path, _, anchor = href.partition("#")
            target = (page.parent / path).resolve() if path else page
            target = target / "index.html" if target.is_dir() else target
            if anchor not in anchors.get(target, set()):
                broken.append(f"{page.relative_to(site)} -> {href}")
    assert not left, f"{len(left)} roles left as text, e.g. {left[:5]}"
    assert not broken, f"{len(broken)} links to no entry, e.g. {broken[:5]}"
    assert links > 300, links


def test_the_api_pages_show_every_modules_docstring_and_examples_as_code(site):
    operators = (site / "api" / "operators" / "index.html").read_text(encoding="utf-8")
    for module in ("diffusion", "weights", "nonlocal_ops", "fractional_grid", "slice_graphs"):
        assert f'id="pdenets.operators.{module}"' in operators, module
    assert operators.count('class="arithmatex"') >= 10  # the formulas of the module docstrings
    for page in (site / "api").rglob("index.html"):
        html = page.read_text(encoding="utf-8")
        assert "<blockquote>\n<blockquote>" not in html, f"{page}: an example rendered as nested quotes"
        assert "&gt;&gt;&gt;" not in re.sub(r"<(pre|code)[^>]*>.*?</\1>", "", html, flags=re.S), page


def test_the_site_loads_nothing_from_another_host(site):
    """Fonts, stylesheets and scripts ship with the site: it reads the same offline."""
    found = []
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        found += [
            f"{page.relative_to(site)}: {url}"
            for url in re.findall(r'<(?:link|script)[^>]+(?:href|src)="(https?://[^"]+)"', html)
        ]
        found += [f"{page.relative_to(site)}: fonts.googleapis" for _ in re.findall("fonts.googleapis", html)]
    assert not found, found[:5]


def test_a_newcomer_finds_getting_started_and_the_gallery_with_figures(site):
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "getting_started/" in home and "gallery/" in home
    started = (site / "getting_started" / "index.html").read_text(encoding="utf-8")
    text = html_module.unescape(re.sub(r"<[^>]+>", "", started))
    for words in ("make test", "pip install -e", "results.sqlite", "--report-only", "graph-formats"):
        assert words in text, words
    for image in re.findall(r'<img[^>]+src="([^"]+)"', started):
        assert ((site / "getting_started") / image).resolve().is_file(), image
    gallery = (site / "gallery" / "index.html").read_text(encoding="utf-8")
    pages = re.findall(r'href="([a-z_]+)/"', gallery)
    assert len(pages) >= 8, pages
    for name in pages:
        page = (site / "gallery" / name / "index.html").read_text(encoding="utf-8")
        text = html_module.unescape(re.sub(r"<[^>]+>", "", page))
        assert f"python examples/{name}.py" in text and "The code" in text
        assert (site / "gallery" / f"{name}.png").is_file() or "Not run for this site" in page, name


def _crossrefs_hook():
    return _docs_hook("crossrefs")


def test_roles_resolve_relative_to_their_entry_then_up_then_by_their_end():
    hook = _crossrefs_hook()
    index = {
        "pdenets.operators.diffusion.DiffusionOperator": "api/operators/index.html",
        "pdenets.operators.diffusion.DiffusionOperator.apply": "api/operators/index.html",
        "pdenets.nn.diffusion.DiffusionLayer": "api/nn/index.html",
    }
    by_end = {}
    for path in index:
        by_end.setdefault(path.rsplit(".", 1)[-1], []).append(path)
    html = (
        '<h3 id="pdenets.operators.diffusion.DiffusionOperator">x</h3><p>:meth:<code>apply</code>, '
        ":class:<code>~pdenets.nn.DiffusionLayer</code>, :func:<code>numpy.linalg.eigh</code>, "
        ":meth:<code>run &lt;pdenets.operators.diffusion.DiffusionOperator.apply&gt;</code></p>"
    )
    out, linked, unresolved = hook.rewrite(html, "api/operators/index.html", index, by_end)
    assert (linked, unresolved) == (3, 1)
    assert (
        '<a class="autorefs" href="#pdenets.operators.diffusion.DiffusionOperator.apply"><code>apply</code>'
        in out
    )
    assert 'href="../../api/nn/#pdenets.nn.diffusion.DiffusionLayer"><code>DiffusionLayer</code>' in out
    assert "<code>numpy.linalg.eigh</code>" in out and ":func:" not in out
    assert '"><code>run</code></a>' in out
