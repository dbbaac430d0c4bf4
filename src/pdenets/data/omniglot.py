"""Omniglot (Lake, Salakhutdinov & Tenenbaum, Science 2015) from the local zips.

``<data dir>/omniglot/``: ``images_background_small1.zip`` (Balinese, Early_Aramaic,
Greek, Korean, Latin: 136 characters), ``images_background_small2.zip`` (Greek,
Japanese_(katakana), Latin, Sanskrit, Tagalog: 156 characters; Greek and Latin are the same
files as in small1) and ``all_runs.zip`` (the 20 official one-shot runs, 20-way 1-shot,
from the evaluation alphabets, never part of the background set). Each character is a
class of 20 drawings, 105 × 105 binary images.

The split used here is by alphabet: base (the backbone trains on them) = Balinese,
Early_Aramaic, Greek, Korean, Latin; novel (episodes) = Japanese_(katakana), Sanskrit,
Tagalog (106 characters). Images are read at 28 × 28 with strokes = 1 (inverted).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

import torch

from .errors import DatasetError, DatasetNotFoundError
from .images import ImageSet, decode_image, load_image_tree
from .paths import DATA_ENV_VAR, regular_file, resolve_data_dir

__all__ = [
    "BASE_ALPHABETS",
    "NOVEL_ALPHABETS",
    "omniglot_images",
    "OneShotRun",
    "load_one_shot_runs",
    "IMAGE_SIZE",
    "ZIPS",
]

BASE_ALPHABETS = ("Balinese", "Early_Aramaic", "Greek", "Korean", "Latin")
NOVEL_ALPHABETS = ("Japanese_(katakana)", "Sanskrit", "Tagalog")
ZIPS = ("images_background_small1.zip", "images_background_small2.zip")
IMAGE_SIZE = 28
SOURCE = (
    "https://github.com/brendenlake/omniglot (python/images_background_small{1,2}.zip, "
    "python/one-shot-classification/all_runs.zip)"
)


def _folder(data_dir) -> Path:
    return resolve_data_dir(data_dir) / "omniglot"


def _require(path: Path) -> Path:
    return regular_file(
        path,
        DatasetNotFoundError(
            f"missing dataset file {path}. Set the data directory with --data-dir or ${DATA_ENV_VAR}; get "
            f"the file from {SOURCE}. pdenets never downloads data."
        ),
    )


def omniglot_images(
    alphabets: Optional[Tuple[str, ...]] = None,
    data_dir=None,
    *,
    size: int = IMAGE_SIZE,
    progress: bool = False,
) -> ImageSet:
    """The characters of ``alphabets`` (default: all in the two small zips), classes
    ``Alphabet/characterNN``."""
    folder = _folder(data_dir)
    zips = [_require(folder / name) for name in ZIPS]
    return load_image_tree(zips, size=size, invert=True, classes=alphabets, progress=progress)


@dataclass(frozen=True)
class OneShotRun:
    """One official run: 20 training images (one per class), 20 test images and the true class of each
    test."""

    name: str
    training: torch.Tensor
    test: torch.Tensor
    answers: torch.Tensor


def load_one_shot_runs(data_dir=None, *, size: int = IMAGE_SIZE) -> List[OneShotRun]:
    """The 20 runs of ``all_runs.zip``: ``answers[i]`` is the training image matching test image ``i``."""
    path = _require(_folder(data_dir) / "all_runs.zip")
    runs = []
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            for number in range(1, 21):
                run = f"run{number:02d}"
                pairs = [
                    line.split()
                    for line in archive.read(f"{run}/class_labels.txt").decode().splitlines()
                    if line.strip()
                ]
                training_names = sorted(
                    n for n in names if n.startswith(f"{run}/training/") and n.endswith(".png")
                )
                index = {name: i for i, name in enumerate(training_names)}
                tests, answers = [], []
                for test_name, train_name in pairs:
                    tests.append(
                        decode_image(archive.read(test_name), size=size, invert=True, name=test_name)
                    )
                    answers.append(index[train_name])
                training = [
                    decode_image(archive.read(n), size=size, invert=True, name=n) for n in training_names
                ]
                runs.append(OneShotRun(run, torch.stack(training), torch.stack(tests), torch.tensor(answers)))
    except (KeyError, ValueError, zipfile.BadZipFile) as error:
        raise DatasetError(
            f"{path}: not the 20 one-shot runs of Lake et al. ({type(error).__name__}: {error})"
        ) from None
    return runs
