"""Features files built once and cached under a name that carries the training settings, image sets embedded
into one features file with consecutive class ids per split, and a backbone file read back exactly."""

import numpy as np
import pytest
import torch

from pdenets.data import DatasetError
from pdenets.data.errors import DatasetNotFoundError
from pdenets.data.fewshot import FeatureSet, save_features
from pdenets.data.images import ImageSet
from pdenets.features import (
    cached_features,
    features_dir,
    image_features,
    load_backbone,
    official_runs_features,
    omniglot_features,
    save_backbone,
)
from pdenets.models.backbones import BackboneTraining, Conv4, extract_features

#: the cache name of the default settings: epochs, batch size, lr, rotations, shift, seed
DEFAULT_TAG = "e30-b128-lr0.1-r1-s2-seed0"


def _feature_set(rows=6, dim=3, seed=0):
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(rows, dim, generator=generator)
    return FeatureSet(
        features, torch.arange(rows) % 3, ("a", "b", "c"), base_classes=(0,), novel_classes=(1, 2)
    )


def test_the_features_directory_is_the_argument_then_the_variable_then_the_home_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PDENETS_FEATURES", raising=False)
    assert features_dir() == tmp_path / "home" / ".cache" / "pdenets" / "features"
    monkeypatch.setenv("PDENETS_FEATURES", "~/mine")
    assert features_dir() == tmp_path / "home" / "mine"
    assert features_dir("") == tmp_path / "home" / "mine"  # an empty argument is no directory
    assert features_dir(tmp_path / "given") == tmp_path / "given"
    assert features_dir("~/given") == tmp_path / "home" / "given"


def test_cached_features_are_built_once_then_read(tmp_path, capsys):
    built = []

    def build():
        built.append(1)
        return _feature_set()

    path, first = cached_features("demo", build, tmp_path / "cache", progress=True)
    assert path == tmp_path / "cache" / "demo.npz" and path.is_file() and built == [1]
    assert capsys.readouterr().out == f"building features {path} (cached for later runs)\n"
    again_path, again = cached_features("demo", build, tmp_path / "cache", progress=True)
    assert again_path == path and built == [1] and capsys.readouterr().out == ""  # read, not built
    assert torch.equal(again.features, first.features) and torch.equal(again.labels, first.labels)
    assert torch.equal(first.features, _feature_set().features)  # what was built is what is returned
    assert (again.class_names, again.base_classes, again.novel_classes) == (("a", "b", "c"), (0,), (1, 2))


@pytest.mark.parametrize(
    "settings",
    [
        BackboneTraining(epochs=29),
        BackboneTraining(batch_size=64),
        BackboneTraining(lr=0.05),
        BackboneTraining(rotations=False),
        BackboneTraining(max_shift=0),
        BackboneTraining(seed=1),
    ],
    ids=["epochs", "batch size", "lr", "rotations", "shift", "seed"],
)
def test_a_cached_omniglot_file_serves_its_own_settings_only(tmp_path, settings):
    """The file of the default settings is read without any data; another setting is another file, which is
    built (and here fails for want of the images) rather than the stale one reused."""
    empty_data = tmp_path / "no-data"
    empty_data.mkdir()
    save_features(_feature_set(), tmp_path / f"omniglot-conv4-{DEFAULT_TAG}.npz")
    path, features = omniglot_features(empty_data, directory=tmp_path)
    assert path.name == f"omniglot-conv4-{DEFAULT_TAG}.npz" and features.features.shape == (6, 3)
    with pytest.raises(DatasetNotFoundError, match="missing dataset file"):
        omniglot_features(empty_data, settings, directory=tmp_path)


