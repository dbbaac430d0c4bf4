"""The registries load whole or not at all, and a plug-in never takes pdenets down: a built-in module that
fails to import leaves its family unloaded (and fails again on the next read, never a partial registry); a
plug-in's import, registration and calls (a graph format's ``accepts``) are isolated with one warning naming
it, its entries taken back in every family, its stdout kept out of the command's output; an entry point naming
a ``pdenets.`` module is a plug-in like any other; an ambiguous abbreviation gets no guess."""

import importlib.metadata
import sys
import textwrap
import warnings

import pytest

from pdenets._checks import nearest_hint
from pdenets._registry import PluginWarning, Registry, isolated_registries
from pdenets.cli import main, plugin_families


def _entry_points(*points):
    made = [importlib.metadata.EntryPoint(name, value, group) for group, name, value in points]
    return lambda group=None: [p for p in made if group in (None, p.group)]


@pytest.fixture
def on_path(tmp_path, monkeypatch):
    names = []

    def write(name, source):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        names.append(name)

    monkeypatch.syspath_prepend(str(tmp_path))
    with isolated_registries(rediscover=True):
        yield write
    for name in names:
        sys.modules.pop(name, None)


# 1 ------------------------------------------------------------------------------------------------
def test_a_builtin_module_that_fails_leaves_the_family_unloaded_and_fails_again(tmp_path, monkeypatch):
    package = tmp_path / "fampkg_t1"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a_good.py").write_text(
        "from fampkg_t1 import _r\n_r.R.register('good', object(), description='g')\n"
    )
    (package / "b_bad.py").write_text(
        "import os\nfrom fampkg_t1 import _r\n_r.R.register('bad', object(), description='b')\n"
        "if os.environ.get('T1_FAIL') == '1':\n    raise RuntimeError('built-in broke')\n"
    )
    (package / "c_later.py").write_text(
        "from fampkg_t1 import _r\n_r.R.register('later', 3, description='l')\n"
    )
    (package / "_r.py").write_text("R = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("T1_FAIL", "1")
    import fampkg_t1._r as holder

    holder.R = registry = Registry("test-t1", kind="thing", package="fampkg_t1")
    try:
        for _ in range(2):  # the same error on every read, never a partial registry
            with pytest.raises(RuntimeError, match="built-in broke"):
                registry["later"]
            assert not registry.loaded and "bad" not in registry._records
        monkeypatch.setenv("T1_FAIL", "0")
        assert registry["later"] == 3 and list(registry) == ["good", "bad", "later"] and registry.loaded
    finally:
        registry.forget()
        for name in [m for m in sys.modules if m.startswith("fampkg_t1")]:
            del sys.modules[name]


# 2 ------------------------------------------------------------------------------------------------
def test_a_graph_format_whose_accepts_raises_is_one_warning_and_left_out(on_path, monkeypatch):
    from pdenets.data.graphs import GRAPH_FORMATS, load_graph

    on_path(
        "pdenets_t2_accepts",
        """
        from pdenets.data.graphs import GraphFormat, register_graph_format
        def accepts(spec):
            raise RuntimeError("accepts broke")
        def load(spec, data_dir, missing):
            raise NotImplementedError
        register_graph_format(GraphFormat("t2-format", "d", "u", accepts, load, priority=1))
    """,
    )
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        _entry_points(("pdenets.graph_formats", "mine", "pdenets_t2_accepts")),
    )
    with pytest.warns(PluginWarning) as caught:
        with pytest.raises(ValueError, match="unknown graph 'no-such-graph'"):
            load_graph("no-such-graph")
    assert (
        len(caught) == 1
        and "t2-format" in str(caught[0].message)
        and "accepts broke" in str(caught[0].message)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="unknown graph"):
            load_graph("no-such-graph")  # left out: no second warning
    assert "t2-format" not in GRAPH_FORMATS


# 3 ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["pdenets.no_such_module", "pdenets.models:no_such_attribute"])
def test_an_entry_point_naming_a_pdenets_module_is_a_warning(value, on_path, monkeypatch, capsys):
    monkeypatch.setattr(
        importlib.metadata, "entry_points", _entry_points(("pdenets.forecasters", "mine", value))
    )
    assert main(["list"]) == 0
    out, err = capsys.readouterr()
    assert "forecasters (" in out and err.count("pdenets: warning:") == 1 and value in err


# 4 ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", ["forecasters", "graph-formats"])
def test_a_plugin_registering_a_plain_object_is_left_out(family, on_path, monkeypatch, capsys):
    registry = plugin_families()[family]
    module = f"pdenets_t4_{family.replace('-', '_')}"
    on_path(
        module,
        f"""
        from pdenets._registry import families
        families()[{family!r}].register("t4-plain", object(), description="a plain object")
    """,
    )
    monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points((registry.group, "mine", module)))
    assert main(["list", family]) == 0
    out, err = capsys.readouterr()
    assert "t4-plain" not in out and err.count("pdenets: warning:") == 1 and module in err


