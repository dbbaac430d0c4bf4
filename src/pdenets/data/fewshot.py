"""Pre-extracted features for few-shot learning: the file format, readers, and a seeded episode sampler.

**The features format** (``.npz``, read with ``allow_pickle=False``):

=================  ==========================================================================
``features``       ``(N, M)`` float — one embedding per sample
``labels``         ``(N,)`` int — class ids ``0 … K−1``
``class_names``    ``(K,)`` str — optional (default ``class0``, ``class1``, …)
``base_classes``   int ids of the base classes (the backbone was trained on them) — optional
``val_classes``    int ids of the validation classes — optional
``novel_classes``  int ids of the classes episodes are drawn from — optional (default:
                   every class not in base or val)
``base_mean``      ``(M,)`` float — the mean feature of the base classes, for centering —
                   optional (default: computed from the base-class samples if any)
``ids``            ``(N,)`` str — the user's id of each sample — optional
``unlabelled``     ``(U, M)`` float — samples with no label, kept to be classified — optional
``unlabelled_ids`` ``(U,)`` str — their ids — optional (default ``u0``, ``u1``, …)
=================  ==========================================================================

:func:`save_features` writes it; :func:`load_features` reads it and the files that the
public few-shot code writes: the Diff-ResNet / SimpleShot / LaplacianShot pickles (a dict
``class -> array (n, M)`` or ``class -> list of (M,) arrays``, or ``{"features": …,
"labels": …}``), read with the restricted unpickler (:mod:`pdenets.data.safe_pickle`), and
``torch.save`` files of the same shapes (TIM), read with ``weights_only=True``. Their
classes count as novel; give ``base_mean`` separately if you have it.

**Episodes**: :class:`EpisodeSampler` draws C-way K-shot tasks with Q queries per class
from the novel classes; task ``t`` of seed ``s`` is the same whatever the number of
tasks drawn (its generator is seeded with ``(s, t)``). A :class:`QueryShape` spreads the queries
as users' query sets are spread: balanced, or by class proportions drawn from a Dirichlet
distribution (Veilleux et al. 2021), with queries of classes absent from the support (open set).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from .._checks import check_positive_int
from .csvfile import normalized_labels
from .errors import DatasetError, DatasetNotFoundError
from .graphs import read_npz_arrays
from .limits import check_allocation, check_expanded
from .paths import regular_file

__all__ = [
    "FeatureSet",
    "load_features",
    "save_features",
    "EpisodeSampler",
    "Episodes",
    "QueryShape",
    "mean_and_interval",
    "OPEN_SET_LABEL",
]

#: the label of a query whose class is not in the task's support (open set).
OPEN_SET_LABEL = -1


@dataclass(frozen=True)
class FeatureSet:
    """Embeddings of labelled samples with a base/val/novel class split, and of unlabelled samples (with
    their ids) to classify."""

    features: torch.Tensor
    labels: torch.Tensor
    class_names: Tuple[str, ...]
    base_classes: Tuple[int, ...] = ()
    val_classes: Tuple[int, ...] = ()
    novel_classes: Tuple[int, ...] = ()
    base_mean: Optional[torch.Tensor] = None
    source: str = ""
    ids: Tuple[str, ...] = ()
    unlabelled: Optional[torch.Tensor] = None
    unlabelled_ids: Tuple[str, ...] = ()

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def dim(self) -> int:
        return int(self.features.shape[1])

    def mean_of_base(self) -> Optional[torch.Tensor]:
        """``base_mean`` if given, else the mean feature of the base-class samples, else ``None``."""
        if self.base_mean is not None:
            return self.base_mean
        if not self.base_classes:
            return None
        mask = torch.isin(self.labels, torch.tensor(self.base_classes))
        return self.features[mask].mean(0)

    def class_counts(self) -> Dict[int, int]:
        counts = torch.bincount(self.labels, minlength=self.num_classes)
        return {c: int(counts[c]) for c in range(self.num_classes)}


def _fail(source, problem: str) -> DatasetError:
    return DatasetError(f"{source}: {problem}")


def _validated(features, labels, class_names, base, val, novel, base_mean, source) -> FeatureSet:
    features = np.asarray(features)
    labels = np.asarray(labels)
    if class_names is not None and np.asarray(class_names, dtype=object).ndim != 1:
        raise _fail(
            source, f"class_names must be a list of names, one per class, got {str(class_names)[:60]}"
        )
    if features.ndim != 2 or features.shape[0] == 0 or features.shape[1] == 0:
        raise _fail(source, f"features must be a non-empty (N, M) matrix, got shape {features.shape}")
    if not np.issubdtype(features.dtype, np.floating) and not np.issubdtype(features.dtype, np.integer):
        raise _fail(source, f"features must be numbers, got dtype {features.dtype}")
    check_allocation(
        features.size, 4, f"the {features.shape[0]} x {features.shape[1]} features in float32", source
    )
    features = features.astype(np.float32, copy=False)
    bad = int((~np.isfinite(features)).sum())
    if bad:
        raise _fail(source, f"features hold {bad} NaN/inf value(s); clean or impute them first")
    if labels.shape != (features.shape[0],):
        raise _fail(source, f"{labels.shape} labels for {features.shape[0]} feature rows")
    if not np.issubdtype(labels.dtype, np.integer):
        if not np.issubdtype(labels.dtype, np.floating):
            raise _fail(source, f"labels must be integer class ids, got dtype {labels.dtype}")
        if not np.isfinite(labels).all():
            raise _fail(
                source,
                f"labels hold a non-finite value ({labels[~np.isfinite(labels)][0]}); class ids are "
                "integers 0…K−1",
            )
        if (labels != np.round(labels)).any():
            value = labels[labels != np.round(labels)][0]
            raise _fail(source, f"labels must be integer class ids, got the value {value}")
        if np.abs(labels).max() >= 2**62:
            raise _fail(
                source, f"labels hold the class id {labels[np.abs(labels).argmax()]:g}; class ids are 0…K−1"
            )
        labels = labels.astype(np.int64)
    if labels.min() < 0:
        raise _fail(source, f"labels hold the negative class id {int(labels.min())}")
    # class ids index the classes: more ids than rows (and names) would build classes no row has
    largest = int(labels.max())
    limit = max(labels.size, len(class_names) if class_names is not None else 0)
    if largest >= limit:
        raise _fail(
            source,
            f"labels name the class id {largest} but the file has {labels.size} rows"
            + (f" and {len(class_names)} class names" if class_names is not None else "")
            + ": class ids must be 0…K−1 for K classes (relabel with np.unique(labels, "
            "return_inverse=True))",
        )
    num_classes = largest + 1
    if class_names is None:
        class_names = [f"class{c}" for c in range(num_classes)]
    class_names = tuple(str(name) for name in class_names)
    if len(class_names) < num_classes:
        raise _fail(source, f"{len(class_names)} class names for class ids up to {num_classes - 1}")
    splits = {}
    for name, ids in (("base_classes", base), ("val_classes", val), ("novel_classes", novel)):
        values = np.asarray(ids if ids is not None else [], dtype=object if ids is None else None).reshape(-1)
        whole = values.dtype.kind in "iu" or (
            values.dtype.kind == "f" and np.isfinite(values).all() and (values == np.round(values)).all()
        )
        if values.size and not whole:
            raise _fail(source, f"{name} must be integer class ids, got {values[:3].tolist()}")
        if values.size and (values.min() < 0 or values.max() >= len(class_names)):
            raise _fail(source, f"{name} refers to classes outside [0, {len(class_names)})")
        splits[name] = tuple(int(i) for i in values)
    for first, second in (("base", "novel"), ("base", "val"), ("val", "novel")):
        shared = set(splits[f"{first}_classes"]) & set(splits[f"{second}_classes"])
        if shared:
            raise _fail(source, f"classes {sorted(shared)[:10]} are both {first} and {second}")
    if not splits["novel_classes"]:
        taken = set(splits["base_classes"]) | set(splits["val_classes"])
        splits["novel_classes"] = tuple(c for c in range(num_classes) if c not in taken)
    if base_mean is not None:
        base_mean = np.asarray(base_mean, dtype=np.float32).reshape(-1)
        if base_mean.shape != (features.shape[1],) or not np.isfinite(base_mean).all():
            raise _fail(
                source, f"base_mean must be {features.shape[1]} finite numbers, got shape {base_mean.shape}"
            )
        base_mean = torch.from_numpy(base_mean)
    return FeatureSet(
        torch.from_numpy(np.ascontiguousarray(features)),
        torch.from_numpy(labels.astype(np.int64)),
        class_names,
        base_classes=splits["base_classes"],
        val_classes=splits["val_classes"],
        novel_classes=splits["novel_classes"],
        base_mean=base_mean,
        source=str(source),
    )


def _array(value, what: str, source) -> np.ndarray:
    """``value`` as one array; a list of arrays is stacked after its size is checked against the budget."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(item, np.ndarray) for item in value):
        shapes = {item.shape for item in value}
        if len(shapes) > 1:
            raise _fail(source, f"{what} is a list of arrays of different shapes {sorted(shapes)[:3]}")
        check_allocation(
            len(value) * value[0].size,
            np.result_type(*value).itemsize,
            f"{what} stacked from {len(value)} arrays",
            source,
        )
        return np.stack(value)
    try:
        return np.asarray(value)
    except ValueError as error:  # ragged nested lists
        raise _fail(source, f"{what} is not a rectangular table of numbers ({error})") from None


