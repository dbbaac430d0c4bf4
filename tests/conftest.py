import sys
from pathlib import Path

import numpy as np
import pytest
import torch


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def cycle_weights(n: int, dtype=torch.float64) -> torch.Tensor:
    """Dense adjacency of the cycle graph C_n (every degree 2)."""
    weights = torch.zeros(n, n, dtype=dtype)
    index = torch.arange(n)
    weights[index, (index + 1) % n] = 1.0
    weights[(index + 1) % n, index] = 1.0
    return weights


def random_symmetric_weights(n: int, density: float = 0.1, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    values = torch.rand(n, n, generator=generator, dtype=torch.float64)
    mask = torch.rand(n, n, generator=generator) < density
    weights = values * mask
    weights = (weights + weights.T) / 2
    weights.fill_diagonal_(0.0)
    return weights


# Test helpers importable by name, here and in spawned worker processes (spawn copies sys.path).
HELPERS = str(Path(__file__).resolve().parent / "helpers")
if HELPERS not in sys.path:
    sys.path.insert(0, HELPERS)

collect_ignore = ["helpers"]


def pytest_collection_modifyitems(config, items):
    """A test marked ``requires_data(path, ...)`` skips where a path is not in the data directory, naming
    it."""
    from datafiles import missing_data, skip_reason

    for item in items:
        for mark in item.iter_markers("requires_data"):
            missing = missing_data(mark.args)
            if missing is not None:
                item.add_marker(pytest.mark.skip(reason=skip_reason(missing)))
                break
