"""The declaration of a stored record and the check of a record against it: each kind at its boundaries,
nested paths named in full, and declarations derived from a record dataclass."""

import math
from dataclasses import dataclass
from typing import Dict, List, Optional

import pytest

from pdenets.experiments.records import fields_of_dataclass, record_problem


@pytest.mark.parametrize(
    "value, kind, accepted",
    [
        (0, "fraction", True),
        (1.0, "fraction", True),
        (math.nextafter(1.0, 2.0), "fraction", False),
        (-0.0, "fraction", True),
        (-1e-300, "fraction", False),
        (True, "number", False),  # a flag is no number
        (2**1023, "number", True),
        (2**1024, "number", False),  # beyond float64: not a finite number
        (float("inf"), "number", False),
        (3, "integer", True),
        (3.0, "integer", False),
        (False, "integer", False),
        (None, "number?", True),
        (None, "number", False),
        ("x", "text", True),
        (0, "flag", False),
        ((1, 2), "list", True),
        ({}, "mapping", True),
    ],
)
def test_each_kind_at_its_boundaries(value, kind, accepted):
    assert (record_problem({"field": value}, {"field": kind}) is None) == accepted


def test_the_first_problem_is_named_with_its_whole_path():
    fields = {"coin": {"rows": [{"sigma": "number", "inside": "integer"}]}, "seconds": "number"}
    good = {"coin": {"rows": [{"sigma": 0.5, "inside": 3}, {"sigma": 1.0, "inside": 4}]}, "seconds": 1.0}
    assert record_problem(good, fields) is None
    bad = {"coin": {"rows": [{"sigma": 0.5, "inside": 3}, {"sigma": 1.0, "inside": 4.5}]}, "seconds": "1"}
    assert record_problem(bad, fields) == "field 'coin.rows[1].inside' holds float 4.5, not a whole number"
    assert record_problem({"coin": [], "seconds": 1.0}, fields) == "field 'coin' holds a list, not a mapping"
    assert record_problem(["not", "a", "record"], fields) == "the record holds a list, not a mapping"
    long = "x" * 60
    assert record_problem({"seconds": long}, {"seconds": "number"}) == (
        "field 'seconds' holds text '" + "x" * 36 + "..., not a number"
    )


def test_an_unknown_kind_is_a_declaration_bug():
    with pytest.raises(ValueError, match="unknown record field kind 'percent'"):
        record_problem({"accuracy": 0.5}, {"accuracy": "percent"})


@dataclass
class Stage:
    width: int
    scores: List[float]


@dataclass
class Run:
    accuracy: float
    stages: List[Stage]
    note: Optional[str]
    extra: Dict[str, float]
    stage: Stage
    key: str = ""


def test_a_record_dataclass_declares_its_fields_nested_optional_and_left_out():
    assert fields_of_dataclass(Run, leave_out=("key",)) == {
        "accuracy": "number",
        "stages": [{"width": "integer", "scores": ["number"]}],
        "note": "text?",
        "extra": "mapping",
        "stage": {"width": "integer", "scores": ["number"]},
    }
    record = {"accuracy": 0.5, "stages": [{"width": 2, "scores": []}], "note": None, "extra": {}}
    record["stage"] = {"width": 2, "scores": [0.1, "high"]}
    assert record_problem(record, fields_of_dataclass(Run, ("key",))) == (
        "field 'stage.scores[1]' holds text 'high', not a number"
    )


def test_an_annotation_without_a_kind_is_refused():
    @dataclass
    class Odd:
        value: complex

    with pytest.raises(TypeError, match="no record field kind"):
        fields_of_dataclass(Odd)


def test_a_field_may_name_a_narrower_kind_or_be_stored_without_being_read():
    from dataclasses import field

    @dataclass
    class Scored:
        accuracy: float = field(metadata={"kind": "fraction"})
        loss: float = field(metadata={"read": False})
        epochs: int = 0

    assert fields_of_dataclass(Scored) == {"accuracy": "fraction", "epochs": "integer"}
    assert record_problem({"accuracy": 1.5, "epochs": 3}, fields_of_dataclass(Scored)) == (
        "field 'accuracy' holds float 1.5, not a number in [0, 1]"
    )
    assert record_problem({"accuracy": 0.5, "epochs": 3}, fields_of_dataclass(Scored)) is None  # no loss