def _class_order(keys: List, source) -> List[int]:
    """Positions of the class keys in class-id order: numeric keys by value (2 before 10), others by name."""
    try:
        names, ids = normalized_labels([str(key) for key in keys])
    except ValueError:
        raise _fail(source, "a class key is empty") from None
    if len(names) != len(keys):
        first: Dict[int, object] = {}
        for key, class_id in zip(keys, ids):
            if class_id in first:
                raise _fail(source, f"the class keys {first[class_id]!r} and {key!r} name the same class")
            first[class_id] = key
    return sorted(range(len(keys)), key=ids.__getitem__)


def _from_mapping(mapping: dict, source) -> Tuple[np.ndarray, np.ndarray, Optional[List[str]]]:
    """``{"features": X, "labels": y}`` or ``{class: array (n, M) or list of (M,) arrays}``.

    Classes are numbered in the order of their keys: by value when every key is a number
    (``2`` before ``10``), else by name. Every stacking is checked against the memory budget
    before it allocates.
    """
    if "features" in mapping and "labels" in mapping:
        return (
            _array(mapping["features"], "features", source),
            _array(mapping["labels"], "labels", source),
            mapping.get("class_names"),
        )
    keys = list(mapping)
    blocks, labels, names = [], [], []
    for index, position in enumerate(_class_order(keys, source)):
        name, value = keys[position], mapping[keys[position]]
        if isinstance(value, (list, tuple)):
            rows = [np.asarray(v).reshape(-1) for v in value]
            if len({row.size for row in rows}) > 1:
                raise _fail(
                    source,
                    f"class {name!r} holds feature vectors of different lengths "
                    f"{sorted({row.size for row in rows})[:3]}",
                )
            if rows:
                check_allocation(
                    len(rows) * rows[0].size,
                    np.result_type(*rows).itemsize,
                    f"class {name!r} stacked from {len(rows)} vectors",
                    source,
                )
            value = np.stack(rows) if rows else np.zeros((0, 0))
        value = np.asarray(value)
        if value.ndim == 1:
            value = value[None, :]
        if value.ndim != 2:
            raise _fail(
                source, f"class {name!r} holds an array of shape {value.shape}, expected (samples, M)"
            )
        blocks.append(value)
        labels.append(np.full(value.shape[0], index))
        names.append(str(name))
    if not blocks:
        raise _fail(source, "holds no classes")
    widths = {b.shape[1] for b in blocks if b.size}
    if len(widths) != 1:
        raise _fail(source, f"classes have features of different widths {sorted(widths)}")
    rows = sum(block.shape[0] for block in blocks)
    check_allocation(
        rows * widths.pop(),
        np.result_type(*blocks).itemsize,
        f"the features of {len(blocks)} classes joined",
        source,
    )
    return np.concatenate(blocks), np.concatenate(labels), names


