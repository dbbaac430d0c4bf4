"""Every script of ``examples/`` runs, prints, and saves a figure: the gallery of the docs site cannot rot.

Each runs in its own folder, ``examples/_output/<name>/`` (what the site's build shows, so ``make docs``
after the tests reuses it); an example that reads the data folder skips, naming the file, where it is
missing.
"""

from pathlib import Path

import pytest
from scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
gallery = load_script("docs/hooks/gallery.py", "pdenets_docs_gallery")


@pytest.mark.parametrize("path", gallery.examples(), ids=lambda path: path.stem)
def test_the_example_runs_and_draws_its_figure(path):
    missing = gallery.missing_data(path)
    if missing is not None:
        pytest.skip(f"missing data file {missing} (examples/{path.name} reads it)")
    result = gallery.run_example(path)
    assert result["status"] == 0, f"examples/{path.name} failed:\n{str(result['output'])[-3000:]}"
    assert result["output"].strip(), "an example prints what it found"
    assert len(result["figures"]) == 1 and result["figures"][0].name == f"{path.stem}.png"
    assert gallery.fresh(path)


def test_every_example_has_a_title_a_description_and_a_figure_name_of_its_own():
    names = [path.stem for path in gallery.examples()]
    assert 8 <= len(names) <= 12, names
    for path in gallery.examples():
        title, description = gallery._docstring(path)
        assert title and len(description) > 100, path.name
        assert f'"{path.stem}.png"' in path.read_text(), f"{path.name} saves its figure as {path.stem}.png"


def test_an_examples_kept_output_is_stale_once_its_script_or_the_package_changes(monkeypatch, tmp_path):
    path = gallery.examples()[0]
    monkeypatch.setattr(gallery, "_PACKAGE_DIGEST", ["a package"])
    kept = gallery._sha256(path)
    assert gallery._sha256(path) == kept  # the same script and package: reused
    monkeypatch.setattr(gallery, "_PACKAGE_DIGEST", ["the package edited"])
    assert gallery._sha256(path) != kept
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes() + b"\n# edited\n")
    assert gallery._sha256(copy) != gallery._sha256(path)
    monkeypatch.setattr(gallery, "_PACKAGE_DIGEST", [])
    assert gallery.package_digest() == gallery.package_digest() and len(gallery.package_digest()) == 64
    assert gallery.TIMEOUT_S >= 1800 or "PDENETS_EXAMPLE_TIMEOUT" in __import__("os").environ
