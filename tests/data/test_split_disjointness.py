"""Every split a task trains or evaluates on: training ∩ held-out = ∅, and each part has its documented size.

One table of split producers. Each returns ``{part: ids}`` (sample ids, or class ids for class splits) and
the documented size of every part; one generic check asserts the parts are pairwise disjoint and sized as
documented. A boundary off by one, a held-out image in training, a class in both base and novel fail here
whichever producer has them. Image identities come from a fake CIFAR-10 folder whose every image carries
its global index in its first pixel, so the check sees *which* images each split holds.
"""

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
import torch
from datafiles import CLINC150, OMNIGLOT, requires_data
from PIL import Image

from pdenets.data.paths import resolve_data_dir
from pdenets.data.splits import per_class_split
from pdenets.data.temporal import load_temporal
from pdenets.data.vision import load_cifar10, load_cifar10_centred
from pdenets.tasks.coin_forecast.protocol import ForecastSetup, protocol_windows
from pdenets.tasks.coin_tabular.task import labelled_split

DATA = resolve_data_dir()


def _cifar_label(index: np.ndarray) -> np.ndarray:
    return (index // 7) % 10  # not index % 10: a shift by one chunk (1,000 images) changes the labels


@pytest.fixture(scope="module")
def fake_cifar(tmp_path_factory):
    """51 PNG chunks of 1,000 images; image ``i`` has pixel (0, 0) = the three bytes of ``i``."""
    root = tmp_path_factory.mktemp("data")
    folder = root / "cifar10" / "convnetjs_png"
    folder.mkdir(parents=True)
    for chunk in range(51):
        rows = np.zeros((1000, 1024, 3), dtype=np.uint8)
        index = chunk * 1000 + np.arange(1000)
        rows[:, 0] = np.stack([index >> 16, (index >> 8) & 255, index & 255], 1)
        rows[:, 1:, :] = (index % 251)[:, None, None]  # images differ, so the per-pixel mean is not 0
        Image.fromarray(rows).save(folder / f"cifar10_batch_{chunk}.png")
    (folder / "cifar10_labels.json").write_text(
        json.dumps({"labels": _cifar_label(np.arange(51_000)).tolist()})
    )
    return root


def _image_ids(images: torch.Tensor) -> np.ndarray:
    pixel = (images[:, :, 0, 0] * 255).round().long().numpy()
    return (pixel[:, 0] << 16) | (pixel[:, 1] << 8) | pixel[:, 2]


def _check_parts(parts, sizes):
    for name, ids in parts.items():
        assert len(set(ids)) == len(ids), f"{name} holds a sample twice"
        assert len(ids) == sizes[name], f"{name}: {len(ids)} samples, documented {sizes[name]}"
    for (first, a), (second, b) in combinations(parts.items(), 2):
        shared = set(a) & set(b)
        assert not shared, f"{first} ∩ {second} holds {len(shared)} samples, e.g. {sorted(shared)[:3]}"


@pytest.mark.parametrize(
    "limits, sizes",
    [
        ({}, {"train": 40_000, "held-out": 10_000, "official": 1_000}),
        ({"train_limit": 1_500, "test_limit": 10}, {"train": 1_500, "held-out": 10, "official": 1_000}),
    ],
)
def test_cifar10_training_never_sees_the_held_out_images(fake_cifar, limits, sizes):
    train, tests = load_cifar10_centred(fake_cifar, **limits)
    raw = {
        "train": load_cifar10("train", fake_cifar, limit=limits.get("train_limit")),
        "held-out": load_cifar10("heldout", fake_cifar, limit=limits.get("test_limit")),
        "official": load_cifar10("official", fake_cifar),
    }
    parts = {name: _image_ids(data.images).tolist() for name, data in raw.items()}
    _check_parts(parts, sizes)
    # the documented order: the first images of training, the last 10,000 held out, then the official ones
    assert parts["train"][0] == 0 and parts["held-out"][0] == 40_000 and parts["official"][0] == 50_000
    for name, data in raw.items():  # every label belongs to its image
        assert torch.equal(data.labels, torch.from_numpy(_cifar_label(np.asarray(parts[name]))))
    # the held-out and official images are centred with the training mean, not their own
    mean = raw["train"].images.mean(0)
    torch.testing.assert_close(train.images, raw["train"].images - mean)
    for name in ("held-out", "official"):
        torch.testing.assert_close(tests[name].images, raw[name].images - mean)
        assert torch.equal(tests[name].labels, raw[name].labels)


@pytest.mark.parametrize("num_classes, per_class", [(2, 1), (3, 5), (7, 20)])
def test_coin_tabular_labels_a_fixed_number_per_class_and_predicts_only_the_rest(num_classes, per_class):
    labels = np.random.default_rng(num_classes).integers(0, num_classes, 400)
    labels[:num_classes] = np.arange(num_classes)
    labelled = labelled_split(labels, per_class, seed=3)
    unlabelled = np.setdiff1d(np.arange(len(labels)), labelled)
    _check_parts(
        {"labelled": labelled.tolist(), "unlabelled": unlabelled.tolist()},
        {"labelled": num_classes * per_class, "unlabelled": len(labels) - num_classes * per_class},
    )
    assert np.bincount(labels[labelled], minlength=num_classes).tolist() == [per_class] * num_classes
    assert not np.array_equal(labelled, labelled_split(labels, per_class, seed=4))


@pytest.mark.parametrize("train, val", [(20, 30), (1, 1), (5, 9)])
def test_node_splits_per_class(train, val):
    labels = torch.arange(4).repeat_interleave(60)
    split = per_class_split(labels, train, val, seed=2)
    parts = {"train": split.train.tolist(), "val": split.val.tolist(), "test": split.test.tolist()}
    _check_parts(parts, {"train": 4 * train, "val": 4 * val, "test": 240 - 4 * (train + val)})


def _ring_series(path: Path, steps: int, nodes: int = 6):
    values = np.random.default_rng(steps).normal(size=(steps, nodes))
    edges = [[i, (i + 1) % nodes] for i in range(nodes)] + [[(i + 1) % nodes, i] for i in range(nodes)]
    path.write_text(json.dumps({"FX": values.tolist(), "edges": edges}))
    return load_temporal(path)


@pytest.mark.parametrize("steps", [40, 57, 123])
def test_forecast_protocols_split_by_time(tmp_path, steps):
    """(origin, region, horizon) target cells: disjoint parts, training targets before validation ones before
    test ones; the PyTorch Geometric Temporal protocol trains on the first 20 % of the snapshots (its last
    fifth held out for validation) and tests on the rest."""
    series = _ring_series(tmp_path / "ring.json", steps)
    for protocol, setup in (
        ("ours", ForecastSetup(lags=4, horizons=3, test_fraction=0.2, val_fraction=0.1)),
        ("pyg-temporal", None),
    ):
        data = protocol_windows(series, protocol, setup)
        day = data.target_steps[:, None, :].expand_as(data.targets)
        cells = {name: torch.nonzero(mask.flatten()).squeeze(1).tolist() for name, mask in data.masks.items()}
        if protocol == "ours":
            test_days = round(0.2 * steps)
            val_days = round(0.1 * steps)
            # target day d is reached by horizons 0 … min(H, d − lags + 1) − 1 (origins start at `lags`)
            val_start = steps - test_days - val_days
            counted = {
                "train": 6 * sum(min(3, d - 4 + 1) for d in range(4, val_start)),
                "val": 6 * 3 * val_days,
                "test": 6 * 3 * test_days,
            }
        else:
            snapshots = len(data.inputs)
            train_count = int(0.2 * snapshots)
            val_snapshots = max(1, train_count // 5)
            counted = {
                "train": (train_count - val_snapshots) * 6,
                "val": val_snapshots * 6,
                "test": (snapshots - train_count) * 6,
            }
        _check_parts(cells, counted)
        last_train = day[data.masks["train"]].max()
        assert (
            last_train
            < day[data.masks["val"]].min()
            <= day[data.masks["val"]].max()
            < day[data.masks["test"]].min()
        )
        if protocol == "ours":
            assert day[data.masks["test"]].min() == steps - test_days
            assert day[data.masks["val"]].min() == steps - test_days - val_days
        # no input of a training origin looks at a validation or test day
        train_origins = data.masks["train"].flatten(1).any(1)
        assert int(data.origins[train_origins].max()) - 1 < int(day[data.masks["val"]].min())


def _classes_of(features):
    return {
        "base": list(features.base_classes),
        "val": list(features.val_classes),
        "novel": list(features.novel_classes),
    }


@requires_data(*CLINC150)
def test_clinc150_classes_split_by_domain():
    from pdenets.data.text import clinc150_features, load_clinc150

    features = clinc150_features(DATA, encoder=lambda texts: np.zeros((len(texts), 4), dtype=np.float32))
    parts = _classes_of(features)
    _check_parts(parts, {"base": 90, "val": 15, "novel": 45})
    _, _, names, domains = load_clinc150(DATA)
    domain_of = {intent: domain for domain, intents in domains.items() for intent in intents}
    part_domains = {part: {domain_of[names[c]] for c in ids} for part, ids in parts.items()}
    assert not (part_domains["base"] & part_domains["novel"]) and not (
        part_domains["val"] & part_domains["novel"]
    )
    assert len(features.labels) == 150 * 150


@requires_data(*OMNIGLOT)
def test_omniglot_novel_characters_never_reach_the_backbone():
    from pdenets.data.omniglot import BASE_ALPHABETS, NOVEL_ALPHABETS, omniglot_images

    base = omniglot_images(BASE_ALPHABETS, DATA, size=8)
    novel = omniglot_images(NOVEL_ALPHABETS, DATA, size=8)
    _check_parts(
        {"base": list(base.class_names), "novel": list(novel.class_names)}, {"base": 136, "novel": 106}
    )
    # the same drawing is not in both (Greek and Latin sit in both zips: they must stay on one side)
    base_drawings = {bytes(image.numpy().tobytes()) for image in base.images}
    assert not any(bytes(image.numpy().tobytes()) in base_drawings for image in novel.images)
    assert len(novel) == 106 * 20