def _to_numpy(value: Any) -> Any:
    """``value`` with every tensor as a numpy array and every tuple as a list.

    One iterative walk: each object is converted once, and an object shared by several
    containers is shared by their converted versions (nothing is copied per reference).
    """
    pending = object()
    done: Dict[int, Any] = {}
    stack: List[Tuple[Any, bool]] = [(value, False)]
    while stack:
        item, ready = stack.pop()
        key = id(item)
        if not ready:
            if key in done:
                continue
            if isinstance(item, torch.Tensor):
                tensor = item.detach().cpu()
                tensor = tensor.to_dense() if tensor.layout != torch.strided else tensor
                try:
                    done[key] = tensor.numpy()
                except TypeError:  # dtypes numpy lacks (bfloat16, ...)
                    done[key] = tensor.double().numpy()
            elif isinstance(item, (dict, list, tuple)):
                done[key] = pending
                stack.append((item, True))
                stack.extend((child, False) for child in (item.values() if isinstance(item, dict) else item))
            else:
                done[key] = item
            continue

        def converted(child: Any) -> Any:
            result = done.get(id(child), child)
            return child if result is pending else result

        if isinstance(item, dict):
            done[key] = {name: converted(child) for name, child in item.items()}
        else:
            done[key] = [converted(child) for child in item]
    return done[id(value)]


