"""The package is built in floors: a module imports only from lower floors (or its own package).

Every import counts, also those inside functions (they hide an upward arrow, not remove it), and so does a
string that names a pdenets module (``importlib.import_module("pdenets.tasks")``, a registry's package): a
module loaded by name is imported all the same. An upward import, or modules importing each other around a
loop (except a package registry and the modules that register into it), fails here, naming the modules.
The package root may name any module: it composes the package (it names the tasks' home for the engine's
registry, as ``pyproject.toml`` names entry points).

    0  _checks, _io, _lazy, _cache, _settings,       ground: checks, atomic files, lazy modules, the process
       _deprecation, _limits (and the package root)   cache, settings fields, renamed arguments, the memory
                                                      budget
    1  _registry, saved_model, _output                the one registry mechanism of every plug-in family; a
                                                      trained model's safe files; files for a user to open
    2  operators                                      graphs, operators and their diffusion family
    3  nn, data                                       layers; readers and the graph preprocessing
    4  models, analysis                               networks and their training loop; transport analysis
    5  features, experiments                          backbones embedding raw data; the engine
    6  tasks, features_cli                            one package per application; `pdenets features`
    7  predict_cli, estimators                        `pdenets predict` and the scikit-learn style estimators:
                                                      the tasks' models on the user's data
    8  decisions_cli                                  `pdenets explain` and `pdenets suggest-labels`, on the
                                                      run folders `pdenets predict` reads
    9  cli                                            the command line
"""

import ast
from pathlib import Path

import pdenets

FLOORS = {
    "": 0,
    "_checks": 0,
    "_io": 0,
    "_lazy": 0,
    "_cache": 0,
    "_settings": 0,
    "_deprecation": 0,
    "_limits": 0,
    "_registry": 1,
    "saved_model": 1,
    "_output": 1,
    "operators": 2,
    "nn": 3,
    "data": 3,
    "models": 4,
    "analysis": 4,
    "features": 5,
    "experiments": 5,
    "tasks": 6,
    "features_cli": 6,
    "predict_cli": 7,
    "estimators": 7,
    "decisions_cli": 8,
    "cli": 9,
}
ROOT = Path(pdenets.__file__).parent


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _docstrings(tree):
    """The docstring nodes of a module, its classes and functions (text, not a module name)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                yield first.value


def _module_names():
    names = set()
    for path in ROOT.rglob("*.py"):
        parts = ("pdenets",) + path.relative_to(ROOT).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _imports():
    """(importing module, imported module, line) for every pdenets import, relative ones resolved, and every
    string (not a docstring) that names a pdenets module."""
    modules = _module_names()
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("pdenets",) + path.relative_to(ROOT).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        here = module.split(".") if is_package else module.split(".")[:-1]
        tree = ast.parse(path.read_text(), str(path))
        docstrings = {id(node) for node in _docstrings(tree)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if node.value in modules:
                    yield module, node.value, node.lineno
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                base = ".".join(here[: len(here) - node.level + 1])
                targets = (
                    [f"{base}.{node.module}"] if node.module else [f"{base}.{a.name}" for a in node.names]
                )
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
            upward.append(
                f"{module}:{line} imports {target} (floor {FLOORS.get(source)} -> {FLOORS.get(destination)})"
            )
    assert not upward, "imports that do not go down a floor:\n" + "\n".join(upward)


#: the one cycle allowed: a registry that imports the modules registering into it (lazily, so that
#: ``list_models()`` lists every built-in model), while each of them imports the registry's decorator
REGISTRY_CYCLES = {"pdenets.models.registry"}


def _module_graph():
    """module → the pdenets modules it imports (``from package import name`` counts as the module
    ``name``)."""
    modules = set()
    for path in ROOT.rglob("*.py"):
        parts = ("pdenets",) + path.relative_to(ROOT).with_suffix("").parts
        modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    graph = {module: set() for module in modules}
    for module, target, _ in _imports():
        resolved = target if target in modules else target.rsplit(".", 1)[0]
        if resolved in modules and resolved != module:
            graph[module].add(resolved)
    return graph


def _cycles(graph):
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_outside_a_package_registry():
    bad = [
        sorted(cycle)
        for cycle in _cycles(_module_graph())
        if len({_package(module) for module in cycle}) > 1 or not cycle & REGISTRY_CYCLES
    ]
    assert not bad, "modules that import each other (directly or around a loop):\n" + "\n".join(map(str, bad))


def test_a_module_named_in_a_string_counts_as_an_import():
    """The engine once loaded its tasks by name (``import_module("pdenets.tasks")``): an upward arrow that an
    import statement does not show. Such a string is seen as an import."""
    found = {(module, target) for module, target, _ in _imports()}
    assert ("pdenets", "pdenets.tasks") in found  # the root names the tasks' home
    assert not {target for module, target in found if module.startswith("pdenets.experiments")} & {
        "pdenets.tasks"
    }


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
