"""Every file reader on random small inputs: a DatasetError or a valid result, quickly, never another
exception.

Random bytes under each reader's suffix, and random JSON documents built from the keys the
layouts look for (so that the readers' deeper checks are reached). The memory budget is set to
64 MiB: a tiny file that declares a large size must be refused by the budget, not by the allocator.
"""

import json
import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pdenets.data import DatasetError  # noqa: E402
from pdenets.data.fewshot import load_features  # noqa: E402
from pdenets.data.graphs import load_edge_list, load_npz  # noqa: E402
from pdenets.data.safe_pickle import load_array_pickle  # noqa: E402
from pdenets.data.tabular import load_tabular  # noqa: E402
from pdenets.data.temporal import load_temporal  # noqa: E402

FUZZ = settings(
    max_examples=100,
    deadline=3000,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(autouse=True)
def small_budget(monkeypatch):
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "64M")


def _only_dataset_errors(read, path):
    try:
        read(path)
    except DatasetError:
        pass


@pytest.mark.parametrize(
    "suffix, read",
    [
        (".json", load_temporal),
        (".csv", load_tabular),
        (".npz", load_features),
        (".pkl", load_features),
        (".pt", load_features),
        (".npz", load_npz),
        (".pkl", load_array_pickle),
    ],
)
@FUZZ
@given(content=st.binary(max_size=400))
def test_random_bytes(tmp_path, suffix, read, content):
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(content)
    _only_dataset_errors(read, path)


KEYS = [
    "y",
    "FX",
    "X",
    "block",
    "edges",
    "weights",
    "edge_weight",
    "edge_mapping",
    "edge_index",
    "time_periods",
    "0",
    "1",
    "2",
    "nodes",
    "links",
    "id",
    "source",
    "target",
    "weight",
]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**12), st.floats(allow_nan=True), st.text(max_size=3)
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.sampled_from(KEYS), children, max_size=5)
    ),
    max_leaves=40,
)


@FUZZ
@given(document=st.dictionaries(st.sampled_from(KEYS), JSON, min_size=1, max_size=6))
def test_random_json_in_the_layouts_keys(tmp_path, document):
    path = tmp_path / "series.json"
    path.write_text(json.dumps(document))
    _only_dataset_errors(load_temporal, path)


CELLS = st.one_of(
    st.sampled_from(["a", "b", "1", "1.0", "-2", "", " ", "nan", "inf", "x,y", '"q"']), st.text(max_size=4)
)


@FUZZ
@given(
    series=st.lists(st.lists(CELLS, max_size=4), max_size=5),
    edges=st.lists(st.lists(CELLS, max_size=3), max_size=5),
)
def test_random_csv_folders(tmp_path, series, edges):
    for name, rows in (("series.csv", series), ("edges.csv", edges)):
        (tmp_path / name).write_text("\n".join(",".join(row) for row in rows))
    _only_dataset_errors(load_temporal, tmp_path)
    for name, rows in (("edges.csv", edges), ("labels.csv", series)):
        (tmp_path / name).write_text("\n".join(",".join(row) for row in rows))
    _only_dataset_errors(load_edge_list, tmp_path)
    table = tmp_path / "table.csv"
    table.write_text("\n".join(",".join(row) for row in series))
    _only_dataset_errors(load_tabular, table)
    assert os.environ["PDENETS_MEMORY_BUDGET"] == "64M"


NPZ_KEYS = [
    "features",
    "labels",
    "class_names",
    "base_classes",
    "val_classes",
    "novel_classes",
    "base_mean",
    "adj_data",
    "adj_indices",
    "adj_indptr",
    "adj_shape",
    "attr_data",
    "attr_indices",
    "attr_indptr",
    "attr_shape",
    "attr_matrix",
    "labels_data",
    "labels_indices",
    "labels_indptr",
    "labels_shape",
]
NUMBERS = st.one_of(st.integers(-2, 6), st.integers(-(2**40), 2**40), st.floats(allow_nan=True, width=32))
ARRAYS = st.one_of(
    st.lists(NUMBERS, max_size=8).map(np.array),
    st.lists(st.lists(st.floats(-3, 3, width=32), min_size=2, max_size=2), max_size=6).map(
        lambda rows: np.array(rows, dtype=np.float32).reshape(-1, 2)
    ),
    st.lists(st.booleans(), max_size=6).map(np.array),
    st.lists(st.text(max_size=3), max_size=4).map(lambda words: np.array(words, dtype=str)),
    st.integers(-3, 10**9).map(np.array),
)


