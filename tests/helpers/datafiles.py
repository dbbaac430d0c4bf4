"""The data files a test reads, declared with a mark: where one is missing the test skips, naming it.

A clone without the data folder passes the suite: ``requires_data("npz/cora.npz")`` marks a test (or, with
``pytest.param(..., marks=requires_data(...))``, one parameter) that reads that file under the data directory
(``$PDENETS_DATA``, else ``~/.cache/pdenets``); ``tests/conftest.py`` skips it, naming the first missing file.
``pytest -m requires_data`` selects every such test.
"""

from pathlib import Path
from typing import Iterable, Optional

import pytest

from pdenets.data.paths import resolve_data_dir

#: the MNIST files (training and test images and labels)
MNIST = tuple(
    f"mnist/MNIST/raw/{prefix}-{kind}-ubyte.gz"
    for prefix in ("train", "t10k")
    for kind in ("images-idx3", "labels-idx1")
)
MNIST_TEST = MNIST[2:]
CHICKENPOX = "temporal/chickenpox.json"
ENGLAND_COVID = "temporal/england_covid.json"
CORA_NPZ = "npz/cora.npz"
CLINC150 = ("clinc150/data_full.json", "clinc150/domains.json")
OMNIGLOT = ("omniglot/images_background_small1.zip", "omniglot/images_background_small2.zip")
OMNIGLOT_RUNS = "omniglot/all_runs.zip"


def cifar10(*batches: int) -> tuple:
    """The CIFAR-10 label list and the PNG chunks ``batches`` (1,000 images each; 40..49 held out, 50
    official)."""
    return ("cifar10/convnetjs_png/cifar10_labels.json",) + tuple(
        f"cifar10/convnetjs_png/cifar10_batch_{index}.png" for index in batches
    )


def requires_data(*relative_paths: str) -> pytest.MarkDecorator:
    """The mark of a test that reads ``relative_paths`` (files or folders) under the data directory."""
    if not relative_paths or not all(
        isinstance(path, str) and path and not Path(path).is_absolute() for path in relative_paths
    ):
        raise ValueError(f"requires_data takes paths relative to the data directory, got {relative_paths}")
    return pytest.mark.requires_data(*relative_paths)


def missing_data(relative_paths: Iterable[str], data_dir: Optional[Path] = None) -> Optional[str]:
    """The first of ``relative_paths`` absent from the data directory, or ``None``."""
    root = resolve_data_dir(data_dir)
    return next((path for path in relative_paths if not (root / path).exists()), None)


def skip_reason(missing: str, data_dir: Optional[Path] = None) -> str:
    """Why a test that needs ``missing`` is skipped."""
    return f"needs $PDENETS_DATA/{missing} (not in {resolve_data_dir(data_dir)}; see README.md, Data)"
