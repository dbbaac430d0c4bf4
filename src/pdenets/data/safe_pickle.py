"""Loading pickled arrays without executing anything else.

The Planetoid raw files (``ind.<name>.x`` …) are Python pickles. ``pickle.load`` runs any
callable a file names, so a tampered file could run arbitrary code. :func:`load_array_pickle`
resolves only an allow-list of constructors — numpy arrays and dtypes, scipy sparse
matrices, the ``defaultdict(list)`` of the ``graph`` file, and ``codecs.encode`` (which
turns a string into bytes) — and refuses everything else before anything is called.
"""

from __future__ import annotations

import codecs
import collections
import io
import pickle
from pathlib import Path
from typing import Any, Dict, Tuple, Union

import numpy as np
import scipy.sparse as sp

from .errors import DatasetError

__all__ = ["UnsafePickleError", "load_array_pickle", "ALLOWED_GLOBALS"]


class UnsafePickleError(DatasetError, pickle.UnpicklingError):
    """A pickle asked for a global outside the allow-list; nothing was executed."""


def _numpy_multiarray():
    try:
        from numpy._core import multiarray  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import multiarray
    return multiarray


_MULTIARRAY = _numpy_multiarray()

#: Largest sparse-matrix side a pickle may declare when it calls a constructor with a shape.
MAX_SPARSE_SIDE = 2**31 - 1


def _guarded(cls):
    """``cls`` whose constructor refuses declared shapes the memory budget cannot hold.

    Pickles written by SciPy rebuild matrices without calling the constructor; a tampered
    one can call ``csr_matrix((2_000_000, 1433))`` (an empty matrix whose index arrays, and
    any dense copy, a loader would then allocate): that shape is checked first.
    """

    class Guarded(cls):
        def __init__(self, arg1, *args, **kwargs):
            shape = kwargs.get("shape", args[0] if args else None)
            if shape is None and isinstance(arg1, tuple) and len(arg1) == 2 and all(
                    isinstance(v, (int, np.integer)) for v in arg1):
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
    check_allocation(rows * cols, 4, f"a {kind} declared as {rows} x {cols} (densified in float32)", "<pickle>")


_SPARSE = {name: _guarded(cls) for name, cls in {
    "csr_matrix": sp.csr_matrix, "csc_matrix": sp.csc_matrix, "coo_matrix": sp.coo_matrix,
    "lil_matrix": sp.lil_matrix, "dok_matrix": sp.dok_matrix}.items()}
_BASE_CLASS = {guarded: guarded.__mro__[1] for guarded in _SPARSE.values()}

#: ``(module, name) -> object`` that a pickle may reference (Python 2 and 3 module spellings).
ALLOWED_GLOBALS: Dict[Tuple[str, str], Any] = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("collections", "defaultdict"): collections.defaultdict,
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
    ("_codecs", "encode"): codecs.encode,  # how Python 3 writes bytes into protocol-2 pickles
}
for _module in ("numpy.core.multiarray", "numpy._core.multiarray"):
    ALLOWED_GLOBALS[(_module, "_reconstruct")] = _MULTIARRAY._reconstruct
    ALLOWED_GLOBALS[(_module, "scalar")] = _MULTIARRAY.scalar
for _name, _cls in _SPARSE.items():
    for _module in ("scipy.sparse", f"scipy.sparse.{_name[:3]}", f"scipy.sparse._{_name[:3]}"):
        ALLOWED_GLOBALS[(_module, _name)] = _cls


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
        DatasetError: an empty, truncated or corrupt file (the message names it).

    Example:
        >>> import pickle, numpy as np
        >>> load_array_pickle(pickle.dumps(np.arange(3)))
        array([0, 1, 2])
    """
    name = "<bytes>" if isinstance(source, bytes) else str(source)
    try:
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
    except OSError as error:
        raise DatasetError(f"{name}: cannot be read ({error.strerror})") from None
    if not data:
        raise DatasetError(f"{name}: the file is empty (0 bytes); it should hold a pickle of arrays")
    try:
        loaded = _RestrictedUnpickler(io.BytesIO(data), encoding="latin1").load()
        base = _BASE_CLASS.get(type(loaded))
        return base(loaded) if base is not None else loaded
    except UnsafePickleError as error:
        raise UnsafePickleError(f"{name}: {error}") from None
    except DatasetError as error:  # a declared size over the memory budget
        raise DatasetError(str(error).replace("<pickle>", name)) from None
    except (EOFError, pickle.UnpicklingError) as error:
        raise DatasetError(f"{name}: not a complete pickle (truncated or corrupt: {error or type(error).__name__})"
                           ) from None
    except (ValueError, TypeError, AttributeError, IndexError, KeyError, MemoryError, UnicodeDecodeError,
            OverflowError) as error:
        raise DatasetError(f"{name}: the pickle does not describe valid arrays ({type(error).__name__}: {error})"
                           ) from None
