"""A guard for every task: each setting that is part of a job's key must change what the job computes.

A setting can reach the job spec (and so the store key) without reaching the arithmetic — e.g. a
weight decay never passed to the optimizer. Then every value of it trains alike, the study is
wrong, and tests that check only ranges pass. :func:`assert_every_key_setting_matters` runs the
job once as given and once per key setting changed (a nested ``((name, value), ...)`` setting,
mapping setting or frozen dataclass setting one entry at a time; a ``None`` field is an absent part and is
skipped unless ``changes`` names it), and fails listing the settings whose change left the record unchanged,
and those it could not change (give them in ``changes`` or ``skip`` them with a reason).
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import Any, Callable, Dict, Iterable, List, Mapping

import numpy as np

from pdenets.experiments.context import RunContext
from pdenets.experiments.records import record_dict
from pdenets.experiments.runner import takes_context


def _is_pairs(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and bool(value)
        and all(isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) for item in value)
    )


def _default_change(value: Any):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 1.5 if value else 0.05
    return None


def _equal(first: Any, second: Any) -> bool:
    """Equality that looks inside dicts, sequences, arrays and tensors (NaN equals NaN)."""
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(_equal(first[key], second[key]) for key in first)
    if isinstance(first, (list, tuple)) and isinstance(second, (list, tuple)):
        return len(first) == len(second) and all(_equal(a, b) for a, b in zip(first, second))
    if hasattr(first, "shape") or hasattr(second, "shape"):
        first, second = np.asarray(first), np.asarray(second)
        return first.shape == second.shape and bool(
            np.array_equal(first, second, equal_nan=first.dtype.kind == "f")
        )
    if isinstance(first, float) and isinstance(second, float) and math.isnan(first) and math.isnan(second):
        return True
    return first == second


def _comparable(record: Any, ignore: Iterable[str]) -> Dict[str, Any]:
    """The record as the store keeps it (a record dataclass: its fields), the keys ``ignore`` left out."""
    return {key: value for key, value in record_dict(record).items() if key not in set(ignore)}


def _in_context(run: Callable[[Any, RunContext], Dict[str, Any]], spec: Any) -> Dict[str, Any]:
    return run(spec, RunContext())


def assert_every_key_setting_matters(
    run: Callable[[Any], Dict[str, Any]],
    spec: Any,
    *,
    changes: Dict[str, Any] = None,
    skip: Dict[str, str] = None,
    ignore: Iterable[str] = ("seconds",),
) -> None:
    """Run ``spec`` (twice: it must repeat exactly) and one changed copy per key setting; every change must
    change the record.

    Args:
        run: the task's ``run_job``.
        spec: a frozen dataclass job spec; fields with ``metadata={"key": False}`` are not part of the key.
        changes: ``"field"`` or ``"field.entry"`` (an entry of a pairs, mapping or dataclass setting) → the
            value to try (default: ints + 1, floats × 1.5, booleans flipped).
        skip: ``"field"`` or ``"field.entry"`` → why it is not checked here (e.g. ``"device": "CPU only"``).
        ignore: record fields that vary between identical runs (timings).
    """
    changes, skip = dict(changes or {}), dict(skip or {})
    if takes_context(run):  # run_job(spec, context): the default context, the CPU
        run = partial(_in_context, run)
    base = _comparable(run(spec), ignore)
    again = _comparable(run(spec), ignore)
    varying = sorted(key for key in set(base) | set(again) if not _equal(base.get(key), again.get(key)))
    assert not varying, (
        f"the same spec gave different {varying} in two runs: pass them in ignore= (timings) or fix "
        "the nondeterminism; otherwise no change can be told from noise"
    )
    unchanged: List[str] = []
    unchangeable: List[str] = []
    for field in dataclasses.fields(spec):
        if field.metadata.get("key", True) is False or field.name in skip:
            continue
        value = getattr(spec, field.name)
        if value is None and field.name not in changes:
            continue  # an absent part (e.g. no diffusion settings for a model without diffusion)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            candidates = []
            for inner in dataclasses.fields(value):
                name = f"{field.name}.{inner.name}"
                if name in skip or inner.metadata.get("key", True) is False:
                    continue
                new = changes.get(name, _default_change(getattr(value, inner.name)))
                if new is None:
                    unchangeable.append(name)
                    continue
                candidates.append((name, dataclasses.replace(value, **{inner.name: new})))
        elif _is_pairs(value) or isinstance(value, Mapping):
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
                altered = entries[:position] + [(entry, new)] + entries[position + 1 :]
                candidates.append((name, dict(altered) if isinstance(value, Mapping) else tuple(altered)))
        else:
            new = changes.get(field.name, _default_change(value))
            if new is None:
                unchangeable.append(field.name)
                continue
            candidates = [(field.name, new)]
        for name, new in candidates:
            record = _comparable(run(dataclasses.replace(spec, **{field.name: new})), ignore)
            if _equal(record, base):
                unchanged.append(name)
    assert not unchangeable, f"give a change (or a reason to skip) for the key setting(s) {unchangeable}"
    assert not unchanged, (
        f"setting(s) {unchanged} reach the job spec but not the result: every value computes alike"
    )