def load_features(
    path: Union[str, Path], *, base_mean: Optional[Union[str, Path, np.ndarray]] = None
) -> FeatureSet:
    """Read a features file (see the module docstring); problems raise :class:`DatasetError` naming the file.

    A pickle or ``torch.save`` file is refused when its data, with every reference to a shared
    array counted as a copy, exceeds the memory budget (one array under 20,000 class ids is
    20,000 arrays once stacked), and each stacking is checked before it allocates.
    """
    path = regular_file(path, DatasetNotFoundError(f"missing features file {path}"))
    suffix = path.suffix.lower()
    if suffix == ".npz":
        arrays = read_npz_arrays(path)
        if "features" not in arrays or "labels" not in arrays:
            skipped = sorted({"features", "labels"} & set(arrays.skipped_objects))
            if skipped:
                raise _fail(
                    path,
                    f"{' and '.join(skipped)} stored as object arrays (pickled Python objects), which "
                    "are never unpickled: save features as numbers and labels as integer class ids",
                )
            raise _fail(
                path,
                f"found arrays {sorted(arrays)}; the features format needs 'features' and 'labels' "
                "(see pdenets.data.fewshot)",
            )
        names = arrays.get("class_names")
        result = _validated(
            arrays["features"],
            arrays["labels"],
            None if names is None else names.tolist(),
            arrays.get("base_classes"),
            arrays.get("val_classes"),
            arrays.get("novel_classes"),
            arrays.get("base_mean"),
            path,
        )
        result = _with_unlabelled(result, arrays, path)
    elif suffix in (".pkl", ".plk", ".pickle"):
        from .safe_pickle import load_array_pickle  # builds on scipy's sparse classes

        loaded = load_array_pickle(path)  # refuses data whose shared references expand beyond the budget
        if isinstance(loaded, (list, tuple)) and len(loaded) == 2:
            loaded = {"features": loaded[0], "labels": loaded[1]}
        if not isinstance(loaded, dict):
            raise _fail(
                path, f"expected a dict of class -> features or features/labels, got {type(loaded).__name__}"
            )
        result = _validated(*_from_mapping(loaded, path), None, None, None, None, path)
    elif suffix in (".pt", ".pth"):
        check_allocation(path.stat().st_size, 1, "the file", path)
        try:
            loaded = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # torch raises many types for a bad or unsafe file
            first_line = (str(error).splitlines() or ["no message"])[0][:160]
            raise _fail(path, f"not a readable tensor file ({type(error).__name__}: {first_line})") from None
        check_expanded(loaded, "its data", path)
        loaded = _to_numpy(loaded)
        if isinstance(loaded, (list, tuple)) and len(loaded) == 2:
            loaded = {"features": loaded[0], "labels": loaded[1]}
        if not isinstance(loaded, dict):
            raise _fail(path, f"expected a dict of tensors, got {type(loaded).__name__}")
        result = _validated(*_from_mapping(loaded, path), None, None, None, None, path)
    else:
        raise _fail(path, "unknown features file type; use .npz (the pdenets format), .pkl or .pt")
    if base_mean is not None:
        mean = load_features_mean(base_mean, result.dim)
        result = replace(result, base_mean=mean)
    return result


