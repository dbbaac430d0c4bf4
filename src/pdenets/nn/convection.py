r"""The convection step of a convection–diffusion network: a residual block."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_choice, check_floating, check_positive_int
from ..operators.sparse import SparseMatrix

__all__ = ["ConvectionBlock", "CONVECTION_VARIANTS"]

CONVECTION_VARIANTS = ("mlp", "graph")


class ConvectionBlock(nn.Module):
    r"""Residual block = one explicit Euler step of the convection ODE ``dx/dt = f(x, θ)``.

    From "Diffusion Mechanism in Residual Neural Network: Theory and Applications", eq. (5)–(6)
    and Appendix E:

    $$
        \text{mlp:}\quad x \leftarrow x + \mathrm{FC}_2(\mathrm{ReLU}(\mathrm{FC}_1 x)),
        \qquad
        \text{graph:}\quad x \leftarrow x + \mathrm{ReLU}(\mathrm{FC}_1 x).
    $$

    ``x ← x + FC_2(ReLU(FC_1 x))`` (mlp),  ``x ← x + ReLU(FC_1 x)`` (graph),

    where ``x ∈ R^d`` is one sample's features, ``FC_1: R^d → R^w`` and ``FC_2: R^w → R^d`` are
    affine maps and ``w`` is the hidden width (default ``d``). The graph variant drops ``FC_2``
    (it needs ``w = d``) to curb over-fitting on citation graphs (Appendix E.2.3).

    Args:
        features: ``d``, size of the input and output.
        hidden_features: the hidden width ``w``; must equal ``d`` for ``variant="graph"``
            (default: ``None``, i.e. ``d``).
        variant: ``"mlp"`` or ``"graph"`` (default: ``"mlp"``).
        bias: affine maps with bias (default: ``True``).

    Raises:
        ValueError: an unknown ``variant``, a non-positive size, or ``hidden_features != features``
            with ``variant="graph"``.

    Shapes:
        - input: ``(N, d)``, dense or a torch sparse (COO/CSR) tensor. Sparse input (e.g.
          bag-of-words features) makes ``FC_1 x`` a sparse product — 1–2 % density turns the
          ``d × d`` layer's cost into ``nnz(x) · w``.
        - output: ``(N, d)`` dense

    Examples:
        >>> import torch
        >>> block = ConvectionBlock(2)          # 2·2+2 + 2·2+2 = 12 parameters
        >>> sum(p.numel() for p in block.parameters())
        12
        >>> block(torch.randn(5, 2)).shape
        torch.Size([5, 2])
    """

    def __init__(
        self, features: int, *, hidden_features: Optional[int] = None, variant: str = "mlp", bias: bool = True
    ):
        super().__init__()
        check_choice(variant, "variant", CONVECTION_VARIANTS)
        features = check_positive_int(features, "features")
        hidden = (
            features if hidden_features is None else check_positive_int(hidden_features, "hidden_features")
        )
        if variant == "graph" and hidden != features:
            raise ValueError("the graph variant x + ReLU(FC1 x) needs hidden_features == features")
        self.features = features
        self.hidden_features = hidden
        self.variant = variant
        self.fc1 = nn.Linear(features, hidden, bias=bias)
        self.fc2 = nn.Linear(hidden, features, bias=bias) if variant == "mlp" else None
        self._sparse_cache: Optional[tuple] = None  # (input, version, SparseMatrix)

    def reset_parameters(self) -> None:
        self.fc1.reset_parameters()
        if self.fc2 is not None:
            self.fc2.reset_parameters()

    def _sparse_matrix(self, x: torch.Tensor) -> SparseMatrix:
        """The constant sparse input as a :class:`SparseMatrix`, built once while the same tensor comes
        back."""
        cache = self._sparse_cache
        if cache is not None and cache[0] is x and cache[1] == x._version:
            return cache[2]
        matrix = SparseMatrix(x)
        self._sparse_cache = (x, x._version, matrix)
        return matrix

    def velocity(self, x: torch.Tensor) -> torch.Tensor:
        """``f(x, θ)``: the update added to ``x`` (dense ``x``)."""
        hidden = F.relu(self.fc1(x))
        return self.fc2(hidden) if self.fc2 is not None else hidden

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_floating(x, "input to ConvectionBlock")
        if x.shape[-1] != self.features:
            raise ValueError(f"ConvectionBlock expects {self.features} features, got shape {tuple(x.shape)}")
        if x.layout == torch.strided:
            return x + self.velocity(x)
        matrix = self._sparse_matrix(x)
        if self.fc2 is None and not x.requires_grad:  # x + ReLU(FC1 x), keeping a byte mask instead of FC1 x
            return _SparseInputConvection.apply(self.fc1.weight, self.fc1.bias, matrix, x)
        pre = matrix.matmul(self.fc1.weight.t())
        hidden = F.relu(pre + self.fc1.bias if self.fc1.bias is not None else pre)
        return (self.fc2(hidden) if self.fc2 is not None else hidden) + x.to_dense()

    def extra_repr(self) -> str:
        return f"features={self.features}, hidden_features={self.hidden_features}, variant={self.variant!r}"


#: rows of the bit mask unpacked at a time (64 columns: 4 MiB of booleans)
UNPACK_CHUNK_ROWS = 1 << 16


def _where_active(gradient: torch.Tensor, mask: torch.Tensor, packed_columns: Optional[int]) -> torch.Tensor:
    """``G ⊙ M`` in one new array: ``G`` where the ReLU was active, 0 elsewhere. ``mask``: booleans, or
    their bits packed along rows (``packed_columns`` booleans a row), unpacked a chunk of rows at a time
    (a whole unpacked mask is 1.2 GiB at 20 M nodes × 64 features, and ``G * M`` converts it to floats)."""
    zero = torch.zeros((), dtype=gradient.dtype, device=gradient.device)
    if packed_columns is None:
        return torch.where(mask, gradient, zero)
    active = torch.empty_like(gradient, memory_format=torch.contiguous_format)
    packed = mask.numpy()
    for start in range(0, gradient.shape[0], UNPACK_CHUNK_ROWS):
        stop = start + UNPACK_CHUNK_ROWS
        bits = np.unpackbits(packed[start:stop], axis=1, count=packed_columns).view(np.bool_)
        torch.where(torch.from_numpy(bits), gradient[start:stop], zero, out=active[start:stop])
    return active


class _SparseInputConvection(torch.autograd.Function):
    """``x + ReLU(x W₁ᵀ + b₁)`` for a constant sparse ``x`` (the graph variant on bag-of-words inputs).

    Autograd through the plain expression keeps ``ReLU(x W₁ᵀ + b₁)`` (4 bytes per entry) and a dense copy
    of ``x`` for the sum; the backward needs only where the ReLU was active, so this keeps a mask (one bit
    an entry on the CPU, a byte elsewhere) and computes the output in one buffer. Gradients:
    ``∂ℓ/∂W₁ = (G ⊙ M)ᵀ x``, ``∂ℓ/∂b₁ = Σ_rows G ⊙ M`` with ``G = ∂ℓ/∂out`` and ``M`` the mask (``x`` is
    data: no gradient).
    """

    @staticmethod
    def forward(
        ctx: Any, weight: torch.Tensor, bias: Optional[torch.Tensor], matrix: SparseMatrix, x: torch.Tensor
    ) -> torch.Tensor:
        out = matrix.product(weight.t())
        if bias is not None:
            out.add_(bias)
        mask = out > 0
        out.relu_().add_(x)
        ctx.matrix, ctx.has_bias, ctx.packed_columns = matrix, bias is not None, None
        if mask.device.type == "cpu":  # one bit an entry: 1.2 GiB less at 20 M nodes × 64 features
            ctx.packed_columns = mask.shape[1]
            mask = torch.from_numpy(np.packbits(mask.numpy(), axis=1))
        ctx.save_for_backward(mask)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: Any, grad_output: torch.Tensor
    ) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor], None, None]:
        (mask,) = ctx.saved_tensors
        grad_pre = _where_active(grad_output, mask, ctx.packed_columns)
        grad_weight = ctx.matrix.T.product(grad_pre).t() if ctx.needs_input_grad[0] else None
        grad_bias = grad_pre.sum(0) if ctx.has_bias and ctx.needs_input_grad[1] else None
        return grad_weight, grad_bias, None, None
