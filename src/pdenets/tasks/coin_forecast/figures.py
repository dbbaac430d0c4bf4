"""Figures of forecasting reports: errors per horizon, forecasts against the truth, a region graph.

Drawing only: every function takes the numbers to plot and a run folder, saves one PNG and
returns its name. Colours are fixed per model so that the figures of one report agree.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Sequence

import numpy as np
import torch

from ...experiments.plots import plt
from .protocol import CLOSED_FORM, diffuses_itself, learned_forecasters

__all__ = ["forecast_color", "horizon_figure", "forecast_figure", "graph_figure"]

#: the colours of the forecasters, given in their order (closed-form, then the registry's forecast family)
_PALETTE = (
    "#999999",
    "#bbbb55",
    "#1f77b4",
    "#ff7f0e",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
)


def forecast_color(model: str) -> str:
    """One colour per forecaster, the same in every figure: by its place among all forecasters.

    Args:
        model: a forecaster's name.

    Returns:
        A hex colour (a forecaster outside the list gets the last one).

    Examples:
        >>> forecast_color("last-value"), forecast_color("no-such-forecaster")
        ('#999999', '#7f7f7f')
    """
    order = CLOSED_FORM + learned_forecasters()
    return _PALETTE[order.index(model) % (len(_PALETTE) - 1)] if model in order else _PALETTE[-1]


def _line_width(model: str, highlighted: float, other: float) -> float:
    """COIN's own forecaster (the one that diffuses itself) drawn thicker."""
    return highlighted if model not in CLOSED_FORM and diffuses_itself(model) else other


def horizon_figure(
    errors: Mapping[str, Sequence[float]],
    title: str,
    run_dir,
    filename: str,
) -> str:
    """Test error per horizon of every model, one line each (COIN's thicker).

    Args:
        errors: model name → its errors per horizon ``1…H``, in legend order.
        title: the figure's title.
        run_dir: the run folder (:class:`~pdenets.experiments.rundir.RunDirectory`) the PNG is saved in.
        filename: the PNG's name.

    Returns:
        The file name of the saved figure.
    """
    fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
    for model, values in errors.items():
        ax.plot(
            range(1, len(values) + 1),
            values,
            "o-",
            label=model,
            color=forecast_color(model),
            linewidth=_line_width(model, 2.5, 1.2),
        )
    ax.set_xlabel("horizon")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))  # horizons are whole steps
    ax.set_ylabel("test MAE")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(
        fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0
    )  # beside, not on, the lines
    return run_dir.save_figure(fig, filename)


def forecast_figure(
    series,
    mean: torch.Tensor,
    std: torch.Tensor,
    forecasts: Dict[str, Dict[str, Any]],
    run_dir,
    filename: str,
    *,
    entity: str = "node",
    unit: str = "step",
) -> str:
    """Horizon-1 forecasts of the four nodes with the largest values, unscaled, beside the truth of
    ``series``.

    Args:
        series: the series (a :class:`~pdenets.data.temporal.TemporalGraphSeries`): the truth; its node names
            title the panels.
        mean: ``(N,)`` per-region offset that undoes the scaling.
        std: ``(N,)`` per-region scale that undoes the scaling.
        forecasts: model name → ``{"steps": target steps, "values": (steps, N) forecasts}`` in scaled units.
        run_dir: the run folder (:class:`~pdenets.experiments.rundir.RunDirectory`) the PNG is saved in.
        filename: the PNG's name.
        entity: what a node is (a panel without a node name is "<entity> <index>").
        unit: what one step is (the x axis of a series without a time column; with one, its stamps).

    Returns:
        The file name of the saved figure.
    """
    regions = torch.argsort(series.values.sum(0), descending=True)[:4].tolist()
    axis = series.time_axis  # the file's own stamps, where it has a time column

    def when(steps: Any) -> Any:
        return axis.times[np.asarray(steps, dtype=np.int64)] if axis is not None else steps

    fig, axes = plt.subplots(
        1, len(regions), figsize=(3.6 * len(regions), 3.2), layout="constrained", squeeze=False
    )
    for column, region in enumerate(regions):
        ax = axes[0][column]
        shown = False
        for model, forecast in forecasts.items():
            steps = forecast["steps"]
            values = np.asarray(forecast["values"])[:, region] * float(std[region]) + float(mean[region])
            ax.plot(
                when(steps),
                values,
                color=forecast_color(model),
                label=model,
                linewidth=_line_width(model, 2.2, 1.0),
                alpha=0.9,
            )
            if not shown:
                ax.plot(
                    when(steps), series.values[steps, region].numpy(), "k.-", label="truth", linewidth=1.5
                )
                shown = True
        ax.set_title(series.node_names[region] if series.node_names else f"{entity} {region}", fontsize=9)
        if axis is not None and axis.dated:
            from matplotlib import dates as mdates

            locator = mdates.AutoDateLocator(maxticks=5)
            ax.xaxis.set_major_locator(locator)
            ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.set_xlabel(axis.column if axis is not None else ("step" if unit == "step" else f"step ({unit})"))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("count" if series.raw_counts else "value (as stored)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8, frameon=False)
    return run_dir.save_figure(fig, filename)


def graph_figure(
    weights: np.ndarray,
    colour: np.ndarray,
    threshold: float,
    run_dir,
    filename: str,
    *,
    title: str,
    label: str,
) -> str:
    """A force-directed drawing of a region graph, nodes coloured by a value and sized by degree.

    Args:
        weights: ``(N, N)`` symmetric edge weights.
        colour: ``(N,)`` the value that colours each node.
        threshold: the edges drawn are those with a weight above it.
        run_dir: the run folder (:class:`~pdenets.experiments.rundir.RunDirectory`) the PNG is saved in.
        filename: the PNG's name.
        title: the figure's title.
        label: the colour bar's label.

    Returns:
        The file name of the saved figure.
    """
    import networkx  # a dependency of torch

    nodes = weights.shape[0]
    graph = networkx.Graph()
    graph.add_nodes_from(range(nodes))
    rows, cols = np.nonzero(np.triu(weights, 1) > threshold)
    graph.add_weighted_edges_from((int(i), int(j), float(weights[i, j])) for i, j in zip(rows, cols))
    layout = networkx.spring_layout(graph, seed=0, weight="weight")
    position = np.asarray([layout[node] for node in range(nodes)])
    fig, ax = plt.subplots(figsize=(6, 5), layout="constrained")
    for i, j in zip(rows, cols):
        ax.plot(
            position[[i, j], 0],
            position[[i, j], 1],
            color="#cccccc",
            linewidth=0.3 + 3 * weights[i, j],
            zorder=1,
        )
    degree = np.asarray([graph.degree(node) for node in range(nodes)])
    points = ax.scatter(
        position[:, 0],
        position[:, 1],
        c=colour,
        s=15 + 4 * degree,
        cmap="viridis",
        zorder=2,
        edgecolors="k",
        linewidths=0.3,
    )
    fig.colorbar(points, ax=ax, label=label)
    ax.set_xticks([]), ax.set_yticks([])
    ax.set_title(title)
    return run_dir.save_figure(fig, filename)
