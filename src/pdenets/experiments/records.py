"""The stored records a task can read: each task declares the fields its summary and report read from the
record of a job (:meth:`~pdenets.experiments.task.Task.record_fields`), and the runner checks every stored
record against that declaration before summarizing. A record stored by an older version, edited by hand or
cut short, that lacks a field or holds a value of another kind is left out of the summary and named in the
report (its run key and the field), never met as a ``KeyError`` deep inside a table or silently dropped; so is
a number that is not finite (a hand-edited ``NaN`` or ``Infinity``) or out of its range (an accuracy of
``1e308``), which would otherwise be averaged away or dominate a mean.

A declaration maps a field name to its kind:

============  =============================================================
``number``    a finite ``int`` or ``float`` (not a ``bool``, NaN or infinity)
``fraction``  a ``number`` in ``[0, 1]`` (an accuracy, a share)
``integer``   an ``int`` (not a ``bool``)
``text``      a ``str``
``flag``      a ``bool``
``list``      a JSON array
``mapping``   a JSON object
a mapping     a JSON object holding these fields, checked the same way
``[kind]``    a JSON array whose every item has ``kind`` (``[{"epoch": "integer"}]``)
============  =============================================================

A kind ending in ``?`` (``"number?"``) also accepts ``None`` (JSON ``null``): a number a run could not
measure is stored as ``null`` (NaN and infinity are not JSON).

Examples:
    >>> fields = {"accuracy": "number", "epochs": "integer", "coin": {"step_size": "number"}}
    >>> record_problem({"accuracy": 0.8, "epochs": 12, "coin": {"step_size": 0.5}}, fields) is None
    True
    >>> record_problem({"epochs": 12, "coin": {}}, fields)
    "field 'accuracy' is missing"
    >>> record_problem({"accuracy": "0.8", "epochs": 12, "coin": {}}, fields)
    "field 'accuracy' holds text '0.8', not a number"
    >>> record_problem({"accuracy": 0.8, "epochs": 12, "coin": {"step": 1}}, fields)
    "field 'coin.step_size' is missing"
    >>> record_problem({"curve": [{"epoch": 1}, {"epoch": None}]}, {"curve": [{"epoch": "integer"}]})
    "field 'curve[1].epoch' holds null, not a whole number"
    >>> record_problem({"accuracy": float("nan")}, {"accuracy": "fraction"})
    "field 'accuracy' holds float nan, not a number in [0, 1]"
    >>> record_problem({"accuracy": 1e308}, {"accuracy": "fraction"})
    "field 'accuracy' holds float 1e+308, not a number in [0, 1]"
"""

from __future__ import annotations

import collections.abc
import dataclasses
import math
import typing
from typing import Any, List, Mapping, Optional, Sequence, Union

__all__ = [
    "FieldKind",
    "RecordFields",
    "record_problem",
    "fields_of_dataclass",
    "record_dict",
    "record_from_dict",
]

FieldKind = Union[str, Mapping[str, Any], List[Any]]
#: the fields a task reads from one record: name -> kind (see the module's table)
RecordFields = Mapping[str, FieldKind]

_KIND_WORDS = {
    "number": "a number",
    "fraction": "a number in [0, 1]",
    "integer": "a whole number",
    "text": "text",
    "flag": "true or false",
    "list": "a list",
    "mapping": "a mapping",
}


