"""Region series readers: every PyTorch Geometric Temporal JSON layout and the CSV folder, and their
errors."""

import json
import math

import numpy as np
import pytest
import torch

from pdenets.data import DatasetError
from pdenets.data.temporal import LAYOUTS, load_temporal, step_unit
from pdenets.tasks.coin_forecast.protocol import protocol_windows, pyg_scaled

VALUES = [[1.0, 2.0, 0.0], [3.0, 1.0, 4.0], [2.0, 2.0, 5.0], [0.0, 6.0, 1.0]]  # 4 steps × 3 regions
EDGES = [[0, 1], [1, 2], [2, 0]]
WEIGHTS = [0.5, 2.0, 1.5]


def _write(tmp_path, content, name="series.json"):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _dense(graph, nodes=3):
    index, weight = graph
    out = torch.zeros(nodes, nodes, dtype=torch.float64)
    out[index[0], index[1]] = weight
    return out


def _expected_graph(weights=WEIGHTS):
    out = torch.zeros(3, 3, dtype=torch.float64)
    for (i, j), w in zip(EDGES, weights):
        out[i, j] = w
    return out


LAYOUT_FILES = {
    "FX": {"FX": VALUES, "edges": EDGES, "edge_weight": WEIGHTS},
    "X": {"X": VALUES, "edges": EDGES, "weights": WEIGHTS},  # PedalMe London
    "block": {"block": VALUES, "edges": EDGES, "weights": WEIGHTS},  # Windmill output
    "snapshots": {
        "time_periods": 4,
        "edges": EDGES,
        "weights": WEIGHTS,
        **{str(t): {"y": row} for t, row in enumerate(VALUES)},
    },  # WikiVital mathematics
    "node-link": {
        "directed": True,
        "multigraph": False,
        "graph": {},
        "nodes": [
            {
                "bus_stop": 10 + i,
                "id": 10 + i,
                "X": {"y": [row[i] for row in VALUES]},
                "y": [row[i] for row in VALUES],
            }
            for i in range(3)
        ],
        "links": [{"source": 10 + i, "target": 10 + j, "weight": w} for (i, j), w in zip(EDGES, WEIGHTS)],
    },
}


@pytest.mark.parametrize("layout", sorted(LAYOUT_FILES))
def test_every_static_layout_reads_values_and_weights(tmp_path, layout):
    series = load_temporal(_write(tmp_path, LAYOUT_FILES[layout]))
    assert series.layout == layout and not series.time_varying
    torch.testing.assert_close(series.values, torch.tensor(VALUES, dtype=torch.float64))
    torch.testing.assert_close(_dense(series.graph_at(0)), _expected_graph())


def test_per_step_layouts_keep_every_steps_graph(tmp_path):
    england = {
        "y": VALUES,
        "edge_mapping": {
            "edge_index": {str(t): EDGES[: t % 3 + 1] for t in range(4)},
            "edge_weight": {str(t): WEIGHTS[: t % 3 + 1] for t in range(4)},
        },
    }
    tennis = {
        "time_periods": 4,
        **{
            str(t): {
                "index": t,
                "y": row,
                "X": [[0, 1]] * 3,
                "edges": EDGES[: t % 3 + 1],
                "weights": WEIGHTS[: t % 3 + 1],
            }
            for t, row in enumerate(VALUES)
        },
    }
    for content, layout, scaling in (
        (england, "edge_mapping", "standardize+eps"),
        (tennis, "snapshots", "log1p"),
    ):
        series = load_temporal(_write(tmp_path, content))
        assert series.layout == layout and series.time_varying and series.pyg_scaling == scaling
        for step in range(4):
            expected = _expected_graph([w if k <= step % 3 else 0.0 for k, w in enumerate(WEIGHTS)])
            torch.testing.assert_close(_dense(series.graph_at(step)), expected)


