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
    return FeatureSet(
        features,
        labels,
        tuple(f"c{c}" for c in range(classes)),
        base_classes=(0, 1),
        val_classes=(2,),
        novel_classes=tuple(range(3, classes)),
    )


def test_our_format_round_trip(tmp_path):
    original = _set()
    path = save_features(original, tmp_path / "f.npz")
    loaded = load_features(path)
    assert torch.equal(loaded.features, original.features) and torch.equal(loaded.labels, original.labels)
    assert (loaded.class_names, loaded.base_classes, loaded.val_classes, loaded.novel_classes) == (
        original.class_names,
        (0, 1),
        (2,),
        (3, 4, 5, 6, 7),
    )
    assert torch.allclose(loaded.mean_of_base(), original.features[:20].mean(0))
    with pytest.raises(FileExistsError):
        save_features(original, path)


def test_public_code_pickles_and_torch_files(tmp_path):
    rng = np.random.default_rng(1)
    as_lists = {c: [rng.normal(size=5).astype(np.float32) for _ in range(6)] for c in range(4)}  # Diff-ResNet
    as_arrays = {
        c: rng.normal(size=(6, 5)).astype(np.float32) for c in range(4)
    }  # SimpleShot / LaplacianShot
    import collections

    default = collections.defaultdict(list, as_lists)
    for name, value in (("lists.plk", as_lists), ("arrays.pkl", as_arrays), ("default.pkl", default)):
        (tmp_path / name).write_bytes(pickle.dumps(value, protocol=2))
        loaded = load_features(tmp_path / name)
        assert (
            loaded.features.shape == (24, 5)
            and loaded.num_classes == 4
            and loaded.novel_classes == (0, 1, 2, 3)
        )
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
        "overlap.npz": dict(
            features=np.ones((2, 2)),
            labels=np.array([0, 1]),
            base_classes=np.array([0]),
            novel_classes=np.array([0, 1]),
        ),
        "wrong.npz": dict(embeddings=np.ones((2, 2))),
        # a tiny file whose labels name a huge class id must not build that many classes
        "huge_id.npz": dict(features=np.ones((3, 2)), labels=np.array([0, 1, 10**15])),
        "inf_label.npz": dict(features=np.ones((2, 2)), labels=np.array([0.0, np.inf])),
        "half_label.npz": dict(features=np.ones((2, 2)), labels=np.array([0.0, 0.5])),
        "object_labels.npz": dict(features=np.ones((2, 2)), labels=np.array(["a", None], dtype=object)),
        "scalar_names.npz": dict(features=np.ones((2, 2)), labels=np.array([0, 1]), class_names=np.array(0)),
        "half_base.npz": dict(
            features=np.ones((2, 2)), labels=np.array([0, 1]), base_classes=np.array([0.5])
        ),
        "bool_base.npz": dict(
            features=np.ones((2, 2)), labels=np.array([0, 1]), base_classes=np.array([True])
        ),
        "val_novel.npz": dict(
            features=np.ones((2, 2)),
            labels=np.array([0, 1]),
            val_classes=np.array([1]),
            novel_classes=np.array([1]),
        ),
    }
    messages = {
        "nan.npz": "hold 1 NaN/inf",
        "short.npz": "labels for 3 feature rows",
        "negative.npz": "negative",
        "overlap.npz": "both base and novel",
        "wrong.npz": "needs 'features' and 'labels'",
        "huge_id.npz": "class id 1000000000000000 but the file has 3 rows",
        "object_labels.npz": "labels stored as object arrays",
        "inf_label.npz": r"non-finite value \(inf\)",
        "half_label.npz": "got the value 0.5",
        "scalar_names.npz": "class_names must be a list of names",
        "half_base.npz": "base_classes must be integer class ids, got \\[0.5\\]",
        "bool_base.npz": "base_classes must be integer class ids",
        "val_novel.npz": "both val and novel",
    }
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


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(ways=9), "ways=9 but only 8 classes"),
        (dict(shots=20, queries=15), r"fewer than shots \+ queries = 35 samples"),
        (dict(classes=[]), "no classes to draw episodes from"),
        (dict(ways=0), "ways must be an integer >= 1"),
        (dict(classes=[2, 2, 3]), "duplicates"),
    ],
)
def test_bad_episode_requests(arguments, message):
    values = {"labels": torch.arange(10).repeat_interleave(25), "classes": range(2, 10), **arguments}
    with pytest.raises(ValueError, match=message):
        EpisodeSampler(values.pop("labels"), values.pop("classes"), **values)


def test_mean_and_interval():
    mean, half = mean_and_interval([0.5, 0.7, 0.9, 0.7])
    assert mean == pytest.approx(0.7)
    assert half == pytest.approx(1.959964 * np.std([0.5, 0.7, 0.9, 0.7], ddof=1) / 2, rel=1e-6)


def test_one_array_under_many_class_ids_is_refused_before_anything_is_stacked(tmp_path, monkeypatch):
    """A pickle or torch file naming one 64 KiB array under 200 class ids: 12.5 MiB once stacked."""
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "4M")
    block = np.zeros((64, 128), dtype=np.float64)
    (tmp_path / "shared.pkl").write_bytes(pickle.dumps({key: block for key in range(200)}, protocol=2))
    tensor = torch.zeros(64, 128, dtype=torch.float64)
    torch.save({key: tensor for key in range(200)}, tmp_path / "shared.pt")
    torch.save({"features": [tensor] * 200, "labels": torch.zeros(200)}, tmp_path / "listed.pt")
    for name in ("shared.pkl", "shared.pt", "listed.pt"):
        assert (tmp_path / name).stat().st_size < 80_000
        with pytest.raises(DatasetError) as caught:
            load_features(tmp_path / name)
        assert str(caught.value).startswith(
            f"{tmp_path / name}: its data, with every shared reference counted as a copy, would need 12.5 "
            "MiB, "
            "more than the memory budget 4.0 MiB; a small file can refer to one array many times"
        ), str(caught.value)