# 5 ------------------------------------------------------------------------------------------------
def test_a_plugin_that_prints_leaves_print_config_valid_yaml(on_path, monkeypatch, capsys):
    import yaml

    on_path("pdenets_t5_noisy", "print('hello from a plug-in')\n")
    monkeypatch.setattr(
        importlib.metadata, "entry_points", _entry_points(("pdenets.tasks", "mine", "pdenets_t5_noisy"))
    )
    assert main(["run", "synthetic", "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert "hello" not in out and "hello from a plug-in" in err
    assert isinstance(yaml.safe_load(out), dict)


# 6 ------------------------------------------------------------------------------------------------
def test_a_broken_plugin_takes_back_what_it_registered_in_other_families(on_path, monkeypatch):
    from pdenets.models.forecasting import FORECASTERS
    from pdenets.models.registry import MODEL_REGISTRY

    on_path(
        "pdenets_t6_two_families",
        """
        from torch import nn
        from pdenets.models import register_model
        from pdenets.models.forecasting import Forecaster, register_forecaster
        @register_model("t6-model", family="example", description="m")
        def linear(in_features, num_classes):
            return nn.Linear(in_features, num_classes)
        register_forecaster(Forecaster("t6-zero", "zero", lambda i, t, f: t * 0, fits_targets=False))
        raise RuntimeError("broke after registering")
    """,
    )
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        _entry_points(("pdenets.forecasters", "mine", "pdenets_t6_two_families")),
    )
    with pytest.warns(PluginWarning):
        FORECASTERS.reload()
    assert "t6-zero" not in FORECASTERS and "t6-model" not in MODEL_REGISTRY  # in *every* family


def test_a_failed_plugin_is_not_imported_again_on_reload(on_path, monkeypatch, tmp_path):
    from pdenets.models.forecasting import FORECASTERS

    log = tmp_path / "imports.log"
    on_path(
        "pdenets_t6_once",
        f"""
        with open({str(log)!r}, "a") as handle:
            handle.write("imported\\n")
        raise RuntimeError("broken")
    """,
    )
    monkeypatch.setattr(
        importlib.metadata, "entry_points", _entry_points(("pdenets.forecasters", "mine", "pdenets_t6_once"))
    )
    with pytest.warns(PluginWarning):
        FORECASTERS.reload()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        FORECASTERS.reload()
    assert log.read_text().count("imported") == 1


def test_an_ambiguous_abbreviation_gets_no_suggestion(capsys):
    assert nearest_hint("s", ("source", "symmetric")) == ""
    assert nearest_hint("w", ("source", "target", "weight")) == " (did you mean 'weight'?)"
    assert main(["list", "fe"]) == 2  # fewshot-methods, fewshot-datasets, feature-extractors
    err = capsys.readouterr().err
    assert "unknown family 'fe'; valid: " in err and "did you mean" not in err


# 6 ------------------------------------------------------------------------------------------------
_SHADOW = """
from pdenets.experiments.task import Task, register_task

@register_task
class Shadow(Task):
    name = "coin-tabular"
    def jobs(self):
        return []
    @staticmethod
    def run_job(spec, context):
        return {}
    def summarize(self, records):
        return {}
    def report(self, results, records, run_dir):
        pass
"""


def test_a_plugin_task_under_a_builtin_name_is_one_warning_and_every_task_still_lists(
    on_path, monkeypatch, capsys
):
    from pdenets.experiments.task import TASKS

    on_path("pdenets_t6_shadow", _SHADOW)
    monkeypatch.setattr(
        importlib.metadata, "entry_points", _entry_points(("pdenets.tasks", "shadow", "pdenets_t6_shadow"))
    )
    assert main(["tasks"]) == 0
    out, err = capsys.readouterr()
    assert err.count("pdenets: warning:") == 1 and "already registered (by pdenets)" in err
    assert "coin-tabular" in out and "node-classification" in out
    assert TASKS["coin-tabular"].__module__ == "pdenets.tasks.coin_tabular.task"


def test_user_code_registering_a_builtin_name_before_the_tasks_load_is_refused_and_the_list_kept(on_path):
    from pdenets.experiments.task import TASKS

    TASKS._loaded = False  # as in a fresh process: the user's registration comes first
    on_path("pdenets_t6_direct", "")
    namespace: dict = {}
    with pytest.raises(
        ValueError, match="a task named 'coin-tabular' is already registered \\(by pdenets\\)"
    ):
        exec(compile(_SHADOW, "pdenets_t6_direct.py", "exec"), namespace)
    assert TASKS.loaded and len(TASKS) >= 8 and TASKS["coin-tabular"].__module__.startswith("pdenets.")
