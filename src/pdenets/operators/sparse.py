"""Constant sparse matrices multiplied by dense tensors, with autograd for the dense side.

``SparseMatrix(M).matmul(X)`` computes ``M X`` and its backward ``Mᵀ ∂L/∂(MX)`` with a
precomputed ``Mᵀ`` (torch's generic sparse backward transposes ``M`` on every call, which
costs more than the product itself). The product runs in torch's CSR kernel, except on a
single CPU thread with a wide operand (at least :data:`SCIPY_MIN_COLUMNS` columns, e.g.
bag-of-words features), where SciPy's kernel, which skips torch's internal copies, trains
Diff-ResNet on Cora ~10 % faster; with two or more threads or narrow operands torch's
kernel is as fast or up to 3× faster (``benchmarks/graph.py`` and the numbers in
``benchmarks/README.md``). A CPU product with a large output (:data:`SCIPY_MIN_OUTPUT`
entries) goes through the compiled kernel of :mod:`~pdenets.operators.spmm_kernel` where ``numba`` is
installed (operands up to :data:`COMPILED_MAX_COLUMNS` wide), else through SciPy: torch's kernel holds a
second output-sized buffer.

Examples:
    >>> import torch
    >>> m = SparseMatrix(torch.tensor([[0., 2.], [1., 0.]]).to_sparse())
    >>> x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    >>> y = m.matmul(x)
    >>> y
    tensor([[6., 8.],
            [1., 2.]], grad_fn=<_SparseMatmulBackward>)
    >>> y.sum().backward(); x.grad
    tensor([[1., 1.],
            [2., 2.]])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

import numpy as np
import torch

from .._checks import check_floating, check_num_nodes, check_scalar_entries
from . import spmm_kernel

if TYPE_CHECKING:  # scipy is imported by the products that use it
    import scipy.sparse as sp

__all__ = ["SparseMatrix", "SCIPY_MIN_COLUMNS", "SCIPY_MIN_OUTPUT", "COMPILED_MAX_COLUMNS"]

#: Operand width from which a single-threaded CPU product goes through SciPy.
SCIPY_MIN_COLUMNS = 256
#: Output size (entries) from which a CPU product goes through SciPy whatever the threads: torch's CSR kernel
#: allocates a second buffer the size of its output (measured: peak 2× the output, SciPy's 1×), which decides
#: the largest graph a training epoch fits in.
SCIPY_MIN_OUTPUT = 1 << 24
#: Widest operand of the compiled product (:mod:`~pdenets.operators.spmm_kernel`, with ``numba``), which takes
#: the large CPU products in SciPy's place: 2.6× faster than torch's kernel and 8× SciPy's on a 22 M-entry
#: graph.
COMPILED_MAX_COLUMNS = 256
_SCIPY_DTYPES = {torch.float32: np.float32, torch.float64: np.float64}


class SparseMatrix:
    """A constant ``(n, m)`` sparse matrix (from a torch COO/CSR tensor) ready for products.

    ``Y = M X``,  ``∂ℓ/∂X = Mᵀ ∂ℓ/∂Y``,

    where ``M`` is the stored matrix, ``X`` a dense ``(m, C)`` operand and ``ℓ`` a loss:
    :meth:`matmul` computes ``M X`` and its backward pass multiplies by a transpose ``Mᵀ``
    (:attr:`T`) built once and kept, instead of transposing ``M`` on every call.

    ``M`` is stored once, in CSR with 32-bit indices where they fit (8 bytes per entry in float32
    instead of the 20 of a COO tensor); SciPy's view of it shares that memory. A symmetric ``M``
    (a diffusion operator of an undirected graph) is its own transpose: :attr:`T` is ``M`` itself,
    so the backward pass needs no second copy.

    Args:
        matrix: the ``(n, m)`` matrix ``M`` as a torch sparse COO or CSR tensor (stored detached:
            ``M`` is a constant).
        _transpose_of: internal; the matrix this one is the transpose of, set by :attr:`T` so that
            ``M.T.T`` is ``M`` (default: ``None``).

    Examples:
        >>> import torch
        >>> m = SparseMatrix(torch.tensor([[0., 2.], [1., 0.]]).to_sparse())
        >>> m
        SparseMatrix(shape=(2, 2), nnz=2)
        >>> m.matmul(torch.tensor([[1.], [3.]]))
        tensor([[6.],
                [1.]])
        >>> m.T.to_dense()
        tensor([[0., 1.],
                [2., 0.]])
        >>> s = SparseMatrix(torch.tensor([[0., 2.], [2., 1.]]).to_sparse())
        >>> s.T is s  # symmetric: its own transpose
        True
    """

    def __init__(self, matrix: torch.Tensor, *, _transpose_of: Optional["SparseMatrix"] = None):
        if not isinstance(matrix, torch.Tensor):
            raise TypeError(
                f"SparseMatrix needs a torch sparse COO or CSR tensor, got {type(matrix).__name__}"
            )
        check_scalar_entries(matrix, "the matrix of SparseMatrix")
        if matrix.dim() != 2:
            raise ValueError(f"SparseMatrix needs a 2-D matrix, got shape {tuple(matrix.shape)}")
        check_num_nodes(max(matrix.shape), f"SparseMatrix of shape {tuple(matrix.shape)}")
        matrix = matrix.detach()
        if matrix.layout == torch.sparse_coo:
            matrix = matrix.coalesce().to_sparse_csr()
        elif matrix.layout != torch.sparse_csr:
            matrix = matrix.to_sparse_csr()
        self._csr = _compact_csr(matrix)
        self.shape = tuple(matrix.shape)
        self._torch: Dict[Tuple[torch.device, torch.dtype], torch.Tensor] = {}
        self._scipy: Dict[np.dtype, sp.csr_matrix] = {}
        self._transpose = _transpose_of

    @property
    def T(self) -> "SparseMatrix":
        """``Mᵀ``, built on first use and kept (``M`` itself when ``M`` is symmetric)."""
        if self._transpose is None:
            self._transpose = self._transposed()
        return self._transpose

    def _transposed(self) -> "SparseMatrix":
        if self._csr.device.type == "cpu":
            import scipy.sparse as sp

            crow, col, values = self._parts()
            flipped = sp.csr_matrix((values, col, crow), shape=self.shape).T.tocsr()
            flipped.sort_indices()
            if (
                self.shape[0] == self.shape[1]
                and np.array_equal(flipped.indptr, crow)
                and np.array_equal(flipped.indices, col)
                and np.array_equal(flipped.data, values)
            ):
                return self
            transposed = csr_from_scipy(flipped)
        else:
            transposed = self._csr.to_sparse_coo().transpose(0, 1).coalesce().to_sparse_csr()
            if self.shape[0] == self.shape[1] and all(
                torch.equal(a, b)
                for a, b in (
                    (transposed.crow_indices(), self._csr.crow_indices()),
                    (transposed.col_indices(), self._csr.col_indices()),
                    (transposed.values(), self._csr.values()),
                )
            ):
                return self  # a symmetric matrix is its own transpose on every device (no second copy)
        return SparseMatrix(transposed, _transpose_of=self)

    def _parts(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row pointers, column indices and values of the stored CSR as NumPy arrays (no copies, CPU)."""
        return (self._csr.crow_indices().numpy(), self._csr.col_indices().numpy(), self._csr.values().numpy())

    @property
    def nnz(self) -> int:
        return int(self._csr._nnz())

    def to_dense(self) -> torch.Tensor:
        return self._csr.to_dense()

    def to_coo(self) -> torch.Tensor:
        """``M`` as a coalesced sparse COO tensor (a new tensor, built on each call)."""
        return self._csr.to_sparse_coo().coalesce()

    def scipy(self, dtype=np.float32) -> sp.csr_matrix:
        """``M`` as a SciPy CSR matrix of ``dtype``, sharing the stored indices (and values, if of that
        dtype)."""
        key = np.dtype(dtype)
        if key not in self._scipy:
            import scipy.sparse as sp

            crow, col, values = (
                self._parts()
                if self._csr.device.type == "cpu"
                else (
                    self._csr.crow_indices().cpu().numpy(),
                    self._csr.col_indices().cpu().numpy(),
                    self._csr.values().cpu().numpy(),
                )
            )
            matrix = sp.csr_matrix(self.shape, dtype=key)  # assembled by hand: no index copies or checks
            matrix.indptr, matrix.indices, matrix.data = crow, col, values.astype(key, copy=False)
            self._scipy[key] = matrix
        return self._scipy[key]

    def torch_csr(self, device, dtype) -> torch.Tensor:
        key = (torch.device(device), dtype)
        if key not in self._torch:
            same = self._csr.device == key[0] and self._csr.dtype == dtype
            self._torch[key] = self._csr if same else self._csr.to(device=key[0], dtype=dtype)
        return self._torch[key]

    def product(self, dense: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``M @ dense`` (2-D dense) outside autograd: for callers that write their own backward.

        ``out``: a spare tensor of the result's shape and dtype (not overlapping ``dense``) that the compiled
        kernel writes into and returns where it runs; elsewhere a new tensor is returned and ``out`` is left
        as it was. Callers use the returned tensor either way."""
        check_floating(dense, "the dense operand of SparseMatrix.product")
        wide = dense.shape[1] >= SCIPY_MIN_COLUMNS and torch.get_num_threads() == 1
        large = (
            self.shape[0] * dense.shape[1] >= SCIPY_MIN_OUTPUT
        )  # torch's kernel would hold a second output
        if dense.device.type == "cpu" and dense.dtype in _SCIPY_DTYPES and (wide or large):
            array = dense.detach().contiguous().numpy()
            if large and dense.shape[1] <= COMPILED_MAX_COLUMNS and spmm_kernel.available():
                crow, col, values = self._parts()
                target = _spare(out, dense)
                return torch.from_numpy(spmm_kernel.csr_product(crow, col, values, array, out=target))
            return torch.from_numpy(np.ascontiguousarray(self.scipy(_SCIPY_DTYPES[dense.dtype]) @ array))
        return self.torch_csr(dense.device, dense.dtype) @ dense.contiguous()

    def masked_product(
        self,
        dense: torch.Tensor,
        mask: Tuple[int, int, int, int, float],
        out: Optional[torch.Tensor] = None,
    ) -> Optional[torch.Tensor]:
        """``D (M @ dense)`` in one pass where :meth:`product` takes the compiled kernel, else ``None`` (the
        caller multiplies and masks). ``mask``: see :func:`~pdenets.operators.spmm_kernel.masked_csr_product`;
        ``out``: as :meth:`product`'s.
        """
        if (
            dense.device.type != "cpu"
            or dense.dtype not in _SCIPY_DTYPES
            or self.shape[0] * dense.shape[1] < SCIPY_MIN_OUTPUT
            or dense.shape[1] > COMPILED_MAX_COLUMNS
            or not spmm_kernel.available()
        ):
            return None
        crow, col, values = self._parts()
        array = dense.detach().contiguous().numpy()
        target = _spare(out, dense)
        return torch.from_numpy(spmm_kernel.masked_csr_product(crow, col, values, array, mask, out=target))

    def matmul(self, dense: torch.Tensor) -> torch.Tensor:
        """``M @ dense`` (2-D dense, float32 or float64), differentiable with respect to ``dense``."""
        check_floating(dense, "the dense operand of SparseMatrix.matmul")
        if dense.dim() != 2 or dense.shape[0] != self.shape[1]:
            raise ValueError(f"cannot multiply a {self.shape} sparse matrix by a {tuple(dense.shape)} tensor")
        return _SparseMatmul.apply(dense, self)

    def __repr__(self) -> str:
        return f"SparseMatrix(shape={self.shape}, nnz={self.nnz})"


def _spare(out: Optional[torch.Tensor], dense: torch.Tensor) -> Optional[np.ndarray]:
    """``out``'s memory for the compiled kernel to write into (checked there), or ``None``."""
    if out is None:
        return None
    if out.device.type != "cpu" or out.dtype != dense.dtype:
        raise ValueError("out must be a CPU tensor of the dense operand's dtype")
    return out.detach().numpy()


class _SparseMatmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, dense: torch.Tensor, matrix: SparseMatrix) -> torch.Tensor:
        ctx.matrix = matrix
        return matrix.product(dense)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[torch.Tensor, None]:
        return ctx.matrix.T.matmul(grad_output), None


