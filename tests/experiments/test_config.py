"""Configuration rules, table-driven: merge, types by annotation, unknown keys, YAML safety."""

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import pytest
import torch

from pdenets.experiments.config import ConfigError, TaskConfig, check_device, config_fields, resolve_config
from pdenets.experiments.rundir import RunDirectory


@dataclass
class Steps:
    steps: int = 60
    rate: float = 1.0


@dataclass
class Demo(TaskConfig):
    epochs: int = field(default=10, metadata={"help": "training epochs"})
    rate: float = 0.5
    name: str = "a"
    names: List[str] = field(default_factory=lambda: ["moon"])
    seeds: List[int] = field(default_factory=lambda: [1, 2])
    nested: Dict[str, Steps] = field(default_factory=lambda: {"moon": Steps()})
    flag: bool = True
    optional: Optional[str] = None


def resolved(*overrides):
    return resolve_config(Demo, overrides=list(overrides))


GOOD = [
    ("epochs=3", "epochs", 3),
    ("epochs=3.0", "epochs", 3),
    ("rate=1e-3", "rate", 0.001),
    ("rate=1", "rate", 1.0),
    ("seeds=7", "seeds", [7]),
    ("names=circle", "names", ["circle"]),
    ("names=[circle, spiral]", "names", ["circle", "spiral"]),
    ("seeds=[3, '4']", "seeds", [3, 4]),
    ("flag=false", "flag", False),
    ("flag=true", "flag", True),
    ("flag=False", "flag", False),
    ("name='no'", "name", "no"),
    ("name=no", "name", "no"),  # YAML 1.2: yes/no/on/off are words, not booleans
    ("name=1_0", "name", "1_0"),
    ("name=1:30", "name", "1:30"),
    ("epochs=010", "epochs", 10),  # decimal, not YAML 1.1's octal 8
    ("epochs=0o17", "epochs", 15),
    ("epochs=0x1F", "epochs", 31),
    ("epochs='12'", "epochs", 12),
    ("rate=2e1", "rate", 20.0),
    ("rate='1e-3'", "rate", 0.001),
    ("rate=-.5", "rate", -0.5),
    ("optional=null", "optional", None),
    ("optional=x", "optional", "x"),
    ("nested.moon.steps=7", "nested", {"moon": Steps(7, 1.0)}),
    ("nested.circle.steps=9", "nested", {"moon": Steps(60, 1.0), "circle": Steps(9, 1.0)}),
    ("device=cpu", "device", "cpu"),
    ("workers=2", "workers", 2),
]


@pytest.mark.parametrize("override, name, expected", GOOD, ids=[case[0] for case in GOOD])
def test_accepted_values(override, name, expected):
    value = getattr(resolved(override), name)
    assert value == expected and type(value) is type(expected)


BAD = [
    ("epochs=true", "epochs expects an integer, got True"),
    ("epochs=3.5", "epochs expects an integer, got 3.5"),
    ("epochs=many", "epochs expects an integer, got 'many'"),
    ("epochs=null", "epochs must not be null"),
    ("epochs=[1]", "epochs expects an integer"),
    ("rate=true", "rate expects a number, got True"),
    ("rate=abc", "rate expects a number, got 'abc'"),
    ("flag=3", "flag expects true or false, got 3"),
    ("flag=maybe", "flag expects true or false"),
    ("name=true", "name expects a string, got True (true/false are booleans: quote the word)"),
    ("seeds=[1, x]", "seeds[1] expects an integer, got 'x'"),
    (
        "epochz=1",
        "unknown config key 'epochz' (did you mean 'epochs'?); valid keys: data_dir, device, epochs",
    ),
    (
        "nested.moon.stepz=7",
        "unknown config key 'nested.moon.stepz' (did you mean 'steps'?); valid keys of "
        "nested.moon: rate, steps",
    ),
    ("nested.moon=3", "nested.moon expects a mapping of Steps keys"),
    ("nested=3", "nested expects a mapping"),
    ("epochs", "must look like key=value"),
    ("=3", "empty key"),
    ("a..b=3", "empty key"),
    ("rate=!!python/object:os.system x", "YAML tags"),
    ("seeds=[1, 2", "not valid YAML"),
]


@pytest.mark.parametrize("override, message", BAD, ids=[case[0] for case in BAD])
def test_refused_values(override, message):
    with pytest.raises(ConfigError) as caught:
        resolved(override)
    assert message in str(caught.value)


YAML_1_1_ONLY = [
    ("epochs=1_0", "epochs expects an integer, got '1_0'"),
    ("epochs=1:30", "epochs expects an integer, got '1:30'"),
    ("epochs=0b11", "epochs expects an integer, got '0b11'"),
    ("seeds=[1_0]", "seeds[0] expects an integer, got '1_0'"),
    ("rate=1_0.5", "rate expects a number, got '1_0.5'"),
    ("rate=1:30.5", "rate expects a number, got '1:30.5'"),
    ("rate=' 2'", "rate expects a number, got ' 2'"),
    ("flag=yes", "flag expects true or false, got 'yes'"),
    ("flag=off", "flag expects true or false, got 'off'"),
    ("flag=Y", "flag expects true or false, got 'Y'"),
]


