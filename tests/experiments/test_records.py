"""The declaration of a stored record and the check of a record against it: each kind at its boundaries,
nested paths named in full, and declarations derived from a record dataclass."""

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import pytest

from pdenets.experiments.records import fields_of_dataclass, record_dict, record_from_dict, record_problem


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


@pytest.mark.parametrize(
    "value, kind, message",
    [
        (float("nan"), "number", "field 'x' holds float nan, not a finite number"),
        (float("-inf"), "number?", "field 'x' holds float -inf, not a finite number"),
        ("0.5", "number", "field 'x' holds text '0.5', not a number"),
        (True, "integer", "field 'x' holds a flag True, not a whole number"),
        (1, "flag", "field 'x' holds int 1, not true or false"),
        ({"a": 1}, "text", "field 'x' holds a mapping, not text"),
        ("a", "integer?", "field 'x' holds text 'a', not a whole number"),
        (1.5, "fraction?", "field 'x' holds float 1.5, not a number in [0, 1]"),
        ([1], "mapping", "field 'x' holds a list, not a mapping"),
    ],
)
def test_each_refusal_names_the_value_and_the_kind_it_misses(value, kind, message):
    assert record_problem({"x": value}, {"x": kind}) == message


@pytest.mark.parametrize("kind", ["number?", "fraction?", "integer?", "text?", "flag?", "list?", "mapping?"])
def test_a_kind_ending_in_a_question_mark_also_takes_null_and_only_that_kind_otherwise(kind):
    assert record_problem({"x": None}, {"x": kind}) is None
    assert record_problem({"x": None}, {"x": kind[:-1]}) == f"field 'x' holds null, not {_words(kind[:-1])}"


def _words(kind):
    return {
        "number": "a number",
        "fraction": "a number in [0, 1]",
        "integer": "a whole number",
        "text": "text",
        "flag": "true or false",
        "list": "a list",
        "mapping": "a mapping",
    }[kind]


def test_lists_of_a_kind_check_every_item_and_name_its_position():
    fields = {"curve": [{"epoch": "integer", "loss": "number?"}], "seeds": ["integer"]}
    assert record_problem({"curve": [], "seeds": ()}, fields) is None  # empty, and a tuple is a list
    good = {"curve": [{"epoch": 1, "loss": None}, {"epoch": 2, "loss": 0.5}], "seeds": (0, 1), "extra": "x"}
    assert record_problem(good, fields) is None  # a field nobody declared is nobody's concern
    assert record_problem({**good, "curve": [{"epoch": 1, "loss": 0.1}, {"loss": 0.2}]}, fields) == (
        "field 'curve[1].epoch' is missing"
    )
    assert (
        record_problem({**good, "curve": {"epoch": 1}}, fields) == "field 'curve' holds a mapping, not a list"
    )
    assert record_problem({**good, "seeds": [0, 1, 2.0]}, fields) == (
        "field 'seeds[2]' holds float 2.0, not a whole number"
    )
    # the first problem in the declaration's order is the one named
    assert record_problem({"seeds": ["a"]}, fields) == "field 'curve' is missing"


def test_annotations_map_to_their_kinds_a_flag_is_no_integer_and_metadata_narrows_or_hides():
    @dataclass
    class Row:
        accuracy: float = field(metadata={"kind": "fraction"})
        converged: bool = True
        maybe: Optional[bool] = None
        shares: Tuple[float, ...] = ()
        extra: Dict[str, int] = field(default_factory=dict)
        debug: str = field(default="", metadata={"read": False})

    fields = fields_of_dataclass(Row)
    assert fields == {
        "accuracy": "fraction",
        "converged": "flag",
        "maybe": "flag?",
        "shares": ["number"],
        "extra": "mapping",
    }
    record = {"accuracy": 0.5, "converged": False, "maybe": None, "shares": [0.25, 1], "extra": {}}
    assert record_problem(record, fields) is None  # no `debug`: a record stored before it existed
    assert record_problem({**record, "accuracy": 1.5}, fields) == (
        "field 'accuracy' holds float 1.5, not a number in [0, 1]"
    )
    assert (
        record_problem({**record, "converged": 0}, fields)
        == "field 'converged' holds int 0, not true or false"
    )


def test_abstract_sequence_and_mapping_annotations_have_their_kinds():
    from typing import Mapping, Sequence

    @dataclass
    class Abstract:
        counts: Sequence[int]
        named: Mapping[str, float]

    assert fields_of_dataclass(Abstract) == {"counts": ["integer"], "named": "mapping"}


@dataclasses.dataclass(frozen=True)
class _Score:
    accuracy: float


@dataclasses.dataclass(frozen=True)
class _Tests:
    held_out: _Score = dataclasses.field(metadata={"stored_as": "held-out"})


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Run:
    tests: _Tests
    stages: typing.List[_Score]
    note: typing.Optional[str] = dataclasses.field(default=None, metadata={"omit_none": True})


def test_a_record_comes_back_from_its_stored_dict_nested_and_listed_alike():
    stored = {"tests": {"held-out": {"accuracy": 0.5}}, "stages": [{"accuracy": 0.1}, {"accuracy": 0.2}]}
    record = record_from_dict(_Run, stored)
    assert record == _Run(tests=_Tests(_Score(0.5)), stages=[_Score(0.1), _Score(0.2)])
    assert record_dict(record) == stored  # a None the record may omit is not stored
    assert record_dict(dataclasses.replace(record, note="n"))["note"] == "n"
    assert fields_of_dataclass(_Run) == {
        "tests": {"held-out": {"accuracy": "number"}},
        "stages": [{"accuracy": "number"}],
        "note": "text?",
    }


def test_a_stored_dict_with_a_field_too_many_or_too_few_is_refused_naming_it():
    with pytest.raises(TypeError, match="_Tests: no field for 'held_out'"):
        record_from_dict(_Tests, {"held_out": {"accuracy": 0.5}})
    with pytest.raises(TypeError, match="_Run: no field 'stages' among tests"):
        record_from_dict(_Run, {"tests": {"held-out": {"accuracy": 0.5}}})
