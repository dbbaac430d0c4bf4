"""Tasks come to the engine through the ``pdenets.tasks`` entry points: pdenets' own and a user's package's;
a broken entry is a warning, not the end of every other task."""

import importlib.metadata
import sys
import textwrap

import pytest

from pdenets.experiments import task as engine


@pytest.fixture
def fresh_discovery(monkeypatch):
    engine.registered_tasks()  # the built-in tasks in the registry first: a module is imported only once
    monkeypatch.setattr(engine, "_DISCOVERED", False)
    monkeypatch.setattr(engine, "TASKS", dict(engine.TASKS))
    yield


def _entry_points(*entries):
    points = [importlib.metadata.EntryPoint(name, value, engine.TASK_ENTRY_POINTS) for name, value in entries]
    return lambda group=None: [p for p in points if group in (None, p.group)]


def test_a_users_package_adds_its_tasks_and_a_broken_one_only_warns(tmp_path, monkeypatch, fresh_discovery):
    package = tmp_path / "user_tasks_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent('''
        from dataclasses import dataclass
        from pdenets.experiments import Task, TaskConfig, register_task

        @dataclass
        class EchoConfig(TaskConfig):
            count: int = 2

        @register_task
        class Echo(Task):
            name = "echo-from-a-user-package"
            description = "a task another package registers"
            config_class = EchoConfig

            def jobs(self):
                return []

            @staticmethod
            def run_job(spec):
                return {}

            def summarize(self, records):
                return {}

            def report(self, results, records, run_dir):
                pass
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(
        ("builtin", "pdenets.tasks"), ("mine", "user_tasks_pkg"), ("broken", "no_such_module_anywhere")))
    with pytest.warns(UserWarning, match="'no_such_module_anywhere' .*could not be loaded: ModuleNotFoundError") as caught:
        tasks = engine.registered_tasks()
    assert "echo-from-a-user-package" in tasks and "synthetic" in tasks, [str(w.message) for w in caught]
    sys.modules.pop("user_tasks_pkg", None)


def test_without_entry_points_the_builtin_tasks_still_load(monkeypatch, fresh_discovery):
    """A source tree used without installing the package (no metadata) still has its tasks."""
    import importlib

    imported = []
    real_import = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", lambda name, *a: imported.append(name) or real_import(name, *a))
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points())
    assert {"synthetic", "few-shot", "coin-forecast"} <= set(engine.registered_tasks())
    assert imported == ["pdenets.tasks"]
