"""Features files (our format and the public code's pickles / torch files) and the episode sampler."""

import pickle

import numpy as np
import pytest
import torch

from pdenets.data import DatasetError, UnsafePickleError
from pdenets.data.fewshot import EpisodeSampler, FeatureSet, load_features, mean_and_interval, save_features


def _set(classes=8, per_class=10, dim=4, seed=0):
    rng = np.random.default_rng(seed)
    features = torch.from_numpy(rng.normal(size=(classes * per_class, dim)).astype(np.float32))
    labels = torch.arange(classes).repeat_interleave(per_class)
    return FeatureSet(features, labels, tuple(f"c{c}" for c in range(classes)), base_classes=(0, 1),
                      val_classes=(2,), novel_classes=tuple(range(3, classes)))


def test_our_format_round_trip(tmp_path):
    original = _set()
    path = save_features(original, tmp_path / "f.npz")
    loaded = load_features(path)
    assert torch.equal(loaded.features, original.features) and torch.equal(loaded.labels, original.labels)
    assert (loaded.class_names, loaded.base_classes, loaded.val_classes, loaded.novel_classes) == (
        original.class_names, (0, 1), (2,), (3, 4, 5, 6, 7))
    assert torch.allclose(loaded.mean_of_base(), original.features[:20].mean(0))
    with pytest.raises(FileExistsError):
        save_features(original, path)


def test_public_code_pickles_and_torch_files(tmp_path):
    rng = np.random.default_rng(1)
    as_lists = {c: [rng.normal(size=5).astype(np.float32) for _ in range(6)] for c in range(4)}  # Diff-ResNet
    as_arrays = {c: rng.normal(size=(6, 5)).astype(np.float32) for c in range(4)}  # SimpleShot / LaplacianShot
    import collections

    default = collections.defaultdict(list, as_lists)
    for name, value in (("lists.plk", as_lists), ("arrays.pkl", as_arrays), ("default.pkl", default)):
        (tmp_path / name).write_bytes(pickle.dumps(value, protocol=2))
        loaded = load_features(tmp_path / name)
        assert loaded.features.shape == (24, 5) and loaded.num_classes == 4 and loaded.novel_classes == (0, 1, 2, 3)
    torch.save({"features": torch.randn(12, 3), "labels": torch.arange(3).repeat(4)}, tmp_path / "tim.pt")
    assert load_features(tmp_path / "tim.pt").features.shape == (12, 3)
    torch.save({c: torch.randn(4, 3) for c in range(3)}, tmp_path / "dict.pth")
    assert load_features(tmp_path / "dict.pth").num_classes == 3


