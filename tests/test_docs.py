"""Every ```python block in README.md and docs/*.md runs."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_python_examples_run(path):
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)
    for block in blocks:
        exec(compile(block, str(path), "exec"), {})
