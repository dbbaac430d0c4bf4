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

__all__ = ["UnsafePickleError", "load_array_pickle", "ALLOWED_GLOBALS"]


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle asked for a global outside the allow-list; nothing was executed."""


def _numpy_multiarray():
    try:
        from numpy._core import multiarray  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import multiarray
    return multiarray


_MULTIARRAY = _numpy_multiarray()

_SPARSE = {"csr_matrix": sp.csr_matrix, "csc_matrix": sp.csc_matrix, "coo_matrix": sp.coo_matrix,
           "lil_matrix": sp.lil_matrix, "dok_matrix": sp.dok_matrix}

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
        UnsafePickleError: the pickle references a global outside :data:`ALLOWED_GLOBALS`.
        pickle.UnpicklingError / EOFError: a truncated or corrupt file.

    Example:
        >>> import pickle, numpy as np
        >>> load_array_pickle(pickle.dumps(np.arange(3)))
        array([0, 1, 2])
    """
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    return _RestrictedUnpickler(io.BytesIO(data), encoding="latin1").load()
