"""The strict number parsers at the edges of float64 and int64; the text and CSV readers' line numbers,
byte-order marks and budget; label cells compared by value."""

import csv

import pytest

from pdenets.data.csvfile import (
    normalized_labels,
    parse_integer,
    parse_number,
    read_csv_rows,
    read_csv_table,
    read_text_file,
    shown_value,
)
from pdenets.data.errors import DatasetError, DatasetNotFoundError


def test_shown_value_quotes_text_and_cuts_long_values():
    assert shown_value("1_000") == "'1_000'" and shown_value(True) == "True" and shown_value(-12) == "-12"
    assert shown_value("x" * 50) == "'" + "x" * 40 + "'… (50 characters)"
    assert shown_value(-(10**45)) == "-" + "1" + "0" * 38 + "… (46 digits)"  # digits without the sign
    assert shown_value([0] * 30) == repr([0] * 30)[:40] + "… (90 characters)"
    assert shown_value(2**20000) == "an integer of 20001 bits"  # beyond what Python converts to text


def test_parse_number_reads_the_range_of_float64_and_nothing_lenient():
    largest = "1.7976931348623157e308"
    assert parse_number(largest) == 1.7976931348623157e308 and parse_number(" -" + largest) < 0
    assert parse_number("1e-400") == 0.0  # an underflow is a number, read as float64 reads it
    assert (parse_number(".5"), parse_number("5."), parse_number("+.5e-1")) == (0.5, 5.0, 0.05)
    for text in ("1.8e308", "-1e400"):
        with pytest.raises(ValueError, match=f"^'{text}' is too large for a float64"):
            parse_number(text, finite=False)
    assert float("\uff11") == 1.0 and float("\u0661\u0662") == 12.0 and float("1_0") == 10.0  # Python's float
    for text in ("\uff11", "\u0661\u0662", "1_0", "0x10", "1,5", ".", "e5", ""):
        with pytest.raises(ValueError, match="is not a number$"):
            parse_number(text, finite=False)
    assert parse_number("-Infinity", finite=False) == float("-inf")
    with pytest.raises(ValueError, match="^'-Infinity' is not a finite number$"):
        parse_number("-Infinity")


def test_parse_integer_takes_whole_floats_and_names_what_it_reads():
    assert (parse_integer("1e3"), parse_integer(" -0 "), parse_integer("+4.000")) == (1000, 0, 4)
    with pytest.raises(ValueError, match="^'2.5' is not a whole number$"):
        parse_integer("2.5")
    with pytest.raises(ValueError, match=r"^'1e19' is too large for a class id \(at most 2\^63 - 1\)$"):
        parse_integer("1e19", "class id")
    with pytest.raises(ValueError, match="^'99999999999999999999' is too large for an index"):
        parse_integer("99999999999999999999", "index")
    with pytest.raises(ValueError, match="^'nan' is not a finite number$"):
        parse_integer("nan")


def test_read_text_file_drops_the_mark_and_checks_the_budget_at_its_boundary(tmp_path, monkeypatch):
    path = tmp_path / "doc.json"
    path.write_bytes(b"\xef\xbb\xbf" + b"x" * 97)  # 100 bytes
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "800")  # 8 bytes of memory per byte of text
    assert read_text_file(path) == "x" * 97
    path.write_bytes(b"\xef\xbb\xbf" + b"x" * 98)
    with pytest.raises(
        DatasetError, match="doc.json: reading the file would need 808 B, more than the memory"
    ):
        read_text_file(path)
    monkeypatch.delenv("PDENETS_MEMORY_BUDGET")
    path.write_bytes(b"{\xff}")
    with pytest.raises(DatasetError) as caught:
        read_text_file(path, "a JSON document")
    assert str(caught.value) == f"{path}: not UTF-8 text; expected a JSON document"
    with pytest.raises(DatasetNotFoundError, match="missing file"):
        read_text_file(tmp_path / "none.json")


def test_csv_rows_keep_the_line_an_editor_shows(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text('\ufeffa,b\n\n"multi\nline",x\n,\n  ,  \nlast,1\n', encoding="utf-8")
    rows = read_csv_table(path)
    assert rows == [(1, ["a", "b"]), (3, ["multi\nline", "x"]), (7, ["last", "1"])]
    assert read_csv_rows(path) == [cells for _, cells in rows]
    path.write_bytes(b"id\n\xe9\n")  # Latin-1
    with pytest.raises(DatasetError, match="table.csv: not a UTF-8 text CSV file"):
        read_csv_table(path)


def test_a_field_beyond_the_csv_modules_limit_is_read(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("id,text\n1," + "y" * 200_000 + "\n")
    previous = csv.field_size_limit(131_072)  # the csv module's default
    try:
        rows = read_csv_table(path)
    finally:
        csv.field_size_limit(previous)
    assert rows[1][0] == 2 and len(rows[1][1][1]) == 200_000


def test_numeric_labels_are_classes_by_value_in_numeric_order():
    names, ids = normalized_labels(["2.50", "-1", "1e1", "10", "2.5", "0"])
    assert names == ["-1", "0", "2.5", "10"] and ids == [2, 0, 3, 3, 2, 1]
    assert normalized_labels(["1", "nan"]) == (["1", "nan"], [0, 1])  # nan is no finite number: as text
    assert normalized_labels(["B", "a", "b"]) == (["B", "a", "b"], [0, 1, 2])  # text is case-sensitive
