"""coin-forecast on a user's sensor folder writes the forecast the user came for: the steps after the
series' last one, per sensor by name, at the series' own interval and in its units."""

import csv

import numpy as np

from pdenets._output import read_csv_rows
from pdenets.cli import main

from ...helpers import foreign_data

NAMES = ("<b>north</b>", "=east")


def _run(tmp_path, models, *extra):
    folder = foreign_data.traffic_folder(tmp_path, names=NAMES)
    out = tmp_path / "run"
    argv = ["run", "coin-forecast", "--quick", "--dataset", str(folder), "--models", models]
    assert main(argv + list(extra) + ["--no-progress", "--out", str(out)]) == 0
    return folder, out


def _rows(path):
    """The file's rows, each cell as it was given (:func:`pdenets._output.read_csv_rows`)."""
    header, *rows = read_csv_rows(path)
    return [dict(zip(header, row)) for row in rows]


def test_the_last_value_forecast_is_the_last_row_and_the_stamps_continue_at_five_minutes(tmp_path):
    folder, out = _run(tmp_path, "last-value")
    rows = _rows(out / "forecasts.csv")
    with open(folder / "series.csv", newline="") as stream:
        series = list(csv.reader(stream))
    names, last = series[0][1:], series[-1][1:]
    assert series[-1][0] == "2026-03-02 23:55"
    assert list(rows[0]) == ["node", "time", "horizon", "last-value", "coin over last-value"]
    assert [row["node"] for row in rows] == [name for name in names for _ in range(3)]  # each sensor, by name
    # "=east" is written so that a spreadsheet shows it and evaluates nothing
    assert "\n'=east,2026-03-03 00:00,1," in (out / "forecasts.csv").read_text()
    assert [row["time"] for row in rows[:3]] == ["2026-03-03 00:00", "2026-03-03 00:05", "2026-03-03 00:10"]
    assert [row["horizon"] for row in rows[:3]] == ["1", "2", "3"]
    # the protocol's scaling undone: the last value, in the series' units, at every horizon
    for row in rows:
        assert np.isclose(float(row["last-value"]), float(last[names.index(row["node"])]), rtol=1e-5), row
    report = (out / "report.md").read_text()
    assert "## Forecasts past the end of the series" in report
    assert "3 (2026-03-03 00:00 to 2026-03-03 00:10)" in report and "<b>" not in report


def test_a_learned_model_and_coin_over_it_forecast_every_sensor_and_the_setting_turns_it_off(tmp_path):
    (tmp_path / "a").mkdir()
    _, out = _run(tmp_path / "a", "window-mlp")
    rows = _rows(out / "forecasts.csv")
    assert list(rows[0])[3:] == ["window-mlp", "coin over window-mlp"] and len(rows) == 12 * 3
    values = np.array([[float(row["window-mlp"]), float(row["coin over window-mlp"])] for row in rows])
    assert np.isfinite(values).all() and 20 < values.mean() < 100  # speeds, in km/h as the file holds them
    (tmp_path / "b").mkdir()
    _, quiet = _run(tmp_path / "b", "last-value", "--set", "forecasts=never")
    assert not (quiet / "forecasts.csv").exists()


def _values(rows, column):
    return {(row["node"], row["horizon"]): float(row[column]) for row in rows}


def test_the_saved_forecaster_answers_the_same_series_as_the_run_and_a_longer_one_after_its_end(
    tmp_path, capsys
):
    for model in ("linear", "window-mlp"):
        (tmp_path / model).mkdir()
        folder, out = _run(tmp_path / model, model)
        assert (out / f"model-{model}" / "model.json").is_file()
        again = tmp_path / model / "again.csv"
        assert main(["predict", str(out), "--dataset", str(folder), "--out", str(again)]) == 0
        run_rows, rows = _rows(out / "forecasts.csv"), _rows(again)
        assert [row["time"] for row in rows] == [row["time"] for row in run_rows]
        for column in (model, f"coin over {model}"):  # the run's forecasts, from the saved model alone
            ours, theirs = _values(rows, column), _values(run_rows, column)
            assert all(np.isclose(ours[key], theirs[key], rtol=1e-5) for key in theirs), column
    # a longer series, its sensors in another order: the steps after its own end
    longer = foreign_data.traffic_folder(tmp_path, steps=300, seed=3, stem="longer", names=NAMES)
    with open(longer / "series.csv", newline="") as stream:
        table = list(csv.reader(stream))
    run = tmp_path / "linear" / "run"
    straight = tmp_path / "straight.csv"
    assert main(["predict", str(run), "--dataset", str(longer), "--out", str(straight)]) == 0
    order = [0] + list(range(len(table[0]) - 1, 0, -1))
    (longer / "series.csv").write_text("\n".join(",".join(row[k] for k in order) for row in table) + "\n")
    answer = tmp_path / "longer.csv"
    assert (
        main(["predict", str(tmp_path / "linear" / "run"), "--dataset", str(longer), "--out", str(answer)])
        == 0
    )
    assert "12 nodes of" in capsys.readouterr().out
    rows = _rows(answer)
    assert [row["time"] for row in rows[:3]] == ["2026-03-03 01:00", "2026-03-03 01:05", "2026-03-03 01:10"]
    assert {row["node"] for row in rows} == set(table[0][1:])
    # each sensor's forecast is its own, whatever the order of the columns
    assert _values(rows, "coin over linear") == _values(_rows(straight), "coin over linear")
    assert _values(rows, "linear") == _values(_rows(straight), "linear")
    # another time step, other sensors, too short a series: refused in one line naming the file
    coarse = foreign_data.traffic_folder(tmp_path, steps=100, stem="coarse", names=NAMES)
    text = (coarse / "series.csv").read_text().replace(":05,", ":10,").splitlines()
    hourly = [text[0]] + [
        f"2026-03-02 {hour:02d}:00," + line.split(",", 1)[1] for hour, line in enumerate(text[1:25])
    ]
    (coarse / "series.csv").write_text("\n".join(hourly) + "\n")
    other = foreign_data.traffic_folder(tmp_path, stem="other")
    short = foreign_data.traffic_folder(tmp_path, steps=3, stem="short", names=NAMES)
    for dataset, message in (
        (coarse, "another time step"),
        (other, "not fitted on"),
        (short, "reads the last 4"),
    ):
        assert main(["predict", str(out), "--dataset", str(dataset), "--out", str(tmp_path / "x.csv")]) == 2
        error = capsys.readouterr().err
        assert message in error and str(dataset.name) in error and error.count("\n") == 1, error
