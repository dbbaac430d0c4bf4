"""The user's split file: read exactly, its digest follows its content, and every line that cannot be used is
refused naming the file and the line."""

import pytest

from pdenets.data.errors import DatasetError
from pdenets.data.split_file import read_split_file

IDS = ["a", "b", "c", "d", "e", "<x>"]
LABELS = [0, 1, 0, 1, -1, 0]


def _read(tmp_path, text, **kwargs):
    path = tmp_path / "split.csv"
    path.write_text(text)
    return read_split_file(path, IDS, LABELS, **kwargs)


def test_the_sets_are_the_files_with_or_without_a_header_and_in_any_separator(tmp_path):
    split = _read(tmp_path, "node,set\na,train\nb,validation\nc,test\ne,test\n<x>,train\n")
    assert (split.train.tolist(), split.val.tolist(), split.test.tolist()) == ([0, 5], [1], [2, 4])
    same = _read(tmp_path, "# my split\n<x> TRAIN\nc\ttest\na , train\ne test\nb val\n")
    assert same.train.tolist() == [0, 5] and same.digest == split.digest  # order and spelling do not matter
    other = _read(tmp_path, "a,train\nb,val\nc,train\n")
    assert other.digest != split.digest and other.test.tolist() == []


@pytest.mark.parametrize(
    "text, kwargs, message",
    [
        ("a,train\nb,val\nz,test\n", {}, "line 3: 'z' is no item of the data"),
        (
            "a,train\nb,val\nq,test\n",
            {"outside": ["q"]},
            "line 3: 'q' is outside the graph's largest component",
        ),
        ("a,train\nb,val\na,test\n", {}, "line 3: 'a' is named again (first on line 1)"),
        ("a,train\nb,vall\n", {}, "line 2: unknown set 'vall'; use train, val or test"),
        ("a,train\ne,val\n", {}, "line 2: 'e' is in val but has no label"),
        ("a,train\nc,test\n", {}, "no item is in val"),
        ("a,train,x\n", {}, "line 1: expected 'id,split', got 3 cell(s)"),
    ],
)
def test_a_line_that_cannot_be_used_is_refused_naming_it(tmp_path, text, kwargs, message):
    with pytest.raises(DatasetError) as error:
        _read(tmp_path, text, **kwargs)
    assert message in str(error.value) and "split.csv" in str(error.value)