def test_csv_folder_names_regions_by_header(tmp_path):
    folder = tmp_path / "regions"
    folder.mkdir()
    (folder / "series.csv").write_text(
        "day,north,south,east\n"
        + "\n".join(f"2020-01-0{t + 1}," + ",".join(str(v) for v in row) for t, row in enumerate(VALUES))
        + "\n"
    )
    (folder / "edges.csv").write_text("source,target,weight\nnorth,south,0.5\nsouth,east,2\neast,north,1.5\n")
    for path in (folder, folder / "series.csv"):
        series = load_temporal(path)
        assert series.name == "regions" and series.layout == "csv"
        torch.testing.assert_close(series.values, torch.tensor(VALUES, dtype=torch.float64))
        torch.testing.assert_close(_dense(series.graph_at(0)), _expected_graph())
    (folder / "edges.csv").write_text("source,target\nnorth,west\n")
    with pytest.raises(DatasetError, match="line 2: node 'west' is not a column of series.csv"):
        load_temporal(folder)
    (folder / "edges.csv").write_text("source,target\nnorth,south\n")
    (folder / "series.csv").write_text("north,south,east\n1,2,3\n4,x,6\n1,1,1\n")
    with pytest.raises(DatasetError, match="line 3, column 'south': 'x' is not a number"):
        load_temporal(folder)
    (folder / "series.csv").write_text("north,south,east\n1,2,3\n4,6\n1,1,1\n")
    with pytest.raises(DatasetError, match="line 3 has 2 fields, the header 3"):
        load_temporal(folder)


def test_csv_folder_keeps_the_nodes_names_and_the_step_unit(tmp_path):
    """Sensors named by the header and rows 5 minutes apart: the series says so (the report's words)."""
    folder = tmp_path / "my_traffic"
    folder.mkdir()
    stamps = [f"2026-03-02 00:{5 * t:02d}" for t in range(len(VALUES))]
    (folder / "series.csv").write_text(
        "time,detector_7,detector_8,detector_9\n"
        + "\n".join(f"{stamp}," + ",".join(map(str, row)) for stamp, row in zip(stamps, VALUES))
        + "\n"
    )
    (folder / "edges.csv").write_text("source,target\ndetector_7,detector_8\n")
    series = load_temporal(folder)
    assert series.node_names == ("detector_7", "detector_8", "detector_9") and series.step_unit == "5 minutes"
    assert series.node_name(2) == "detector_9"
    assert series.time_axis.column == "time"
    assert series.time_axis.span() == "4 rows 5 minutes apart, from 2026-03-02 00:00 to 2026-03-02 00:15"
    # one uneven interval is a gap, refused; a unit-named column of step numbers still gives its unit
    uneven = stamps[:-1] + ["2026-03-02 01:00"]
    with pytest.raises(DatasetError, match="rows are 5 minutes apart except 1 gap: 50 minutes between"):
        step_unit("time", uneven)
    assert step_unit("week", ["1", "2", "3"]) == "week"
    assert step_unit("date", ["2020-01-01", "2020-01-08", "2020-01-15"]) == "week"
    assert step_unit("time", ["2026-03-02 00:00", "2026-03-02 02:00"]) == "2 hours"
    # a layout without names numbers its nodes and counts steps
    plain = load_temporal(_write(tmp_path, LAYOUT_FILES["FX"]))
    assert (plain.node_name(1), plain.step_unit) == ("1", "step")


@pytest.mark.parametrize(
    "content, message",
    [
        ({"FX": [[1.0, 2.0], [3.0]] * 2, "edges": [[0, 1]]}, "ragged: step 0 has 2 values, step 1 has 1"),
        (
            '{"FX": [[1.0, 2.0], [NaN, 1.0], [1.0, 1.0]], "edges": [[0, 1]]}',
            "non-finite value at step 1, node 0",
        ),
        (
            {"y": [[1, 2], [-3, 1], [1, 1]], "edge_mapping": {"edge_index": {}, "edge_weight": {}}},
            "holds counts, but the value at step 1, node 0 is -3",
        ),
        ({"FX": [[1.0, 2.0]] * 3, "edges": [[0.4, 1.9]]}, "node ids must be integers, found 0.4"),
        ({"FX": [[1.0, 2.0]] * 3, "edges": [[True, 1]]}, "node ids must be integers, found True"),
        ({"FX": [[1.0, 2.0]] * 3, "edges": [[0, 2]]}, "names node 2 but the series has 2 nodes"),
        ({"X": [[1.0, 2.0]] * 3, "edges": [[0, 1]], "weights": [1.0, 2.0]}, "2 edge weights for 1 edges"),
        (
            {
                "nodes": [{"id": "a", "y": [1, 2, 3]}, {"id": "b", "y": [1, 2, 3]}],
                "links": [{"source": "a", "target": "c"}],
            },
            "link 0: target 'c' is not the id of a node",
        ),
        (
            {"nodes": [{"id": "a", "y": [1, 2, 3]}, {"id": "b", "y": [1, 2]}], "links": []},
            "lists of one length",
        ),
        ({"time_periods": 3, "edges": [], "0": {"y": [1.0]}, "1": {"y": [2.0]}}, "no snapshot '2'"),
        ('{"FX": [[1.0]], "FX": [[2.0]], "edges": []}', "duplicate key 'FX'"),
        ({"values": [[1.0]]}, "no known layout"),
    ],
)
def test_bad_files_give_one_line_errors_naming_the_problem(tmp_path, content, message):
    with pytest.raises(DatasetError, match=message):
        load_temporal(_write(tmp_path, content))


