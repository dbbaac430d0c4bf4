"""Fixtures of the whole suite, and the device it runs on.

``pytest --device cuda`` (or ``cuda:1``; default ``cpu``) runs every test that takes the ``device`` fixture
there: operators, layers, models, analysis and each task's ``--quick`` run. Those tests draw their inputs on
the CPU with the seeded generator and move them (so a device sees the same numbers as the CPU), build models
and operators from them, and compare on the device or after ``.cpu()``. A test of code that runs on the CPU
by design (SciPy, NumPy, the compiled CSR kernel, pickles) carries ``@pytest.mark.cpu_only("why")``: it runs
on the CPU and is skipped, with its reason, on another device. ``pytest --device cuda -m device`` runs the
device-taking tests alone (every test that takes ``device`` is marked ``device``).
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        default="cpu",
        help="torch device of the tests that take the `device` fixture: cpu (default), cuda, cuda:N",
    )


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):  # one test process per core (make test): one thread each
        os.environ["OMP_NUM_THREADS"] = "1"  # and in the processes the tests start
        torch.set_num_threads(1)
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    name = config.getoption("--device")
    try:
        device = torch.device(name)
    except RuntimeError as error:
        raise pytest.UsageError(f"--device {name!r}: {error}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise pytest.UsageError(f"--device {name}: this torch has no CUDA device ({torch.__version__})")
    if device.type == "cuda":
        # the tests check the mathematics in float32 and float64: no TF32 rounding in matrix products or
        # convolutions
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


@pytest.fixture(scope="session")
def device(request) -> torch.device:
    """The device of ``--device`` (default: the CPU)."""
    return torch.device(request.config.getoption("--device"))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def cycle_weights(n: int, dtype=torch.float64, device="cpu") -> torch.Tensor:
    """Dense adjacency of the cycle graph C_n (every degree 2), on ``device``."""
    weights = torch.zeros(n, n, dtype=dtype)
    index = torch.arange(n)
    weights[index, (index + 1) % n] = 1.0
    weights[(index + 1) % n, index] = 1.0
    return weights.to(device)


def random_symmetric_weights(n: int, density: float = 0.1, seed: int = 0, device="cpu") -> torch.Tensor:
    """Symmetric random weights drawn on the CPU (the same on every device), then moved to ``device``."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.rand(n, n, generator=generator, dtype=torch.float64)
    mask = torch.rand(n, n, generator=generator) < density
    weights = values * mask
    weights = (weights + weights.T) / 2
    weights.fill_diagonal_(0.0)
    return weights.to(device)


# Test helpers importable by name, here and in spawned worker processes (spawn copies sys.path).
HELPERS = str(Path(__file__).resolve().parent / "helpers")
if HELPERS not in sys.path:
    sys.path.insert(0, HELPERS)

collect_ignore = ["helpers"]


def pytest_collection_modifyitems(config, items):
    """A test marked ``requires_data(path, ...)`` skips where a path is not in the data directory, naming
    it; a test that takes ``device`` is marked ``device``; on a device other than the CPU, a test marked
    ``cpu_only(reason)`` skips with its reason."""
    from datafiles import missing_data, skip_reason

    device = torch.device(config.getoption("--device"))
    for item in items:
        if "device" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.device)
        cpu_only = item.get_closest_marker("cpu_only")
        if cpu_only is not None and device.type != "cpu":
            reason = cpu_only.args[0] if cpu_only.args else "runs on the CPU by design"
            item.add_marker(pytest.mark.skip(reason=f"CPU only on --device {device}: {reason}"))
            continue
        for mark in item.iter_markers("requires_data"):
            missing = missing_data(mark.args)
            if missing is not None:
                item.add_marker(pytest.mark.skip(reason=skip_reason(missing)))
                break
