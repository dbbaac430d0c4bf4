"""Every file reader on random small inputs: a DatasetError or a valid result, quickly, never another exception.

Random bytes under each reader's suffix, and random JSON documents built from the keys the
layouts look for (so that the readers' deeper checks are reached). The memory budget is set to
64 MiB: a tiny file that declares a large size must be refused by the budget, not by the allocator.
"""

import json
import os

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