def _id_strings(values: Any, count: int, what: str, source) -> Tuple[str, ...]:
    """The ids of an ``ids`` array: ``(N,)`` strings, or one string holding them as a JSON list (what
    :func:`save_features` writes: a fixed-width string array would pad every id to the longest)."""
    ids = np.asarray(values)
    if ids.ndim == 0 and ids.dtype.kind in "US":
        try:
            listed = json.loads(str(ids))
        except ValueError:
            listed = None
        if not isinstance(listed, list) or not all(isinstance(value, str) for value in listed):
            raise _fail(source, f"{what} must be a JSON list of strings or an array of strings")
        ids = np.array(listed, dtype=object)
    ids = ids.reshape(-1)
    if ids.shape != (count,) or ids.dtype.kind not in "USO":
        raise _fail(
            source, f"{what} must be {count} strings, one per row, got {ids.dtype} of shape {ids.shape}"
        )
    text = tuple(str(value) for value in ids.tolist())
    repeated = next((value for value, seen in zip(text, _seen(text)) if seen), None)
    if repeated is not None:
        raise _fail(source, f"{what} repeats the id {repeated[:80]!r}")
    if any(not value.strip() for value in text):
        raise _fail(source, f"{what} holds an empty id")
    return text


def _seen(values: Sequence[str]) -> List[bool]:
    """Per value, whether it came before."""
    seen: set = set()
    flags = []
    for value in values:
        flags.append(value in seen)
        seen.add(value)
    return flags


def _with_unlabelled(result: FeatureSet, arrays: Any, source) -> FeatureSet:
    """``result`` with the optional ``ids``, ``unlabelled`` and ``unlabelled_ids`` arrays, checked."""
    changes: Dict[str, Any] = {}
    if "ids" in arrays:
        changes["ids"] = _id_strings(arrays["ids"], len(result.labels), "ids", source)
    if "unlabelled" in arrays:
        rows = np.asarray(arrays["unlabelled"])
        if rows.ndim != 2 or rows.shape[1] != result.dim or rows.dtype.kind not in "fiu":
            raise _fail(
                source,
                f"unlabelled must be a (U, {result.dim}) matrix of numbers like features, got "
                f"{rows.dtype} of shape {rows.shape}",
            )
        check_allocation(rows.size, 4, f"the {rows.shape[0]} unlabelled rows in float32", source)
        rows = rows.astype(np.float32, copy=False)
        if not np.isfinite(rows).all():
            raise _fail(source, f"unlabelled holds {int((~np.isfinite(rows)).sum())} NaN/inf value(s)")
        changes["unlabelled"] = torch.from_numpy(np.ascontiguousarray(rows))
        changes["unlabelled_ids"] = (
            _id_strings(arrays["unlabelled_ids"], rows.shape[0], "unlabelled_ids", source)
            if "unlabelled_ids" in arrays
            else tuple(f"u{index}" for index in range(rows.shape[0]))
        )
    elif "unlabelled_ids" in arrays:
        raise _fail(source, "unlabelled_ids without unlabelled rows")
    ids = set(changes.get("ids", ())) & set(changes.get("unlabelled_ids", ()))
    if ids:
        raise _fail(source, f"the id {sorted(ids)[0][:80]!r} names a labelled and an unlabelled row")
    return replace(result, **changes) if changes else result