def test_pyg_protocol_scales_each_layout_as_its_loader_does(tmp_path):
    values = np.array(VALUES)
    for layout, expected in (
        ("X", values),
        ("block", (values - values.mean(0)) / (values.std(0) + 1e-10)),
        ("snapshots", (values - values.mean(0)) / values.std(0)),
    ):
        series = load_temporal(_write(tmp_path, LAYOUT_FILES[layout]))
        scaled, mean, std = pyg_scaled(series)
        torch.testing.assert_close(scaled, torch.from_numpy(expected))
        torch.testing.assert_close((scaled * std + mean), series.values)
    tennis = {"time_periods": 4, **{str(t): {"y": row, "edges": EDGES} for t, row in enumerate(VALUES)}}
    series = load_temporal(_write(tmp_path, tennis))
    torch.testing.assert_close(pyg_scaled(series)[0], torch.log1p(torch.tensor(VALUES, dtype=torch.float64)))
    block = load_temporal(_write(tmp_path, {"block": VALUES * 3, "edges": EDGES, "weights": WEIGHTS}))
    assert block.pyg_lags == 8 and protocol_windows(block, "pyg-temporal").lags == 8
    assert set(LAYOUTS) == {"edge_mapping", "FX", "X", "block", "snapshots", "node-link"}
    assert not math.isnan(float(pyg_scaled(series)[0].sum()))


def _csv_folder(tmp_path, series, edges):
    folder = tmp_path / "regions"
    folder.mkdir(exist_ok=True)
    for name, content in (("series.csv", series), ("edges.csv", edges)):
        (folder / name).write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return folder


SERIES_CSV = "day,north,south,east\n" + "".join(
    f"{t},{row[0]},{row[1]},{row[2]}\n" for t, row in enumerate(VALUES)
)


def test_a_byte_order_mark_never_turns_the_label_column_into_a_region(tmp_path):
    folder = _csv_folder(
        tmp_path,
        b"\xef\xbb\xbf" + SERIES_CSV.encode(),
        b"\xef\xbb\xbfsource,target,weight\nnorth,south,0.5\nsouth,east,2\neast,north,1.5\n",
    )
    series = load_temporal(folder)
    assert series.num_nodes == 3
    torch.testing.assert_close(series.values, torch.tensor(VALUES, dtype=torch.float64))
    torch.testing.assert_close(_dense(series.graph_at(0)), _expected_graph())
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(LAYOUT_FILES["FX"]).encode())
    torch.testing.assert_close(load_temporal(path).values, torch.tensor(VALUES, dtype=torch.float64))


