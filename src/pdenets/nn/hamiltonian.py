r"""The Hamiltonian (Verlet) block: a reversible residual block for images.

Chang et al., "Reversible architectures for arbitrarily deep residual neural networks" (2018),
as used by Bohn, Griebel & Kannan (2021, eq. 2.6). The channels are split into halves ``Y``
(first) and ``Z`` (second), and one leapfrog (Verlet) step of a Hamiltonian system updates them:

$$
    Y_{j+1} = Y_j + h\,K_1^\top \sigma(K_1 Z_j + b_1), \qquad
    Z_{j+1} = Z_j - h\,K_2^\top \sigma(K_2 Y_{j+1} + b_2),
$$

with ``K_1, K_2`` 3×3 convolutions (``C/2 → C/2``, zero padding), ``K^T`` the transposed
convolution with the same weights (the exact adjoint), ``σ = ReLU`` and ``h`` the step size.
Optionally batch normalization acts on ``K Z + b`` before ``σ`` (the reference code does).

The step is exactly invertible: undoing the two half-steps in reverse order,

$$
    Z_j = Z_{j+1} + h\,K_2^\top \sigma(K_2 Y_{j+1} + b_2), \qquad
    Y_j = Y_{j+1} - h\,K_1^\top \sigma(K_1 Z_j + b_1)
$$

(:meth:`HamiltonianBlock.inverse`; with batch normalization in evaluation mode). Running
the forward step with ``−h`` is *not* the inverse: it evaluates ``K_1`` at ``Z_{j+1}``, not ``Z_j``.

Args:
    channels: ``C`` (even).
    step_size: ``h`` (default 0.06, the reference code's).
    batch_norm: batch normalization after each ``K`` (default ``True``).

Shapes: ``(B, C, H, W) → (B, C, H, W)``.

Examples:
    >>> import torch
    >>> block = HamiltonianBlock(8).eval()
    >>> x = torch.randn(2, 8, 6, 6, dtype=torch.float64)
    >>> block = block.double()
    >>> torch.allclose(block.inverse(block(x)), x, atol=1e-12)
    True
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_floating, check_positive, check_positive_int

__all__ = ["HamiltonianBlock"]


class HamiltonianBlock(nn.Module):
    """One Verlet (leapfrog) step of a Hamiltonian system on the two channel halves: a reversible residual
    block.

    ``Y ← Y + h K_1ᵀ σ(K_1 Z + b_1)``,  ``Z ← Z − h K_2ᵀ σ(K_2 Y + b_2)``  (``Y`` already updated),

    where ``Y`` and ``Z`` are the first and second halves of the ``C`` channels, ``K_1, K_2`` 3×3
    convolutions ``C/2 → C/2`` with biases ``b_1, b_2``, ``Kᵀ`` the transposed convolution with the
    same weights (the exact adjoint), ``σ = ReLU`` (optionally after batch normalization of
    ``K Z + b``) and ``h`` the step size. From "Reversible architectures for arbitrarily deep residual
    neural networks" (Chang et al.), as used in "Deep Neural Networks and PIDE discretizations"
    (Bohn, Griebel & Kannan, eq. 2.6). The step is exactly invertible (:meth:`inverse`).

    Args:
        channels: the number of channels ``C`` (even, at least 2).
        step_size: the step size ``h > 0`` (default: ``0.06``, the reference code's).
        batch_norm: batch normalization after each ``K`` (default: ``True``).

    Raises:
        ValueError: ``channels`` odd or smaller than 2, or ``step_size ≤ 0``.

    Shapes:
        - input: ``(B, C, H, W)``
        - output: ``(B, C, H, W)``

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> block = HamiltonianBlock(4, step_size=0.1).double().eval()
        >>> x = torch.randn(2, 4, 5, 5, dtype=torch.float64)
        >>> tuple(block(x).shape)
        (2, 4, 5, 5)
        >>> torch.allclose(block.inverse(block(x)), x, atol=1e-12)
        True
    """

    def __init__(self, channels: int, *, step_size: float = 0.06, batch_norm: bool = True):
        super().__init__()
        channels = check_positive_int(channels, "channels", minimum=2)
        if channels % 2:
            raise ValueError(f"channels must be even (split into Y and Z halves), got {channels}")
        self.channels = channels
        self.step_size = check_positive(step_size, "step_size")
        half = channels // 2
        self.conv1 = nn.Conv2d(half, half, 3, padding=1)
        self.conv2 = nn.Conv2d(half, half, 3, padding=1)
        self.norm1 = nn.BatchNorm2d(half) if batch_norm else nn.Identity()
        self.norm2 = nn.BatchNorm2d(half) if batch_norm else nn.Identity()
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for conv in (self.conv1, self.conv2):
            nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")
            assert conv.bias is not None  # built with bias=True
            nn.init.zeros_(conv.bias)
        for norm in (self.norm1, self.norm2):
            if isinstance(norm, nn.BatchNorm2d):
                norm.reset_parameters()
                norm.reset_running_stats()

    def _velocity(self, conv: nn.Conv2d, norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
        """``Kᵀ σ(N(K x + b))`` with ``Kᵀ`` the adjoint (transposed) convolution of ``K``."""
        return F.conv_transpose2d(F.relu(norm(conv(x))), conv.weight, padding=1)

    def _split(self, x: torch.Tensor):
        check_floating(x, "input to HamiltonianBlock", autocast_ok=True)  # convolutions only
        if x.dim() != 4 or x.shape[1] != self.channels:
            raise ValueError(f"HamiltonianBlock expects (B, {self.channels}, H, W), got {tuple(x.shape)}")
        return x.chunk(2, dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, z = self._split(x)
        y = y + self.step_size * self._velocity(self.conv1, self.norm1, z)
        z = z - self.step_size * self._velocity(self.conv2, self.norm2, y)
        return torch.cat([y, z], dim=1)

    def inverse(self, out: torch.Tensor) -> torch.Tensor:
        """The input that :meth:`forward` maps to ``out`` (exact; batch norm in evaluation mode)."""
        y, z = self._split(out)
        z = z + self.step_size * self._velocity(self.conv2, self.norm2, y)
        y = y - self.step_size * self._velocity(self.conv1, self.norm1, z)
        return torch.cat([y, z], dim=1)

    def extra_repr(self) -> str:
        return f"channels={self.channels}, step_size={self.step_size:g}"