def _is_kind(value: Any, kind: str) -> bool:
    if kind in ("number", "fraction"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if isinstance(value, int):  # an integer beyond float64 is not a finite number
            return abs(value) < 2**1024 and (kind == "number" or 0 <= value <= 1)
        return math.isfinite(value) and (kind == "number" or 0.0 <= value <= 1.0)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "text":
        return isinstance(value, str)
    if kind == "flag":
        return isinstance(value, bool)
    if kind == "list":
        return isinstance(value, (list, tuple))
    if kind == "mapping":
        return isinstance(value, Mapping)
    raise ValueError(f"unknown record field kind {kind!r}; choose one of {', '.join(_KIND_WORDS)}")


def _shown(value: Any) -> str:
    kind = {str: "text", bool: "a flag", list: "a list", dict: "a mapping", type(None): "null"}.get(
        type(value), type(value).__name__
    )
    if isinstance(value, (list, dict)) or value is None:
        return kind
    text = repr(value)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"


def record_problem(record: Mapping[str, Any], fields: RecordFields, prefix: str = "") -> Optional[str]:
    """The first way ``record`` departs from ``fields`` (a declaration, see the module), in words naming the
    field; ``None`` where it holds every field with its kind."""
    if not isinstance(record, Mapping):
        where = f"field {prefix.rstrip('.')!r}" if prefix else "the record"
        return f"{where} holds {_shown(record)}, not a mapping"
    for name, kind in fields.items():
        path = f"{prefix}{name}"
        if name not in record:
            return f"field {path!r} is missing"
        problem = _value_problem(record[name], kind, path)
        if problem is not None:
            return problem
    return None


def _value_problem(value: Any, kind: FieldKind, path: str) -> Optional[str]:
    """How ``value`` (at ``path``) departs from ``kind``, or ``None``."""
    if isinstance(kind, Mapping):
        return record_problem(value, kind, prefix=f"{path}.")
    if isinstance(kind, list):
        if not isinstance(value, (list, tuple)):
            return f"field {path!r} holds {_shown(value)}, not a list"
        for position, item in enumerate(value):
            problem = _value_problem(item, kind[0], f"{path}[{position}]")
            if problem is not None:
                return problem
        return None
    if value is None and kind.endswith("?"):
        return None
    base = kind.rstrip("?")
    if not _is_kind(value, base):
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        words = "a finite number" if base == "number" and numeric else _KIND_WORDS[base]
        return f"field {path!r} holds {_shown(value)}, not {words}"
    return None


_PLAIN_KINDS = {float: "number", int: "integer", str: "text", bool: "flag", dict: "mapping", list: "list"}


def _kind_of_annotation(annotation: Any) -> FieldKind:
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Union and type(None) in arguments:
        (inner,) = [argument for argument in arguments if argument is not type(None)]
        kind = _kind_of_annotation(inner)
        return f"{kind}?" if isinstance(kind, str) else kind
    if origin in (list, tuple, collections.abc.Sequence) and arguments:
        return [_kind_of_annotation(arguments[0])]
    if origin in (dict, collections.abc.Mapping):
        return "mapping"
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return fields_of_dataclass(annotation)
    if annotation in _PLAIN_KINDS:
        return _PLAIN_KINDS[annotation]
    raise TypeError(f"no record field kind for the annotation {annotation!r}")


def _stored_name(field: dataclasses.Field) -> str:
    return field.metadata.get("stored_as", field.name)


def record_dict(record: Any) -> Any:
    """A record dataclass as the store keeps it: its fields by name (``metadata={"stored_as": …}``: under
    that name, e.g. one that is no Python name, ``"diff-resnet"``), nested dataclasses alike; a field with
    ``metadata={"omit_none": True}`` left out where it holds ``None`` (a value only some runs have); any
    other value as it is.

    Examples:
        >>> from dataclasses import dataclass, field
        >>> @dataclass
        ... class Count:
        ...     correct: int
        >>> @dataclass
        ... class Counts:
        ...     diff_resnet: Count = field(metadata={"stored_as": "diff-resnet"})
        ...     note: Optional[str] = field(default=None, metadata={"omit_none": True})
        >>> record_dict(Counts(Count(3)))
        {'diff-resnet': {'correct': 3}}
    """
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {
            _stored_name(field): record_dict(getattr(record, field.name))
            for field in dataclasses.fields(record)
            if not (field.metadata.get("omit_none") and getattr(record, field.name) is None)
        }
    if isinstance(record, dict):
        return {key: record_dict(value) for key, value in record.items()}
    if isinstance(record, (list, tuple)):
        return [record_dict(value) for value in record]
    return record


def _dataclass_in(annotation: Any) -> Optional[type]:
    """The dataclass an annotation names (itself, or inside ``Optional``), else ``None``."""
    if typing.get_origin(annotation) is Union:
        inner = [argument for argument in typing.get_args(annotation) if argument is not type(None)]
        annotation = inner[0] if len(inner) == 1 else None
    return annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) else None


