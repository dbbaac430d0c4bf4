r"""The PIDE nonlocal block: a nonlocal operator on pixel strips, applied in stages with skip connections.

Bohn, Griebel & Kannan, "Deep Neural Networks and PIDE discretizations" (2021), eqs. 4.1, 4.4–4.6.
For a feature map ``X`` with strips ``X_i ∈ R^C`` (``i`` over the ``H·W`` pixels), 1×1-conv
embeddings ``θ`` and ``φ`` (``C → C/2``), the kernel ``ω_ij = ω(θ(X_i), φ(X̂_j))`` is computed
once from ``X`` and the ``k`` stages are

$$
    B_1 = X + h\,\mathcal{K}_1[\,T(X)\,], \qquad B_m = X + h\,\mathcal{K}_m[\,T(B_{m-1})\,],
$$

where ``T`` is the operator's term (:mod:`pdenets.operators.nonlocal_ops`: nonlocal diffusion
with the embedded dot product or Gaussian, fractional Laplacian ``(−Δ)^s``, inverse
fractional Laplacian ``(−Δ)^{−s}``, log kernel) and ``𝒦_m`` a 1×1 convolution → batch
normalization → ReLU. Keys and values are subsampled by ``p × p`` max-pooling (``X̂``), the
queries are not. Shape in == shape out: the block drops into any CNN.

Args:
    channels: ``C``.
    operator: ``"diffusion-dot"`` (default), ``"diffusion-gaussian"``, ``"fractional"``,
        ``"inverse-fractional"`` or ``"log"``.
    stages: ``k`` (default 2).
    step_size: ``h`` (default 0.06).
    lam: ``λ`` (default 0.1).
    s: fractional order (default 0.5); n: domain dimension (default 2).
    subsample: ``p`` of the max-pooling of keys and values (default 2; 1: none).
    normalizer: ``"count"`` (``𝒩`` = number of key strips, default) or ``"row-sum"``.
    path: ``"fast"`` (default; no ``N × N`` kernel in memory) or ``"naive"`` (the reference).
    embed_channels: width of ``θ, φ`` (default ``C // 2``).
    batch_norm: batch normalization in ``𝒦_m`` (default ``True``).

Shapes: ``(B, C, H, W) → (B, C, H, W)``.

Examples:
    >>> import torch
    >>> block = NonlocalBlock(16, operator="fractional", subsample=2)
    >>> block(torch.randn(2, 16, 8, 8)).shape
    torch.Size([2, 16, 8, 8])
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_choice, check_floating, check_positive, check_positive_int, under_autocast
from ..operators.nonlocal_ops import NONLOCAL_OPERATORS, NORMALIZERS, nonlocal_apply

__all__ = ["NonlocalBlock"]


class NonlocalBlock(nn.Module):
    """A nonlocal PIDE operator in ``stages`` skip-connected stages, for ``(B, C, H, W)`` feature maps.

    ``B_1 = X + h 𝒦_1[T(X)]``,  ``B_m = X + h 𝒦_m[T(B_{m−1})]``,  ``m = 2, …, k``,

    where ``X`` is the input, whose strips ``X_i ∈ R^C`` run over the ``H·W`` pixels; ``T`` is the
    nonlocal term of the chosen operator, e.g. ``T(U)_i = (1/𝒩) Σ_j ω_ij (Û_j − U_i)`` for nonlocal
    diffusion, with the kernel ``ω_ij = ω(θ(X_i), φ(X̂_j))`` computed once from ``X`` (``θ, φ``
    1×1-conv embeddings, ``·̂`` the ``p × p`` max-pooling of keys and values, ``𝒩`` the
    normalizer); ``𝒦_m`` is a 1×1 convolution →
    batch normalization → ReLU, ``h`` the step size and ``k`` the number of stages. From "Deep
    Neural Networks and PIDE discretizations" (Bohn, Griebel & Kannan, eqs. 4.1, 4.4–4.6); the
    operators are in :mod:`pdenets.operators.nonlocal_ops`. Shape in equals shape out: the block
    drops into any CNN.

    Args:
        channels: the number of channels ``C``.
        operator: ``"diffusion-dot"`` (nonlocal diffusion, embedded dot product),
            ``"diffusion-gaussian"`` (nonlocal diffusion, Gaussian kernel), ``"fractional"``
            (fractional Laplacian ``(−Δ)^s``), ``"inverse-fractional"`` (``(−Δ)^{−s}``) or ``"log"``
            (log kernel) (default: ``"diffusion-dot"``).
        stages: the number of stages ``k`` (default: ``2``).
        step_size: the step size ``h > 0`` (default: ``0.06``).
        lam: the kernel scale ``λ > 0`` (default: ``0.1``).
        s: the fractional order ``s``; ``0 < s < 1`` for ``"fractional"``, ``0 < s < n/2`` for
            ``"inverse-fractional"`` (default: ``0.5``).
        n: the domain dimension ``n`` of the fractional kernels (default: ``2``).
        subsample: ``p``, the max-pooling size of keys and values; ``1`` for none (default: ``2``).
        normalizer: ``"count"`` (``𝒩`` = number of key strips) or ``"row-sum"`` (default: ``"count"``).
        path: ``"fast"`` (no ``N × N`` kernel in memory) or ``"naive"`` (the reference)
            (default: ``"fast"``).
        embed_channels: width of the embeddings ``θ, φ`` (default: ``None``, i.e. ``C // 2``).
        batch_norm: batch normalization in ``𝒦_m`` (default: ``True``).

    Raises:
        ValueError: an unknown ``operator``, ``normalizer`` or ``path``, a non-positive parameter, or
            ``s`` outside the range of the chosen fractional operator.

    Shapes:
        - input: ``(B, C, H, W)``
        - output: ``(B, C, H, W)``

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> block = NonlocalBlock(8, operator="diffusion-gaussian", stages=1)
        >>> tuple(block(torch.randn(2, 8, 6, 6)).shape)
        (2, 8, 6, 6)
    """

    def __init__(
        self,
        channels: int,
        *,
        operator: str = "diffusion-dot",
        stages: int = 2,
        step_size: float = 0.06,
        lam: float = 0.1,
        s: float = 0.5,
        n: int = 2,
        subsample: int = 2,
        normalizer: str = "count",
        path: str = "fast",
        embed_channels: Optional[int] = None,
        batch_norm: bool = True,
    ):
        super().__init__()
        self.channels = check_positive_int(channels, "channels")
        self.operator = check_choice(operator, "operator", NONLOCAL_OPERATORS)
        self.stages = check_positive_int(stages, "stages")
        self.step_size = check_positive(step_size, "step_size")
        self.lam = check_positive(lam, "lam")
        self.s = check_positive(s, "s")
        self.n = check_positive_int(n, "n")
        self.subsample = check_positive_int(subsample, "subsample")
        self.normalizer = check_choice(normalizer, "normalizer", NORMALIZERS)
        self.path = check_choice(path, "path", ("fast", "naive"))
        if operator == "fractional" and not s < 1:
            raise ValueError(f"the fractional Laplacian needs 0 < s < 1, got s={s}")
        if operator == "inverse-fractional" and not s < n / 2:
            raise ValueError(f"the inverse fractional Laplacian needs 0 < s < n/2 = {n / 2}, got s={s}")
        embed = embed_channels or max(1, channels // 2)
        self.theta = nn.Conv2d(channels, embed, 1)
        self.phi = nn.Conv2d(channels, embed, 1)
        self.outer = nn.ModuleList(
            nn.Sequential(
                nn.Conv2d(channels, channels, 1),
                nn.BatchNorm2d(channels) if batch_norm else nn.Identity(),
                nn.ReLU(),
            )
            for _ in range(self.stages)
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                assert module.bias is not None  # every convolution of the block has a bias
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.BatchNorm2d):
                module.reset_parameters()
                module.reset_running_stats()

    def _pool(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(x, self.subsample) if self.subsample > 1 else x

    @staticmethod
    def _strips(x: torch.Tensor) -> torch.Tensor:
        return x.flatten(2).transpose(1, 2)  # (B, H·W, C)

    def term(self, theta: torch.Tensor, phi: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``T(x)`` of one stage, shape ``(B, C, H, W)``."""
        batch, channels, height, width = x.shape
        out = nonlocal_apply(
            theta,
            phi,
            self._strips(self._pool(x)),
            self._strips(x),
            self.operator,
            lam=self.lam,
            s=self.s,
            n=self.n,
            normalizer=self.normalizer,
            path=self.path,
        )
        return out.transpose(1, 2).reshape(batch, channels, height, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if under_autocast(x):  # mixed precision around it: the nonlocal operators compute in float32
            with torch.autocast(x.device.type, enabled=False):
                return self.forward(x.float())
        check_floating(x, "input to NonlocalBlock")
        if x.dim() != 4 or x.shape[1] != self.channels:
            raise ValueError(f"NonlocalBlock expects (B, {self.channels}, H, W), got {tuple(x.shape)}")
        if x.shape[-1] < self.subsample or x.shape[-2] < self.subsample:
            raise ValueError(
                f"a {x.shape[-2]}x{x.shape[-1]} map is smaller than the subsampling {self.subsample}"
            )
        theta = self._strips(self.theta(x))
        phi = self._strips(self._pool(self.phi(x)))
        out = x
        for outer in self.outer:
            out = x + self.step_size * outer(self.term(theta, phi, out))
        return out

    def extra_repr(self) -> str:
        return (
            f"channels={self.channels}, operator={self.operator!r}, stages={self.stages}, "
            f"step_size={self.step_size:g}, lam={self.lam:g}, s={self.s:g}, subsample={self.subsample}, "
            f"path={self.path!r}"
        )