def test_the_official_runs_are_read_from_their_cache_file(tmp_path):
    arrays = {
        "training": np.zeros((20, 20, 4), dtype=np.float32),
        "test": np.ones((20, 20, 4), dtype=np.float32),
        "answers": np.tile(np.arange(20), (20, 1)),
        "base_mean": np.full(4, 0.5, dtype=np.float32),
    }
    np.savez(tmp_path / f"omniglot-runs-conv4-{DEFAULT_TAG}.npz", **arrays)
    path, read = official_runs_features(tmp_path / "no-data", directory=tmp_path)
    assert path.parent == tmp_path and set(read) >= set(arrays)
    for name, array in arrays.items():
        assert np.array_equal(read[name], array), name


def test_image_sets_are_embedded_with_consecutive_class_ids_per_split():
    torch.manual_seed(0)
    model = Conv4(1, 0, width=4, image_size=16)
    generator = torch.Generator().manual_seed(1)
    base = ImageSet(torch.rand(5, 1, 16, 16, generator=generator), torch.tensor([0, 1, 0, 1, 1]), ("x", "y"))
    novel = ImageSet(
        torch.rand(4, 1, 16, 16, generator=generator), torch.tensor([2, 0, 1, 2]), ("p", "q", "r")
    )
    features = image_features(model, {"base": base, "novel": novel})
    assert features.class_names == ("x", "y", "p", "q", "r")
    assert (features.base_classes, features.val_classes, features.novel_classes) == ((0, 1), (), (2, 3, 4))
    assert features.labels.tolist() == [
        0,
        1,
        0,
        1,
        1,
        4,
        2,
        3,
        4,
    ]  # novel labels shifted by the 2 base classes
    expected = torch.cat([extract_features(model, base.images), extract_features(model, novel.images)])
    assert features.features.shape == (9, 4) and torch.equal(features.features, expected)
    with torch.no_grad():
        assert torch.allclose(features.features[5], model.embed(novel.images[:1])[0])  # row order is kept


def test_a_saved_backbone_comes_back_with_the_same_weights_in_evaluation_mode(tmp_path):
    torch.manual_seed(0)
    model = Conv4(3, 4, image_size=16).train()
    settings = BackboneTraining(epochs=3, seed=5)
    path = save_backbone(
        model, tmp_path / "bb.pt", classes=["a", "b", "c", "d"], settings=settings, image_size=16, channels=3
    )
    again, document = load_backbone(path)
    assert not again.training and again.image_size == 16 and again.embedding_dim == 64
    state = model.state_dict()
    assert set(again.state_dict()) == set(state)
    assert all(torch.equal(again.state_dict()[name], tensor) for name, tensor in state.items())
    assert document["classes"] == ["a", "b", "c", "d"] and document["settings"]["seed"] == 5
    assert (document["image_size"], document["channels"], document["embedding_dim"]) == (16, 3, 64)
    images = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert torch.equal(again(images), model.eval()(images))


def test_a_missing_or_foreign_backbone_file_is_refused_naming_it(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="missing backbone file"):
        load_backbone(tmp_path / "absent.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(DatasetError, match="other.pt: not a pdenets backbone file \\(KeyError"):
        load_backbone(tmp_path / "other.pt")
    (tmp_path / "text.pt").write_text("not a torch file")
    with pytest.raises(DatasetError, match="text.pt: not a pdenets backbone file"):
        load_backbone(tmp_path / "text.pt")


def test_every_backbone_setting_reaches_the_features_file_name():
    """A cached features file is reused by name: a setting missing from it would hand a run features trained
    otherwise (momentum, weight decay and the validation share once were)."""
    import dataclasses

    from pdenets.features.embeddings import _setting_tag
    from pdenets.models.backbones import BackboneTraining

    base = BackboneTraining()
    assert _setting_tag(base) == "e30-b128-lr0.1-r1-s2-seed0"  # the name of the files already built
    for item in dataclasses.fields(base):
        value = getattr(base, item.name)
        other = (not value) if isinstance(value, bool) else value * 2 + 1
        assert _setting_tag(dataclasses.replace(base, **{item.name: other})) != _setting_tag(base), item.name
