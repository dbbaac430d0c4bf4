"""Omniglot from its zips: alphabets read inverted, a shared alphabet read once, the one-shot runs' answers,
and archives that are not the twenty runs."""

import io
import zipfile

import numpy as np
import pytest
import torch
from datafiles import OMNIGLOT, OMNIGLOT_RUNS, requires_data
from PIL import Image

from pdenets.data.errors import DatasetError, DatasetNotFoundError
from pdenets.data.omniglot import BASE_ALPHABETS, NOVEL_ALPHABETS, load_one_shot_runs, omniglot_images


@requires_data(*OMNIGLOT, OMNIGLOT_RUNS)
def test_omniglot_offline_files():
    novel = omniglot_images(NOVEL_ALPHABETS)
    assert len(novel.class_names) == 106 and len(novel) == 2120
    assert set(torch.bincount(novel.labels).tolist()) == {20}
    assert {name.split("/")[0] for name in novel.class_names} == set(NOVEL_ALPHABETS)
    base_names = set(omniglot_images(BASE_ALPHABETS).class_names)
    assert len(base_names) == 136 and not base_names & set(novel.class_names)
    runs = load_one_shot_runs()
    assert len(runs) == 20 and all(
        r.training.shape == (20, 1, 28, 28) and sorted(r.answers.tolist()) == list(range(20)) for r in runs
    )


def _png(pixels):
    stream = io.BytesIO()
    Image.fromarray(pixels).save(stream, format="PNG")
    return stream.getvalue()


def _drawing(seed, side=8):
    """A small drawing as Omniglot stores one: black strokes (0) on white (255)."""
    strokes = np.random.default_rng(seed).random((side, side)) < 0.3
    return np.where(strokes, 0, 255).astype(np.uint8)


def _background(root):
    """small1: Greek (2 characters) and Latin; small2: the same Greek characters drawn differently, and
    Sanskrit."""
    folder = root / "omniglot"
    folder.mkdir(parents=True, exist_ok=True)
    contents = {
        "images_background_small1": {"Greek/character01": 1, "Greek/character02": 2, "Latin/character01": 3},
        "images_background_small2": {
            "Greek/character01": 11,
            "Greek/character02": 12,
            "Sanskrit/character01": 13,
        },
    }
    for top, classes in contents.items():
        with zipfile.ZipFile(folder / f"{top}.zip", "w") as archive:
            for name, seed in classes.items():
                for drawing in range(2):
                    archive.writestr(
                        f"{top}/{name}/{seed:04d}_{drawing:02d}.png", _png(_drawing(seed * 10 + drawing))
                    )
    return root


def test_alphabets_are_read_inverted_and_a_shared_alphabet_from_the_first_zip(tmp_path):
    root = _background(tmp_path)
    greek = omniglot_images(("Greek",), root, size=8)
    assert greek.class_names == ("Greek/character01", "Greek/character02") and greek.labels.tolist() == [
        0,
        0,
        1,
        1,
    ]
    expected = np.stack([_drawing(seed) for seed in (10, 11, 20, 21)]) == 0  # strokes are 1
    assert torch.equal(greek.images[:, 0], torch.from_numpy(expected.astype(np.float32)))
    everything = omniglot_images(None, root, size=8)
    assert [name.split("/")[0] for name in everything.class_names] == ["Greek", "Greek", "Latin", "Sanskrit"]
    assert len(everything) == 8 and torch.equal(everything.images[:4], greek.images)


def _runs(root, runs=20, skip=None, pairs=None):
    """all_runs.zip: each run's test item 1 is its training class 2 and item 2 is class 1."""
    folder = root / "omniglot"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "all_runs.zip", "w") as archive:
        for number in range(1, runs + 1):
            run = f"run{number:02d}"
            if run == skip:
                continue
            for index in (1, 2):
                archive.writestr(f"{run}/training/class{index:02d}.png", _png(_drawing(100 * number + index)))
                archive.writestr(f"{run}/test/item{index:02d}.png", _png(_drawing(100 * number + 3 - index)))
            lines = pairs or [
                f"{run}/test/item01.png {run}/training/class02.png",
                f"{run}/test/item02.png {run}/training/class01.png",
            ]
            archive.writestr(f"{run}/class_labels.txt", "\n".join(lines) + "\n\n")
    return root


def test_one_shot_answers_point_at_the_matching_training_drawing(tmp_path):
    runs = load_one_shot_runs(_runs(tmp_path), size=8)
    assert [run.name for run in runs] == [f"run{number:02d}" for number in range(1, 21)]
    for run in runs:
        assert run.training.shape == (2, 1, 8, 8) and run.answers.tolist() == [1, 0]
        assert torch.equal(run.test, run.training[run.answers])  # each test drawing is its class's drawing
        assert float(run.training.mean()) < 0.5  # inverted: strokes (30% of pixels) are the ones


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(skip="run07"), "KeyError"),
        (dict(runs=19), "KeyError"),
        (dict(pairs=["run01/test/item01.png run01/training/class09.png"]), "KeyError"),
        (dict(pairs=["run01/test/item01.png"]), "ValueError"),
    ],
    ids=["a run missing", "nineteen runs", "an answer without a drawing", "a line without an answer"],
)
def test_a_runs_archive_that_is_not_the_twenty_runs_is_named(tmp_path, options, message):
    root = _runs(tmp_path, **options)
    with pytest.raises(DatasetError) as caught:
        load_one_shot_runs(root, size=4)
    path = root / "omniglot" / "all_runs.zip"
    assert str(caught.value).startswith(f"{path}: not the 20 one-shot runs of Lake et al. ({message}")


def test_missing_omniglot_files_say_where_to_get_them(tmp_path):
    for read, name in (
        (lambda: omniglot_images(None, tmp_path), "images_background_small1.zip"),
        (lambda: load_one_shot_runs(tmp_path), "all_runs.zip"),
    ):
        with pytest.raises(DatasetNotFoundError) as caught:
            read()
        message = str(caught.value)
        assert (
            name in message and "github.com/brendenlake/omniglot" in message and "never downloads" in message
        )
