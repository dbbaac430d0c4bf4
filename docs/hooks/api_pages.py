"""The API pages list every module of a package, each with its docstring, so the formulas and the reasoning
that live in module docstrings are on the site, and a new module appears without editing a page.

A line ``<!-- api: pdenets.operators -->`` in a page becomes the package's docstring, then one entry per
public module of the package (and of its subpackages), in alphabetical order: the module's docstring and
every object it defines. The modules are found in the source tree (nothing is imported).
"""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path
from typing import List

SOURCE = Path(__file__).resolve().parents[2] / "src"
MARKER = re.compile(r"^<!-- api: ([\w.]+) -->$", re.MULTILINE)


def modules(package: str) -> List[str]:
    """The public modules of ``package`` and of its subpackages, in order (the subpackage before its
    modules)."""
    folder = SOURCE.joinpath(*package.split("."))
    found: List[str] = []
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda info: info.name):
        if info.name.startswith("_"):
            continue
        name = f"{package}.{info.name}"
        found.append(name)
        if info.ispkg:
            found += modules(name)
    return found


def expand(package: str) -> str:
    blocks = [f"::: {package}\n    options:\n      members: false\n      show_root_heading: false\n"]
    for module in modules(package):
        blocks.append(
            f"::: {module}\n    options:\n      show_root_heading: true\n      show_root_full_path: true\n"
            "      heading_level: 2\n"
        )
    return "\n".join(blocks)


def on_page_markdown(markdown: str, **kwargs) -> str:
    return MARKER.sub(lambda match: expand(match.group(1)), markdown)