def load_features_mean(source: Union[str, Path, np.ndarray], dim: int) -> torch.Tensor:
    """A base mean given as an array, a ``.npy`` file or a features file whose ``base_mean``/features it
    averages."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.suffix == ".npy":
            arrays = {"base_mean": np.load(path, allow_pickle=False)}
        else:
            base = load_features(path)
            base_mean = base.mean_of_base()
            arrays = {"base_mean": (base_mean if base_mean is not None else base.features.mean(0)).numpy()}
        source = arrays["base_mean"]
    mean = np.asarray(source, dtype=np.float32).reshape(-1)
    if mean.shape != (dim,) or not np.isfinite(mean).all():
        raise DatasetError(f"base mean must be {dim} finite numbers, got shape {mean.shape}")
    return torch.from_numpy(mean)


def save_features(features: FeatureSet, path: Union[str, Path], *, overwrite: bool = False) -> Path:
    """Write a :class:`FeatureSet` in the features format (atomically; never replaces a file unless asked)."""
    from .._io import atomic_write

    path = Path(path)
    if path.suffix != ".npz":
        raise ValueError(f"{path}: the features file name must end in .npz")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
    arrays = {
        "features": features.features.numpy(),
        "labels": features.labels.numpy(),
        "class_names": np.array(features.class_names, dtype=str),
        "base_classes": np.array(features.base_classes, dtype=np.int64),
        "val_classes": np.array(features.val_classes, dtype=np.int64),
        "novel_classes": np.array(features.novel_classes, dtype=np.int64),
    }
    if features.base_mean is not None:
        arrays["base_mean"] = features.base_mean.numpy()
    if features.ids and len(features.ids) != len(features.labels):
        raise ValueError(f"{len(features.ids)} ids for {len(features.labels)} labelled rows")
    if features.unlabelled is not None and len(features.unlabelled_ids) != features.unlabelled.shape[0]:
        raise ValueError(
            f"{len(features.unlabelled_ids)} unlabelled_ids for {features.unlabelled.shape[0]} unlabelled "
            "rows"
        )
    if features.ids:
        arrays["ids"] = np.array(json.dumps(list(features.ids)))
    if features.unlabelled is not None:
        arrays["unlabelled"] = features.unlabelled.numpy()
        arrays["unlabelled_ids"] = np.array(json.dumps(list(features.unlabelled_ids)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as stream:
        np.savez(stream, **arrays)  # type: ignore[arg-type]  # mypy also matches **arrays to allow_pickle: bool
    return path


# ----------------------------------------------------------------------------------------
# episodes


@dataclass(frozen=True)
class QueryShape:
    """How the queries of a task are spread over its classes.

    * ``"balanced"``: ``Q`` queries of every class (the usual benchmark episodes);
    * ``"dirichlet:A"``: ``C·Q`` queries in all, split by class proportions ``p ~ Dirichlet(A, …, A)``
      drawn for every task (Veilleux, Boudiaf, Piantanida, Ben Ayed, *Realistic evaluation of
      transductive few-shot learning*, NeurIPS 2021: ``A = 2``), the counts ``C·Q·p`` rounded by
      largest remainders so that they sum to ``C·Q``; a class may get no query at all. A class with
      fewer samples than its share (Omniglot's 20 drawings) gives all it has and the other classes
      share the rest in their proportions;
    * ``open_set = K``: ``K`` more classes, absent from the support, add ``Q`` queries each, labelled
      :data:`OPEN_SET_LABEL` (a method can only give them to a support class, or doubt).

    Examples:
        >>> QueryShape.parse("dirichlet:2").concentration, QueryShape.parse("balanced").balanced
        (2.0, True)
        >>> QueryShape.parse("dirichlet:2", open_set=2).describe(5, 15)
        'Dirichlet(2) proportions, 75 queries of the 5 classes + 30 of 2 absent classes'
    """

    distribution: str = "balanced"
    open_set: int = 0

    def __post_init__(self) -> None:
        self.concentration  # checks the distribution
        check_positive_int(self.open_set, "open_set", minimum=0)

    @classmethod
    def parse(cls, text: str, open_set: int = 0) -> "QueryShape":
        """``"balanced"`` or ``"dirichlet:A"`` (``A > 0``)."""
        return cls(str(text).strip().lower(), open_set)

    @property
    def concentration(self) -> float:
        """``A`` of ``dirichlet:A`` (``inf`` for balanced queries)."""
        if self.distribution == "balanced":
            return math.inf
        name, _, value = self.distribution.partition(":")
        try:
            concentration = float(value)
        except ValueError:
            concentration = math.nan
        if name != "dirichlet" or not (0 < concentration < math.inf):
            raise ValueError(
                f"query distribution {self.distribution!r}: use 'balanced' or 'dirichlet:A' with a "
                "concentration A > 0 (e.g. dirichlet:2)"
            )
        return concentration

    @property
    def balanced(self) -> bool:
        """Every class of the task gets the same number of queries and no query comes from elsewhere."""
        return self.distribution == "balanced" and self.open_set == 0

    def describe(self, ways: int, queries: int) -> str:
        spread = (
            f"{queries} queries per class"
            if self.distribution == "balanced"
            else f"Dirichlet({self.concentration:g}) proportions, {ways * queries} queries of the {ways} "
            "classes"
        )
        return spread + (
            f" + {self.open_set * queries} of {self.open_set} absent classes" if self.open_set else ""
        )

    def counts(
        self, generator: np.random.Generator, ways: int, queries: int, room: Optional[np.ndarray] = None
    ) -> np.ndarray:
        """The queries of each class of one task ``(C,)``, at most ``room`` of class ``c`` (default: no
        limit)."""
        if self.distribution == "balanced":
            return np.full(ways, queries)
        total = ways * queries
        proportions = generator.dirichlet(np.full(ways, self.concentration))
        room = np.full(ways, total) if room is None else np.asarray(room)
        counts = np.zeros(ways, dtype=int)
        while counts.sum() < total:
            open_classes = counts < room
            if not open_classes.any():
                raise ValueError(
                    f"the {ways} classes hold {int(room.sum())} samples beside the support, fewer than "
                    f"the {total} queries asked; lower queries"
                )
            weights = np.where(open_classes, proportions, 0.0)
            weights = weights / weights.sum() if weights.sum() > 0 else open_classes / open_classes.sum()
            missing = total - counts.sum()
            shares = weights * missing
            extra = np.floor(shares).astype(int)
            extra[np.argsort(-(shares - extra), kind="stable")[: missing - extra.sum()]] += 1
            counts = np.minimum(counts + extra, room)
        return counts


@dataclass(frozen=True)
class Episodes:
    """``T`` few-shot tasks as sample indices into a :class:`FeatureSet`.

    ``support`` is ``(T, C·K)``, ordered class by class; ``query`` ``(T, Q_all)`` with ``Q_all`` the
    same for every task (``C·Q``, plus ``K·Q`` open-set queries); ``support_labels``/``query_labels``
    are the episode labels ``0 … C−1`` (:data:`OPEN_SET_LABEL` for an open-set query); ``classes``
    ``(T, C)`` the dataset class of each episode label.
    """

    support: torch.Tensor
    query: torch.Tensor
    support_labels: torch.Tensor
    query_labels: torch.Tensor
    classes: torch.Tensor
    task_ids: Tuple[int, ...] = field(default=())

    def __len__(self) -> int:
        return int(self.support.shape[0])


class EpisodeSampler:
    """Seeded C-way K-shot tasks over a set of classes, their queries spread by a :class:`QueryShape`.

    Args:
        labels: ``(N,)`` class id of every sample.
        classes: the class ids tasks are drawn from (the novel classes).
        ways: ``C`` (default 5); shots: ``K`` (default 1); queries: ``Q`` per class (default 15; the mean
            per class for Dirichlet proportions).
        seed: master seed; task ``t`` uses a generator seeded with ``(seed, t)``.
        shape: how the queries are spread (default balanced). Balanced tasks are drawn exactly as without it.

    Examples:
        >>> import torch
        >>> labels = torch.arange(10).repeat_interleave(20)
        >>> sampler = EpisodeSampler(labels, range(10), ways=5, shots=1, queries=15)
        >>> tasks = sampler.sample(range(3))
        >>> tuple(tasks.support.shape), tuple(tasks.query.shape)
        ((3, 5), (3, 75))
        >>> skewed = EpisodeSampler(torch.arange(10).repeat_interleave(40), range(10), ways=5, queries=15,
        ...                         shape=QueryShape("dirichlet:2"))
        >>> tuple(skewed.sample(range(3)).query.shape)
        (3, 75)
    """

    def __init__(
        self,
        labels: torch.Tensor,
        classes: Sequence[int],
        *,
        ways: int = 5,
        shots: int = 1,
        queries: int = 15,
        seed: int = 0,
        shape: QueryShape = QueryShape(),
    ):
        self.ways = check_positive_int(ways, "ways")
        self.shots = check_positive_int(shots, "shots")
        self.queries = check_positive_int(queries, "queries")
        self.seed = int(seed)
        if not isinstance(shape, QueryShape):
            raise TypeError(f"shape must be a QueryShape, got {type(shape).__name__}")
        self.shape = shape
        labels = torch.as_tensor(labels).cpu()
        classes = [int(c) for c in classes]
        if not classes:
            raise ValueError("no classes to draw episodes from (the novel split is empty)")
        if len(set(classes)) != len(classes):
            raise ValueError("the episode classes hold duplicates")
        if self.ways + shape.open_set > len(classes):
            extra = f" + {shape.open_set} open-set classes" if shape.open_set else ""
            raise ValueError(
                f"ways={self.ways}{extra} but only {len(classes)} classes are available for episodes"
            )
        self.members = {c: torch.nonzero(labels == c).squeeze(1).numpy() for c in classes}
        # balanced: every class needs shots + queries samples; Dirichlet: shots (a class may give no query,
        # and one with fewer samples than its share gives what it has); open set: queries
        needed = self.shots + (self.queries if shape.distribution == "balanced" else 0)
        short = {c: len(m) for c, m in self.members.items() if len(m) < needed}
        if short:
            shown = dict(list(short.items())[:5])
            raise ValueError(
                f"{len(short)} class(es) have fewer than shots + queries = {needed} samples "
                f"(class: samples {shown}); lower shots/queries or drop those classes"
            )
        if (
            shape.open_set
            and sum(len(m) >= self.queries for m in self.members.values()) < self.ways + shape.open_set
        ):
            raise ValueError(
                f"open_set={shape.open_set} needs {self.ways + shape.open_set} classes of at least "
                f"queries={self.queries} samples"
            )
        self.classes = np.array(classes)

    def task(self, index: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Support indices ``(C·K,)``, query indices and labels ``(Q_all,)`` and the chosen classes ``(C,)``
        of task ``index``."""
        generator = np.random.default_rng([self.seed, int(index)])
        chosen = generator.choice(self.classes, self.ways, replace=False)
        room = np.array([len(self.members[int(c)]) - self.shots for c in chosen])
        counts = self.shape.counts(generator, self.ways, self.queries, room)
        support, query, query_labels = [], [], []
        for label, (c, count) in enumerate(zip(chosen, counts)):
            picked = generator.choice(self.members[int(c)], self.shots + int(count), replace=False)
            support.append(picked[: self.shots])
            query.append(picked[self.shots :])
            query_labels.append(np.full(int(count), label))
        if self.shape.open_set:
            rest = np.array(
                [
                    c
                    for c in self.classes
                    if c not in set(chosen.tolist()) and len(self.members[int(c)]) >= self.queries
                ]
            )
            for c in generator.choice(rest, self.shape.open_set, replace=False):
                query.append(generator.choice(self.members[int(c)], self.queries, replace=False))
                query_labels.append(np.full(self.queries, OPEN_SET_LABEL))
        return np.concatenate(support), np.concatenate(query), np.concatenate(query_labels), chosen

    def sample(self, task_ids: Sequence[int]) -> Episodes:
        task_ids = tuple(int(t) for t in task_ids)
        parts = [self.task(t) for t in task_ids]
        support = torch.from_numpy(np.stack([p[0] for p in parts]))
        query = torch.from_numpy(np.stack([p[1] for p in parts]))
        query_labels = torch.from_numpy(np.stack([p[2] for p in parts]).astype(np.int64))
        classes = torch.from_numpy(np.stack([p[3] for p in parts]))
        support_labels = torch.arange(self.ways).repeat_interleave(self.shots).expand(len(parts), -1).clone()
        return Episodes(support, query, support_labels, query_labels, classes, task_ids)


def mean_and_interval(accuracies: Sequence[float], *, confidence: float = 0.95) -> Tuple[float, float]:
    """Mean accuracy and the half-width of its normal-approximation confidence interval (``1.96 σ/√n`` at 95
    %)."""
    values = np.asarray(accuracies, dtype=float)
    if values.size == 0:
        return math.nan, math.nan
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + confidence / 2))
    half = z * float(values.std(ddof=1)) / math.sqrt(values.size) if values.size > 1 else math.nan
    return float(values.mean()), half
