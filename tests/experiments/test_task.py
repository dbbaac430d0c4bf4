"""Tasks come to the engine through its registry: pdenets' own package (named by the package root) and the
``pdenets.tasks`` entry points of a user's package; a broken entry is a warning, not the end of every other
task."""

import importlib.metadata
import sys
import textwrap

import pytest

from pdenets._registry import isolated_registries
from pdenets.experiments import task as engine


@pytest.fixture
def fresh_discovery():
    """Every registry reads its entry points again (the built-in modules stay imported); all put back
    after."""
    with isolated_registries(rediscover=True):
        yield


def _entry_points(*entries):
    points = [importlib.metadata.EntryPoint(name, value, engine.TASK_ENTRY_POINTS) for name, value in entries]
    return lambda group=None: [p for p in points if group in (None, p.group)]


_TASK = """
from dataclasses import dataclass
from pdenets.experiments import Task, TaskConfig, register_task

@dataclass
class Config(TaskConfig):
    size: int = 1

class Base(Task):
    description = "a plug-in task"
    config_class = Config

    def jobs(self):
        return []

    @staticmethod
    def run_job(spec):
        return {}

    def summarize(self, records):
        return {}

    def report(self, results, records, run_dir):
        pass
"""


def test_a_users_package_adds_its_tasks_and_a_broken_one_only_warns(tmp_path, monkeypatch, fresh_discovery):
    package = tmp_path / "user_tasks_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        _TASK
        + """
@register_task
class Echo(Base):
    name = "echo-from-a-user-package"
"""
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        _entry_points(
            ("builtin", "pdenets.tasks"), ("mine", "user_tasks_pkg"), ("broken", "no_such_module_anywhere")
        ),
    )
    expected = "'no_such_module_anywhere' .*could not be loaded: ModuleNotFoundError"
    with pytest.warns(UserWarning, match=expected) as caught:
        tasks = engine.registered_tasks()
    assert "echo-from-a-user-package" in tasks and "synthetic" in tasks, [str(w.message) for w in caught]
    sys.modules.pop("user_tasks_pkg", None)


def test_without_entry_points_the_builtin_tasks_still_load(monkeypatch, fresh_discovery):
    """A source tree used without installing the package (no metadata) still has its tasks: the registry walks
    the package the root names (the engine names no task module: ``tests/test_layers.py``)."""
    import importlib

    imported = []
    real_import = importlib.import_module
    monkeypatch.setattr(
        importlib, "import_module", lambda name, *a: imported.append(name) or real_import(name, *a)
    )
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points())
    engine.TASKS.reload()
    assert {"synthetic", "few-shot", "coin-forecast"} <= set(engine.registered_tasks())
    assert imported[0] == "pdenets.tasks" and "pdenets.tasks.synthetic" in imported


PLUGINS = {
    "exits": ("raise SystemExit(0)", "SystemExit: 0"),
    "no_dataclass": (
        _TASK
        + """
class Plain:
    size = 1

@register_task
class Registered(Base):
    name = "plugin-registered-first"

@register_task
class NoDataclass(Base):
    name = "plugin-no-dataclass"
    config_class = Plain
""",
        "TypeError: task 'plugin-no-dataclass': config_class 'Plain' must be a @dataclass that subclasses "
        "pdenets.experiments.TaskConfig",
    ),
    "bad_shortcut": (
        _TASK
        + """
@register_task
class BadShortcut(Base):
    name = "plugin-bad-shortcut"
    shortcuts = {"sz": "sizes"}
""",
        "TypeError: task 'plugin-bad-shortcut' declares shortcuts for unknown fields ['sizes']",
    ),
    "engine_option": (
        _TASK
        + """
@dataclass
class Clash(TaskConfig):
    out: str = "here"

@register_task
class EngineOption(Base):
    name = "plugin-engine-option"
    config_class = Clash
""",
        "TypeError: task 'plugin-engine-option': the option --out of field 'out' collides with a run option",
    ),
    "unknown_table_task": (
        """
from pdenets.experiments.config import TaskConfig
from pdenets.experiments.task import register_reproduction
register_reproduction("plugin-table", "no-such-task", full=TaskConfig, quick=TaskConfig, description="x")
""",
        "UnknownNameError: table 'plugin-table': unknown task 'no-such-task'; valid: ",
    ),
}


@pytest.mark.parametrize("module", sorted(PLUGINS))
def test_a_broken_plugin_is_left_out_with_one_warning_and_every_command_still_works(
    module, tmp_path, monkeypatch, capsys, fresh_discovery
):
    """A plug-in that exits, registers a class the command line cannot use, or a table of an unknown task: it
    is dropped (with what it registered before failing), a one-line warning names it, built-in commands
    work."""
    from pdenets.cli import main

    source, error = PLUGINS[module]
    name = f"pdenets_test_plugin_{module}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(
        importlib.metadata, "entry_points", _entry_points(("builtin", "pdenets.tasks"), ("mine", name))
    )
    builtin_tasks, builtin_tables = dict(engine.TASKS._records), dict(engine.REPRODUCTIONS._records)
    assert main(["tasks"]) == 0
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"pdenets: warning: the tasks of {name!r} (entry point 'mine' of 'pdenets.tasks') could not be "
        "loaded: "
        f"{error}"
    ), err
    assert lines[0].endswith("; they are left out")
    assert dict(engine.TASKS) == {n: r.entry for n, r in builtin_tasks.items()}
    assert dict(engine.REPRODUCTIONS) == {n: r.entry for n, r in builtin_tables.items()}
    assert "node-classification" in out and "plugin-" not in out
    assert main(["run", "synthetic", "--print-config"]) == 0
    sys.modules.pop(name, None)


@pytest.mark.parametrize("module", ["no_dataclass", "bad_shortcut", "engine_option", "unknown_table_task"])
def test_a_builtin_task_that_fails_its_checks_raises(module, tmp_path, monkeypatch, fresh_discovery):
    """The same checks at registration, outside a plug-in: the error is raised, not hidden."""
    source, error = PLUGINS[module]
    kind, message = error.split(": ", 1)
    with pytest.raises((TypeError, KeyError)) as caught:
        exec(compile(textwrap.dedent(source), f"<{module}>", "exec"), {"__name__": f"builtin_{module}"})
    assert type(caught.value).__name__ == kind and str(caught.value).startswith(message)
