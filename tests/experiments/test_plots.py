"""The report figure helpers (classes scattered by colour, mean and band, grouped bars, boxes with reference
stars, error-bar lines) drawn on the Agg backend, and figures and tables recorded in a run folder."""

import json
import re

import numpy as np
import pytest

from pdenets.experiments.rundir import RunDirectory


def test_csv_and_figures_are_recorded_in_the_marker(tmp_path):
    from pdenets.experiments.plots import plt

    with RunDirectory.open(tmp_path / "run", task="demo") as run:
        run.write_csv("rows.csv", [{"a": 1, "b": None}, {"a": 2, "c": "x"}])
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0])
        assert run.save_figure(fig, "line.png") == "line.png"
    assert run.file("rows.csv").read_text() == "a,b,c\n1,,\n2,,x\n"
    assert run.file("line.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    marker = json.loads(run.file(".pdenets-run").read_text())
    assert marker["files"] == ["line.png", "rows.csv"] and marker["task"] == "demo"


def test_a_figure_name_from_a_label_is_a_plain_file_name():
    from pdenets.experiments.rundir import file_name_for

    assert file_name_for("ring_road", "-forecasts.png") == "ring_road-forecasts.png"
    odd = [file_name_for(label, ".png") for label in ("a:b", "a/b", "../a", "<x>", "a b", "a_b")]
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+\.png", name) for name in odd) and len(set(odd)) == len(odd)
    assert len(file_name_for("x" * 10_000, ".png")) <= 80 + 9 + 4


@pytest.fixture
def axis():
    from pdenets.experiments.plots import plt

    figure, ax = plt.subplots()
    yield ax
    plt.close(figure)


def _drawn_width(text, renderer) -> float:
    return text.get_window_extent(renderer).width


def _plain_width(figure, text, renderer, letters=None) -> float:
    """The width of ``letters`` (default: ``text``'s own) drawn as plain letters in ``text``'s font."""
    letters = text.get_text() if letters is None else letters
    probe = figure.text(0, 0, letters, fontproperties=text.get_fontproperties(), parse_math=False)
    width = _drawn_width(probe, renderer)
    probe.remove()
    return width


def test_a_users_dollars_are_drawn_as_written_and_a_log_axis_as_powers_of_ten(tmp_path):
    r"""A name such as ``$\notacommand$`` saves and is drawn letter for letter (its ``$`` escaped when the
    figure is saved); the ticks of a log axis, ``$\mathdefault{10^{0}}$``, are typeset, narrower than their
    source as text; a tick label that is a class name keeps its dollars too."""
    import matplotlib

    from pdenets.experiments.plots import plt

    name = r"$\notacommand$ and $x^2$"
    with RunDirectory.open(tmp_path / "run", task="demo") as run:
        figure, (log_axis, named_axis, category_axis) = plt.subplots(1, 3)
        log_axis.semilogy([1, 2, 3], [1.0, 10.0, 1000.0], label=name)
        log_axis.set_title(name)
        log_axis.legend()
        named_axis.bar([0, 1], [1.0, 2.0])
        named_axis.set_xticks([0, 1], ["$5 plan", "$a$"])
        category_axis.bar(["$x$", "plain"], [1.0, 2.0])
        assert run.save_figure(figure, "figure.png") == "figure.png"
    assert matplotlib.rcParams["text.parse_math"] is True  # nothing global is turned off
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    title = log_axis.title
    assert title.get_text() == r"\$\notacommand\$ and \$x^2\$"
    assert _drawn_width(title, renderer) == pytest.approx(_plain_width(figure, title, renderer, name), abs=1)
    legend_text = log_axis.get_legend().get_texts()[0]
    assert legend_text.get_text() == title.get_text()
    powers = [t for t in log_axis.get_yticklabels() if t.get_text() == r"$\mathdefault{10^{0}}$"]
    assert powers, [t.get_text() for t in log_axis.get_yticklabels()]
    assert _drawn_width(powers[0], renderer) < 0.5 * _plain_width(figure, powers[0], renderer)
    assert [t.get_text() for t in named_axis.get_xticklabels()] == [r"\$5 plan", r"\$a\$"]
    assert [t.get_text() for t in category_axis.get_xticklabels()] == [r"\$x\$", "plain"]
    for label in [*named_axis.get_xticklabels(), *category_axis.get_xticklabels()]:
        shown = label.get_text().replace(r"\$", "$")
        assert _drawn_width(label, renderer) == pytest.approx(
            _plain_width(figure, label, renderer, shown), abs=1
        )


def test_classes_are_coloured_by_label_modulo_the_palette_without_ticks(axis):
    from matplotlib.colors import to_rgba_array

    from pdenets.experiments.plots import CLASS_COLORS, scatter_classes

    points = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    labels = [0, 1, 7, 9]  # 7 and 9 wrap onto the palette's colours 0 and 2
    scatter_classes(axis, points, labels, size=9.0)
    (dots,) = axis.collections
    assert np.array_equal(dots.get_offsets(), points)
    expected = to_rgba_array([CLASS_COLORS[0], CLASS_COLORS[1], CLASS_COLORS[0], CLASS_COLORS[2]])
    assert np.array_equal(dots.get_facecolors(), expected)
    assert dots.get_sizes().tolist() == [9.0]
    assert len(axis.get_xticks()) == 0 and len(axis.get_yticks()) == 0 and axis.get_title() == ""


def test_the_mean_curve_skips_missing_values_and_the_band_spans_the_runs(axis):
    from pdenets.experiments.plots import mean_band

    runs = np.array([[1.0, 2.0, np.nan], [3.0, 6.0, 5.0]])
    mean_band(axis, [0, 1, 2], runs, label="ours", color="#123456", linestyle="--")
    (line,) = axis.lines
    assert line.get_ydata().tolist() == [2.0, 4.0, 5.0]  # the NaN of run 1 leaves run 2's 5 alone
    assert (line.get_label(), line.get_color(), line.get_linestyle()) == ("ours", "#123456", "--")
    (band,) = axis.collections
    corners = {tuple(point) for point in band.get_paths()[0].vertices.tolist()}
    assert {(0.0, 1.0), (1.0, 2.0), (2.0, 5.0)} <= corners  # the smallest run at each x
    assert {(0.0, 3.0), (1.0, 6.0), (2.0, 5.0)} <= corners  # the largest
    assert all(y <= max(runs[:, int(x)][~np.isnan(runs[:, int(x)])]) for x, y in corners)
    assert band.get_alpha() == pytest.approx(0.12)


def test_one_run_draws_its_curve_without_a_band(axis):
    from pdenets.experiments.plots import mean_band

    mean_band(axis, [0, 1], np.array([[0.5, 0.25]]), label="single")
    assert axis.lines[0].get_ydata().tolist() == [0.5, 0.25] and not axis.collections


def test_grouped_bars_sit_side_by_side_centred_on_their_group(axis):
    from matplotlib.colors import to_rgba

    from pdenets.experiments.plots import grouped_bars

    series = {"a": ([1.0, 2.0], [0.1, 0.2]), "b": ([3.0, 4.0], [0.3, 0.4]), "c": ([5.0, 6.0], [0.0, 0.0])}
    grouped_bars(axis, ["g1", "g2"], series, colors={"a": "#ff0000"}, ylabel="accuracy", ylim=(0, 10))
    width = 0.8 / 3
    bars = axis.patches
    assert [bar.get_height() for bar in bars] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    centres = [bar.get_x() + bar.get_width() / 2 for bar in bars]
    expected = [group + offset * width for offset in (-1, 0, 1) for group in (0, 1)]
    assert centres == pytest.approx(expected, abs=1e-12)
    assert all(bar.get_width() == pytest.approx(width) for bar in bars)
    assert bars[0].get_facecolor() == to_rgba("#ff0000") != bars[2].get_facecolor()
    error_bars = [line for container in axis.containers[::2] for line in container[2]]
    spans = [segment[:, 1] for collection in error_bars for segment in collection.get_segments()]
    expected_spans = [[0.9, 1.1], [1.8, 2.2], [2.7, 3.3], [3.6, 4.4], [5.0, 5.0], [6.0, 6.0]]
    assert np.allclose(spans, expected_spans, rtol=0, atol=1e-12)  # mean ± std of each bar
    assert [text.get_text() for text in axis.get_xticklabels()] == ["g1", "g2"]
    assert [text.get_text() for text in axis.get_legend().get_texts()] == ["a", "b", "c"]
    assert axis.get_ylim() == (0.0, 10.0) and axis.get_ylabel() == "accuracy"


def test_reference_stars_mark_only_the_groups_they_name_with_one_legend_entry(axis):
    from pdenets.experiments.plots import box_per_group

    values = {"x": [1.0, 2.0, 3.0], "y": [4.0, 5.0, 6.0], "z": [7.0, 8.0]}
    box_per_group(axis, values, reference={"y": 5.5, "z": 9.0, "absent": 1.0}, reference_label="paper")
    stars = [line for line in axis.lines if line.get_marker() == "*"]
    assert [(line.get_xdata().tolist(), line.get_ydata().tolist()) for line in stars] == [
        ([2], [5.5]),
        ([3], [9.0]),
    ]
    assert [text.get_text() for text in axis.get_legend().get_texts()] == ["paper"]
    assert [text.get_text() for text in axis.get_xticklabels()] == ["x", "y", "z"]


def test_without_reference_values_the_boxes_have_no_legend(axis):
    from pdenets.experiments.plots import box_per_group

    box_per_group(axis, {"x": [1.0, 2.0]}, reference={"other": 1.0})
    assert axis.get_legend() is None and not [line for line in axis.lines if line.get_marker() == "*"]


def test_error_bar_lines_follow_their_points_and_a_log2_axis_on_request(axis):
    from pdenets.experiments.plots import errorbar_lines

    errorbar_lines(axis, {"s": ([1, 2, 4], [1.0, 2.0, 3.0], [0.5, 0.5, 1.0])}, xlabel="shots", log2_x=True)
    (container,) = axis.containers
    data_line = container[0]
    assert data_line.get_xdata().tolist() == [1, 2, 4] and data_line.get_ydata().tolist() == [1.0, 2.0, 3.0]
    spans = [segment[:, 1].tolist() for segment in container[2][0].get_segments()]
    assert spans == [[0.5, 1.5], [1.5, 2.5], [2.0, 4.0]]
    assert axis.get_xscale() == "log" and axis.xaxis.get_transform().base == 2
    assert axis.get_xlabel() == "shots"
