"""The code passes ruff's pyflakes and pycodestyle checks (``[tool.ruff]`` in pyproject.toml): unused or undefined
names, lines over 120 characters, stray whitespace. Skipped, saying so, where ruff is not installed (it comes with
the ``dev`` extra that ``make test`` installs)."""

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
    checked = subprocess.run([_ruff(), "check", "--no-cache", "--output-format", "concise", "src", "tests",
                              "benchmarks"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]


def test_ruff_would_catch_an_unused_import(tmp_path):
    """The check can fail: the same configuration flags a planted unused import."""
    planted = tmp_path / "planted.py"
    planted.write_text("import os\n")
    checked = subprocess.run([_ruff(), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(planted)],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 1 and "F401" in checked.stdout
