"""A guard for every task: each setting that is part of a job's key must change what the job computes.

A setting can reach the job spec (and so the store key) without reaching the arithmetic — e.g. a
weight decay never passed to the optimizer. Then every value of it trains alike, the study is
wrong, and tests that check only ranges pass. :func:`assert_every_key_setting_matters` runs the
job once as given and once per key setting changed (a nested ``((name, value), ...)`` setting
or mapping setting one entry at a time), and fails listing the settings whose change left the record unchanged, and
those it could not change (give them in ``changes`` or ``skip`` them with a reason).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Iterable, List, Mapping


def _is_pairs(value: Any) -> bool:
    return isinstance(value, tuple) and bool(value) and all(isinstance(item, tuple) and len(item) == 2 and
                                                         isinstance(item[0], str) for item in value)


def _default_change(value: Any):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 1.5 if value else 0.05
    return None


def _comparable(record: Dict[str, Any], ignore: Iterable[str]) -> Dict[str, Any]:
    return {key: value for key, value in record.items() if key not in set(ignore)}


def assert_every_key_setting_matters(run: Callable[[Any], Dict[str, Any]], spec: Any, *,
                                     changes: Dict[str, Any] = None, skip: Dict[str, str] = None,
                                     ignore: Iterable[str] = ("seconds",)) -> None:
    """Run ``spec`` (twice: it must repeat exactly) and one changed copy per key setting; every change must
    change the record.

    Args:
        run: the task's ``run_job``.
        spec: a frozen dataclass job spec; fields with ``metadata={"key": False}`` are not part of the key.
        changes: ``"field"`` or ``"field.entry"`` → the value to try (default: ints + 1, floats × 1.5,
            booleans flipped).
        skip: ``"field"`` or ``"field.entry"`` → why it is not checked here (e.g. ``"device": "CPU only"``).
        ignore: record fields that vary between identical runs (timings).
    """
    changes, skip = dict(changes or {}), dict(skip or {})
    base = _comparable(run(spec), ignore)
    again = _comparable(run(spec), ignore)
    varying = sorted(key for key in set(base) | set(again) if base.get(key) != again.get(key))
    assert not varying, (f"the same spec gave different {varying} in two runs: pass them in ignore= (timings) or fix "
                         "the nondeterminism; otherwise no change can be told from noise")
    unchanged: List[str] = []
    unchangeable: List[str] = []
    for field in dataclasses.fields(spec):
        if field.metadata.get("key", True) is False or field.name in skip:
            continue
        value = getattr(spec, field.name)
        if _is_pairs(value) or isinstance(value, Mapping):
            entries = list(value.items()) if isinstance(value, Mapping) else list(value)
            candidates = []
            for position, (entry, entry_value) in enumerate(entries):
                name = f"{field.name}.{entry}"
                if name in skip:
                    continue
                new = changes.get(name, _default_change(entry_value))
                if new is None:
                    unchangeable.append(name)
                    continue
                altered = entries[:position] + [(entry, new)] + entries[position + 1:]
                candidates.append((name, dict(altered) if isinstance(value, Mapping) else tuple(altered)))
        else:
            new = changes.get(field.name, _default_change(value))
            if new is None:
                unchangeable.append(field.name)
                continue
            candidates = [(field.name, new)]
        for name, new in candidates:
            record = _comparable(run(dataclasses.replace(spec, **{field.name: new})), ignore)
            if record == base:
                unchanged.append(name)
    assert not unchangeable, f"give a change (or a reason to skip) for the key setting(s) {unchangeable}"
    assert not unchanged, f"setting(s) {unchanged} reach the job spec but not the result: every value computes alike"