@pytest.mark.parametrize("override, message", YAML_1_1_ONLY, ids=[case[0] for case in YAML_1_1_ONLY])
def test_yaml_1_1_spellings_are_not_numbers_or_booleans(override, message):
    """Values are YAML 1.2: ``1_0``, ``1:30`` (sexagesimal 90), ``0b11`` and ``yes``/``off`` are strings,
    which a number or switch refuses in one line (Python's int()/float() would read ``1_0`` and `` 2``)."""
    with pytest.raises(ConfigError) as caught:
        resolved(override)
    assert str(caught.value) == message


def test_a_config_file_is_read_as_yaml_1_2(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("epochs: 010\nrate: 1e-3\nname: on\nnames: [yes, no]\n")
    config = resolve_config(Demo, files=[path])
    assert (config.epochs, config.rate, config.name, config.names) == (10, 0.001, "on", ["yes", "no"])


FILES = [
    ("rate: !!python/object/apply:os.system ['echo hacked']\n", "YAML tags such as"),
    ("epochs: !!int 3\n", "YAML tags"),
    ("base: &anchor [1, 2]\nseeds: *anchor\n", "anchors and aliases"),
    ("epochs: [1, 2\n", "not valid YAML, line 2"),
    ("- epochs\n- 3\n", "must hold a mapping of config keys, got a list"),
    ("nested:\n  moon:\n    stepz: 3\n", "unknown config key 'nested.moon.stepz'"),
    ("epochs: true\n", "epochs expects an integer"),
]


@pytest.mark.parametrize("text, message", FILES, ids=[case[1] for case in FILES])
def test_refused_files(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        resolve_config(Demo, files=[path])
    assert message in str(caught.value) and str(path) in str(caught.value)


def test_files_merge_deeply_and_overrides_win(tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("epochs: 4\nnested:\n  moon:\n    steps: 5\n  circle:\n    rate: 0.1\n")
    second.write_text("nested:\n  moon:\n    rate: 2.0\nrate: 1e-3\n")
    config = resolve_config(Demo, files=[first, second], overrides=["epochs=6"])
    assert config.epochs == 6 and config.rate == 0.001
    assert config.nested == {"moon": Steps(5, 2.0), "circle": Steps(60, 0.1)}


def test_a_run_config_yaml_is_a_valid_config_file(tmp_path):
    run = RunDirectory(tmp_path / "run")
    run.write_config("demo", {"epochs": 6, "seeds": [4]}, quick=True)
    config = resolve_config(Demo, files=[run.file("config.yaml")])
    assert (config.epochs, config.seeds) == (6, [4])


def test_missing_and_unreadable_config_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_config(Demo, files=[tmp_path / "nope.yaml"])
    with pytest.raises(ConfigError, match="is not a file"):
        resolve_config(Demo, files=[tmp_path])
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match="not UTF-8"):
        resolve_config(Demo, files=[binary])


def test_base_config_is_the_starting_point():
    base = Demo(epochs=2, seeds=[9])
    config = resolve_config(Demo, base=base, overrides=["rate=0.25"])
    assert (config.epochs, config.seeds, config.rate) == (2, [9], 0.25)
    assert base.rate == 0.5  # the base is not modified


def test_fields_carry_help_defaults_and_owner():
    fields = {info.name: info for info in config_fields(Demo)}
    assert fields["epochs"].help == "training epochs" and fields["epochs"].default == 10
    assert fields["device"].owner is TaskConfig and fields["epochs"].owner is Demo
    assert (fields["seeds"].kind, fields["flag"].kind, fields["nested"].kind, fields["rate"].kind) == (
        "list",
        "bool",
        "nested",
        "scalar",
    )


def test_device_checks():
    check_device("cpu")
    with pytest.raises(ConfigError, match="not a torch device"):
        check_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="CUDA is not available"):
            check_device("cuda")
    with pytest.raises(ConfigError, match="workers must be >= 0"):
        Demo(workers=-1).validate()


def test_overlapping_keys_later_files_win_then_overrides_in_order(tmp_path):
    """Every layer sets the same keys: the last file beats the first, an override beats both, and of two
    overrides of one key the later wins (also for one entry of a nested setting)."""
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("epochs: 4\nrate: 0.1\nnested:\n  moon:\n    steps: 5\n    rate: 0.2\n")
    second.write_text("epochs: 7\nnested:\n  moon:\n    steps: 8\n")
    config = resolve_config(Demo, files=[first, second])
    assert (config.epochs, config.rate, config.nested["moon"]) == (7, 0.1, Steps(8, 0.2))
    config = resolve_config(Demo, files=[second, first])
    assert (config.epochs, config.nested["moon"]) == (4, Steps(5, 0.2))
    config = resolve_config(
        Demo, files=[first, second], overrides=["epochs=9", "nested.moon.steps=11", "epochs=12"]
    )
    assert (config.epochs, config.rate, config.nested["moon"]) == (12, 0.1, Steps(11, 0.2))


def test_files_start_from_the_base_and_lists_are_replaced_not_joined(tmp_path):
    base = Demo(epochs=2, seeds=[1, 2, 3], names=["circle"])
    path = tmp_path / "c.yaml"
    path.write_text("seeds: [9]\n")
    config = resolve_config(Demo, base=base, files=[path])
    assert (config.epochs, config.seeds, config.names) == (2, [9], ["circle"])