def test_nested_shared_lists_in_a_torch_file_are_refused_at_once(tmp_path):
    nested = []
    for _ in range(60):
        nested = [nested, nested]
    torch.save({"features": nested, "labels": nested}, tmp_path / "nested.pt")
    with pytest.raises(
        DatasetError, match="with every shared reference counted as a copy, would need 3.355e\\+7 TiB"
    ):
        load_features(tmp_path / "nested.pt")


def test_joining_classes_is_checked_against_the_budget_in_the_joined_dtype(tmp_path, monkeypatch):
    """1 MiB of int8 features beside one float64 class: joined they are 8 MiB of float64."""
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "4M")
    classes = {0: np.zeros((1024, 1024), dtype=np.int8), 1: np.zeros((1, 1024), dtype=np.float64)}
    (tmp_path / "mixed.pkl").write_bytes(pickle.dumps(classes, protocol=2))
    with pytest.raises(DatasetError) as caught:
        load_features(tmp_path / "mixed.pkl")
    assert str(caught.value) == (
        f"{tmp_path / 'mixed.pkl'}: the features of 2 classes joined would need 8.0 MiB, more than the "
        "memory budget "
        "4.0 MiB; a damaged or hostile file declares sizes it does not hold. If the file is genuine, raise "
        "$PDENETS_MEMORY_BUDGET (e.g. 32G)"
    )


def test_numeric_class_keys_are_numbered_by_value(tmp_path):
    classes = {10: np.full((2, 3), 10.0), 2: np.full((2, 3), 2.0), 1: np.full((2, 3), 1.0)}
    (tmp_path / "ids.pkl").write_bytes(pickle.dumps(classes, protocol=2))
    torch.save({key: torch.from_numpy(value) for key, value in classes.items()}, tmp_path / "ids.pt")
    for name in ("ids.pkl", "ids.pt"):
        loaded = load_features(tmp_path / name)
        assert loaded.class_names == ("1", "2", "10")
        assert loaded.features[:, 0].tolist() == [1.0, 1.0, 2.0, 2.0, 10.0, 10.0]
        assert loaded.labels.tolist() == [0, 0, 1, 1, 2, 2]
    (tmp_path / "twice.pkl").write_bytes(pickle.dumps({1: np.ones((1, 2)), "1": np.ones((1, 2))}, protocol=2))
    with pytest.raises(DatasetError) as caught:
        load_features(tmp_path / "twice.pkl")
    assert str(caught.value) == f"{tmp_path / 'twice.pkl'}: the class keys 1 and '1' name the same class"


def test_ids_and_unlabelled_rows_round_trip_and_a_long_id_costs_its_length(tmp_path):
    long_id = "<b>" + "x" * 10_000
    features = FeatureSet(
        torch.randn(4, 3),
        torch.tensor([0, 1, 0, 1]),
        ("a", "b"),
        ids=("p", "q,r", long_id, "s\nt"),
        unlabelled=torch.randn(2, 3),
        unlabelled_ids=("u1", "=1+1"),
    )
    path = save_features(features, tmp_path / "f.npz")
    assert path.stat().st_size < 60_000  # one JSON string (4 bytes a character), not 4 ids padded to 10,003
    loaded = load_features(path)
    assert loaded.ids == features.ids and loaded.unlabelled_ids == features.unlabelled_ids
    assert torch.equal(loaded.unlabelled, features.unlabelled)
    plain = FeatureSet(torch.randn(2, 3), torch.tensor([0, 1]), ("a", "b"))
    reloaded = load_features(save_features(plain, tmp_path / "plain.npz"))
    assert reloaded.ids == () and reloaded.unlabelled is None and reloaded.unlabelled_ids == ()
    with pytest.raises(ValueError, match="1 ids for 2 labelled rows"):
        save_features(
            FeatureSet(torch.randn(2, 3), torch.tensor([0, 1]), ("a", "b"), ids=("x",)), tmp_path / "b.npz"
        )


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"ids": np.array(["a", "b"])}, "ids must be 3 strings"),
        ({"ids": np.array(["a", "b", "a"])}, "ids repeats the id 'a'"),
        ({"ids": np.array(["a", " ", "c"])}, "ids holds an empty id"),
        ({"ids": np.array('{"not": "a list"}')}, "ids must be a JSON list of strings"),
        ({"ids": np.arange(3)}, "ids must be 3 strings"),
        ({"unlabelled": np.zeros((2, 4))}, "unlabelled must be a (U, 3) matrix"),
        ({"unlabelled": np.array([[0, np.nan, 0]])}, "unlabelled holds 1 NaN/inf"),
        ({"unlabelled_ids": np.array(["u"])}, "unlabelled_ids without unlabelled rows"),
        (
            {"unlabelled": np.zeros((1, 3)), "unlabelled_ids": np.array(["u", "v"])},
            "unlabelled_ids must be 1",
        ),
        (
            {
                "ids": np.array(["a", "b", "c"]),
                "unlabelled": np.zeros((1, 3)),
                "unlabelled_ids": np.array(["b"]),
            },
            "the id 'b' names a labelled and an unlabelled row",
        ),
    ],
)
def test_bad_ids_or_unlabelled_rows_are_refused_naming_the_array(tmp_path, extra, message):
    path = tmp_path / "f.npz"
    np.savez(path, features=np.zeros((3, 3)), labels=np.array([0, 1, 1]), **extra)
    with pytest.raises(DatasetError) as error:
        load_features(path)
    assert message in str(error.value) and str(path) in str(error.value)
