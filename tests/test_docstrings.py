"""The API reference stays at the standard it was brought to: every exported callable of the six API
packages has a docstring whose ``Args:`` names exactly real parameters (one entry each), papers are cited
by title, and every layer and operator carries a runnable example (the doctests run it)."""

import importlib
import inspect
import re

import pytest

PACKAGES = ("operators", "nn", "models", "analysis", "data", "experiments")
WITH_EXAMPLES = ("operators", "nn")


def _exported():
    for package in PACKAGES:
        module = importlib.import_module(f"pdenets.{package}")
        for name in module.__all__:
            value = getattr(module, name)
            if (
                callable(value)
                and not isinstance(value, type(re))
                and getattr(value, "__module__", "").startswith("pdenets")
            ):
                yield package, name, value


EXPORTED = list(_exported())


def _parameters(value):
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return []
    return [
        name
        for name, parameter in signature.parameters.items()
        if name != "self" and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    ]


def _args_entries(doc):
    """Names of the entries of the ``Args:`` section (``name:`` or ``name (type):`` at its indentation)."""
    match = re.search(r"^( *)(Args|Arguments):\s*$", doc, re.M)
    if not match:
        return None
    names, indent = [], None
    for line in doc[match.end() :].splitlines()[1:]:
        if not line.strip():
            continue
        current = len(line) - len(line.lstrip())
        indent = current if indent is None else indent
        if current < indent:
            break
        if current == indent:
            entry = re.match(r"\s*([\w*]+)\s*(\([^)]*\))?\s*:", line)
            if entry:
                names.append(entry.group(1))
    return names


@pytest.mark.parametrize("package, name, value", EXPORTED, ids=[f"{p}.{n}" for p, n, _ in EXPORTED])
def test_exported_callables_document_their_arguments(package, name, value):
    doc = inspect.getdoc(value) or ""
    assert doc.strip(), f"pdenets.{package}.{name} has no docstring"
    assert not re.search(r"\bpaper 00\d\b", doc), f"pdenets.{package}.{name}: cite the paper by its title"
    parameters = _parameters(value)
    entries = _args_entries(doc)
    if parameters and not re.search(r"^ *Attributes:\s*$", doc, re.M):
        assert entries is not None, f"pdenets.{package}.{name} takes {parameters} but has no Args: section"
    if entries:
        variadic = [
            ("*" if p.kind == p.VAR_POSITIONAL else "**") + name
            for name, p in inspect.signature(value).parameters.items()
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        unknown = [entry for entry in entries if entry not in parameters + variadic]
        assert not unknown, f"pdenets.{package}.{name}: Args names {unknown}, not parameters of {parameters}"
        assert len(entries) == len(set(entries)), f"pdenets.{package}.{name}: an Args entry repeats"
    if package in WITH_EXAMPLES and not (isinstance(value, type) and issubclass(value, BaseException)):
        assert ">>>" in doc, f"pdenets.{package}.{name}: a layer or operator needs a runnable example"
