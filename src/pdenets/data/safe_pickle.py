"""Loading pickled arrays without executing anything else.

The Planetoid raw files (``ind.<name>.x`` …) are Python pickles. ``pickle.load`` runs any
callable a file names, so a tampered file could run arbitrary code. :func:`load_array_pickle`
resolves only an allow-list of constructors — numpy arrays and dtypes, scipy sparse
matrices, the ``defaultdict(list)`` of the ``graph`` file, and the ``latin1`` encoding of a
string into bytes and ``bytes()`` (how Python 3 writes bytes, and empty bytes, into protocol-2
pickles) — and refuses everything else before anything is called. Nothing on the list computes
more than it is given: the encoder accepts only ``latin1`` (one byte per character; ``hex`` and
other codecs, which expand their input, are refused), ``bytes`` takes no argument (``bytes(n)``
would allocate ``n`` bytes), and every array's declared shape is checked against the
memory budget (``$PDENETS_MEMORY_BUDGET``) and against the bytes the file holds *before*
numpy allocates it. A pickle refers to an object many times at the cost of a few bytes each: the
loaded data is walked once per distinct object (never once per path) and refused when, with every
reference counted as a copy, it exceeds the budget (:func:`~pdenets.data.limits.check_expanded`).
"""

from __future__ import annotations

import collections
import importlib
import io
import math
import pickle
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Tuple, Type, Union

import numpy as np
import scipy.sparse as sp

from .errors import DatasetError
from .limits import MemoryBudgetError, check_expanded
from .paths import regular_file

__all__ = ["UnsafePickleError", "load_array_pickle", "ALLOWED_GLOBALS"]


class UnsafePickleError(DatasetError, pickle.UnpicklingError):
    """A pickle asked for a global outside the allow-list; nothing was executed.

    Raised by :func:`load_array_pickle` before the global is resolved; the message names the
    file and the refused ``module.name``. Both a :class:`~pdenets.data.errors.DatasetError`
    and a ``pickle.UnpicklingError``.

    Examples:
        >>> import pickle
        >>> try:
        ...     load_array_pickle(pickle.dumps(print))
        ... except UnsafePickleError as error:
        ...     print(str(error).split(":")[1].strip())
        refusing to load builtins.print
    """


def _numpy_multiarray() -> ModuleType:
    try:
        return importlib.import_module("numpy._core.multiarray")  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        return importlib.import_module("numpy.core.multiarray")


_MULTIARRAY = _numpy_multiarray()

#: Largest sparse-matrix side a pickle may declare when it calls a constructor with a shape.
MAX_SPARSE_SIDE = 2**31 - 1


def _guarded(cls: Type[sp.spmatrix]) -> Type[sp.spmatrix]:
    """``cls`` whose constructor refuses declared shapes the memory budget cannot hold.

    Pickles written by SciPy rebuild matrices without calling the constructor; a tampered
    one can call ``csr_matrix((2_000_000, 1433))`` (an empty matrix whose index arrays, and
    any dense copy, a loader would then allocate): that shape is checked first.
    """

    class Guarded(cls):
        def __init__(self, arg1: Any, *args: Any, **kwargs: Any) -> None:
            shape = kwargs.get("shape", args[0] if args else None)
            if (
                shape is None
                and isinstance(arg1, tuple)
                and len(arg1) == 2
                and all(isinstance(v, (int, np.integer)) for v in arg1)
            ):
                shape = arg1
            if shape is not None:
                _check_declared_shape(cls.__name__, shape)
            super().__init__(arg1, *args, **kwargs)

    Guarded.__name__ = Guarded.__qualname__ = cls.__name__
    return Guarded


def _check_declared_shape(kind: str, shape) -> None:
    from .limits import check_allocation

    try:
        rows, cols = (int(v) for v in shape)
    except (TypeError, ValueError):
        raise UnsafePickleError(f"a {kind} with shape {shape!r} (not two integers)") from None
    if min(rows, cols) < 0 or max(rows, cols) > MAX_SPARSE_SIDE:
        raise UnsafePickleError(f"a {kind} with shape {(rows, cols)} (sides must lie in [0, 2^31))")
    check_allocation(
        rows * cols, 4, f"a {kind} declared as {rows} x {cols} (densified in float32)", "<pickle>"
    )


_SPARSE = {
    name: _guarded(cls)
    for name, cls in {
        "csr_matrix": sp.csr_matrix,
        "csc_matrix": sp.csc_matrix,
        "coo_matrix": sp.coo_matrix,
        "lil_matrix": sp.lil_matrix,
        "dok_matrix": sp.dok_matrix,
    }.items()
}
_BASE_CLASS = {guarded: guarded.__mro__[1] for guarded in _SPARSE.values()}


def _latin1_bytes(text: Any, encoding: Any = "utf-8", errors: Any = "strict") -> bytes:
    """``_codecs.encode`` as protocol-2 pickles use it: a ``str`` to ``latin1`` bytes, one byte per
    character."""
    if (
        not isinstance(text, str)
        or not isinstance(encoding, str)
        or encoding.lower().replace("_", "-") not in ("latin1", "latin-1", "iso-8859-1")
    ):
        raise UnsafePickleError(
            f"refusing _codecs.encode with encoding {encoding!r}: only latin1 (bytes written by "
            "Python 3) is allowed, other codecs compute new data"
        )
    return text.encode("latin1")


