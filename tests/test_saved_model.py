"""A saved model's two files: tensors back bit for bit with their dtypes, a manifest that records their
shapes, size and SHA-256, another model never written over one already there, weights loaded by prefix, and
class labels that come back of their own kind."""

import hashlib
import json

import numpy as np
import pytest
import torch

from pdenets import __version__
from pdenets.saved_model import (
    MANIFEST_FILE,
    MODEL_FORMAT,
    WEIGHTS_FILE,
    SavedModelError,
    labels_from_json,
    labels_to_json,
    load_model,
    load_weights,
    save_model,
)


def _tensors():
    generator = torch.Generator().manual_seed(0)
    return {
        "weight": torch.randn(3, 4, generator=generator, dtype=torch.float64).T,  # not contiguous
        "counts": torch.tensor([3, -1, 2**40]),
        "mask": torch.tensor([True, False]),
        "half": torch.randn(2, generator=generator).to(torch.float16),
    }


def test_tensors_come_back_exactly_and_the_manifest_describes_the_weights_file(tmp_path):
    tensors = _tensors()
    folder = save_model(tmp_path / "m", tensors, task="demo", model="mlp", manifest={"classes": ["a", "b"]})
    assert folder == tmp_path / "m"
    loaded, manifest = load_model(folder, task="demo")
    assert set(loaded) == set(tensors)
    for name, tensor in tensors.items():
        assert loaded[name].dtype == tensor.dtype and torch.equal(loaded[name], tensor), name
    weights = (folder / WEIGHTS_FILE).read_bytes()
    assert manifest["weights"] == {
        "file": WEIGHTS_FILE,
        "bytes": len(weights),
        "sha256": hashlib.sha256(weights).hexdigest(),
    }
    assert manifest["shapes"] == {
        "weight": [[4, 3], "float64"],
        "counts": [[3], "int64"],
        "mask": [[2], "bool"],
        "half": [[2], "float16"],
    }
    assert (manifest["format"], manifest["pdenets"], manifest["task"], manifest["model"]) == (
        MODEL_FORMAT,
        __version__,
        "demo",
        "mlp",
    )
    assert manifest["classes"] == ["a", "b"]
    assert json.loads((folder / MANIFEST_FILE).read_text()) == manifest


def test_the_same_model_is_written_over_itself_and_another_goes_beside_it(tmp_path):
    first = save_model(tmp_path / "m", {"w": torch.zeros(2)}, task="demo", model="mlp", manifest={"lr": 0.1})
    again = save_model(tmp_path / "m", {"w": torch.ones(2)}, task="demo", model="mlp", manifest={"lr": 0.1})
    assert again == first and torch.equal(load_model(first, task="demo")[0]["w"], torch.ones(2))
    other = save_model(
        tmp_path / "m", {"w": torch.full((2,), 7.0)}, task="demo", model="mlp", manifest={"lr": 0.2}
    )
    assert other.parent == tmp_path and other.name.startswith("m-") and len(other.name) == len("m-") + 8
    assert int(other.name[2:], 16) >= 0  # a hexadecimal digest of the other identity
    assert torch.equal(load_model(first, task="demo")[0]["w"], torch.ones(2))  # the first model is intact
    assert load_model(other, task="demo")[1]["lr"] == 0.2
    # the same other identity finds its own folder again; another model name is another identity
    assert (
        save_model(tmp_path / "m", {"w": torch.zeros(2)}, task="demo", model="mlp", manifest={"lr": 0.2})
        == other
    )
    gcn = save_model(tmp_path / "m", {"w": torch.zeros(2)}, task="demo", model="gcn", manifest={"lr": 0.1})
    assert gcn not in (first, other)


def test_a_folder_whose_manifest_cannot_be_read_is_not_written_over(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / MANIFEST_FILE).write_text("{not json")
    folder = save_model(tmp_path / "m", {"w": torch.zeros(1)}, task="demo", model="mlp", manifest={})
    assert folder != tmp_path / "m" and (tmp_path / "m" / MANIFEST_FILE).read_text() == "{not json"


def _rewrite(folder, **changes):
    path = folder / MANIFEST_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def test_a_manifest_or_weights_file_that_is_not_what_it_should_be_is_refused_naming_the_file(tmp_path):
    folder = save_model(tmp_path / "m", {"w": torch.zeros(2)}, task="demo", model="mlp", manifest={})
    with pytest.raises(SavedModelError, match="nothing/model.json: missing; a saved model is a folder with"):
        load_model(tmp_path / "nothing", task="demo")
    garbage = b"\x00" * 64  # bytes and SHA-256 agree with the manifest, but no safetensors layout
    (folder / WEIGHTS_FILE).write_bytes(garbage)
    _rewrite(
        folder, weights={"file": WEIGHTS_FILE, "bytes": 64, "sha256": hashlib.sha256(garbage).hexdigest()}
    )
    with pytest.raises(SavedModelError, match="weights.safetensors: not a safetensors file"):
        load_model(folder, task="demo")
    (folder / WEIGHTS_FILE).unlink()
    with pytest.raises(SavedModelError, match="weights.safetensors: missing, or not named by its manifest"):
        load_model(folder, task="demo")
    (folder / MANIFEST_FILE).write_text("[1, 2]")
    with pytest.raises(
        SavedModelError, match=f"model.json: not a pdenets model manifest of format {MODEL_FORMAT}"
    ):
        load_model(folder, task="demo")


def test_weights_are_loaded_by_prefix_and_weights_that_do_not_fit_are_refused():
    layer = torch.nn.Linear(2, 1)
    tensors = {
        "net.weight": torch.tensor([[1.0, 2.0]]),
        "net.bias": torch.tensor([0.5]),
        "other.weight": torch.zeros(5),
    }
    assert load_weights(layer, tensors, "folder", "net.") is layer
    assert layer(torch.tensor([[1.0, 1.0]])).item() == 3.5
    with pytest.raises(SavedModelError, match="^folder: the saved weights do not fit the model \\(Error"):
        load_weights(torch.nn.Linear(3, 1), tensors, "folder", "net.")
    with pytest.raises(SavedModelError, match="the saved weights do not fit the model"):
        load_weights(torch.nn.Linear(2, 1), tensors, "folder", "nothing.")  # no weight found at all


@pytest.mark.parametrize(
    "classes, kind",
    [
        (np.array([7, 3], dtype=np.int32), "int"),
        (np.array([0.5, -1.0]), "float"),
        (np.array([True, False]), "bool"),
        (np.array(["cat", "dog"]), "str"),
        (np.array(["x", 1], dtype=object), "str"),
    ],
)
def test_class_labels_come_back_of_their_own_kind_through_json(classes, kind):
    document = labels_to_json(classes)
    assert document["kind"] == kind and json.loads(json.dumps(document)) == document
    again = labels_from_json(json.loads(json.dumps(document)))
    expected = classes.astype(str) if kind == "str" else classes
    assert again.tolist() == expected.tolist()
    assert again.dtype.kind == {"int": "i", "float": "f", "bool": "b", "str": "U"}[kind]


@pytest.mark.parametrize(
    "document",
    [
        None,
        [1, 2],
        {"kind": "complex", "values": [1]},
        {"kind": "int"},
        {"kind": "int", "values": "12"},
        {"kind": "int", "values": ["a"]},
        {"kind": "float", "values": [[1.0], 2.0]},
    ],
)
def test_unreadable_class_labels_are_refused_naming_the_manifest(document):
    with pytest.raises(SavedModelError, match="^m/model.json: its class labels are not readable$"):
        labels_from_json(document, "m/model.json")
