"""Datasets: synthetic sets, graphs, splits; one place resolves the data directory."""

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

__all__ = [
    "DATA_ENV_VAR",
    "resolve_data_dir",
    "SYNTHETIC_SETS",
    "SyntheticSet",
    "make_circles",
    "make_moons",
    "make_spirals",
    "make_synthetic",
    "make_xor",
]