@pytest.mark.parametrize(
    "series, edges, message",
    [
        (
            SERIES_CSV,
            "source,target,w\nnorth,south,100\n",
            "edges.csv: unknown column 'w' (did you mean 'weight'?) (column 3); the header must be "
            "source,target[,weight]",
        ),
        (
            SERIES_CSV,
            "source,target,weight,kind\nnorth,south,1,road\n",
            "edges.csv: unknown column 'kind' (column 4); the header must be source,target[,weight]",
        ),
        (
            SERIES_CSV,
            "source,target,weight\nnorth,south,1_000\n",
            "edges.csv: line 2, weight: '1_000' is not a number",
        ),
        (
            SERIES_CSV,
            "source,target,weight\nnorth,south,inf\n",
            "edges.csv: line 2, weight: 'inf' is not a finite number",
        ),
        (
            SERIES_CSV.replace("3.0,1.0", "3_0,1.0"),
            "source,target\n",
            "series.csv: line 3, column 'north': '3_0' is not a number",
        ),
        (
            SERIES_CSV.replace("3.0,1.0", "1e400,1.0"),
            "source,target\n",
            "series.csv: line 3, column 'north': '1e400' is too large for a float64 (at most 1.8e308)",
        ),
    ],
    ids=[
        "weight named w",
        "an extra column",
        "underscore weight",
        "infinite weight",
        "underscore value",
        "overflowing value",
    ],
)
def test_csv_folders_are_read_strictly(tmp_path, series, edges, message):
    folder = _csv_folder(tmp_path, series, edges)
    with pytest.raises(DatasetError) as caught:
        load_temporal(folder)
    assert str(caught.value) == f"{folder}/{message}"


HUGE = 10**29
DIGITS_400 = int("9" * 400)


@pytest.mark.parametrize(
    "content, message",
    [
        (
            {"FX": VALUES, "edges": [[0, HUGE]]},
            "'edges': an edge names node 100000000000000000000000000000 but the series has 3 nodes (0…2)",
        ),
        (
            {
                "y": VALUES,
                "edge_mapping": {
                    "edge_index": {str(t): [[0, HUGE]] for t in range(4)},
                    "edge_weight": {str(t): [1.0] for t in range(4)},
                },
            },
            "graph of step 0: an edge names node 100000000000000000000000000000 but the series has 3 nodes "
            "(0…2)",
        ),
        (
            {"FX": [[1, 2, DIGITS_400]] + VALUES, "edges": EDGES},
            "'FX' holds the value 9999999999999999999999999999999999999999… (400 digits) at step 0, node 2, "
            "too large for a "
            "float64",
        ),
        (
            {"FX": VALUES, "edges": EDGES, "edge_weight": [1, DIGITS_400, 1]},
            "'edges': the weight of edge 1 is 9999999999999999999999999999999999999999… (400 digits), too "
            "large for a "
            "float64",
        ),
        (
            {"time_periods": DIGITS_400, "edges": EDGES, "0": {"y": [1.0, 2.0, 3.0]}},
            "'time_periods' is 9999999999999999999999999999999999999999… (400 digits) but the file holds 3 "
            "keys, fewer than "
            "one snapshot per step",
        ),
        (
            {"FX": VALUES, "edges": EDGES, "edge_weight": WEIGHTS, "weights": [7, 7, 7]},
            "'edge_weight' and 'weights' both give the same thing (the edge weights); keep one",
        ),
        (
            {
                "time_periods": 4,
                "edges": EDGES,
                "edge_weight": WEIGHTS,
                "weights": WEIGHTS,
                **{str(t): {"y": row} for t, row in enumerate(VALUES)},
            },
            "'edge_weight' and 'weights' both give the same thing (the edge weights); keep one",
        ),
        (
            {
                "nodes": [{"id": i, "y": [1.0, 2.0, 3.0], "X": {"y": [1.0, 2.0, 4.0]}} for i in range(2)],
                "links": [],
            },
            "node 0: 'y' and 'X': {'y': …} give two different series; keep one",
        ),
    ],
    ids=[
        "edge id 10^29",
        "edge_mapping id 10^29",
        "400-digit value",
        "400-digit weight",
        "400-digit time_periods",
        "two weight keys",
        "two weight keys in snapshots",
        "two node series",
    ],
)
def test_json_numbers_beyond_range_and_keys_that_mean_one_thing(tmp_path, content, message):
    path = _write(tmp_path, content)
    with pytest.raises(DatasetError) as caught:
        load_temporal(path)
    assert str(caught.value) == f"{path}: {message}"


def test_snapshot_weights_are_read_under_either_key(tmp_path):
    snapshots = {
        "time_periods": 4,
        "edges": EDGES,
        "edge_weight": WEIGHTS,
        **{str(t): {"y": row} for t, row in enumerate(VALUES)},
    }
    torch.testing.assert_close(
        _dense(load_temporal(_write(tmp_path, snapshots)).graph_at(0)), _expected_graph()
    )
