"""The code passes ruff's pyflakes, pycodestyle and import-order checks and is formatted as ``ruff format``
writes it (``[tool.ruff]`` in pyproject.toml): unused or undefined names, lines over 110 characters, stray
whitespace, unsorted imports. Skipped, saying so, where ruff is not installed (it comes with the ``dev`` extra
that ``make test`` installs)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff():
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    return found


def test_the_code_passes_ruff():
    checked = subprocess.run(
        [
            _ruff(),
            "check",
            "--no-cache",
            "--output-format",
            "concise",
            "src",
            "tests",
            "benchmarks",
            "examples",
            "docs/hooks",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]


def test_ruff_would_catch_an_unused_import(tmp_path):
    """The check can fail: the same configuration flags a planted unused import."""
    planted = tmp_path / "planted.py"
    planted.write_text("import os\n")
    checked = subprocess.run(
        [_ruff(), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(planted)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 1 and "F401" in checked.stdout


def test_the_code_is_formatted():
    checked = subprocess.run(
        [_ruff(), "format", "--no-cache", "--check", "src", "tests", "benchmarks", "examples", "docs/hooks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]


@pytest.mark.parametrize(
    "source, rule",
    [
        ("import sys\nimport os\n\nprint(os, sys)\n", "I001"),
        ("x = 1  # " + "a" * 110 + "\n", "E501"),
    ],
)
def test_ruff_would_catch_unsorted_imports_and_a_long_line(tmp_path, source, rule):
    """The import order and the 110-character line are checked: a planted case of each is flagged."""
    planted = tmp_path / "planted.py"
    planted.write_text(source)
    checked = subprocess.run(
        [_ruff(), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(planted)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 1 and rule in checked.stdout
