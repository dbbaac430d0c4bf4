"""Every family of plug-ins is found the same way (its package, then its ``pdenets.<family>`` entry points),
names an unknown entry the same way, and survives a broken plug-in the same way."""

import importlib.metadata
import sys
import textwrap
import warnings

import pytest

from pdenets._checks import UnknownNameError
from pdenets._registry import BUILTIN, PluginWarning, Registry, isolated_registries
from pdenets.cli import FAMILY_ORDER, main, plugin_families

#: per family: a plug-in module's source that registers one valid entry named ``plugin-entry``
PLUGIN_SOURCES = {
    "tasks": """
        from dataclasses import dataclass
        from pdenets.experiments import Task, TaskConfig, register_task

        @register_task
        class PluginTask(Task):
            name = "plugin-entry"
            description = "a task from a plug-in"
            def jobs(self):
                return []
            @staticmethod
            def run_job(spec):
                return {}
            def summarize(self, records):
                return {}
            def report(self, results, records, run_dir):
                pass
    """,
    "tables": """
        from pdenets.experiments.task import get_task, register_reproduction
        task = get_task("synthetic")
        register_reproduction("plugin-entry", "synthetic", full=task.config_class, quick=task.quick_config,
                              description="a table from a plug-in")
    """,
    "models": """
        from torch import nn
        from pdenets.models import register_model

        @register_model("plugin-entry", family="example", description="a model from a plug-in")
        def linear(in_features, num_classes):
            return nn.Linear(in_features, num_classes)
    """,
    "fewshot-methods": """
        from dataclasses import dataclass
        from pdenets.models.fewshot import FewShotMethod, register_method

        @dataclass(frozen=True)
        class Settings:
            pass

        @register_method
        class Plugin(FewShotMethod):
            name = "plugin-entry"
            description = "a method from a plug-in"
            is_transductive = False
            settings_class = Settings
            def predict_proba(self, batch):
                return batch.query.new_full((*batch.query.shape[:2], batch.ways), 1 / batch.ways)
    """,
    "forecasters": """
        from pdenets.models.forecasting import Forecaster, register_forecaster

        def zero(inputs, targets, fitted):
            return targets * 0
        register_forecaster(Forecaster("plugin-entry", "zero everywhere", zero, fits_targets=False))
    """,
    "graph-formats": """
        from pdenets.data.graphs import GraphFormat, register_graph_format

        def load(spec, data_dir, missing_features):
            raise NotImplementedError
        register_graph_format(GraphFormat("plugin-entry", "a graph format from a plug-in", "x.plugin",
                                          lambda spec: spec.endswith(".plugin"), load))
    """,
    "temporal-layouts": """
        from pdenets.data.temporal import TemporalLayout, register_layout

        def read(path, content):
            raise NotImplementedError
        register_layout(TemporalLayout("plugin-entry", ("plugin_series",), read, "a layout from a plug-in"))
    """,
    "fewshot-datasets": """
        from pdenets.features.datasets import FewShotDataset, register_fewshot_dataset

        def features(data_dir, training, directory, progress):
            raise NotImplementedError
        def embed(data_dir, progress):
            raise NotImplementedError
        register_fewshot_dataset(FewShotDataset("plugin-entry", "texts from a plug-in", "minilm", features,
                                                embed=embed), module=__name__)
    """,
    "feature-extractors": """
        from pdenets.features.extractors import FeatureExtractor, register_extractor
        register_extractor(FeatureExtractor("plugin-entry", "an encoder from a plug-in", "text", False),
                           module=__name__)
    """,
}


def _entry_points(group, *entries):
    points = [importlib.metadata.EntryPoint(name, value, group) for name, value in entries]
    return lambda group=None: [p for p in points if group in (None, p.group)]


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """``make(family, source)``: a module on the path, named under the family's entry-point group; every
    registry reads its entry points again and is put back afterwards."""
    made = []

    def make(registry, source, name):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        made.append(name)
        monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(registry.group, ("mine", name)))

    monkeypatch.syspath_prepend(str(tmp_path))
    with isolated_registries(rediscover=True):
        yield make
    for name in made:
        sys.modules.pop(name, None)


