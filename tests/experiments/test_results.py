"""Typed task results: the plain form's rule, and the runner passing typed results to the report."""

import json
import re
import time
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any, Dict, List, Optional

import pytest
from toytask import ToyConfig, ToyTask

from pdenets.experiments import FLATTEN, OMIT_NONE, RunFacts, Stats, TaskResults, run_task
from pdenets.experiments.results import results_to_dict


@dataclass(frozen=True)
class Cell:
    runs: int
    accuracy: Stats
    extra: Dict[str, float] = field(default_factory=dict, metadata=FLATTEN)
    paper: Optional[float] = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class Summary(TaskResults):
    table: Dict[str, Cell]
    order: List[int]
    note: Optional[str] = field(default=None, metadata=OMIT_NONE)


def test_the_plain_form_follows_declaration_order_and_the_metadata_rules():
    cell = Cell(2, Stats.of([0.5, 1.0]), {"auroc": 0.7}, paper=81.5)
    plain = Summary(table={"cora": cell, "citeseer": Cell(1, Stats.of([]))}, order=[3, 1]).to_dict()
    assert list(plain) == ["table", "order", "figures"]  # note is None: left out; no run facts yet
    assert list(plain["table"]) == ["cora", "citeseer"]  # a mapping keeps its order
    assert plain["table"]["cora"] == {
        "runs": 2,
        "accuracy": {"mean": 0.75, "std": 0.25, "min": 0.5, "max": 1.0, "median": 0.75, "count": 2},
        "auroc": 0.7,
        "paper": 81.5,
    }
    assert list(plain["table"]["citeseer"]) == ["runs", "accuracy"]  # empty flattened dict, None omitted


def test_run_facts_and_figures_come_last():
    summary = Summary(table={}, order=[], note="n", run=RunFacts(4, 3, 1.5, report_only=True))
    summary.figures["curve"] = "curve.png"
    plain = summary.to_dict()
    assert list(plain) == [
        "table",
        "order",
        "note",
        "runs_planned",
        "runs_stored",
        "wall_seconds",
        "report_only",
        "figures",
    ]
    assert (plain["runs_planned"], plain["runs_stored"], plain["figures"]) == (4, 3, {"curve": "curve.png"})
    assert "report_only" not in Summary(table={}, order=[], run=RunFacts(1, 1, 0.1)).to_dict()


def test_results_are_frozen_and_a_bad_flattened_field_is_named():
    summary = Summary(table={}, order=[])
    with pytest.raises(FrozenInstanceError):
        summary.order = [1]  # type: ignore[misc]

    @dataclass(frozen=True)
    class Bad:
        value: int = field(default=3, metadata=FLATTEN)

    with pytest.raises(TypeError, match=r"Bad\.value is flattened .* not int"):
        results_to_dict(Bad())


@dataclass(frozen=True)
class ToyResults(TaskResults):
    total: float
    values: List[float]


class TypedToyTask(ToyTask):
    """The toy task with typed results (not registered: run_task takes the instance)."""

    seen: List[Any] = []

    def summarize(self, records):
        ok = [r for r in records if r["status"] == "ok"]
        return ToyResults(total=sum(r["value"] for r in ok), values=[r["value"] for r in ok])

    def report(self, results, records, run_dir):
        TypedToyTask.seen.append(results)
        results.figures["values"] = "values.png"
        self.write_report(self.new_report(results, "typed toy"), run_dir)


