"""The forecasting figures draw the numbers they are given: errors per horizon, forecasts unscaled beside the
truth of the four largest nodes, a graph with the edges above a threshold and nodes sized by degree."""

import numpy as np
import pytest
import torch

from pdenets.data.temporal import TemporalGraphSeries
from pdenets.experiments.plots import plt
from pdenets.experiments.rundir import RunDirectory
from pdenets.tasks.coin_forecast.figures import forecast_color, forecast_figure, graph_figure, horizon_figure
from pdenets.tasks.coin_forecast.protocol import CLOSED_FORM, learned_forecasters


class Folder:
    """A run folder that keeps the figure to look at instead of writing it."""

    def save_figure(self, figure, name):
        self.figure = figure
        return name


@pytest.fixture
def folder():
    kept = Folder()
    yield kept
    plt.close("all")


def test_every_forecaster_keeps_its_own_colour_and_an_unknown_one_the_last():
    forecasters = CLOSED_FORM + learned_forecasters()
    colours = [forecast_color(model) for model in forecasters]
    assert len(set(colours)) == len(forecasters)  # none shares a colour
    assert colours[:3] == ["#999999", "#bbbb55", "#1f77b4"]  # last-value, moving-average, linear
    assert forecast_color("someone-elses-model") == "#7f7f7f" and "#7f7f7f" not in colours
    assert [forecast_color(model) for model in forecasters] == colours  # the same in every figure


def test_the_horizon_figure_draws_each_models_errors_at_horizons_one_to_h(folder, tmp_path):
    errors = {"linear": [0.5, 0.7, 0.9], "coin-forecast": [0.4, 0.5, 0.6]}
    assert horizon_figure(errors, "toy", folder, "toy-horizons.png") == "toy-horizons.png"
    (ax,) = folder.figure.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["linear", "coin-forecast"]
    for model, values in errors.items():
        assert lines[model].get_xdata().tolist() == [1, 2, 3]
        assert lines[model].get_ydata().tolist() == values
        assert lines[model].get_color() == forecast_color(model)
    # COIN's own forecaster stands out
    assert lines["coin-forecast"].get_linewidth() == 2.5 and lines["linear"].get_linewidth() == 1.2
    assert ax.get_title() == "toy" and ax.get_xlabel() == "horizon" and ax.get_ylabel() == "test MAE"
    # written where a run folder keeps it
    name = horizon_figure(errors, "toy", RunDirectory(tmp_path), "toy-horizons.png")
    assert (tmp_path / name).stat().st_size > 1000


def _series(names=(), counts=False):
    # node totals 5 > 3 > 1 > 4 > 2 > 0 (node i: i-th row of the order below)
    level = torch.tensor([0.0, 3.0, 1.0, 5.0, 2.0, 4.0], dtype=torch.float64) * 10
    values = level + torch.arange(8, dtype=torch.float64)[:, None]
    ring = torch.tensor([[0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0]])
    return TemporalGraphSeries(
        "toy", values, [(ring, None)], raw_counts=counts, source="hand", node_names=names
    )


def test_forecasts_are_unscaled_and_drawn_beside_the_truth_of_the_four_largest_nodes(folder):
    series = _series()
    mean = torch.arange(6, dtype=torch.float64)
    std = torch.full((6,), 2.0, dtype=torch.float64)
    scaled = np.arange(18.0).reshape(3, 6) / 10  # steps 5, 6, 7
    forecasts = {"linear": {"steps": [5, 6, 7], "values": scaled.tolist()}}
    forecast_figure(series, mean, std, forecasts, folder, "f.png", entity="sensor", unit="5 minutes")
    axes = folder.figure.axes
    assert [ax.get_title() for ax in axes] == ["sensor 3", "sensor 5", "sensor 1", "sensor 4"]
    for ax, node in zip(axes, (3, 5, 1, 4)):
        model, truth = ax.get_lines()
        assert model.get_label() == "linear" and truth.get_label() == "truth"
        np.testing.assert_allclose(
            model.get_ydata(), scaled[:, node] * 2.0 + node
        )  # back in the series' units
        np.testing.assert_allclose(truth.get_ydata(), series.values[5:8, node].numpy())
        assert model.get_xdata().tolist() == [5, 6, 7] and ax.get_xlabel() == "step (5 minutes)"
    assert axes[0].get_ylabel() == "value (as stored)"


def test_named_nodes_title_their_panels_and_counts_label_the_axis(folder):
    series = _series(names=("a", "b", "c", "<d>", "e", "f"), counts=True)
    ones, zeros = torch.ones(6, dtype=torch.float64), torch.zeros(6, dtype=torch.float64)
    forecasts = {"coin-forecast": {"steps": [7], "values": [[0.0] * 6]}}
    forecast_figure(series, zeros, ones, forecasts, folder, "f.png")
    assert [ax.get_title() for ax in folder.figure.axes] == ["<d>", "f", "b", "e"]
    assert folder.figure.axes[0].get_ylabel() == "count" and folder.figure.axes[0].get_xlabel() == "step"
    (model, _) = folder.figure.axes[0].get_lines()
    assert model.get_linewidth() == 2.2  # COIN's own forecaster, thicker


def test_the_graph_figure_draws_edges_above_the_threshold_and_sizes_nodes_by_degree(folder):
    weights = np.array(
        [[0.0, 0.5, 0.01, 0.3], [0.5, 0.0, 0.2, 0.0], [0.01, 0.2, 0.0, 0.0], [0.3, 0.0, 0.0, 0.0]]
    )
    colour = np.array([0.1, 0.2, 0.3, 0.4])
    graph_figure(weights, colour, 0.02, folder, "g.png", title="where", label="change")
    ax, bar = folder.figure.axes
    edges = ax.get_lines()
    # the 0.01 edge stays under the threshold: three edges, their widths 0.3 + 3 w
    assert sorted(round(line.get_linewidth(), 6) for line in edges) == [0.9, 1.2, 1.8]
    (points,) = ax.collections
    # degrees 2, 2, 1, 1 (the edge 0–2 is not drawn)
    assert points.get_sizes().tolist() == [23.0, 23.0, 19.0, 19.0]
    np.testing.assert_allclose(points.get_array(), colour)
    assert ax.get_title() == "where" and bar.get_ylabel() == "change"
    graph_figure(weights, colour, 0.0, folder, "g.png", title="where", label="change")
    assert len(folder.figure.axes[0].get_lines()) == 4  # every positive weight at threshold 0
