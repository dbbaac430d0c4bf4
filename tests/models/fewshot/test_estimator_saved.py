"""DiffusionFewShotClassifier.save/load: the support set and the method kept in the safe format, the same
answers after a reload, the labels' type kept, altered files refused."""

import json

import numpy as np
import pytest
import torch

from pdenets.estimators import DiffusionFewShotClassifier
from pdenets.saved_model import SavedModelError, load_model, save_model


def _task(seed=0, labels=("cat", "dog", "fox")):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 16)) * 3
    support = np.repeat(centres, 2, axis=0) + rng.normal(size=(6, 16))
    queries = np.repeat(centres, 8, axis=0) + rng.normal(size=(24, 16))
    return support, np.repeat(np.asarray(labels), 2), queries


@pytest.mark.parametrize("method", ["adaptive", "ensemble", "laplacianshot", "pt-map"])
def test_a_reloaded_classifier_answers_bit_for_bit(tmp_path, method):
    support, labels, queries = _task()
    params = {"lam": 0.3} if method == "laplacianshot" else None
    model = DiffusionFewShotClassifier(method, method_params=params, random_state=3).fit(support, labels)
    again = DiffusionFewShotClassifier.load(model.save(tmp_path / "few-shot"))
    assert torch.equal(
        torch.from_numpy(again.predict_proba(queries)), torch.from_numpy(model.predict_proba(queries))
    )
    assert again.get_params()["method_params"] == params and again.random_state == 3
    assert again.predict(queries).tolist() == model.predict(queries).tolist()


def test_integer_labels_and_the_base_mean_come_back(tmp_path):
    support, _, queries = _task(1)
    labels = np.repeat([7, 3, 11], 2)
    mean = np.linspace(-1, 1, 16)
    model = DiffusionFewShotClassifier("prototype", centre_and_normalize=True, base_mean=mean).fit(
        support, labels
    )
    again = DiffusionFewShotClassifier.load(model.save(tmp_path / "m"))
    assert again.classes_.dtype.kind == "i" and again.classes_.tolist() == [3, 7, 11]
    assert np.array_equal(again.base_mean, mean) and again.centre_and_normalize
    assert again.predict(queries).tolist() == model.predict(queries).tolist()


def test_altered_or_foreign_files_are_refused(tmp_path):
    support, labels, _ = _task()
    folder = DiffusionFewShotClassifier("prototype").fit(support, labels).save(tmp_path / "m")
    manifest_path = folder / "model.json"
    manifest = json.loads(manifest_path.read_text())
    tensors, _ = load_model(folder, task="few-shot")
    plain = {k: v for k, v in manifest.items() if k not in ("format", "pdenets", "task", "model", "shapes")}
    plain.pop("weights")
    for change, message in (
        ({"classes": {"kind": "complex", "values": [1]}}, "class labels are not readable"),
        ({"classes": {"kind": "int", "values": [1, 2]}}, "2 classes, its support labels name 3"),
        ({"params": {**manifest["params"], "method": "nonsense"}}, "nonsense"),
        ({"feature_names": ["f"] * 16}, "feature_names repeats 'f'"),
    ):
        other = save_model(
            tmp_path / "other", tensors, task="few-shot", model="prototype", manifest={**plain, **change}
        )
        with pytest.raises(SavedModelError, match=message) as error:
            DiffusionFewShotClassifier.load(other)
        assert "model.json" in str(error.value)
    for change, message in (
        ({"task": "coin-tabular"}, "coin-tabular"),
        ({"classes": {"kind": "int", "values": [2, 1, 0]}}, "edited after the model was saved"),
    ):
        manifest_path.write_text(json.dumps({**manifest, **change}))
        with pytest.raises(SavedModelError, match=message) as error:
            DiffusionFewShotClassifier.load(folder)
        assert "model.json" in str(error.value)
    manifest_path.write_text(json.dumps(manifest))
    (folder / "weights.safetensors").write_bytes((folder / "weights.safetensors").read_bytes()[:-5])
    with pytest.raises(SavedModelError, match="truncated"):
        DiffusionFewShotClassifier.load(folder)
