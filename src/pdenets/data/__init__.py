"""Datasets: synthetic sets, graphs, splits; one place resolves the data directory.

Every loader reports problems through one family of errors that name the file
(:class:`DatasetError`, :class:`DatasetNotFoundError`, :class:`UnsafePickleError`) and
checks declared sizes against a memory budget before allocating
(:mod:`pdenets.data.limits`).
"""

from .errors import DatasetError, DatasetNotFoundError, DataWarning
from .graphs import load_edge_list, load_graph, load_npz, load_planetoid, save_graph_npz
from .limits import MEMORY_BUDGET_ENV_VAR, memory_budget
from .paths import DATA_ENV_VAR, resolve_data_dir
from .synthetic import (
    SYNTHETIC_SETS,
    SyntheticSet,
    make_circles,
    make_moons,
    make_spirals,
    make_synthetic,
    make_xor,
)
from .temporal import TEMPORAL_DATASETS, TemporalGraphSeries, load_temporal

__all__ = [
    "DatasetError",
    "DataWarning",
    "DatasetNotFoundError",
    "UnsafePickleError",
    "load_array_pickle",
    "load_edge_list",
    "load_graph",
    "load_npz",
    "load_planetoid",
    "save_graph_npz",
    "MEMORY_BUDGET_ENV_VAR",
    "memory_budget",
    "DATA_ENV_VAR",
    "resolve_data_dir",
    "SYNTHETIC_SETS",
    "SyntheticSet",
    "make_circles",
    "make_moons",
    "make_spirals",
    "make_synthetic",
    "make_xor",
    "TEMPORAL_DATASETS",
    "TemporalGraphSeries",
    "load_temporal",
]


def __getattr__(name: str):
    # the pickle reader builds on scipy's sparse classes: import it when it is asked for
    if name in ("UnsafePickleError", "load_array_pickle"):
        from . import safe_pickle

        return getattr(safe_pickle, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
