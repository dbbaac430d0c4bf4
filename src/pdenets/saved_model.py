"""A trained model kept beside its report, in a form that never executes code when it is loaded, and whose
manifest cannot say other than what was saved.

A saved model is a folder of two files:

* ``weights.safetensors`` — every tensor (weights, and what a transductive model needs of its training
  data), in the safetensors format: a JSON header and raw numbers, nothing that runs on load; its header's
  metadata holds the SHA-256 of the manifest it was saved with (``pdenets.manifest_sha256``);
* ``model.json`` — the manifest: ``format``, the ``pdenets`` version that wrote it, the ``task`` and
  ``model``, the resolved ``settings``, whatever the task needs to read new data the same way (class names,
  feature names and scaling, …), each tensor's ``shapes`` and the weights file's ``bytes`` and ``sha256``.

The two files vouch for each other: the manifest for the weights (their size and SHA-256), the weights for
the manifest (the SHA-256 of everything in it but the ``weights`` entry, :func:`manifest_digest`). An edited
setting, a reordered list of class names or a renamed feature is refused as an edit, not obeyed.

:func:`load_model` refuses, in one line naming the folder's file (:class:`SavedModelError`), before any
tensor is built: a file that is not a regular file (a pipe, a device, ``/dev/zero`` through a link) or
larger than it may be (the manifest 64 MiB, the weights the memory budget of :mod:`pdenets._limits`), read
no further than that; a manifest that is not JSON or not this format (a model of format 1 is named as such),
a model of another task or another pdenets version, a weights file whose size or SHA-256 is not the
manifest's (altered or truncated), a manifest that is not the one the weights were saved with, tensors
other than the manifest lists or of other shapes. A task's model reads its settings with
:func:`typed_settings` (each field of its kind, validated by its settings class) and compares the network
they build with the weights on the meta device (:func:`check_fits`: nothing allocated) before it builds it.
:func:`save_model` writes both files atomically, the weights first.

Examples:
    >>> import tempfile, torch
    >>> folder = save_model(tempfile.mkdtemp() + "/mlp", {"w": torch.ones(2, 3)}, task="demo", model="mlp",
    ...                     manifest={"class_names": ["a", "b"]})
    >>> tensors, manifest = load_model(folder, task="demo")
    >>> tensors["w"].shape, manifest["class_names"]
    (torch.Size([2, 3]), ['a', 'b'])
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import struct
import typing
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

import numpy as np
import torch

from . import __version__
from ._io import UnreadableFileError, atomic_write, atomic_write_text, read_bounded
from ._limits import format_bytes, memory_budget

__all__ = [
    "save_model",
    "load_model",
    "load_weights",
    "check_fits",
    "typed_settings",
    "distinct_names",
    "manifest_digest",
    "saved_task",
    "labels_to_json",
    "labels_from_json",
    "saved_classes",
    "estimator_from",
    "SavedModelError",
    "MODEL_FORMAT",
    "WEIGHTS_FILE",
    "MANIFEST_FILE",
]

#: the version of the saved-model layout (2: the weights vouch for the manifest)
MODEL_FORMAT = 2
WEIGHTS_FILE = "weights.safetensors"
MANIFEST_FILE = "model.json"
#: the largest manifest read (a model's settings and names are far below)
_MAX_MANIFEST_BYTES = 64 * 1024 * 1024
#: the weights header's entry of the manifest's digest
DIGEST_KEY = "pdenets.manifest_sha256"
_SAFETENSORS_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
}

_Settings = TypeVar("_Settings")


class SavedModelError(ValueError):
    """A saved model that cannot be used: damaged, altered, of another task or version (one line, naming the
    file)."""


def manifest_digest(document: Mapping[str, Any]) -> str:
    """The SHA-256 of a manifest's canonical JSON, its ``weights`` entry left out (the weights file's header
    keeps it: module docstring)."""
    content = {name: value for name, value in document.items() if name != "weights"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    document = {
        "format": MODEL_FORMAT,
        "pdenets": __version__,
        "task": task,
        "model": model,
        **json.loads(json.dumps(dict(manifest), allow_nan=False)),  # JSON values, as they read back
        "shapes": {
            name: [list(tensor.shape), str(tensor.dtype).replace("torch.", "")]
            for name, tensor in plain.items()
        },
    }
    content = save_tensors(plain, metadata={DIGEST_KEY: manifest_digest(document)})
    weights = folder / WEIGHTS_FILE
    with atomic_write(weights, "wb") as stream:
        stream.write(content)
    document["weights"] = {
        "file": WEIGHTS_FILE,
        "bytes": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
    }
    atomic_write_text(folder / MANIFEST_FILE, json.dumps(document, indent=1, sort_keys=True) + "\n")
    return folder


def _free_folder(folder: Path, identity: Mapping[str, Any]) -> Path:
    """``folder``, unless it holds a model of another identity (module docstring of :func:`save_model`)."""
    document = folder / MANIFEST_FILE
    if not document.exists() and not document.is_symlink():
        return folder
    try:
        old = json.loads(
            read_bounded(document, _MAX_MANIFEST_BYTES, "the most a model manifest holds").decode("utf-8")
        )
    except (ValueError, OSError, UnicodeDecodeError):
        old = None
    if isinstance(old, dict) and all(old.get(key) == value for key, value in identity.items()):
        return folder
    digest = hashlib.sha256(json.dumps(dict(identity), sort_keys=True, default=str).encode()).hexdigest()[:8]
    return folder.with_name(f"{folder.name}-{digest}")


def saved_task(folder: Union[str, Path]) -> str:
    """The task a saved model's manifest names, read as :func:`load_model` reads it (``""`` where it cannot
    be read: :func:`load_model` then says why)."""
    try:
        document = json.loads(_read(Path(folder) / MANIFEST_FILE, _MAX_MANIFEST_BYTES, "").decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return ""
    return str(document.get("task", "")) if isinstance(document, dict) else ""


def _read(path: Path, limit: int, what: str) -> bytes:
    try:
        return read_bounded(path, limit, what)
    except (FileNotFoundError, UnreadableFileError) as error:  # not a regular one, too large: one line
        raise SavedModelError(str(error)) from None


def _header(content: bytes, source: Path) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The tensors a safetensors file declares (name → header entry) and its metadata, from its header
    alone."""
    broken = SavedModelError(f"{source}: not a safetensors file (its header is not readable)")
    if len(content) < 8:
        raise broken
    (length,) = struct.unpack("<Q", content[:8])
    if length > len(content) - 8:
        raise broken
    try:
        header = json.loads(content[8 : 8 + length].decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise broken from None
    if not isinstance(header, dict):
        raise broken
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(entry, dict) for entry in header.values()):
        raise broken
    return header, metadata


