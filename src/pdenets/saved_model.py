"""A trained model kept beside its report, in a form that never executes code when it is loaded.

A saved model is a folder of two files:

* ``weights.safetensors`` — every tensor (weights, and what a transductive model needs of its training
  data), in the safetensors format: a JSON header and raw numbers, nothing that runs on load;
* ``model.json`` — the manifest: ``format``, the ``pdenets`` version that wrote it, the ``task`` and
  ``model``, the resolved ``settings``, whatever the task needs to read new data the same way (class names,
  feature names and scaling, …), each tensor's ``shapes`` and the weights file's ``bytes`` and ``sha256``.

:func:`load_model` refuses, in one line naming the folder's file (:class:`SavedModelError`): a manifest that
is not JSON or not this format, a model of another task or another pdenets version, a weights file whose
size or SHA-256 is not the manifest's (altered or truncated), tensors other than the manifest lists or of
other shapes. :func:`save_model` writes both files atomically, the weights first.

Examples:
    >>> import tempfile, torch
    >>> folder = save_model(tempfile.mkdtemp() + "/mlp", {"w": torch.ones(2, 3)}, task="demo", model="mlp",
    ...                     manifest={"class_names": ["a", "b"]})
    >>> tensors, manifest = load_model(folder, task="demo")
    >>> tensors["w"].shape, manifest["class_names"]
    (torch.Size([2, 3]), ['a', 'b'])
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Dict, Mapping, Tuple, Union

import numpy as np
import torch

from . import __version__
from ._io import atomic_write, atomic_write_text, file_sha256

__all__ = [
    "save_model",
    "load_model",
    "load_weights",
    "labels_to_json",
    "labels_from_json",
    "SavedModelError",
    "MODEL_FORMAT",
    "WEIGHTS_FILE",
    "MANIFEST_FILE",
]

#: the version of the saved-model layout
MODEL_FORMAT = 1
WEIGHTS_FILE = "weights.safetensors"
MANIFEST_FILE = "model.json"
#: the largest manifest read (a model's settings and names are far below)
_MAX_MANIFEST_BYTES = 64 * 1024 * 1024


class SavedModelError(ValueError):
    """A saved model that cannot be used: damaged, altered, of another task or version (one line, naming the
    file)."""


_sha256 = file_sha256


def save_model(
    folder: Union[str, Path],
    tensors: Mapping[str, torch.Tensor],
    *,
    task: str,
    model: str,
    manifest: Mapping[str, Any],
) -> Path:
    """Write a saved model (module docstring) into ``folder`` (created) and return the folder written.

    A model is never replaced by another: where ``folder`` holds a model whose manifest differs from this
    one (a run folder reused with other settings), the model goes to ``<folder>-<digest>`` beside it; the
    same model again (a later report of the same run) is written over itself.

    Args:
        folder: the model's folder.
        tensors: name → tensor (made contiguous, moved to the CPU).
        task: the task that trained it.
        model: the model's name in that task.
        manifest: what the task needs to use it again (JSON values).
    """
    from safetensors.torch import save as save_tensors

    folder = _free_folder(Path(folder), {"task": task, "model": model, **dict(manifest)})
    folder.mkdir(parents=True, exist_ok=True)
    plain = {name: tensor.detach().to("cpu").contiguous() for name, tensor in tensors.items()}
    weights = folder / WEIGHTS_FILE
    with atomic_write(weights, "wb") as stream:
        stream.write(save_tensors(plain))
    document = {
        "format": MODEL_FORMAT,
        "pdenets": __version__,
        "task": task,
        "model": model,
        **dict(manifest),
        "shapes": {
            name: [list(tensor.shape), str(tensor.dtype).replace("torch.", "")]
            for name, tensor in plain.items()
        },
        "weights": {"file": WEIGHTS_FILE, "bytes": weights.stat().st_size, "sha256": _sha256(weights)},
    }
    atomic_write_text(folder / MANIFEST_FILE, json.dumps(document, indent=1, sort_keys=True) + "\n")
    return folder


def _free_folder(folder: Path, identity: Mapping[str, Any]) -> Path:
    """``folder``, unless it holds a model of another identity (module docstring of :func:`save_model`)."""
    document = folder / MANIFEST_FILE
    if not document.is_file():
        return folder
    try:
        old = json.loads(document.read_text(encoding="utf-8"))
    except (ValueError, OSError, UnicodeDecodeError):
        old = None
    if isinstance(old, dict) and all(old.get(key) == value for key, value in identity.items()):
        return folder
    digest = hashlib.sha256(json.dumps(dict(identity), sort_keys=True, default=str).encode()).hexdigest()[:8]
    return folder.with_name(f"{folder.name}-{digest}")


def load_model(folder: Union[str, Path], *, task: str) -> Tuple[Dict[str, torch.Tensor], Dict[str, Any]]:
    """The tensors and the manifest of a saved model of ``task``, checked (module docstring).

    Raises:
        SavedModelError: the model cannot be used, naming the file and why.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load as load_tensors

    folder = Path(folder)
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise SavedModelError(
            f"{path}: missing; a saved model is a folder with {MANIFEST_FILE} and {WEIGHTS_FILE}"
        )
    if path.stat().st_size > _MAX_MANIFEST_BYTES:
        raise SavedModelError(f"{path}: {path.stat().st_size:,} bytes is not a model manifest")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise SavedModelError(f"{path}: not a JSON manifest ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MODEL_FORMAT:
        raise SavedModelError(f"{path}: not a pdenets model manifest of format {MODEL_FORMAT}")
    if manifest.get("pdenets") != __version__:
        raise SavedModelError(
            f"{path}: written by pdenets {manifest.get('pdenets')!r}, this is {__version__}; train it again "
            "with this version"
        )
    if manifest.get("task") != task:
        raise SavedModelError(f"{path}: a model of the task {manifest.get('task')!r}, not {task!r}")
    expected = manifest.get("weights")
    weights = folder / WEIGHTS_FILE
    if not isinstance(expected, dict) or not weights.is_file():
        raise SavedModelError(f"{weights}: missing, or not named by its manifest")
    size = weights.stat().st_size
    if size != expected.get("bytes"):
        raise SavedModelError(
            f"{weights}: {size:,} bytes, its manifest says {expected.get('bytes')!r} (altered or truncated)"
        )
    if _sha256(weights) != expected.get("sha256"):
        raise SavedModelError(f"{weights}: its SHA-256 is not its manifest's (the file was altered)")
    try:
        tensors = load_tensors(weights.read_bytes())
    except (SafetensorError, ValueError, OSError) as error:
        raise SavedModelError(f"{weights}: not a safetensors file ({error})") from None
    shapes = manifest.get("shapes")
    found = {
        name: [list(tensor.shape), str(tensor.dtype).replace("torch.", "")]
        for name, tensor in tensors.items()
    }
    if shapes != found:
        raise SavedModelError(f"{weights}: its tensors are not those its manifest lists")
    return tensors, manifest


def load_weights(
    module: torch.nn.Module, tensors: Mapping[str, torch.Tensor], source: Any, prefix: str = ""
) -> torch.nn.Module:
    """Load the saved ``tensors`` whose names start with ``prefix`` (stripped) into ``module``; weights that
    do not fit it are refused as :class:`SavedModelError` naming ``source`` (the model's folder or file).

    Examples:
        >>> layer = torch.nn.Linear(2, 1)
        >>> load_weights(layer, {"net.weight": torch.ones(1, 2), "net.bias": torch.zeros(1)}, "demo", "net.")
        Linear(in_features=2, out_features=1, bias=True)
    """
    state = {name[len(prefix) :]: value for name, value in tensors.items() if name.startswith(prefix)}
    try:
        module.load_state_dict(state)
    except RuntimeError as error:
        raise SavedModelError(
            f"{source}: the saved weights do not fit the model ({str(error).splitlines()[0]})"
        ) from None
    return module


def labels_to_json(classes: np.ndarray) -> Dict[str, Any]:
    """An estimator's ``classes_`` as JSON values and their kind, so that integer labels come back integers.

    Examples:
        >>> labels_from_json(labels_to_json(np.array([3, 7]))).tolist()
        [3, 7]
        >>> labels_from_json(labels_to_json(np.array(["cat", "dog"]))).tolist()
        ['cat', 'dog']
    """
    if classes.dtype == bool:
        return {"kind": "bool", "values": [bool(value) for value in classes]}
    if np.issubdtype(classes.dtype, np.integer):
        return {"kind": "int", "values": [int(value) for value in classes]}
    if np.issubdtype(classes.dtype, np.floating):
        return {"kind": "float", "values": [float(value) for value in classes]}
    return {"kind": "str", "values": [str(value) for value in classes]}


def labels_from_json(document: Any, source: Union[str, Path] = "a saved model") -> np.ndarray:
    """The labels :func:`labels_to_json` wrote (:class:`SavedModelError` naming ``source``, the manifest,
    where they are not readable)."""
    kinds = {"int": np.int64, "float": np.float64, "bool": bool, "str": str}
    if not isinstance(document, dict) or document.get("kind") not in kinds:
        raise SavedModelError(f"{source}: its class labels are not readable")
    values = document.get("values")
    if not isinstance(values, list):
        raise SavedModelError(f"{source}: its class labels are not readable")
    try:
        return np.asarray(values, dtype=kinds[document["kind"]])
    except (TypeError, ValueError):
        raise SavedModelError(f"{source}: its class labels are not readable") from None
