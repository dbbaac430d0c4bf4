"""The package type-checks: mypy at its default strictness, configured by ``[tool.mypy]`` in pyproject.toml
(the files, the Python version, the third-party packages without annotations). Skipped, saying so, where
mypy is not installed (it comes with the ``dev`` extra that ``make test`` installs)."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"

#: Paths whose errors are not counted (none: every module of src/pdenets is checked). A path goes here
#: only while a change reshapes it, and leaves with that change.
NOT_YET_CHECKED: tuple = ()

#: one error of mypy's output: ``path:line: error: message  [code]``
_ERROR = re.compile(r"^(?P<path>[^:\s]+\.pyi?):\d+(?::\d+)?: error: ")


# a cold check of src/pdenets takes about a minute on two busy cores; a warm one (.mypy_cache) seconds
def _mypy(*arguments: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install -e '.[dev]')")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(CONFIG), *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _error_paths(output: str) -> list:
    """``(path, line)`` of every error line of mypy's output."""
    found = []
    for line in output.splitlines():
        match = _ERROR.match(line)
        if match:
            found.append((match["path"].replace("\\", "/"), line))
    return found


def test_the_package_passes_mypy():
    """No mypy error in src/pdenets outside :data:`NOT_YET_CHECKED`; a failure of mypy itself counts."""
    checked = _mypy()  # the files are the config's: src/pdenets
    output = checked.stdout[-4000:] + checked.stderr[-2000:]
    assert checked.returncode in (0, 1), output  # 2: mypy could not check (a config or syntax error)
    errors = _error_paths(checked.stdout)
    assert errors or checked.returncode == 0, output  # errors reported but none read: the filter is stale
    # the filter goes when the paths NOT_YET_CHECKED are done: then every error counts
    counted = [line for path, line in errors if not path.startswith(NOT_YET_CHECKED)]
    assert not counted, f"{len(counted)} mypy errors:\n" + "\n".join(counted[:60])


@pytest.mark.parametrize(
    "source, code",
    [
        ('count: int = "three"\n', "assignment"),
        (
            "from typing import Optional\n\n\ndef twice(x: Optional[int]) -> int:\n    return 2 * x\n",
            "operator",
        ),
    ],
    ids=["wrong-assignment", "unnarrowed-optional"],
)
def test_mypy_would_catch_an_ill_typed_file(tmp_path, source, code):
    """The check can fail: the same configuration flags a planted ill-typed file (a wrong assignment, an
    ``Optional`` used without narrowing)."""
    planted = tmp_path / "planted.py"
    planted.write_text(source)
    checked = _mypy("--cache-dir", str(tmp_path / "cache"), planted.name, cwd=tmp_path, timeout=60)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert [path for path, _ in _error_paths(checked.stdout)] == ["planted.py"], checked.stdout
    assert f"[{code}]" in checked.stdout, checked.stdout
