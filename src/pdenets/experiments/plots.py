"""Plot helpers shared by the task reports (matplotlib, Agg backend, PNG files)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["plt", "CLASS_COLORS", "scatter_classes", "mean_band", "save"]

CLASS_COLORS = np.array(["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"])


def scatter_classes(ax, points, labels, *, title: Optional[str] = None, size: float = 4.0) -> None:
    """Scatter 2-D points coloured by integer class, no ticks (the paper's figure style)."""
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
        ax.fill_between(x, np.nanmin(runs, axis=0), np.nanmax(runs, axis=0), color=line.get_color(), alpha=0.12,
                        linewidth=0)


def save(fig, path: Union[str, Path], dpi: int = 110) -> Path:
    path = Path(path)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path
