r"""The fractional Laplacian on a 2-D grid: the spatial operator behind the PIDE blocks, with two
discretizations.

For $0 < s < 1$ and $n = 2$ (Bohn, Griebel & Kannan, eq. 3.5),

$$
    (-\Delta)^s v(x) = c_{2,s}\, \mathrm{P.V.}\!\int_{\mathbb{R}^2} \frac{v(x) - v(y)}{|x - y|^{2+2s}}\,dy,
    \qquad \widehat{(-\Delta)^s v}(\xi) = |\xi|^{2s}\, \hat v(\xi)
$$

(angular frequency; the paper writes $(2\pi|\xi|)^{2s}$ for $e^{2\pi i x\cdot\xi}$).

* :func:`fractional_laplacian_grid` — the singular integral as a lattice sum on a grid of
  spacing ``h`` (``v = 0`` outside the grid): every other grid point stands for its cell, and
  the cell around ``x`` itself, where the integrand is singular, is integrated from the
  Taylor expansion ``v(x) − v(y) ≈ −½ (y−x)ᵀ∇²v (y−x)``, which contributes
  $-c_{2,s}\,\Delta_h v\,\tfrac{\pi}{2}\tfrac{\rho^{2-2s}}{2-2s}$ (``Δ_h`` the 5-point
  Laplacian, ``ρ = h/√π`` the radius of a disc of the cell's area). As ``s → 1``,
  $c_{2,s} \sim 4(1-s)/π$ and this term tends to ``−Δ_h v`` while the lattice sum
  vanishes: the local Laplacian is the limit. The sum over all lattice vectors of
  $|k|^{-2-2s}$ is $4\zeta(1+s)\beta(1+s)$ (Riemann ζ, Dirichlet β).
* :func:`spectral_fractional_laplacian` — the Fourier multiplier ``|ξ|^{2s}`` on the
  periodic grid (FFT), the reference on smooth, rapidly decaying functions.
* :func:`gaussian_fractional_laplacian` — the exact value for ``v = exp(−|x|²/2)``:
  $2^s\,\Gamma(1+s)\,{}_1F_1(1+s; 1; -|x|^2/2)$.
"""

from __future__ import annotations

import math

import torch
from scipy import special

from .nonlocal_ops import fractional_constant

__all__ = [
    "fractional_laplacian_grid",
    "spectral_fractional_laplacian",
    "gaussian_fractional_laplacian",
    "five_point_laplacian",
    "lattice_zeta",
]


def lattice_zeta(exponent: float) -> float:
    """$\\sum_{k \\in \\mathbb{Z}^2 \\setminus 0} |k|^{-2a} = 4 ζ(a) β(a)$ for ``a = exponent > 1``."""
    beta = 4.0 ** (-exponent) * (special.zeta(exponent, 0.25) - special.zeta(exponent, 0.75))
    return 4.0 * float(special.zeta(exponent)) * float(beta)


def five_point_laplacian(values: torch.Tensor, spacing: float = 1.0) -> torch.Tensor:
    """``Δ_h v`` with ``v = 0`` outside the grid, shape ``(..., H, W)``."""
    padded = torch.nn.functional.pad(values, (1, 1, 1, 1))
    return (
        padded[..., :-2, 1:-1]
        + padded[..., 2:, 1:-1]
        + padded[..., 1:-1, :-2]
        + padded[..., 1:-1, 2:]
        - 4 * values
    ) / spacing**2


def fractional_laplacian_grid(values: torch.Tensor, s: float, spacing: float = 1.0) -> torch.Tensor:
    """The lattice-sum discretization of the module docstring, ``(..., H, W) → (..., H, W)`` (FFT
    convolution)."""
    constant = fractional_constant(2, s)
    height, width = values.shape[-2:]
    rows = torch.arange(-(height - 1), height, dtype=values.dtype, device=values.device)
    cols = torch.arange(-(width - 1), width, dtype=values.dtype, device=values.device)
    squared = rows[:, None] ** 2 + cols[None, :] ** 2
    kernel = torch.where(squared > 0, squared.clamp_min(1).pow(-(1 + s)), torch.zeros_like(squared))
    kernel = kernel * spacing ** (-2 * s)  # h² / (h|k|)^{2+2s}
    # Σ_j v_j K(x_i − x_j) over the grid, as a linear (zero-padded) convolution
    shape = (2 * height - 1 + height - 1, 2 * width - 1 + width - 1)
    convolved = torch.fft.irfft2(torch.fft.rfft2(values, s=shape) * torch.fft.rfft2(kernel, s=shape), s=shape)
    neighbours = convolved[..., height - 1 : 2 * height - 1, width - 1 : 2 * width - 1]
    total = lattice_zeta(1 + s) * spacing ** (-2 * s)  # Σ over every lattice vector (v = 0 beyond the grid)
    radius = spacing / math.sqrt(math.pi)
    own_cell = -five_point_laplacian(values, spacing) * (math.pi / 2) * radius ** (2 - 2 * s) / (2 - 2 * s)
    return constant * (values * total - neighbours + own_cell)


def spectral_fractional_laplacian(values: torch.Tensor, s: float, spacing: float = 1.0) -> torch.Tensor:
    """``F⁻¹(|ξ|^{2s} F v)`` on the periodic grid (angular frequencies ``2πk/(N h)``)."""
    height, width = values.shape[-2:]
    xi_rows = 2 * math.pi * torch.fft.fftfreq(height, d=spacing, dtype=values.dtype, device=values.device)
    xi_cols = 2 * math.pi * torch.fft.rfftfreq(width, d=spacing, dtype=values.dtype, device=values.device)
    symbol = (xi_rows[:, None] ** 2 + xi_cols[None, :] ** 2).pow(s)
    return torch.fft.irfft2(torch.fft.rfft2(values) * symbol, s=(height, width))


def gaussian_fractional_laplacian(points: torch.Tensor, s: float) -> torch.Tensor:
    """Exact ``(−Δ)^s exp(−|x|²/2)`` in 2-D at ``points (..., 2)``: ``2^s Γ(1+s) ₁F₁(1+s; 1; −|x|²/2)``.

    A reference in float64: SciPy evaluates ``₁F₁`` on the host (an explicit transfer), the result goes back
    to the points' device.
    """
    radius = (points.double() ** 2).sum(-1).cpu().numpy()
    exact = torch.from_numpy(2.0**s * math.gamma(1 + s) * special.hyp1f1(1 + s, 1.0, -radius / 2))
    return exact.to(points.device)