def _empty_bytes(*arguments: Any) -> bytes:
    """``bytes()`` as protocol-2 pickles write an empty ``bytes`` (an empty array's data); any argument is
    refused."""
    if arguments:
        raise UnsafePickleError("refusing bytes(...) with arguments: only bytes() (empty bytes) is allowed")
    return b""


def _array_size(shape, dtype, what: str) -> Tuple[int, np.dtype]:
    """Elements and dtype of a declared array, refused above the memory budget (before any allocation)."""
    from .limits import check_allocation

    try:
        sides = tuple(int(v) for v in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        dtype = np.dtype(dtype)
    except (TypeError, ValueError, OverflowError):
        raise UnsafePickleError(
            f"{what} with shape {shape!r} and dtype {dtype!r} is not a numpy array"
        ) from None
    if any(side < 0 for side in sides):
        raise UnsafePickleError(f"{what} with the negative shape {sides}")
    count = math.prod(sides)
    check_allocation(count, max(dtype.itemsize, 1), f"{what} of shape {sides} ({dtype})", "<pickle>")
    return count, dtype


class _CheckedArray(np.ndarray):
    """An array being unpickled: its state's shape is checked before numpy allocates it (made plain after
    loading)."""

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, tuple) or len(state) not in (4, 5):
            raise UnsafePickleError("an array state that is not numpy's (version, shape, dtype, order, data)")
        shape, dtype, raw = state[-4], state[-3], state[-1]
        count, dtype = _array_size(shape, dtype, "an array")
        if isinstance(raw, (bytes, bytearray)) and not dtype.hasobject and len(raw) != count * dtype.itemsize:
            raise DatasetError(
                f"<pickle>: an array of shape {tuple(shape)} ({dtype}) needs {count * dtype.itemsize} "
                f"bytes of data, the file holds {len(raw)}"
            )
        super().__setstate__(state)


def _reconstruct(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
    if subtype is not np.ndarray:
        raise UnsafePickleError(
            f"refusing to rebuild an array of type {getattr(subtype, '__name__', subtype)!r}"
        )
    _array_size(shape, dtype, "an array")
    return _MULTIARRAY._reconstruct(_CheckedArray, shape, dtype)


def _scalar(dtype: Any, data: Any = None) -> np.generic:
    count, dtype = _array_size((), dtype, "a scalar")
    if isinstance(data, (bytes, bytearray)) and not dtype.hasobject and len(data) != dtype.itemsize:
        raise DatasetError(
            f"<pickle>: a {dtype} scalar needs {dtype.itemsize} bytes, the file holds {len(data)}"
        )
    return _MULTIARRAY.scalar(dtype, data) if data is not None else _MULTIARRAY.scalar(dtype)


def _walked(value: Any) -> bool:
    """Whether :func:`_plain` looks inside ``value`` (or replaces it)."""
    return isinstance(value, (_CheckedArray, list, dict, tuple)) or (
        hasattr(value, "tocsr") and hasattr(value, "__dict__") and not isinstance(value, np.ndarray)
    )


def _inside(value: Any) -> List[Any]:
    """The values ``value`` refers to that :func:`_plain` must look at."""
    if isinstance(value, _CheckedArray):
        children = list(value.flat) if value.dtype.hasobject else []
    elif isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, (list, tuple)):
        children = list(value)
    else:  # a sparse matrix: its index and data arrays
        children = [
            item for item in vars(value).values() if isinstance(item, (np.ndarray, list, dict, tuple))
        ]
    return [child for child in children if _walked(child)]


def _plain_one(value: Any, done: Dict[int, Any]) -> Any:
    """``value`` with its checked arrays made plain and its references replaced by their plain versions."""

    def swap(item: Any) -> Any:
        return done.get(id(item), item)

    if isinstance(value, _CheckedArray):
        value = value.view(np.ndarray)
        if value.dtype.hasobject:
            for index, item in enumerate(value.flat):
                if swap(item) is not item:
                    value.flat[index] = swap(item)
        return value
    if isinstance(value, dict):
        for key, item in list(value.items()):
            if swap(item) is not item:
                value[key] = swap(item)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if swap(item) is not item:
                value[index] = swap(item)
    elif isinstance(value, tuple):
        plain = tuple(swap(item) for item in value)
        return plain if any(new is not old for new, old in zip(plain, value)) else value
    else:
        for name, item in list(vars(value).items()):
            if swap(item) is not item:
                setattr(value, name, swap(item))
    return value