def test_every_family_is_listed_and_every_family_has_a_plugin_test():
    families = plugin_families()
    assert list(families)[: len(FAMILY_ORDER)] == list(FAMILY_ORDER)
    assert set(PLUGIN_SOURCES) == set(families), "give a new family a plug-in source in PLUGIN_SOURCES"
    for name, registry in families.items():
        assert isinstance(registry, Registry) and len(registry) > 0, name
        assert any(registry.source(entry) == BUILTIN for entry in registry), name  # (tests may add their own)
        assert all(registry.description(entry) for entry in registry), (
            f"{name}: an entry without a description"
        )
        assert registry.group == "pdenets." + name.replace("-", "_")


@pytest.mark.parametrize("family", sorted(PLUGIN_SOURCES))
def test_a_plugin_adds_an_entry_of_each_family(family, plugin, capsys):
    registry = plugin_families()[family]
    plugin(registry, PLUGIN_SOURCES[family], f"pdenets_plugin_{family.replace('-', '_')}")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        assert "plugin-entry" in registry
    assert registry.source("plugin-entry") == f"pdenets_plugin_{family.replace('-', '_')}"
    assert main(["list", family]) == 0
    listed = capsys.readouterr().out
    assert "plugin-entry" in listed and registry.description("plugin-entry") in listed


@pytest.mark.parametrize("family", sorted(PLUGIN_SOURCES))
def test_a_broken_plugin_is_one_warning_and_leaves_every_builtin(family, plugin):
    """A plug-in that registers its entry and then fails, or that takes a built-in's name: what it registered
    is taken back, in every family, and one warning names it."""
    registry = plugin_families()[family]
    before = {name: dict(r.items()) for name, r in plugin_families().items()}
    source = textwrap.dedent(PLUGIN_SOURCES[family]) + "\nraise RuntimeError('the plug-in broke')\n"
    plugin(registry, source, f"pdenets_broken_{family.replace('-', '_')}")
    with pytest.warns(PluginWarning) as caught:
        registry.reload()
        assert "plugin-entry" not in registry
    assert len(caught) == 1 and "RuntimeError: the plug-in broke; they are left out" in str(caught[0].message)
    assert {name: dict(r.items()) for name, r in plugin_families().items()} == before
    assert "plugin-entry" not in registry  # tried once a process: no second warning
    taken = next(entry for entry in registry if registry.source(entry) == BUILTIN)
    clash = PLUGIN_SOURCES[family].replace('"plugin-entry"', repr(taken))
    plugin(registry, clash, f"pdenets_clash_{family.replace('-', '_')}")
    registry.reload()
    assert registry.source(taken) == BUILTIN and registry[taken] is before[family][taken]


@pytest.mark.parametrize("family", sorted(PLUGIN_SOURCES))
def test_an_unknown_name_is_one_error_with_the_closest_name(family):
    registry = plugin_families()[family]
    first = next(entry for entry in registry if registry.source(entry) == BUILTIN)
    with pytest.raises(UnknownNameError) as caught:
        registry[first + "x"]
    message = str(caught.value)
    assert message.startswith(f"unknown {registry.kind} '{first}x' (did you mean '{first}'?); valid: ")
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)


def test_pdenets_list_names_an_unknown_family(capsys):
    assert main(["list", "model"]) == 2
    assert "unknown family 'model' (did you mean 'models'?)" in capsys.readouterr().err


def test_a_registry_walks_its_package_once_and_refuses_a_second_entry_under_a_taken_name():
    imported = []
    colours = Registry("test-colours", kind="colour", package="json")
    try:
        colours.register("red", (255, 0, 0), module="paints")
        with pytest.raises(ValueError, match=r"a colour named 'red' is already registered \(by paints\)"):
            colours.register("red", (254, 0, 0), module="other")
        assert colours.register("red", colours["red"], module="paints") == (255, 0, 0)  # the same entry again
        with pytest.raises(ValueError, match="a colour needs a non-empty name"):
            colours.register("", 1)
        assert colours.loaded and "json.decoder" in sys.modules and not imported
        with pytest.raises(ValueError, match="exists already"):
            Registry("test-colours", kind="paint")
    finally:
        colours.forget()