def load_model(folder: Union[str, Path], *, task: str) -> Tuple[Dict[str, torch.Tensor], Dict[str, Any]]:
    """The tensors and the manifest of a saved model of ``task``, checked (module docstring).

    Raises:
        SavedModelError: the model cannot be used, naming the file and why.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load as load_tensors

    folder = Path(folder)
    path = folder / MANIFEST_FILE
    if not path.exists() and not path.is_symlink():
        raise SavedModelError(
            f"{path}: missing; a saved model is a folder with {MANIFEST_FILE} and {WEIGHTS_FILE}"
        )
    text = _read(path, _MAX_MANIFEST_BYTES, "the most a model manifest holds")
    try:
        manifest = json.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise SavedModelError(f"{path}: not a JSON manifest ({error})") from None
    if isinstance(manifest, dict) and manifest.get("format") == 1:
        raise SavedModelError(
            f"{path}: a model of format 1; this pdenets ({__version__}) reads format {MODEL_FORMAT}, whose "
            "weights vouch for the manifest: train it again"
        )
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
    if not isinstance(expected, dict) or not (weights.exists() or weights.is_symlink()):
        raise SavedModelError(f"{weights}: missing, or not named by its manifest")
    size = expected.get("bytes")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise SavedModelError(f"{path}: its weights entry names no size")
    budget = memory_budget()
    if size > budget:
        raise SavedModelError(
            f"{weights}: {format_bytes(size)} of weights, more than the memory budget {format_bytes(budget)}"
        )
    try:
        found_size = weights.stat().st_size
    except OSError:
        found_size = None
    if found_size is not None and found_size != size:
        raise SavedModelError(
            f"{weights}: {found_size:,} bytes, its manifest says {size!r} (altered or truncated)"
        )
    content = _read(weights, size, "the size its manifest names")
    if len(content) != size:
        raise SavedModelError(
            f"{weights}: {len(content):,} bytes, its manifest says {size!r} (altered or truncated)"
        )
    if hashlib.sha256(content).hexdigest() != expected.get("sha256"):
        raise SavedModelError(f"{weights}: its SHA-256 is not its manifest's (the file was altered)")
    declared, metadata = _header(content, weights)
    if metadata.get(DIGEST_KEY) != manifest_digest(manifest):
        raise SavedModelError(
            f"{path}: not the manifest its weights were saved with (edited after the model was saved); "
            "save or train the model again"
        )
    shapes = manifest.get("shapes")
    found = {
        name: [entry.get("shape"), _SAFETENSORS_DTYPES.get(str(entry.get("dtype")), entry.get("dtype"))]
        for name, entry in declared.items()
    }
    if shapes != found:
        raise SavedModelError(f"{weights}: its tensors are not those its manifest lists")
    try:
        tensors = load_tensors(content)
    except (SafetensorError, ValueError, OSError) as error:
        raise SavedModelError(f"{weights}: not a safetensors file ({error})") from None
    return tensors, manifest


def typed_settings(cls: Type[_Settings], document: Any, source: Any, what: str = "settings") -> _Settings:
    """The settings dataclass ``cls`` from its manifest entry ``document``: exactly its fields, each of its
    annotated kind (an ``int`` field takes no ``1e9`` nor ``true``; a ``float`` takes an integer), then
    validated by ``cls`` itself; :class:`SavedModelError` naming ``source`` and the field otherwise.

    Examples:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Steps:
        ...     num_steps: int
        ...     step_size: float
        >>> typed_settings(Steps, {"num_steps": 3, "step_size": 1}, "m/model.json")
        Steps(num_steps=3, step_size=1.0)
        >>> typed_settings(Steps, {"num_steps": 1e12, "step_size": 0.5}, "m")
        Traceback (most recent call last):
        ...
        pdenets.saved_model.SavedModelError: m: settings: num_steps holds 1000000000000.0, not a whole number
    """
    if not isinstance(document, dict):
        raise SavedModelError(f"{source}: {what} is not a mapping of settings")
    fields = {field.name: field for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(document) - set(fields))
    missing = sorted(name for name, field in fields.items() if name not in document and _required(field))
    if unknown or missing:
        parts = ([f"unknown {', '.join(unknown)}"] if unknown else []) + (
            [f"missing {', '.join(missing)}"] if missing else []
        )
        raise SavedModelError(f"{source}: {what}: {'; '.join(parts)}")
    values = {}
    for name, value in document.items():
        values[name] = _typed(value, hints[name], f"{source}: {what}: {name}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise SavedModelError(f"{source}: {what}: {error}") from None


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _typed(value: Any, annotation: Any, where: str) -> Any:
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Union:
        if value is None and type(None) in arguments:
            return None
        inner = [argument for argument in arguments if argument is not type(None)]
        return _typed(value, inner[0], where) if len(inner) == 1 else value
    if origin in (tuple, list, Sequence) or annotation in (tuple, list):
        if not isinstance(value, list):
            raise SavedModelError(f"{where} holds {value!r:.40}, not a list")
        item = arguments[0] if arguments else Any
        items = [_typed(entry, item, f"{where}[{index}]") for index, entry in enumerate(value)]
        return tuple(items) if origin is tuple or annotation is tuple else items
    if annotation is bool:
        if not isinstance(value, bool):
            raise SavedModelError(f"{where} holds {value!r:.40}, not true or false")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SavedModelError(f"{where} holds {value!r:.40}, not a whole number")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise SavedModelError(f"{where} holds {value!r:.40}, not a finite number")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise SavedModelError(f"{where} holds {value!r:.40}, not text")
        return value
    return value


def distinct_names(values: Any, what: str, source: Any, *, count: Optional[int] = None) -> List[str]:
    """``values`` as a list of distinct texts (``count`` of them where given); :class:`SavedModelError` naming
    ``source`` and the first repeated name otherwise.

    Examples:
        >>> distinct_names(["f1", "f1", "f3"], "feature_names", "m/model.json")
        Traceback (most recent call last):
        ...
        pdenets.saved_model.SavedModelError: m/model.json: feature_names repeats 'f1'
    """
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise SavedModelError(f"{source}: {what} is not a list of names")
    seen = set()
    for value in values:
        if value in seen:
            raise SavedModelError(f"{source}: {what} repeats {value!r}")
        seen.add(value)
    if count is not None and len(values) != count:
        raise SavedModelError(f"{source}: {len(values)} {what}, its weights hold {count}")
    return list(values)


def check_fits(
    build: Callable[[], torch.nn.Module],
    tensors: Mapping[str, Any],
    source: Any,
    prefix: str = "",
) -> None:
    """Refuse, before the network is built for real, saved weights that are not the network ``build`` makes:
    the network is built on the meta device (no memory allocated, whatever sizes its settings say) and its
    parameter and buffer shapes compared with the saved tensors' whose names start with ``prefix``.

    Examples:
        >>> saved = {"w.weight": torch.zeros(2, 3), "w.bias": torch.zeros(2)}
        >>> check_fits(lambda: torch.nn.Linear(3, 10**9), saved, "m", "w.")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pdenets.saved_model.SavedModelError: m: the saved weights do not fit ... settings (1000000000,))
    """
    with torch.device("meta"):
        try:
            module = build()
        except (TypeError, ValueError) as error:
            raise SavedModelError(f"{source}: its settings describe no model ({error})") from None
    wanted = {name: tuple(value.shape) for name, value in module.state_dict().items()}
    saved = {
        name[len(prefix) :]: tuple(value.shape) for name, value in tensors.items() if name.startswith(prefix)
    }
    if wanted != saved:
        problems = [
            f"{name}: saved {saved.get(name, 'nothing')}, settings {wanted.get(name, 'nothing')}"
            for name in sorted(set(wanted) | set(saved))
            if wanted.get(name) != saved.get(name)
        ]
        raise SavedModelError(
            f"{source}: the saved weights do not fit the model its settings describe ({problems[0]})"
        )


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


def saved_classes(about: Dict[str, Any], class_names: Sequence[str], source: Union[str, Path]) -> np.ndarray:
    """The class labels a saved model answers in: the ones its estimator was fitted on (``about["classes"]``,
    typed as given), else its class names; refused (naming ``source``) where they are not its
    ``class_names``."""
    classes = (
        labels_from_json(about["classes"], source)
        if "classes" in about
        else np.asarray(class_names, dtype=str)
    )
    if [str(label) for label in classes] != list(class_names):
        raise SavedModelError(f"{source}: its classes are not its class_names")
    return classes


def estimator_from(cls: Any, params: Dict[str, Any], source: Union[str, Path]) -> Any:
    """``cls(**params)``: the estimator of a saved model's parameters (a parameter ``cls`` does not take is
    refused naming ``source``)."""
    try:
        return cls(**params)
    except TypeError as error:
        raise SavedModelError(f"{source}: {error}") from None