def test_the_runner_hands_the_report_typed_results_with_run_facts(tmp_path):
    TypedToyTask.seen.clear()
    outcome = run_task(TypedToyTask(ToyConfig(count=3, workers=1)), out=tmp_path / "run", progress=False)
    (seen,) = TypedToyTask.seen
    assert isinstance(seen, ToyResults) and seen.total == 0 + 1 + 2
    assert (seen.run.runs_planned, seen.run.runs_stored, seen.run.report_only) == (3, 3, False)
    assert outcome.summary.figures is seen.figures and outcome.summary.values == seen.values
    written = json.loads((tmp_path / "run" / "results.json").read_text())
    assert written == outcome.results
    assert written["values"] == [0.0, 1.0, 2.0] and written["figures"] == {"values": "values.png"}
    assert (written["runs_planned"], written["runs_stored"]) == (3, 3)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "3 of 3 runs stored" in report

    again = run_task(
        TypedToyTask(ToyConfig(count=3, workers=1)), out=tmp_path / "run", report_only=True, progress=False
    )
    assert again.summary.run.report_only and again.results["report_only"] is True


class SlowReportToyTask(TypedToyTask):
    """The typed toy task whose report takes a while after it is started (a model fitted for the predictions
    file)."""

    def report(self, results, records, run_dir):
        report = self.new_report(results, "slow toy")
        time.sleep(0.3)
        self.write_report(report, run_dir)


def test_a_run_has_one_wall_time_from_the_command_to_its_report(tmp_path):
    """The report, results.json and the terminal's figure are one number, counted from when the command began
    (reading the data included) to when the report is written (the report's own work included)."""
    from pdenets.experiments.results import wall_time

    started = time.perf_counter() - 5.0  # the command began 5 s ago
    outcome = run_task(
        SlowReportToyTask(ToyConfig(count=2, workers=1)),
        out=tmp_path / "run",
        progress=False,
        started=started,
    )
    written = json.loads((tmp_path / "run" / "results.json").read_text())
    assert outcome.seconds == written["wall_seconds"] == outcome.summary.run.wall_seconds
    assert 5.3 <= outcome.seconds < time.perf_counter() - started
    for report in ("report.md", "report.html"):
        stated = re.findall(r"wall time ([0-9.]+ s)", (tmp_path / "run" / report).read_text())
        assert stated == [wall_time(outcome.seconds)]


class DeclaredToyTask(TypedToyTask):
    """The typed toy task declaring the record field its summary reads."""

    def record_fields(self, spec, record):
        return {"value": "number"}


def test_a_stored_record_missing_a_field_or_of_another_kind_is_left_out_and_named(tmp_path):
    from ..helpers.stores import drop_field, edit_record, set_field

    run = tmp_path / "run"
    run_task(DeclaredToyTask(ToyConfig(count=4, workers=1)), out=run, progress=False)
    missing = edit_record(run, drop_field("value"), where=lambda spec: spec["index"] == 1)
    text = edit_record(run, set_field("value", "2.0"), where=lambda spec: spec["index"] == 2)
    outcome = run_task(
        DeclaredToyTask(ToyConfig(count=4, workers=1)), out=run, report_only=True, progress=False
    )
    assert outcome.summary.total == 0.0 + 3.0 and outcome.stored == 4  # runs 0 and 3 are summarized
    assert outcome.left_out == (
        (missing, "field 'value' is missing"),
        (text, "field 'value' holds text '2.0', not a number"),
    )
    written = json.loads((run / "results.json").read_text())
    assert written["runs_left_out"] == [{"key": k, "problem": p} for k, p in outcome.left_out]
    report = (run / "report.md").read_text()
    assert "**2 stored runs are left out of every table and figure below**" in report
    assert f"`{missing}`: field 'value' is missing" in report
    # a task without a declaration reads what it reads: nothing is left out, nothing is said
    plain = run_task(TypedToyTask(ToyConfig(count=4, workers=1)), out=tmp_path / "other", progress=False)
    assert plain.left_out == () and "runs_left_out" not in plain.results


class FractionToyTask(TypedToyTask):
    """The typed toy task whose record's value is a share in [0, 1] (as an accuracy is)."""

    def record_fields(self, spec, record):
        return {"value": "fraction"}


def _raw_record(run, key, text):
    import sqlite3

    with sqlite3.connect(run / "results.sqlite") as db:
        db.execute("UPDATE runs SET record = ? WHERE key = ?", (text, key))


