"""Files for a user to open: every cell a spreadsheet would evaluate is written with an apostrophe in front
and read back as it was given, a number never is; a file is created in one step (a second writer of the name
is refused), never over or inside what it answers, and every path that cannot be written is one line."""

import os
import threading

import pytest

from pdenets._output import (
    OutputError,
    OutputExistsError,
    checked_output,
    csv_text,
    neutralized_cell,
    read_csv_rows,
    unneutralized_cell,
    write_csv,
)

FORMULAS = ["=cmd|' /C calc'!A0", "+1+cmd", "-2+3", "@SUM(A1)", "\t=x", "\r=x", "'=already", "''@twice"]
PLAIN = ["-0.25", "+3", "-1e-05", "-inf", "a-b", "x=1", "", "p(=cmd)", " =padded", "nan"]


@pytest.mark.parametrize("cell", FORMULAS)
def test_a_cell_a_spreadsheet_evaluates_gets_one_apostrophe_and_reads_back_as_given(cell):
    written = neutralized_cell(cell)
    assert written == "'" + cell and unneutralized_cell(written) == cell


@pytest.mark.parametrize("cell", PLAIN)
def test_numbers_and_other_text_are_written_as_they_are(cell):
    assert neutralized_cell(cell) == cell and unneutralized_cell(cell) == cell


def test_a_number_is_a_value_and_the_rule_reads_the_first_character_after_apostrophes():
    assert neutralized_cell(-1.5) == "-1.5" and neutralized_cell(None) == ""
    assert neutralized_cell("-1.5x") == "'-1.5x"  # not a number: a spreadsheet would try it as a formula
    assert unneutralized_cell("'plain") == "'plain"  # an apostrophe before a harmless character is the text's


def test_every_cell_of_a_file_headers_included_is_neutralized_and_reads_back(tmp_path):
    header, rows = ["id", "=label"], [["=1+2", "-3"], ["ok, with comma", '@"quoted"']]
    assert csv_text(header, rows).splitlines()[0] == "id,'=label"
    path = write_csv(tmp_path / "out.csv", header, rows)
    assert read_csv_rows(path) == [header] + rows


def test_without_overwrite_an_existing_file_and_one_created_meanwhile_are_refused(tmp_path, monkeypatch):
    path = write_csv(tmp_path / "p.csv", ["a"], [["1"]])
    with pytest.raises(OutputExistsError, match="p.csv exists; pass --overwrite"):
        write_csv(path, ["a"], [["2"]])
    assert isinstance(OutputExistsError("x"), FileExistsError)
    # another writer creates the file between the check and the write: the write is refused, its file kept
    racing = tmp_path / "race.csv"
    real_link = os.link

    def link_after_another_writer(source, target):
        racing.write_text("theirs\n")
        return real_link(source, target)

    monkeypatch.setattr(os, "link", link_after_another_writer)
    with pytest.raises(OutputExistsError, match="created by another writer meanwhile"):
        write_csv(racing, ["a"], [["mine"]])
    assert racing.read_text() == "theirs\n" and list(tmp_path.glob(".race-*")) == []


def test_two_writers_of_one_name_at_once_one_wins_the_other_is_refused(tmp_path):
    path, outcomes = tmp_path / "same.csv", []
    barrier = threading.Barrier(8)

    def write(number):
        barrier.wait()
        try:
            write_csv(path, ["writer"], [[str(number)]])
            outcomes.append("wrote")
        except OutputExistsError:
            outcomes.append("refused")

    threads = [threading.Thread(target=write, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused"] * 7 + ["wrote"]
    assert len(read_csv_rows(path)) == 2


def test_overwrite_replaces_in_one_rename(tmp_path):
    path = write_csv(tmp_path / "p.csv", ["a"], [["1"]])
    write_csv(path, ["a"], [["2"]], overwrite=True)
    assert read_csv_rows(path) == [["a"], ["2"]]


def test_an_output_over_inside_or_beside_its_inputs_is_refused_even_with_overwrite(tmp_path):
    folder = tmp_path / "dataset"
    (folder / "sub").mkdir(parents=True)
    (folder / "labels.csv").write_text("x\n")
    table = tmp_path / "table.csv"
    table.write_text("x\n")
    for target, inputs, words in (
        (folder / "labels.csv", [folder], "is inside the dataset folder"),
        (folder / "sub" / "new.csv", [folder], "is inside the dataset folder"),
        (table, [table], "is an input file"),
        (tmp_path / "x" / ".." / "table.csv", [table], "is an input file"),
    ):
        with pytest.raises(OutputError, match=words):
            write_csv(target, ["a"], [["1"]], overwrite=True, inputs=inputs)
    assert (folder / "labels.csv").read_text() == table.read_text() == "x\n"
    write_csv(tmp_path / "beside.csv", ["a"], [["1"]], inputs=[folder, table])  # a sibling is fine


def test_paths_that_cannot_be_written_are_one_line(tmp_path):
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "file").write_text("")
    for target, words in (
        (tmp_path / "folder.csv", "is a folder; give the path of a file"),
        (tmp_path / "file" / "p.csv", "is a file, not a folder"),
    ):
        with pytest.raises(OutputError, match=words) as error:
            write_csv(target, ["a"], [["1"]])
        assert "\n" not in str(error.value) and ".p-" not in str(error.value)
    with pytest.raises(OutputError, match=r"must end in \.csv"):
        checked_output(tmp_path / "p.json", suffix=".csv")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(OutputError, match="cannot be written"):
            write_csv(locked / "p.csv", ["a"], [["1"]])