def record_from_dict(cls: type, values: Mapping[str, Any]) -> Any:
    """The record dataclass ``cls`` from the values of its fields under their stored names (the inverse of
    :func:`record_dict`): a nested dataclass, or a list of them, is built from its mapping alike.

    Raises:
        TypeError: ``values`` lacks a field of ``cls`` or holds one it has not (naming both).

    Examples:
        >>> from dataclasses import dataclass, field
        >>> @dataclass
        ... class Count:
        ...     correct: int
        ...     diff_resnet: int = field(metadata={"stored_as": "diff-resnet"})
        >>> record_from_dict(Count, {"correct": 3, "diff-resnet": 4})
        Count(correct=3, diff_resnet=4)
        >>> record_from_dict(Count, {"correct": 3, "diff_resnet": 4})
        Traceback (most recent call last):
        ...
        TypeError: Count: no field for 'diff_resnet'
    """
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    names = {_stored_name(field) for field in fields}
    unknown = sorted(set(values) - names)
    if unknown:
        raise TypeError(f"{cls.__name__}: no field for {', '.join(map(repr, unknown))}")
    built = {}
    for field in fields:
        stored = _stored_name(field)
        if stored not in values:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                if not (field.metadata.get("omit_none")):
                    raise TypeError(f"{cls.__name__}: no field {stored!r} among {', '.join(values)}")
            continue
        value, annotation = values[stored], hints[field.name]
        inner = _dataclass_in(annotation)
        arguments = typing.get_args(annotation)
        listed = (
            _dataclass_in(arguments[0])
            if arguments and typing.get_origin(annotation) in (list, tuple, collections.abc.Sequence)
            else None
        )
        if inner is not None and isinstance(value, Mapping):
            value = record_from_dict(inner, value)
        elif listed is not None and isinstance(value, (list, tuple)):
            value = [record_from_dict(listed, item) if isinstance(item, Mapping) else item for item in value]
        built[field.name] = value
    return cls(**built)


def fields_of_dataclass(cls: type, leave_out: Sequence[str] = ()) -> RecordFields:
    """The declaration of a record that a typed row is built from (``Row(**record)``): each field of the
    dataclass ``cls`` (but ``leave_out``) with the kind of its annotation (``float``: a number, ``int``: a
    whole number, ``List[float]``: a list of numbers, ``Optional[...]``: may be null, a dataclass: its own
    fields). A field's ``metadata={"kind": "fraction"}`` names a narrower kind than its annotation's; a field
    with ``metadata={"read": False}`` is stored but read by no summary, and left out (a record stored before
    it existed is still read); a field is declared under its ``stored_as`` name (:func:`record_dict`).

    Examples:
        >>> from dataclasses import dataclass
        >>> from typing import List, Optional
        >>> @dataclass
        ... class Row:
        ...     sigma: float
        ...     points: int
        ...     estimates: List[float]
        ...     note: Optional[str] = None
        >>> fields_of_dataclass(Row)
        {'sigma': 'number', 'points': 'integer', 'estimates': ['number'], 'note': 'text?'}
    """
    hints = typing.get_type_hints(cls)
    return {
        _stored_name(field): field.metadata.get("kind") or _kind_of_annotation(hints[field.name])
        for field in dataclasses.fields(cls)
        if field.name not in leave_out and field.metadata.get("read", True)
    }
