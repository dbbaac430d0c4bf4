"""Task configurations: dataclasses that load from YAML and take ``key=value`` overrides."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, TypeVar, Union

import yaml

__all__ = ["config_to_dict", "config_from_dict", "apply_overrides", "load_config"]

C = TypeVar("C")


def config_to_dict(config) -> Dict[str, Any]:
    return dataclasses.asdict(config)


def config_from_dict(cls, values: Dict[str, Any]):
    """Build ``cls`` from a dict, refusing unknown keys with the list of known ones."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"unknown config key(s) {unknown} for {cls.__name__}; known: {sorted(names)}")
    return cls(**values)


def _coerce(current: Any, raw: Any, key: str) -> Any:
    if current is None or raw is None:
        return raw
    if isinstance(current, bool):
        if not isinstance(raw, bool):
            raise ValueError(f"{key} expects true/false, got {raw!r}")
        return raw
    if isinstance(current, float) and isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    if isinstance(current, (list, tuple)) and not isinstance(raw, (list, tuple)):
        return [raw]
    if isinstance(current, (int, float, str)) and not isinstance(raw, type(current)):
        raise ValueError(f"{key} expects {type(current).__name__}, got {raw!r}")
    return raw


def apply_overrides(config: C, overrides: Iterable[str]) -> C:
    """Return a copy of ``config`` with ``key=value`` overrides (values parsed as YAML).

    Nested dict fields take dotted keys: ``hyperparameters.moon.num_steps=30``.
    """
    values = config_to_dict(config)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} must look like key=value")
        key, text = item.split("=", 1)
        raw = yaml.safe_load(text)
        path = key.strip().split(".")
        target = values
        for part in path[:-1]:
            if not isinstance(target, dict) or part not in target:
                raise ValueError(f"unknown config key {key!r}")
            target = target[part]
        leaf = path[-1]
        if not isinstance(target, dict) or (leaf not in target and len(path) == 1):
            raise ValueError(f"unknown config key {key!r}; known: {sorted(values)}")
        target[leaf] = _coerce(target.get(leaf), raw, key)
    return config_from_dict(type(config), values)


def load_config(cls, path: Optional[Union[str, Path]] = None, base=None):
    """Load a YAML file (a mapping of config keys, or a ``config.yaml`` written by a run)."""
    config = base if base is not None else cls()
    if path is None:
        return config
    document = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if isinstance(document, dict) and "config" in document and "task" in document:
        document = document["config"]
    if not isinstance(document, dict):
        raise ValueError(f"{path} must contain a mapping of config keys")
    merged = {**config_to_dict(config), **document}
    return config_from_dict(cls, merged)
