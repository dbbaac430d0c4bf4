"""Figure helpers shared by the task reports (matplotlib, Agg backend).

Figures are saved with :meth:`RunDirectory.save_figure <pdenets.experiments.rundir.RunDirectory.save_figure>`
(atomic write, figure closed). The helpers draw on a given axis, so a task composes its
own layout from them.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence, Tuple

import numpy as np

from .._lazy import LazyModule

__all__ = [
    "plt",
    "CLASS_COLORS",
    "scatter_classes",
    "mean_band",
    "grouped_bars",
    "box_per_group",
    "errorbar_lines",
    "literal",
    "keep_text_literal",
]


def _agg_backend() -> None:
    """The Agg backend (figures are files; no display is needed)."""
    import matplotlib

    matplotlib.use("Agg")


#: ``matplotlib.pyplot`` on the Agg backend, imported when a report first draws
plt = LazyModule("matplotlib.pyplot", before_import=_agg_backend)

CLASS_COLORS = np.array(["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"])


def literal(text: object) -> str:
    r"""``text`` as matplotlib draws it, letter for letter: each ``$`` escaped, so that ``$x^2$`` in a user's
    name is neither typeset as mathematics nor (``$\notacommand$``) an error that stops a figure.

    Examples:
        >>> print(literal("cost ($) and $x^2$"))
        cost (\$) and \$x^2\$
    """
    return str(text).replace("$", r"\$")


def keep_text_literal(figure) -> None:
    """Escape every ``$`` of the figure's own texts, once, just before it is saved.

    The project's figures write no mathematics of their own, so each ``$`` in a title, an axis label, a
    legend entry, an annotation or a tick label given as text (a class name, a feature name) came from the
    user's data and is kept literal (:func:`literal`). The numbers matplotlib's formatters write when the
    figure is drawn, such as a log axis's ``10^{0}``, are typeset as usual. Called by
    :meth:`RunDirectory.save_figure <pdenets.experiments.rundir.RunDirectory.save_figure>`.
    """
    from matplotlib import category, ticker
    from matplotlib.text import Text

    drawn_at_render = set()  # tick labels and offsets: rewritten by the formatters at every draw
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis, getattr(axes, "zaxis", None)):
            if axis is None:
                continue
            drawn_at_render.add(id(axis.offsetText))
            for tick in [*axis.majorTicks, *axis.minorTicks]:
                drawn_at_render.update((id(tick.label1), id(tick.label2)))
            for which in ("major", "minor"):
                formatter = getattr(axis, f"get_{which}_formatter")()
                if isinstance(formatter, ticker.FixedFormatter):
                    formatter.seq = [literal(text) for text in formatter.seq]
                elif isinstance(formatter, (category.StrCategoryFormatter, ticker.FuncFormatter)):
                    getattr(axis, f"set_{which}_formatter")(_literal_formatter(formatter))
    for text in figure.findobj(Text):
        if id(text) not in drawn_at_render and "$" in text.get_text():
            text.set_text(literal(text.get_text()))


def _literal_formatter(inner):
    """A tick formatter that writes ``inner``'s texts (names from the data, a function's words) literally."""
    from matplotlib import ticker

    class LiteralFormatter(ticker.Formatter):
        def __call__(self, value, pos=None):
            return literal(inner(value, pos))

        def format_ticks(self, values):
            return [literal(text) for text in inner.format_ticks(values)]

    return LiteralFormatter()


def scatter_classes(ax, points, labels, *, title: Optional[str] = None, size: float = 4.0) -> None:
    """Scatter 2-D points coloured by integer class, no ticks (the papers' figure style)."""
    points = np.asarray(points, dtype=float)
    labels = np.asarray(labels, dtype=int)
    ax.scatter(points[:, 0], points[:, 1], c=CLASS_COLORS[labels % len(CLASS_COLORS)], s=size, linewidths=0)
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)


def mean_band(ax, x, runs: np.ndarray, *, label: str, color=None, linestyle: str = "-") -> None:
    """Mean curve over runs (rows) with a min–max band."""
    runs = np.asarray(runs, dtype=float)
    mean = np.nanmean(runs, axis=0)
    line = ax.plot(x, mean, label=label, color=color, linestyle=linestyle, linewidth=1.5)[0]
    if runs.shape[0] > 1:
        ax.fill_between(
            x,
            np.nanmin(runs, axis=0),
            np.nanmax(runs, axis=0),
            color=line.get_color(),
            alpha=0.12,
            linewidth=0,
        )


def grouped_bars(
    ax,
    groups: Sequence[str],
    series: Mapping[str, Tuple[Sequence[float], Sequence[float]]],
    *,
    colors: Optional[Mapping[str, str]] = None,
    ylabel: str = "",
    ylim=None,
) -> None:
    """Bars of ``mean ± std`` for each group, one bar per series side by side."""
    width = 0.8 / max(1, len(series))
    positions = np.arange(len(groups))
    for index, (label, (means, stds)) in enumerate(series.items()):
        offset = (index - (len(series) - 1) / 2) * width
        ax.bar(
            positions + offset,
            means,
            width,
            yerr=stds,
            label=label,
            capsize=2,
            color=(colors or {}).get(label),
        )
    ax.set_xticks(positions, list(groups), fontsize=8)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def box_per_group(
    ax,
    values: Mapping[str, Sequence[float]],
    *,
    reference: Optional[Mapping[str, float]] = None,
    reference_label: str = "reference",
    title: str = "",
    ylabel: str = "",
) -> None:
    """One box plot per group of values; optional reference markers (e.g. a paper's means) as red stars."""
    names = list(values)
    ax.boxplot([list(values[name]) for name in names], showfliers=True)
    ax.set_xticks(range(1, len(names) + 1), names, rotation=30, ha="right", fontsize=8)
    labelled = False
    for index, name in enumerate(names, start=1):
        if reference and name in reference:
            ax.plot(
                index,
                reference[name],
                marker="*",
                color="#d62728",
                markersize=10,
                linestyle="none",
                label=None if labelled else reference_label,
            )
            labelled = True
    if labelled:
        ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def errorbar_lines(
    ax,
    series: Mapping[str, Tuple[Sequence[float], Sequence[float], Sequence[float]]],
    *,
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
    log2_x: bool = False,
) -> None:
    """One ``x → mean ± std`` line per series (``{label: (x, means, stds)}``)."""
    for label, (x, means, stds) in series.items():
        ax.errorbar(list(x), list(means), yerr=list(stds), marker="o", capsize=3, label=label)
    if log2_x:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
