"""A user's texts with labels: every format, the columns found by name or given, unlabelled rows kept with
their ids, and each malformed file refused naming the file and the line."""

import json

import pytest

from pdenets.data.errors import DatasetError
from pdenets.data.text_table import read_text_table

CSV = (
    "id,text,intent\nq1,book a flight,travel\nq2,what is my balance,banking\nq3,rent a car,\n"
    "q4,a trip,travel\n"
)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_csv_with_an_empty_label_keeps_that_row_unlabelled(tmp_path):
    table = read_text_table(_write(tmp_path, "t.csv", CSV))
    assert table.texts == ("book a flight", "what is my balance", "rent a car", "a trip")
    assert table.class_names == ("banking", "travel")
    assert table.labels == (1, 0, -1, 1)
    assert table.labelled_ids == ("q1", "q2", "q4") and table.unlabelled_ids == ("q3",)
    assert (table.text_column, table.label_column) == ("text", "intent")


def test_the_same_texts_in_every_format_read_the_same(tmp_path):
    rows = [("q1", "book a flight", "travel"), ("q2", "my balance", "banking"), ("q3", "a car", "")]
    tsv = "ID\tUtterance\tLabel\n" + "".join(f"{i}\t{t}\t{label}\n" for i, t, label in rows)
    jsonl = "".join(
        json.dumps({"id": i, "text": t, **({"label": label} if label else {})}) + "\n" for i, t, label in rows
    )
    tables = [
        read_text_table(_write(tmp_path, "t.tsv", tsv)),
        read_text_table(_write(tmp_path, "t.jsonl", jsonl)),
    ]
    for table in tables:
        assert table.texts == ("book a flight", "my balance", "a car")
        assert table.labels == (1, 0, -1) and table.ids == ("q1", "q2", "q3")
    txt = read_text_table(_write(tmp_path, "t.txt", "travel\tbook a flight\nbanking\tmy balance\n\na car\n"))
    assert txt.labels == (1, 0, -1) and txt.ids == ("1", "2", "4")  # ids: the line numbers


def test_columns_given_by_name_win_and_the_text_column_may_be_the_one_left(tmp_path):
    text = "review,stars,note\ngreat film,5,x\nawful film,1,y\nfine,5,z\n"
    table = read_text_table(
        _write(tmp_path, "r.csv", text), text_column="review", label_column="stars", id_column="note"
    )
    assert table.class_names == ("1", "5") and table.ids == ("x", "y", "z")
    left = read_text_table(_write(tmp_path, "l.csv", "sentence_en,label\nhello there,a\nbye now,b\n"))
    assert left.texts == ("hello there", "bye now")  # the one column that is neither label nor id


def test_numeric_labels_are_one_class_by_value(tmp_path):
    table = read_text_table(_write(tmp_path, "n.csv", "text,label\na,1\nb,1.0\nc, 1 \nd,2\n"))
    assert table.class_names == ("1", "2") and table.labels == (0, 0, 0, 1)


def test_hostile_ids_and_texts_are_read_as_written(tmp_path):
    long_id = "x" * 10_000
    ids = ["<script>alert(1)</script>", 'a,"b"', "line\nbreak", long_id, "=cmd|' /C calc'!A0"]
    path = tmp_path / "h.csv"
    import csv

    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["id", "text", "label"])
        for index, row_id in enumerate(ids):
            writer.writerow([row_id, f"text {index} <b>bold</b>", "ab"[index % 2]])
    table = read_text_table(path)
    assert table.ids == tuple(ids) and table.texts[0] == "text 0 <b>bold</b>"


@pytest.mark.parametrize(
    "name, text, kwargs, message",
    [
        ("a.csv", "id,text,label\n1,hi,a\n2,,b\n", {}, "line 3 has an empty text"),
        ("a.csv", "id,text,label\n1,hi,a\n1,yo,b\n", {}, "line 3 repeats the id '1' of line 2"),
        ("a.csv", "id,text,label\n1,hi,a\n2,yo\n", {}, "line 3 has 2 cells, the header 3"),
        ("a.csv", "text,label\nhi,a\nyo,a\nno,\n", {}, "2 labelled text(s) of 1 class(es)"),
        ("a.csv", "text,tag\nhi,a\nyo,b\n", {}, "no label column (named label, class"),
        ("a.csv", "words,more,label\nhi,x,a\n", {}, "which column holds the texts?"),
        ("a.csv", "text,label\nhi,a\nyo,b\n", {"label_column": "intent"}, "no label column 'intent'"),
        ("a.csv", "text,label\nhi,a\nyo,b\n", {"text_column": "label"}, "one column is read for two roles"),
        ("a.jsonl", '{"text": "hi", "label": "a"}\n[1, 2]\n', {}, "line 2 is not a JSON object"),
        ("a.jsonl", '{"text": "hi", "label": "a"}\n{oops\n', {}, "line 2 is not JSON"),
        ("a.txt", "a\thi\nb\tyo\n", {"text_column": "x"}, "a .txt file has no columns"),
        ("a.xlsx", "text,label\n", {}, "must end in .csv, .tsv, .jsonl, .txt"),
        ("a.csv", "\n\n", {}, "holds no rows"),
        ("a.csv", "id,text,label\n,hi,a\n", {}, "line 2 has an empty id"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_file_and_the_line(tmp_path, name, text, kwargs, message):
    path = _write(tmp_path, name, text)
    with pytest.raises(DatasetError) as error:
        read_text_table(path, **kwargs)
    assert message in str(error.value) and str(path) in str(error.value)