def test_a_non_finite_or_out_of_range_stored_figure_is_left_out_never_averaged(tmp_path):
    """NaN and infinity (JSON lets a hand edit write them), 1e308 and a negative share, and ``true`` where a
    number is read: each is left out with its key and field, and the mean and its n hold only the others."""
    from ..helpers.stores import edit_record, set_field

    run = tmp_path / "run"
    config = ToyConfig(count=6, workers=1)
    run_task(FractionToyTask(config), out=run, progress=False)
    for index in range(6):  # the toy's values are 0..5: make them shares
        edit_record(run, set_field("value", index / 10), where=lambda spec, i=index: spec["index"] == i)
    nan = edit_record(run, set_field("value", 0.0), where=lambda spec: spec["index"] == 1)
    _raw_record(run, nan, '{"value": NaN}')
    huge = edit_record(run, set_field("value", 1e308), where=lambda spec: spec["index"] == 2)
    negative = edit_record(run, set_field("value", -0.1), where=lambda spec: spec["index"] == 3)
    flag = edit_record(run, set_field("value", True), where=lambda spec: spec["index"] == 4)
    outcome = run_task(FractionToyTask(config), out=run, report_only=True, progress=False)
    assert outcome.summary.total == pytest.approx(0.0 + 0.5)  # runs 0 and 5 alone
    assert outcome.left_out == (
        (nan, "field 'value' holds float nan, not a number in [0, 1]"),
        (huge, "field 'value' holds float 1e+308, not a number in [0, 1]"),
        (negative, "field 'value' holds float -0.1, not a number in [0, 1]"),
        (flag, "field 'value' holds a flag True, not a number in [0, 1]"),
    )
    report = (run / "report.md").read_text()
    assert "**4 stored runs are left out of every table and figure below**" in report
    # the boundaries of a share are shares; a plain number need only be finite
    edit_record(run, set_field("value", 1.0), key=huge)
    edit_record(run, set_field("value", 0), key=negative)
    again = run_task(FractionToyTask(config), out=run, report_only=True, progress=False)
    assert [key for key, _ in again.left_out] == [nan, flag]
    plain = run_task(DeclaredToyTask(config), out=run, report_only=True, progress=False)
    assert [(key, problem) for key, problem in plain.left_out] == [
        (nan, "field 'value' holds float nan, not a finite number"),
        (flag, "field 'value' holds a flag True, not a number"),
    ]


def test_a_stored_record_that_is_not_json_is_left_out_naming_its_key(tmp_path):
    run = tmp_path / "run"
    config = ToyConfig(count=3, workers=1)
    run_task(DeclaredToyTask(config), out=run, progress=False)
    from ..helpers.stores import edit_record

    broken = edit_record(run, lambda record: None, where=lambda spec: spec["index"] == 1)
    _raw_record(run, broken, '{"value": 1.0')  # cut short
    outcome = run_task(DeclaredToyTask(config), out=run, report_only=True, progress=False)
    assert outcome.summary.total == 0.0 + 2.0
    ((key, problem),) = outcome.left_out
    assert key == broken and problem.startswith("its stored record is not JSON (")
    # a task that declares no field still never reads it
    plain = run_task(TypedToyTask(config), out=run, report_only=True, progress=False)
    assert [key for key, _ in plain.left_out] == [broken]


def test_a_none_field_without_omit_none_stays_in_the_plain_form_as_null():
    """Only a field declared with OMIT_NONE leaves the plain form while None; any other None is written (a
    reader sees the field exists and holds no value)."""

    @dataclass(frozen=True)
    class Row:
        measured: Optional[float]
        note: Optional[str] = field(default=None, metadata=OMIT_NONE)

    @dataclass(frozen=True)
    class Plain(TaskResults):
        rows: List[Row]
        best: Optional[str] = None

    plain = Plain(rows=[Row(None), Row(1.5, "x")]).to_dict()
    assert plain["rows"] == [{"measured": None}, {"measured": 1.5, "note": "x"}]
    assert "best" in plain and plain["best"] is None
