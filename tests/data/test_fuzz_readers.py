"""Every file reader on random small inputs: a DatasetError or a valid result, quickly, never another exception.

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

FUZZ = settings(max_examples=100, deadline=3000, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def small_budget(monkeypatch):
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "64M")


def _only_dataset_errors(read, path):
    try:
        read(path)
    except DatasetError:
        pass


@pytest.mark.parametrize("suffix, read", [
    (".json", load_temporal), (".csv", load_tabular), (".npz", load_features), (".pkl", load_features),
    (".pt", load_features), (".npz", load_npz), (".pkl", load_array_pickle)])
@FUZZ
@given(content=st.binary(max_size=400))
def test_random_bytes(tmp_path, suffix, read, content):
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(content)
    _only_dataset_errors(read, path)


KEYS = ["y", "FX", "X", "block", "edges", "weights", "edge_weight", "edge_mapping", "edge_index", "time_periods",
        "0", "1", "2", "nodes", "links", "id", "source", "target", "weight"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**12), st.floats(allow_nan=True), st.text(max_size=3))
JSON = st.recursive(SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=5), st.dictionaries(st.sampled_from(KEYS), children, max_size=5)), max_leaves=40)


@FUZZ
@given(document=st.dictionaries(st.sampled_from(KEYS), JSON, min_size=1, max_size=6))
def test_random_json_in_the_layouts_keys(tmp_path, document):
    path = tmp_path / "series.json"
    path.write_text(json.dumps(document))
    _only_dataset_errors(load_temporal, path)


CELLS = st.one_of(st.sampled_from(["a", "b", "1", "1.0", "-2", "", " ", "nan", "inf", "x,y", '"q"']),
                  st.text(max_size=4))


@FUZZ
@given(series=st.lists(st.lists(CELLS, max_size=4), max_size=5), edges=st.lists(st.lists(CELLS, max_size=3),
                                                                                max_size=5))
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


NPZ_KEYS = ["features", "labels", "class_names", "base_classes", "val_classes", "novel_classes", "base_mean",
            "adj_data", "adj_indices", "adj_indptr", "adj_shape", "attr_data", "attr_indices", "attr_indptr",
            "attr_shape", "attr_matrix", "labels_data", "labels_indices", "labels_indptr", "labels_shape"]
NUMBERS = st.one_of(st.integers(-2, 6), st.integers(-2**40, 2**40), st.floats(allow_nan=True, width=32))
ARRAYS = st.one_of(
    st.lists(NUMBERS, max_size=8).map(np.array),
    st.lists(st.lists(st.floats(-3, 3, width=32), min_size=2, max_size=2), max_size=6).map(
        lambda rows: np.array(rows, dtype=np.float32).reshape(-1, 2)),
    st.lists(st.booleans(), max_size=6).map(np.array),
    st.lists(st.text(max_size=3), max_size=4).map(lambda words: np.array(words, dtype=str)),
    st.integers(-3, 10**9).map(np.array))


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
    arrays = {"features": np.asarray(draw(st.lists(st.floats(-3, 3, width=32), min_size=2 * rows,
                                                   max_size=2 * rows)), dtype=np.float32).reshape(rows, 2),
              "labels": np.array(draw(st.lists(NUMBERS, min_size=rows, max_size=rows)))}
    for key in draw(st.sets(st.sampled_from(["class_names", "base_classes", "val_classes", "novel_classes",
                                              "base_mean"]))):
        arrays[key] = draw(ARRAYS)
    return arrays


@FUZZ
@given(arrays=_feature_files())
def test_random_labels_and_class_lists_in_feature_files(tmp_path, arrays):
    path = tmp_path / "features.npz"
    np.savez(path, **arrays)
    _only_dataset_errors(load_features, path)