def csr_from_scipy(matrix: "sp.csr_matrix") -> torch.Tensor:
    """A SciPy CSR matrix as a torch sparse CSR tensor sharing its arrays (no copies, no checks).

    Examples:
        >>> import scipy.sparse as sp
        >>> csr_from_scipy(sp.csr_matrix(np.eye(2, dtype=np.float32))).to_dense()
        tensor([[1., 0.],
                [0., 1.]])
    """
    indices = matrix.indices
    return torch.sparse_csr_tensor(
        torch.from_numpy(np.asarray(matrix.indptr, dtype=indices.dtype)),
        torch.from_numpy(indices),
        torch.from_numpy(matrix.data),
        matrix.shape,
        check_invariants=False,
    )


def _compact_csr(matrix: torch.Tensor) -> torch.Tensor:
    """A CSR tensor with 32-bit row pointers and column indices where every index fits in them.

    Its values are ``matrix``'s (shared, not copied) but not a view of ``matrix``: ``values()`` is a view
    whose base is the whole sparse tensor, and kept as such it would keep the 64-bit indices alive too."""
    if matrix.crow_indices().dtype == torch.int32 or max(matrix._nnz(), *matrix.shape) >= 2**31:
        return matrix
    return torch.sparse_csr_tensor(
        matrix.crow_indices().to(torch.int32),
        matrix.col_indices().to(torch.int32),
        matrix.values().detach(),
        matrix.shape,
        check_invariants=False,
    )
