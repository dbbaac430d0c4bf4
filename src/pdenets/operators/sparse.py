"""Constant sparse matrices multiplied by dense tensors, with autograd for the dense side.

``SparseMatrix(M).matmul(X)`` computes ``M X`` and its backward ``Mᵀ ∂L/∂(MX)`` with a
precomputed ``Mᵀ`` (torch's generic sparse backward transposes ``M`` on every call, which
costs more than the product itself). The product runs in torch's CSR kernel, except on a
single CPU thread with a wide operand (at least :data:`SCIPY_MIN_COLUMNS` columns, e.g.
bag-of-words features), where SciPy's kernel, which skips torch's internal copies, trains
Diff-ResNet on Cora ~10 % faster; with two or more threads or narrow operands torch's
kernel is as fast or up to 3× faster (``benchmarks/graph.py`` and the numbers in
``benchmarks/README.md``).

Example:
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

from typing import TYPE_CHECKING, Dict, Tuple

import numpy as np
import torch

if TYPE_CHECKING:  # scipy is imported by the products that use it
    import scipy.sparse as sp

__all__ = ["SparseMatrix", "SCIPY_MIN_COLUMNS"]

#: Operand width from which a single-threaded CPU product goes through SciPy.
SCIPY_MIN_COLUMNS = 256
_SCIPY_DTYPES = {torch.float32: np.float32, torch.float64: np.float64}


class SparseMatrix:
    """A constant ``(n, m)`` sparse matrix (from a torch COO/CSR tensor) ready for products.

    ``Y = M X``,  ``∂ℓ/∂X = Mᵀ ∂ℓ/∂Y``,

    where ``M`` is the stored matrix, ``X`` a dense ``(m, C)`` operand and ``ℓ`` a loss:
    :meth:`matmul` computes ``M X`` and its backward pass multiplies by a transpose ``Mᵀ``
    (:attr:`T`) built once and kept, instead of transposing ``M`` on every call.

    Args:
        matrix: the ``(n, m)`` matrix ``M`` as a torch sparse COO or CSR tensor (stored coalesced
            and detached: ``M`` is a constant).
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
    """

    def __init__(self, matrix: torch.Tensor, *, _transpose_of: "SparseMatrix" = None):
        if matrix.layout != torch.sparse_coo:
            matrix = matrix.to_sparse_coo()
        self._coo = matrix.coalesce().detach()
        self.shape = tuple(self._coo.shape)
        self._torch: Dict[Tuple[torch.device, torch.dtype], torch.Tensor] = {}
        self._scipy: Dict[np.dtype, sp.csr_matrix] = {}
        self._transpose = _transpose_of

    @property
    def T(self) -> "SparseMatrix":
        if self._transpose is None:
            self._transpose = SparseMatrix(self._coo.transpose(0, 1), _transpose_of=self)
        return self._transpose

    @property
    def nnz(self) -> int:
        return int(self._coo._nnz())

    def to_dense(self) -> torch.Tensor:
        return self._coo.to_dense()

    def scipy(self, dtype=np.float32) -> sp.csr_matrix:
        key = np.dtype(dtype)
        if key not in self._scipy:
            import scipy.sparse as sp

            row, col = self._coo.indices().cpu().numpy()
            values = self._coo.values().detach().cpu().numpy().astype(key)
            self._scipy[key] = sp.csr_matrix((values, (row, col)), shape=self.shape)
        return self._scipy[key]

    def torch_csr(self, device, dtype) -> torch.Tensor:
        key = (torch.device(device), dtype)
        if key not in self._torch:
            self._torch[key] = self._coo.to(device=key[0], dtype=dtype).to_sparse_csr()
        return self._torch[key]

    def product(self, dense: torch.Tensor) -> torch.Tensor:
        """``M @ dense`` (2-D dense) outside autograd: for callers that write their own backward."""
        if (dense.device.type == "cpu" and dense.dtype in _SCIPY_DTYPES and dense.shape[1] >= SCIPY_MIN_COLUMNS
                and torch.get_num_threads() == 1):
            array = dense.detach().contiguous().numpy()
            return torch.from_numpy(np.ascontiguousarray(self.scipy(_SCIPY_DTYPES[dense.dtype]) @ array))
        return self.torch_csr(dense.device, dense.dtype) @ dense.contiguous()

    def matmul(self, dense: torch.Tensor) -> torch.Tensor:
        """``M @ dense`` (2-D dense), differentiable with respect to ``dense``."""
        if dense.dim() != 2 or dense.shape[0] != self.shape[1]:
            raise ValueError(f"cannot multiply a {self.shape} sparse matrix by a {tuple(dense.shape)} tensor")
        return _SparseMatmul.apply(dense, self)

    def __repr__(self) -> str:
        return f"SparseMatrix(shape={self.shape}, nnz={self.nnz})"


class _SparseMatmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, dense, matrix):
        ctx.matrix = matrix
        return matrix.product(dense)

    @staticmethod
    def backward(ctx, grad_output):
        return ctx.matrix.T.matmul(grad_output), None
