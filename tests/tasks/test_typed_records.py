"""Every task returns a typed record: its ``run_job`` gives a record dataclass and the declaration the engine
checks stored records against is derived from it (``Task.record_type_of``), never written by hand; a
record stored before a read field existed, or holding another kind, is named, not read."""

import dataclasses

from pdenets.experiments.records import fields_of_dataclass, record_dict, record_problem
from pdenets.experiments.task import Task, registered_tasks

#: the one task that derives its declaration itself: from its typed checks, without the store's fields
DERIVED = {"coin-claims"}


def test_no_builtin_task_writes_its_record_schema_by_hand():
    builtin = {
        name: task for name, task in registered_tasks().items() if task.__module__.startswith("pdenets.")
    }
    by_hand = sorted(
        name
        for name, task in builtin.items()
        if task.record_fields is not Task.record_fields and name not in DERIVED
    )
    assert not by_hand, f"{by_hand} declare their records by hand: return a record dataclass (record_type_of)"
    untyped = sorted(
        name
        for name, task in builtin.items()
        if task.record_type is None and task.record_type_of is Task.record_type_of and name not in DERIVED
    )
    assert not untyped, f"{untyped} name no record dataclass"


def test_the_typed_records_declare_what_the_summaries_read():
    from pdenets.tasks.coin_forecast.results import DiffusedCountRecord, ForecastRecord
    from pdenets.tasks.coin_tabular.results import NetworkRecord, SpreadingRecord
    from pdenets.tasks.geodesic.results import CifarRecord, DivergedRecord
    from pdenets.tasks.synthetic.results import PaperScriptRecord, SnapshotRecord

    assert (
        fields_of_dataclass(NetworkRecord) == fields_of_dataclass(SpreadingRecord) == {"accuracy": "fraction"}
    )
    script = fields_of_dataclass(PaperScriptRecord)
    assert (
        script["diff-resnet"]
        == script["resnet"]
        == {"correct": "integer", "reference": "integer", "seconds": "number"}
    )
    assert fields_of_dataclass(SnapshotRecord)["points"] == "list"
    assert fields_of_dataclass(DivergedRecord) == {
        "curve": [{"epoch": "integer", "lss": "number?"}],
        "diverged": "flag",
    }
    cifar = fields_of_dataclass(CifarRecord)
    assert cifar["official_accuracy"] == "fraction" and cifar["robustness"]["fgsm"]["accuracy"] == [
        "fraction"
    ]
    counts = fields_of_dataclass(DiffusedCountRecord)
    assert (
        counts["coin"]["mae_raw"] == "number"
        and "mae_raw" in counts
        and "coin" not in fields_of_dataclass(ForecastRecord)
    )
    # a training history stored only by learned models is neither declared nor stored as null
    assert "epochs" not in fields_of_dataclass(ForecastRecord)
    fields = {field.name: field for field in dataclasses.fields(ForecastRecord)}
    assert fields["epochs"].metadata["omit_none"]


def test_a_typed_record_is_stored_under_its_stored_names_and_checked_against_its_declaration():
    from pdenets.tasks.synthetic.results import PaperScriptRecord, ScriptCount

    record = PaperScriptRecord(
        part="paper-script", resnet=ScriptCount(1, 2, 0.5), diff_resnet=ScriptCount(3, 4, 0.5)
    )
    stored = record_dict(record)
    assert stored == {
        "part": "paper-script",
        "resnet": {"correct": 1, "reference": 2, "seconds": 0.5},
        "diff-resnet": {"correct": 3, "reference": 4, "seconds": 0.5},
    }
    fields = fields_of_dataclass(PaperScriptRecord)
    assert record_problem(stored, fields) is None
    stored["diff-resnet"]["correct"] = "3"
    assert record_problem(stored, fields) == "field 'diff-resnet.correct' holds text '3', not a whole number"
