"""The library follows its inputs' device: a tensor a function makes from nothing (``torch.zeros``,
``arange``, ``rand``, ...) inside a function that receives tensors, modules or graphs names the device it
belongs on, or is moved there in the same expression — else it is created on the CPU and a GPU user's first
call mixes devices. The source is read (AST); every exception is listed here with the reason it is right.
"""

import ast
from pathlib import Path

import pdenets

ROOT = Path(pdenets.__file__).parent
FACTORIES = {
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "eye",
    "rand",
    "randn",
    "randint",
    "randperm",
    "tensor",
    "linspace",
    "logspace",
}
#: a parameter annotated with one of these receives tensors (or holds them)
TENSORISH = ("Tensor", "Module", "Graph", "Batch", "Parameter")

#: (module, function, factory) → why a factory without ``device=`` is right there
ALLOWED = {
    (
        "analysis/tracks.py",
        "record_tracks",
        "randperm",
    ): "indices of the host dataset: tracks are kept on the "
    "CPU by design (float32), and a tensor dataset is indexed there",
    (
        "models/backbones.py",
        "train_backbone",
        "randperm",
    ): "indices of the host image set: each batch is moved to the training device after it is indexed",
    ("models/backbones.py", "train_backbone", "zeros"): "a host mask over the host image set (the held-out "
    "split)",
    ("models/coin.py", "__init__", "tensor"): "a new module's parameter: it follows the module's .to()",
    ("models/forecasting.py", "slice_graphs", "zeros"): "SliceGraphs' slice ids are host metadata",
    ("operators/slice_graphs.py", "__init__", "tensor"): "SliceGraphs' slice ids are host metadata",
    ("models/training.py", "batch", "empty"): "a pinned host buffer: the staging of the copy to the GPU",
    ("nn/dropout.py", "fast_dropout", "randint"): "a seed drawn from torch's CPU generator, used as a Python "
    "integer (the NumPy masks of the CPU path)",
    ("operators/knn.py", "_hnsw_search", "arange"): "FAISS answers on the host; the result is moved to the "
    "points' device after the last host step",
}


def _receives_tensors(function: ast.FunctionDef) -> bool:
    arguments = function.args
    parameters = arguments.posonlyargs + arguments.args + arguments.kwonlyargs
    parameters += [p for p in (arguments.vararg, arguments.kwarg) if p is not None]
    return any(
        p.annotation is not None and any(word in ast.unparse(p.annotation) for word in TENSORISH)
        for p in parameters
    )


def factories_without_a_device():
    """(module, function, factory, line) of every factory call the rule refuses."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _receives_tensors(
                function
            ):
                continue
            for node in ast.walk(function):
                call = node.func if isinstance(node, ast.Call) else None
                if not (
                    isinstance(call, ast.Attribute)
                    and call.attr in FACTORIES
                    and isinstance(call.value, ast.Name)
                    and call.value.id == "torch"
                ):
                    continue
                owner = parents.get(node)
                while owner is not None and not isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    owner = parents.get(owner)
                if owner is not function or any(k.arg == "device" for k in node.keywords):
                    continue
                moved = parents.get(node)
                if isinstance(moved, ast.Attribute) and moved.attr == "to":
                    continue
                module = path.relative_to(ROOT).as_posix()
                found.append((module, function.name, call.attr, node.lineno))
    return found


def test_every_tensor_made_inside_a_tensor_function_names_its_device():
    found = factories_without_a_device()
    refused = [
        f"{m}:{line}: {f}() creates torch.{factory} on the CPU"
        for m, f, factory, line in found
        if (m, f, factory) not in ALLOWED
    ]
    assert not refused, "give it device= (or .to(...)), or add it to ALLOWED with the reason:\n" + "\n".join(
        refused
    )
    stale = sorted(set(ALLOWED) - {(m, f, factory) for m, f, factory, _ in found})
    assert not stale, f"ALLOWED names calls that are gone: {stale}"


def test_the_rule_sees_a_factory_without_a_device(tmp_path, monkeypatch):
    """A planted ``torch.zeros(n)`` in a function taking a tensor is found; with ``device=`` it is not."""
    package = tmp_path / "planted"
    package.mkdir()
    (package / "layer.py").write_text(
        "import torch\n\n"
        "def bad(x: torch.Tensor):\n    return x + torch.zeros(3)\n\n"
        "def good(x: torch.Tensor):\n    return x + torch.zeros(3, device=x.device)\n\n"
        "def moved(x: torch.Tensor):\n    return x + torch.randn(3).to(x.device)\n\n"
        "def no_tensors(n: int):\n    return torch.zeros(n)\n"
    )
    monkeypatch.setitem(globals(), "ROOT", package)
    assert factories_without_a_device() == [("layer.py", "bad", "zeros", 4)]
