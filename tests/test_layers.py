"""The package is built in floors: a module imports only from lower floors (or its own package).

Every import counts, also those inside functions (they hide an upward arrow, not remove it). An upward
import or a cycle between packages fails here, naming the module and the import.

    0  _checks, _io, _lazy (and the package root)     ground: checks, atomic files, lazy modules
    1  operators, data, experiments                     graphs and operators; readers; the engine
    2  nn                                               layers
    3  models, analysis                                 networks; transport analysis
    4  features, reports                                backbones embedding raw data; the tasks' report sections
    5  tasks, features_cli                              the science of each task; `pdenets features`
    6  cli                                              the command line
"""

import ast
from pathlib import Path

import pdenets

FLOORS = {"": 0, "_checks": 0, "_io": 0, "_lazy": 0, "operators": 1, "data": 1, "experiments": 1, "nn": 2,
          "models": 3, "analysis": 3, "features": 4, "reports": 4, "tasks": 5, "features_cli": 5, "cli": 6}
ROOT = Path(pdenets.__file__).parent


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports():
    """(importing module, imported module, line) for every pdenets import, relative ones resolved."""
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("pdenets",) + path.relative_to(ROOT).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        here = module.split(".") if is_package else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = ".".join(here[:len(here) - node.level + 1])
                targets = [f"{base}.{node.module}"] if node.module else [f"{base}.{a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pdenets"):
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("pdenets")]
            else:
                continue
            for target in targets:
                yield module, target, node.lineno


def test_every_module_sits_on_a_floor():
    packages = {_package(module) for module, _, _ in _imports()}
    unplaced = sorted(packages - set(FLOORS))
    assert not unplaced, f"place {unplaced} on a floor in FLOORS (and in this module's docstring)"


def test_imports_only_go_down():
    upward = []
    for module, target, line in _imports():
        source, destination = _package(module), _package(target)
        if source == "" or destination in ("", source, "__version__"):  # the root only re-exports
            continue
        if FLOORS.get(destination, 99) >= FLOORS.get(source, -1):
            upward.append(f"{module}:{line} imports {target} (floor {FLOORS.get(source)} -> "
                          f"{FLOORS.get(destination)})")
    assert not upward, "imports that do not go down a floor:\n" + "\n".join(upward)
