"""Task configurations: dataclasses, merged and type-checked by OmegaConf.

Every task's configuration is a dataclass that inherits :class:`TaskConfig` (device, seed,
data directory, workers, threads). A configuration is resolved in layers, later layers
winning, each merged deeply into the previous one:

1. the dataclass defaults (or the task's ``--quick`` configuration);
2. YAML files (``--config a.yaml --config b.yaml``; a run's own ``config.yaml`` works too);
3. options and dotted overrides (``--epochs 3``, ``--set hyperparameters.moon.num_steps=30``).

The rules, enforced here and by OmegaConf's structured configs:

* unknown keys are refused at any depth, with the valid names;
* values are read as YAML 1.2 (:class:`PlainLoader`) and checked against the field annotations:
  ``true`` is not an int, ``1e-3`` is a float, ``010`` is ten, ``yes`` is a word (not a boolean),
  and a number field refuses ``1_0`` or ``1:30`` instead of reading them as 10 or 90;
* a list field given one value becomes a one-element list (never a list of characters);
* YAML tags (``!!python/object``, ``!!int``) and anchors are refused: a configuration is
  plain data.

Field metadata ``help`` documents a field; the command line shows it with the default.

Examples:
    >>> from dataclasses import dataclass, field
    >>> from typing import List
    >>> @dataclass
    ... class Demo(TaskConfig):
    ...     epochs: int = field(default=10, metadata={"help": "training epochs"})
    ...     seeds: List[int] = field(default_factory=lambda: [0, 1])
    >>> config = resolve_config(Demo, overrides=["epochs=3", "seeds=7", "rate=1e-3"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pdenets.experiments.config.ConfigError: unknown config key 'rate'; valid keys: data_dir, device, ...
    >>> config = resolve_config(Demo, overrides=["epochs=3", "seeds=7"])
    >>> config.epochs, config.seeds
    (3, [7])
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import typing
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

import yaml

from .._checks import nearest_hint
from .._settings import setting

__all__ = [
    "ConfigError",
    "RenamedSettingWarning",
    "renamed_fields",
    "TaskConfig",
    "setting",
    "resolve_config",
    "load_yaml",
    "parse_value",
    "parse_override",
    "config_to_dict",
    "config_fields",
    "FieldInfo",
    "check_device",
    "check_fields",
]

C = TypeVar("C")


class ConfigError(ValueError):
    """A configuration that cannot be used: unknown key, wrong type, bad YAML, bad value.

    A ``ValueError`` whose message names the key (or file and line) and the problem; raised
    by :func:`resolve_config`, :meth:`TaskConfig.validate` and the field checks before
    anything is written.
    """


class RenamedSettingWarning(FutureWarning):
    """A setting given under its old name (``hidden`` for ``hidden_features``): it works, for now, under the
    new
    one; ``CHANGELOG.md`` lists the renames. The command line prints it as one ``pdenets: warning:`` line."""


def renamed_fields(cls: type) -> Dict[str, str]:
    """Old name → field name of a settings dataclass's renamed fields (``setting(...,
    renamed_from=("old",))``).

    Examples:
        >>> @dataclass
        ... class Demo:
        ...     hidden_features: int = setting(8, "width", renamed_from=("hidden",))
        >>> renamed_fields(Demo)
        {'hidden': 'hidden_features'}
    """
    return {
        old: item.name for item in dataclasses.fields(cls) for old in item.metadata.get("renamed_from", ())
    }


@dataclass
class TaskConfig:
    """Settings every task shares: where it runs, how it is seeded and parallelized.

    Every task's configuration dataclass inherits it; :func:`resolve_config` fills it from
    defaults, YAML files and command-line overrides, and :meth:`validate` checks the values.

    Args:
        device: torch device: ``cpu``, ``cuda``, ``cuda:1``, ``mps`` (default: ``"cpu"``).
        seed: master seed in ``[0, 2^32)``; every random choice of the task derives from it
            (default: ``0``).
        data_dir: data directory (default: ``None``: ``$PDENETS_DATA``, else
            ``~/.cache/pdenets``).
        workers: worker processes for independent runs; ``0``: one per CPU core, ``1``: in
            this process (default: ``0``).
        threads: torch threads per worker; ``0``: CPU cores / workers (default: ``0``).
        ray_address: run on a Ray cluster (``"auto"``, ``"ray://host:10001"``; needs
            ``pip install 'pdenets[distributed]'``) (default: ``None``: no Ray).

    Examples:
        >>> config = resolve_config(TaskConfig, overrides=["seed=3", "workers=1"])
        >>> config.seed, config.workers, config.device
        (3, 1, 'cpu')
    """

    device: str = setting("cpu", "torch device: cpu, cuda, cuda:1, mps")
    seed: int = setting(0, "master seed; every random choice of the task derives from it")
    data_dir: Optional[str] = setting(None, "data directory (default: $PDENETS_DATA, else ~/.cache/pdenets)")
    workers: int = setting(
        0, "worker processes for independent runs (0: one per CPU core; 1: in this process)"
    )
    threads: int = setting(0, "torch threads per worker (0: CPU cores / workers)")
    ray_address: Optional[str] = setting(
        None, "run on a Ray cluster ('auto', 'ray://host:10001'; pip install 'pdenets[distributed]')"
    )

    def validate(self) -> None:
        """Check values that types alone cannot (subclasses call ``super().validate()``)."""
        check_fields(self, non_negative_counts=("workers", "threads"))
        if not 0 <= self.seed < 2**32:
            raise ConfigError(f"seed must lie in [0, 2^32), got {self.seed}")
        check_device(self.device)


def check_fields(
    settings: Any,
    *,
    counts: Sequence[str] = (),
    non_negative_counts: Sequence[str] = (),
    positive: Sequence[str] = (),
    non_negative: Sequence[str] = (),
    probabilities: Sequence[str] = (),
    choices: Optional[Mapping[str, Sequence[Any]]] = None,
    non_empty: Sequence[str] = (),
    prefix: str = "",
) -> None:
    """Value checks a type annotation cannot express, as :class:`ConfigError` naming the field.

    A list field is checked entry by entry. A mistyped choice is told the nearest allowed value.

    Args:
        settings: the configuration object (a dataclass instance) whose fields are checked.
        counts: fields that must be integers >= 1 (default: none).
        non_negative_counts: fields that must be integers >= 0 (default: none).
        positive: fields that must be finite numbers > 0 (default: none).
        non_negative: fields that must be finite numbers >= 0 (default: none).
        probabilities: fields that must lie in [0, 1) (default: none).
        choices: field → the allowed values (default: none).
        non_empty: list fields that must hold at least one entry (default: none).
        prefix: text put before the field name in the message, e.g. ``"hyperparameters.moon."`` (default:
            ``""``).

    Raises:
        ConfigError: the first field that breaks its rule, named with its value.

    Examples:
        >>> @dataclass
        ... class Demo:
        ...     epochs: int = 0
        >>> check_fields(Demo(), counts=["epochs"])
        Traceback (most recent call last):
        ...
        pdenets.experiments.config.ConfigError: epochs must be >= 1, got 0
    """
    import math

    def values(name: str) -> List[Any]:
        value = getattr(settings, name)
        return value if isinstance(value, list) else [value]

    for name in non_empty:
        if not getattr(settings, name):
            raise ConfigError(f"{prefix}{name} must not be empty")
    for names, low, kind in (
        (counts, 1, "count"),
        (non_negative_counts, 0, "count"),
        (positive, 0, "positive"),
        (non_negative, 0, "non-negative"),
        (probabilities, 0, "probability"),
    ):
        for name in names:
            for value in values(name):
                bad = not math.isfinite(value) if isinstance(value, float) else False
                if kind == "count":
                    bad = value < low
                elif kind == "positive":
                    bad = bad or value <= 0
                elif kind == "probability":
                    bad = bad or not 0 <= value < 1
                else:
                    bad = bad or value < 0
                if bad:
                    bound = {
                        "count": f">= {low}",
                        "positive": "> 0",
                        "non-negative": ">= 0",
                        "probability": "in [0, 1)",
                    }[kind]
                    raise ConfigError(f"{prefix}{name} must be {bound}, got {value}")
    for name, allowed in (choices or {}).items():
        for value in values(name):
            if value not in allowed:
                raise ConfigError(
                    f"{prefix}{name} must be one of {list(allowed)}, got {value!r}"
                    f"{nearest_hint(value, allowed)}"
                )


def check_device(device: str) -> None:
    """Refuse a device string torch does not know, or one this machine does not have."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ConfigError(
            f"device {device!r} is not a torch device (use cpu, cuda, cuda:N or mps)"
        ) from error
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(
                f"device {device!r} asked for, but CUDA is not available on this machine (use cpu)"
            )
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise ConfigError(
                f"device {device!r} asked for, but this machine has {torch.cuda.device_count()} CUDA "
                "device(s)"
            )
    elif parsed.type == "mps":
        if not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
            raise ConfigError(
                f"device {device!r} asked for, but MPS is not available on this machine (use cpu)"
            )
    elif parsed.type != "cpu":
        raise ConfigError(f"device {device!r} is not supported (use cpu, cuda, cuda:N or mps)")