def test_hostile_and_broken_feature_files_are_refused(tmp_path):
    marker = tmp_path / "executed"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (tmp_path / "evil.pkl").write_bytes(pickle.dumps({"features": Payload(), "labels": [0]}))
    with pytest.raises(UnsafePickleError, match="refusing to load"):
        load_features(tmp_path / "evil.pkl")
    torch.save({"features": Payload(), "labels": torch.zeros(1)}, tmp_path / "evil.pt")
    with pytest.raises(DatasetError, match="not a readable tensor file"):
        load_features(tmp_path / "evil.pt")
    assert not marker.exists()
    cases = {
        "nan.npz": dict(features=np.array([[np.nan, 1.0], [0.0, 1.0]]), labels=np.array([0, 1])),
        "short.npz": dict(features=np.ones((3, 2)), labels=np.array([0, 1])),
        "negative.npz": dict(features=np.ones((2, 2)), labels=np.array([0, -1])),
        "overlap.npz": dict(features=np.ones((2, 2)), labels=np.array([0, 1]), base_classes=np.array([0]),
                            novel_classes=np.array([0, 1])),
        "wrong.npz": dict(embeddings=np.ones((2, 2))),
        # a tiny file whose labels name a huge class id must not build that many classes
        "huge_id.npz": dict(features=np.ones((3, 2)), labels=np.array([0, 1, 10**15])),
        "inf_label.npz": dict(features=np.ones((2, 2)), labels=np.array([0.0, np.inf])),
        "half_label.npz": dict(features=np.ones((2, 2)), labels=np.array([0.0, 0.5])),
        "object_labels.npz": dict(features=np.ones((2, 2)), labels=np.array(["a", None], dtype=object)),
        "scalar_names.npz": dict(features=np.ones((2, 2)), labels=np.array([0, 1]), class_names=np.array(0)),
        "half_base.npz": dict(features=np.ones((2, 2)), labels=np.array([0, 1]), base_classes=np.array([0.5])),
        "bool_base.npz": dict(features=np.ones((2, 2)), labels=np.array([0, 1]), base_classes=np.array([True])),
        "val_novel.npz": dict(features=np.ones((2, 2)), labels=np.array([0, 1]), val_classes=np.array([1]),
                              novel_classes=np.array([1])),
    }
    messages = {"nan.npz": "hold 1 NaN/inf", "short.npz": "labels for 3 feature rows", "negative.npz": "negative",
                "overlap.npz": "both base and novel", "wrong.npz": "needs 'features' and 'labels'",
                "huge_id.npz": "class id 1000000000000000 but the file has 3 rows",
                "object_labels.npz": "labels stored as object arrays",
                "inf_label.npz": r"non-finite value \(inf\)", "half_label.npz": "got the value 0.5",
                "scalar_names.npz": "class_names must be a list of names", "half_base.npz": "base_classes must be "
                "integer class ids, got \\[0.5\\]", "bool_base.npz": "base_classes must be integer class ids",
                "val_novel.npz": "both val and novel"}
    for name, arrays in cases.items():
        np.savez(tmp_path / name, **arrays)
        with pytest.raises(DatasetError, match=messages[name]):
            load_features(tmp_path / name)
    (tmp_path / "x.csv").write_text("1,2\n")
    with pytest.raises(DatasetError, match="unknown features file type"):
        load_features(tmp_path / "x.csv")


def test_episode_invariants_and_determinism():
    labels = torch.arange(10).repeat_interleave(25)
    sampler = EpisodeSampler(labels, range(2, 10), ways=5, shots=3, queries=7, seed=4)
    episodes = sampler.sample(range(20))
    assert episodes.support.shape == (20, 15) and episodes.query.shape == (20, 35)
    for task in range(20):
        support, query = set(episodes.support[task].tolist()), set(episodes.query[task].tolist())
        assert not support & query and len(support) == 15 and len(query) == 35
        classes = episodes.classes[task]
        assert len(set(classes.tolist())) == 5 and all(2 <= c < 10 for c in classes.tolist())
        for position, episode_class in enumerate(episodes.support_labels[task]):
            assert labels[episodes.support[task, position]] == classes[episode_class]
        for position, episode_class in enumerate(episodes.query_labels[task]):
            assert labels[episodes.query[task, position]] == classes[episode_class]
        assert torch.bincount(episodes.query_labels[task]).tolist() == [7] * 5
    again = EpisodeSampler(labels, range(2, 10), ways=5, shots=3, queries=7, seed=4)
    assert torch.equal(again.sample(range(20)).query, episodes.query)
    assert torch.equal(again.sample([13]).support[0], episodes.support[13])  # task 13 alone is task 13
    other = EpisodeSampler(labels, range(2, 10), ways=5, shots=3, queries=7, seed=5).sample(range(20))
    assert not torch.equal(other.support, episodes.support)


@pytest.mark.parametrize("arguments, message", [
    (dict(ways=9), "ways=9 but only 8 classes"),
    (dict(shots=20, queries=15), r"fewer than shots \+ queries = 35 samples"),
    (dict(classes=[]), "no classes to draw episodes from"),
    (dict(ways=0), "ways must be an integer >= 1"),
    (dict(classes=[2, 2, 3]), "duplicates"),
])
def test_bad_episode_requests(arguments, message):
    values = {"labels": torch.arange(10).repeat_interleave(25), "classes": range(2, 10), **arguments}
    with pytest.raises(ValueError, match=message):
        EpisodeSampler(values.pop("labels"), values.pop("classes"), **values)


def test_mean_and_interval():
    mean, half = mean_and_interval([0.5, 0.7, 0.9, 0.7])
    assert mean == pytest.approx(0.7)
    assert half == pytest.approx(1.959964 * np.std([0.5, 0.7, 0.9, 0.7], ddof=1) / 2, rel=1e-6)