def _plain(root: Any) -> Any:
    """The loaded data with every checked array turned back into a plain ``numpy.ndarray``.

    One iterative walk over the graph of references: each object is converted once (a list
    shared by 2,708 nodes, or 60 nested lists ``x = [x, x]``, cost their distinct objects, not
    their paths), an object shared by several containers is replaced by the same plain object
    in all of them, and a cycle ends the walk where it closes instead of recursing forever.
    """
    seen: Dict[int, Any] = {}
    order: List[Any] = []  # post-order: what an object refers to comes before it (except across a cycle)
    stack: List[Tuple[Any, bool]] = [(root, False)] if _walked(root) else []
    while stack:
        value, finished = stack.pop()
        if finished:
            order.append(value)
            continue
        if id(value) in seen:
            continue
        seen[id(value)] = value
        stack.append((value, True))
        stack.extend((child, False) for child in _inside(value) if id(child) not in seen)
    done: Dict[int, Any] = {}
    for value in order:
        done[id(value)] = _plain_one(value, done)
    return done.get(id(root), root)


#: ``(module, name) -> object`` that a pickle may reference (Python 2 and 3 module spellings).
ALLOWED_GLOBALS: Dict[Tuple[str, str], Any] = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("collections", "defaultdict"): collections.defaultdict,
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
    ("_codecs", "encode"): _latin1_bytes,  # how Python 3 writes bytes into protocol-2 pickles
    ("__builtin__", "bytes"): _empty_bytes,  # ... and empty bytes
    ("builtins", "bytes"): _empty_bytes,
}
for _module in ("numpy.core.multiarray", "numpy._core.multiarray"):
    ALLOWED_GLOBALS[(_module, "_reconstruct")] = _reconstruct
    ALLOWED_GLOBALS[(_module, "scalar")] = _scalar
for _name, _cls in _SPARSE.items():
    for _module in ("scipy.sparse", f"scipy.sparse.{_name[:3]}", f"scipy.sparse._{_name[:3]}"):
        ALLOWED_GLOBALS[(_module, _name)] = _cls


_MEMO_OPCODES = ("PUT", "BINPUT", "LONG_BINPUT")


def _check_memo_indices(data: bytes) -> None:
    """Refuse a memo index beyond the opcodes before it: Python's unpickler grows its memo table to the
    largest index a ``PUT`` names, so a 26-byte file naming index 1.3·10⁹ would take gigabytes and tens of
    seconds before failing. A pickler numbers its memo entries 0, 1, 2, ...: never above the opcodes read."""
    import pickletools

    operations = pickletools.genops(data)
    count = 0
    while True:
        try:
            opcode, argument, _ = next(operations)
        except (StopIteration, ValueError, EOFError, UnicodeDecodeError, pickle.UnpicklingError, KeyError):
            return  # the end, or corrupt further on: the unpickler says where
        if opcode.name in _MEMO_OPCODES and isinstance(argument, int) and argument > count:
            raise DatasetError(
                f"<pickle>: memo index {argument:,} after {count} opcodes: not a pickle any pickler writes"
            )
        count += 1


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            raise UnsafePickleError(
                f"refusing to load {module}.{name}: this file may only contain numpy arrays, scipy sparse "
                "matrices and lists/dicts of ints (nothing was executed)"
            ) from None


def load_array_pickle(source: Union[str, Path, bytes]) -> Any:
    """Unpickle numpy/scipy data (Python 2 or 3 pickles, ``latin1`` strings) with an allow-list.

    Args:
        source: a file path, or the pickle's bytes.

    Raises:
        UnsafePickleError: the pickle references a global outside :data:`ALLOWED_GLOBALS`
            (nothing was executed).
        DatasetError: an empty, truncated or corrupt file, a path that is not a regular file,
            declared sizes above the memory budget, or data that, with every shared reference
            counted as a copy, exceeds it or refers to itself (the message names the file).
        DatasetNotFoundError: nothing exists at the path.

    Examples:
        >>> import pickle, numpy as np
        >>> load_array_pickle(pickle.dumps(np.arange(3)))
        array([0, 1, 2])
    """
    name = "<bytes>" if isinstance(source, bytes) else str(source)
    try:
        data = source if isinstance(source, bytes) else regular_file(source).read_bytes()
    except OSError as error:
        raise DatasetError(f"{name}: cannot be read ({error.strerror})") from None
    if not data:
        raise DatasetError(f"{name}: the file is empty (0 bytes); it should hold a pickle of arrays")
    try:
        _check_memo_indices(data)
        loaded = _plain(_RestrictedUnpickler(io.BytesIO(data), encoding="latin1").load())
        check_expanded(loaded, "its data", name)
        base = _BASE_CLASS.get(type(loaded))
        return base(loaded) if base is not None else loaded
    except UnsafePickleError as error:
        raise UnsafePickleError(f"{name}: {error}") from None
    except MemoryBudgetError:  # a malformed $PDENETS_MEMORY_BUDGET, reported as such (not as a corrupt file)
        raise
    except DatasetError as error:  # a declared size over the memory budget
        raise DatasetError(str(error).replace("<pickle>", name)) from None
    except (EOFError, pickle.UnpicklingError) as error:
        raise DatasetError(
            f"{name}: not a complete pickle (truncated or corrupt: {error or type(error).__name__})"
        ) from None
    except (
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        MemoryError,
        UnicodeDecodeError,
        OverflowError,
    ) as error:
        raise DatasetError(
            f"{name}: the pickle does not describe valid arrays ({type(error).__name__}: {error})"
        ) from None