@FUZZ
@given(arrays=st.dictionaries(st.sampled_from(NPZ_KEYS), ARRAYS, min_size=1, max_size=7))
def test_random_arrays_in_the_npz_formats_keys(tmp_path, arrays):
    """Well-formed ``.npz`` containers holding random arrays under the keys the graph and few-shot formats
    read, so that the checks past the container are reached."""
    path = tmp_path / "arrays.npz"
    np.savez(path, **arrays)
    _only_dataset_errors(load_features, path)
    _only_dataset_errors(load_npz, path)


@st.composite
def _feature_files(draw):
    """Feature files of a consistent size ``n`` (so the reader gets past the shape checks) with random labels,
    class lists and base mean."""
    rows = draw(st.integers(1, 6))
    arrays = {
        "features": np.asarray(
            draw(st.lists(st.floats(-3, 3, width=32), min_size=2 * rows, max_size=2 * rows)), dtype=np.float32
        ).reshape(rows, 2),
        "labels": np.array(draw(st.lists(NUMBERS, min_size=rows, max_size=rows))),
    }
    for key in draw(
        st.sets(st.sampled_from(["class_names", "base_classes", "val_classes", "novel_classes", "base_mean"]))
    ):
        arrays[key] = draw(ARRAYS)
    return arrays


@FUZZ
@given(arrays=_feature_files())
def test_random_labels_and_class_lists_in_feature_files(tmp_path, arrays):
    path = tmp_path / "features.npz"
    np.savez(path, **arrays)
    _only_dataset_errors(load_features, path)


NUMBER_TEXT = st.text(alphabet="0123456789_+-.eE xnaifINFTY", max_size=12)


@FUZZ
@given(text=NUMBER_TEXT)
def test_numbers_are_read_strictly_or_refused_in_one_line(text):
    """The strict parser reads what a decimal number spells, as ``float`` does, and refuses ``1_000`` and the
    like."""
    from pdenets.data.csvfile import parse_integer, parse_number

    try:
        value = parse_number(text, finite=False)
    except ValueError as error:
        assert "\n" not in str(error) and str(error).startswith(repr(text))
    else:
        assert "_" not in text and (value == float(text) or value != value)
    try:
        whole = parse_integer(text)
    except ValueError as error:
        assert str(error).startswith(repr(text) if len(text) <= 40 else repr(text[:40]))
    else:
        assert "_" not in text and whole == float(text) and abs(whole) < 2**63


@FUZZ
@given(
    value=st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**63) + 1, 2**63 - 1))
)
def test_every_number_python_writes_is_read_back(value):
    from pdenets.data.csvfile import parse_integer, parse_number

    assert parse_number(repr(value)) == float(value)
    if isinstance(value, int):
        assert parse_integer(str(value)) == value


@st.composite
def _shared_graphs(draw):
    """Lists built from earlier lists and small arrays, each node referred to by any later one: a DAG with
    sharing."""
    nodes = [np.arange(draw(st.integers(0, 3)), dtype=np.float32)]
    for _ in range(draw(st.integers(1, 25))):
        picks = draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=4))
        nodes.append(
            [nodes[index] for index in picks]
            if draw(st.booleans())
            else {str(position): nodes[index] for position, index in enumerate(picks)}
        )
    return nodes[-1]


def _same_shape_and_sharing(original, loaded, pairs):
    """Equal values, and two references to one original object load as two references to one object."""
    if id(original) in pairs:
        return pairs[id(original)] is loaded
    pairs[id(original)] = loaded
    if isinstance(original, np.ndarray):
        return type(loaded) is np.ndarray and np.array_equal(original, loaded)
    items = original.items() if isinstance(original, dict) else enumerate(original)
    return len(original) == len(loaded) and all(
        _same_shape_and_sharing(value, loaded[key], pairs) for key, value in items
    )


@FUZZ
@given(graph=_shared_graphs())
def test_pickles_with_shared_references_load_with_their_sharing_or_are_refused(graph):
    """Up to 4^25 paths through 26 objects: loaded in one visit per object, or refused by the budget."""
    import pickle

    try:
        loaded = load_array_pickle(pickle.dumps(graph, protocol=2))
    except DatasetError as error:
        assert "with every shared reference counted as a copy" in str(error)
    else:
        assert _same_shape_and_sharing(graph, loaded, {})


def test_the_longest_ids_are_read_however_padded_or_signed_and_one_more_is_refused():
    from pdenets.data.csvfile import parse_integer

    largest = 2**63 - 1
    assert parse_integer("0" * 23 + "42") == 42
    assert parse_integer("+9223372036854775807") == largest == parse_integer("+" + "0" * 22 + str(largest))
    assert parse_integer("-0009223372036854775807") == -largest
    for text in ("9223372036854775808", "-9223372036854775808", "+09223372036854775808"):
        with pytest.raises(ValueError, match="is too large for an id"):
            parse_integer(text)