# ----------------------------------------------------------------------------------------
# YAML: plain data only


def _refuse_tags_and_anchors(text: str, source: str) -> None:
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        mark = getattr(event, "start_mark", None)
        where = f"{source}, line {mark.line + 1}" if mark is not None else source
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise ConfigError(
                f"{where}: YAML anchors and aliases (&name, *name) are not allowed in configs; "
                "write the values out"
            )
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise ConfigError(
                f"{where}: YAML tags such as {tag!r} are not allowed in configs: a config holds "
                "plain values (numbers, strings, true/false, lists, mappings)"
            )


class PlainLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the scalars of the YAML 1.2 core schema instead of YAML 1.1's.

    Only ``true``/``false`` (also ``True``, ``TRUE``, ...) are booleans (``yes``, ``no``, ``on``, ``off``
    stay words); integers are decimal ``[-+]?[0-9]+`` (``010`` is ten, not eight), ``0o17`` or ``0x1F``;
    floats need a ``.`` or an exponent (``1e-3`` is a float), or are ``.inf``, ``-.inf``, ``.nan``;
    ``null``, ``~`` and the empty value are null. Everything else is a string: ``1_0``, ``1:30`` (YAML
    1.1's sexagesimal 90), ``0b11`` and dates stay as written, and a numeric field refuses them.
    """


PlainLoader.yaml_implicit_resolvers = {}
_RESOLVERS = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
)
for _tag, _pattern, _first in _RESOLVERS:
    PlainLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def yaml12_int(text: str) -> int:
    """A YAML 1.2 core-schema integer (``-12``, ``010`` = 10, ``0o17``, ``0x1F``); ``ValueError``
    otherwise."""
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text, 10)
    if re.fullmatch(r"0o[0-7]+|0x[0-9a-fA-F]+", text):
        return int(text[2:], 8 if text[1] == "o" else 16)
    raise ValueError(f"{text!r} is not an integer")


def yaml12_float(text: str) -> float:
    """A YAML 1.2 core-schema number (``1e-3``, ``.5``, ``-.inf``, ``.nan``, an integer); else
    ``ValueError``."""
    lowered = text.lower()
    if lowered in (".inf", "+.inf", "-.inf", ".nan"):
        return float(lowered.replace(".", ""))
    if re.fullmatch(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?", text):
        return float(text)
    return float(yaml12_int(text))


def _construct_int(loader: PlainLoader, node: yaml.ScalarNode) -> int:
    return yaml12_int(loader.construct_scalar(node))


def _construct_float(loader: PlainLoader, node: yaml.ScalarNode) -> float:
    return yaml12_float(loader.construct_scalar(node))


PlainLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
PlainLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def load_yaml(text: str, *, source: str = "<text>") -> Any:
    """Parse YAML holding plain data (:class:`PlainLoader`: YAML 1.2 scalars); tags, anchors and syntax errors
    give :class:`ConfigError`."""
    try:
        _refuse_tags_and_anchors(text, source)
        return yaml.load(text, Loader=PlainLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        mark = getattr(error, "problem_mark", None)
        where = f", line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"{source}: not valid YAML{where}: {problem}") from None


def _read_config_file(path: Union[str, Path]) -> Dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    if not path.is_file():
        raise ConfigError(f"config file {path} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    except OSError as error:
        raise ConfigError(f"config file {path} cannot be read: {error.strerror}") from None
    document = load_yaml(text, source=str(path))
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ConfigError(
            f"config file {path} must hold a mapping of config keys, got a {type(document).__name__}"
        )
    if set(document) >= {"task", "config"} and isinstance(document["config"], dict):
        document = document["config"]  # a run directory's config.yaml
    return document


def parse_value(text: str, *, source: str = "value") -> Any:
    """A command-line value as YAML 1.2 (``3`` → int, ``1e-3`` → float, ``[a, b]`` → list, ``true`` → bool).

    See :class:`PlainLoader`: ``010`` is 10, while ``1_0``, ``1:30`` and ``yes`` stay strings.
    """
    return load_yaml(text, source=source) if text.strip() else ""


def parse_override(item: str) -> Tuple[str, Any]:
    """``"a.b=3"`` → ``("a.b", 3)``."""
    if "=" not in item:
        raise ConfigError(f"override {item!r} must look like key=value (e.g. epochs=10)")
    key, text = item.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override {item!r} has an empty key")
    return key, parse_value(text, source=f"--set {key}")


# ----------------------------------------------------------------------------------------
# checking values against annotations (before OmegaConf converts them)


def _type_hints(cls) -> Dict[str, Any]:
    return typing.get_type_hints(cls)


def _strip_optional(annotation) -> Tuple[Any, bool]:
    if typing.get_origin(annotation) is Union:
        arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(arguments) == 1:
            return arguments[0], True
    return annotation, False


def _type_name(annotation) -> str:
    annotation, optional = _strip_optional(annotation)
    origin = typing.get_origin(annotation)
    if origin in (list, List):
        (item,) = typing.get_args(annotation) or (Any,)
        name = f"list of {_type_name(item)}"
    elif origin in (dict, Dict):
        name = f"mapping name -> {_type_name(typing.get_args(annotation)[1])}"
    elif dataclasses.is_dataclass(annotation):
        name = typing.cast(type, annotation).__name__  # an annotation: the dataclass itself
    else:
        name = {bool: "true/false", int: "integer", float: "number", str: "string"}.get(
            annotation, getattr(annotation, "__name__", str(annotation))
        )
    return f"{name} or null" if optional else name


def _unknown_key(key: str, path: str, valid: Iterable[str]) -> ConfigError:
    valid = sorted(valid)
    full = f"{path}.{key}" if path else key
    close = difflib.get_close_matches(key, valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ConfigError(
        f"unknown config key {full!r}{hint}; valid keys{' of ' + path if path else ''}: {', '.join(valid)}"
    )


def _check_mapping_against(cls, values: Mapping[str, Any], path: str) -> Dict[str, Any]:
    hints = _type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    renamed = renamed_fields(cls)
    out = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise ConfigError(f"config keys must be names, got {key!r}{' in ' + path if path else ''}")
        if key in renamed:
            new = renamed[key]
            full, full_new = (f"{path}.{key}", f"{path}.{new}") if path else (key, new)
            if new in values:
                raise ConfigError(f"{full!r} and its new name {full_new!r} are both given; keep {full_new!r}")
            warnings.warn(
                f"the setting {full!r} is now {full_new!r}; {full!r} will be removed (see CHANGELOG.md)",
                RenamedSettingWarning,
                stacklevel=4,
            )
            key = new
        if key not in names:
            raise _unknown_key(key, path, names)
        out[key] = _check_value(value, hints[key], f"{path}.{key}" if path else key)
    return out


def _check_value(value: Any, annotation, path: str) -> Any:
    annotation, optional = _strip_optional(annotation)
    if value is None:
        if optional or annotation is Any:
            return None
        raise ConfigError(f"{path} must not be null (expects {_type_name(annotation)})")
    origin = typing.get_origin(annotation)
    if dataclasses.is_dataclass(annotation):
        if not isinstance(value, Mapping):
            name = typing.cast(type, annotation).__name__  # an annotation: the dataclass itself
            raise ConfigError(f"{path} expects a mapping of {name} keys, got {value!r}")
        return _check_mapping_against(annotation, value, path)
    if origin in (list, List, tuple, Tuple, Sequence):
        (item,) = typing.get_args(annotation)[:1] or (Any,)
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        return [_check_value(v, item, f"{path}[{i}]") for i, v in enumerate(items)]
    if origin in (dict, Dict, Mapping):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path} expects a mapping, got {value!r}")
        _, item = typing.get_args(annotation) or (str, Any)
        return {k: _check_value(v, item, f"{path}.{k}") for k, v in value.items()}
    if annotation is bool and not isinstance(value, bool):
        raise ConfigError(f"{path} expects true or false, got {value!r}")
    if annotation in (int, float) and isinstance(value, bool):
        raise ConfigError(f"{path} expects a{'n integer' if annotation is int else ' number'}, got {value!r}")
    if annotation in (int, float) and isinstance(value, str):
        # a quoted number is read by the YAML 1.2 rules, never by Python's int()/float(), which take 1_0 and "
        # 7 "
        try:
            value = yaml12_int(value) if annotation is int else yaml12_float(value)
        except ValueError:
            raise ConfigError(
                f"{path} expects a{'n integer' if annotation is int else ' number'}, got {value!r}"
            ) from None
    if annotation is int and isinstance(value, float):
        if not value.is_integer():
            raise ConfigError(f"{path} expects an integer, got {value!r}")
        return int(value)
    if annotation is str and isinstance(value, (bool, list, dict)):
        raise ConfigError(
            f"{path} expects a string, got {value!r}"
            + (" (true/false are booleans: quote the word)" if isinstance(value, bool) else "")
        )
    if annotation in (int, float, str) and isinstance(value, (list, dict)):
        raise ConfigError(
            f"{path} expects a{'n' if annotation is int else ''} {_type_name(annotation)}, got {value!r}"
        )
    return value


def _nest(key: str, value: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    target = out
    parts = key.split(".")
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value
    return out


def _omegaconf_message(error: Exception) -> str:
    message = str(error).splitlines()[0]
    key = getattr(error, "full_key", None)
    return f"{key}: {message}" if key and key not in message else message


def resolve_config(
    cls: Type[C],
    *,
    base: Optional[C] = None,
    files: Sequence[Union[str, Path]] = (),
    overrides: Sequence[Union[str, Tuple[str, Any]]] = (),
) -> C:
    """Defaults (or ``base``) ← YAML ``files`` ← ``overrides``, checked and converted to ``cls``.

    ``overrides`` are ``"key=value"`` strings (values parsed as YAML) or ``(key, value)`` pairs;
    dotted keys reach nested fields. Raises :class:`ConfigError` naming the key and the problem.

    Each YAML file must hold a mapping of config keys (a run directory's ``config.yaml``,
    whose keys sit under ``config:``, is accepted too); tags and anchors are refused. Every
    layer is checked against the field annotations (unknown keys, with a close match
    suggested; ``true`` for a number; a list or mapping for a scalar) before OmegaConf
    merges the layers deeply, later layers winning, and converts the result to ``cls``. A
    single value for a list field becomes a one-element list. Values are not range-checked
    here: that is ``validate()``'s job.

    Args:
        cls: the configuration dataclass.
        base: the starting values instead of ``cls()``'s defaults, e.g. a task's
            ``--quick`` configuration (default: ``None``).
        files: YAML files merged in order (default: ``()``).
        overrides: ``"key=value"`` strings or ``(key, value)`` pairs, applied last, in order
            (default: ``()``).

    Returns:
        A new ``cls`` instance.

    Raises:
        TypeError: ``cls`` is not a dataclass.
        ConfigError: a missing, unreadable or non-mapping file, invalid YAML, an unknown key,
            a malformed override, or a value of the wrong type.

    Examples:
        >>> @dataclass
        ... class Demo:
        ...     epochs: int = 10
        ...     rate: float = 0.1
        >>> resolve_config(Demo, overrides=["epochs=3", ("rate", 0.5)])
        Demo(epochs=3, rate=0.5)
        >>> resolve_config(Demo, base=Demo(epochs=5), overrides=["rate=1e-3"])
        Demo(epochs=5, rate=0.001)
        >>> resolve_config(Demo, overrides=["epoch=3"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pdenets.experiments.config.ConfigError: unknown config key 'epoch' (did you mean 'epochs'?); ...
    """
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"{cls!r} is not a dataclass")
    layers: List[Tuple[str, Dict[str, Any]]] = []
    for path in files:
        try:
            layers.append((f"{path}: ", _check_mapping_against(cls, _read_config_file(path), "")))
        except ConfigError as error:
            text = str(error)
            raise ConfigError(text if str(path) in text else f"{path}: {text}") from None
    for item in overrides:
        key, value = parse_override(item) if isinstance(item, str) else item
        layers.append(("", _check_mapping_against(cls, _nest(key, value), "")))
    from omegaconf import OmegaConf  # imported here: `pdenets --help` builds no config
    from omegaconf.errors import OmegaConfBaseException

    source = ""
    try:
        merged = OmegaConf.structured(base if base is not None else cls)
        for source, layer in layers:
            merged = OmegaConf.merge(merged, layer)
        source = ""
        # the structured config of cls (or of base, a cls) converts back to a cls
        config = typing.cast(C, OmegaConf.to_object(merged))
    except OmegaConfBaseException as error:
        raise ConfigError(source + _omegaconf_message(error)) from None
    return config


def config_to_dict(config) -> Dict[str, Any]:
    """Plain nested dict of a configuration (for ``config.yaml`` and job specs).

    Nested dataclasses become nested dicts and lists are copied (``dataclasses.asdict``);
    :func:`resolve_config` reads such a dict back from ``config.yaml``.

    Args:
        config (Any): a configuration dataclass instance (a :class:`TaskConfig` or any
            dataclass).

    Returns:
        A dict of field name → value.

    Raises:
        TypeError: ``config`` is not a dataclass instance.

    Examples:
        >>> config_to_dict(TaskConfig(seed=3))
        {'device': 'cpu', 'seed': 3, 'data_dir': None, 'workers': 0, 'threads': 0, 'ray_address': None}
    """
    return dataclasses.asdict(config)


# ----------------------------------------------------------------------------------------
# describing fields (the command line is generated from this)


@dataclass(frozen=True)
class FieldInfo:
    """One configuration field: name, annotation, default, help, and whether it is nested."""

    name: str
    annotation: Any
    default: Any
    help: str
    owner: type

    @property
    def kind(self) -> str:
        """``"bool"``, ``"list"``, ``"nested"`` (mappings, dataclasses) or ``"scalar"``."""
        annotation, _ = _strip_optional(self.annotation)
        origin = typing.get_origin(annotation)
        if annotation is bool:
            return "bool"
        if origin in (list, List, tuple, Tuple, Sequence):
            return "list"
        if origin in (dict, Dict, Mapping) or dataclasses.is_dataclass(annotation):
            return "nested"
        return "scalar"

    @property
    def type_name(self) -> str:
        return _type_name(self.annotation)


def config_fields(cls, base: Any = None) -> List[FieldInfo]:
    """Top-level fields of a config class with their defaults (taken from ``base`` if given)."""
    hints = _type_hints(cls)
    instance = base if base is not None else cls()
    out = []
    for item in dataclasses.fields(cls):
        owner = next(
            k
            for k in cls.__mro__
            if item.name in getattr(k, "__dataclass_fields__", {})
            and item.name in k.__dict__.get("__annotations__", {})
        )
        out.append(
            FieldInfo(
                item.name,
                hints[item.name],
                getattr(instance, item.name),
                item.metadata.get("help", ""),
                owner,
            )
        )
    return out
