r"""Gaussian noise injection / randomized smoothing is diffusion.

From "Convection-Diffusion Equation: A Theoretically Certified Framework for Neural Networks" (COIN).

For a function ``f: R^d → R^c`` (a classifier's scores) the smoothed function

$$
    g_\sigma(x) = \mathbb{E}_{\varepsilon \sim N(0, I)}\, f(x + \sigma \varepsilon)
               = (G_{\sigma^2} * f)(x), \qquad
    G_t(z) = (2\pi t)^{-d/2} e^{-\|z\|^2 / (2t)},
$$

is ``f`` convolved with the Gaussian of variance ``t = σ²``, which is the heat kernel of

$$
    \partial_t u = \tfrac12 \Delta u, \qquad u(\cdot, 0) = f .
$$

So ``g_σ = u(·, σ²)``: training or predicting with Gaussian noise of scale ``σ`` runs the
diffusion equation for a time ``σ²`` on the network's output. Derivation: ``∂_t G_t = ½ ΔG_t``
(differentiate the Gaussian), and convolution commutes with ``Δ``. Example with a closed form:
``f(x) = sin(ωᵀx)`` is an eigenfunction of ``Δ`` (``Δf = −‖ω‖² f``), hence
``u(x, t) = e^{−‖ω‖² t / 2} sin(ωᵀx)`` and ``g_σ(x) = e^{−‖ω‖² σ² / 2} sin(ωᵀx)``.

:class:`RandomizedSmoothing` estimates ``g_σ`` by Monte Carlo with ``n`` samples and returns,
with the estimate, the half-width of a confidence interval: the normal-approximation
``z_{1−δ/2} · s / √n`` (``s`` the sample standard deviation), or, when the outputs are known to
lie in ``[a, b]`` (probabilities), Hoeffding's distribution-free ``(b − a) √(log(2/δ) / (2n))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Callable, Optional, Tuple, Union

import torch
from torch import nn

from .._checks import check_choice, check_floating, check_positive, check_positive_int, check_probability

__all__ = ["RandomizedSmoothing", "SmoothedEstimate", "gaussian_smoothing", "sine_heat_solution"]


@dataclass(frozen=True)
class SmoothedEstimate:
    """A Monte Carlo estimate of ``g_σ(x)`` and its confidence half-width (same shape), at level ``1 − δ``.

    ``g_σ(x) ∈ [mean − half_width, mean + half_width]`` with probability at least ``1 − δ``,

    where ``g_σ(x) = E_ε f(x + σε)`` is the smoothed function and ``1 − δ = confidence``. Returned by
    :func:`gaussian_smoothing` and :meth:`RandomizedSmoothing.estimate`.

    Args:
        mean: the estimate of ``g_σ(x)``, shape ``(B, *)``.
        half_width: the half-width of the confidence interval, same shape as ``mean``.
        num_samples: the number ``n`` of Monte Carlo samples per input row.
        confidence: the confidence level ``1 − δ``.

    Examples:
        >>> import torch
        >>> est = SmoothedEstimate(torch.tensor([0.5]), torch.tensor([0.1]), num_samples=100, confidence=0.99)
        >>> round(float(est.mean - est.half_width), 4), est.confidence
        (0.4, 0.99)
    """

    mean: torch.Tensor
    half_width: torch.Tensor
    num_samples: int
    confidence: float


def gaussian_smoothing(
    function: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    *,
    sigma: float,
    num_samples: int = 1000,
    batch_size: int = 1000,
    confidence: float = 0.99,
    bounds: Optional[Tuple[float, float]] = None,
    generator: Optional[torch.Generator] = None,
) -> SmoothedEstimate:
    r"""Monte Carlo ``g_σ(x) = E f(x + σε)`` for every row of ``x`` (shape ``(B, ...)``), with a confidence
    bound.

    ``g_σ(x) = E_{ε∼N(0, I)} f(x + σε) ≈ (1/n) Σ_{k=1}^n f(x + σε_k)``,

    with ``f = function``, ``σ`` the noise scale and ``n = num_samples``; ``g_σ = u(·, σ²)`` solves
    the heat equation ``∂_t u = ½Δu`` from ``u(·, 0) = f`` (Gaussian noise is diffusion:
    "Convection-Diffusion Equation: A Theoretically Certified Framework for Neural Networks"). The
    half-width is the normal-approximation ``z_{1−δ/2} s / √n`` (``s`` the sample standard
    deviation) or, with ``bounds=(a, b)``, Hoeffding's ``(b − a) √(log(2/δ) / (2n))``.

    Args:
        function: ``f``, mapping a batch ``(M, ...)`` of noisy rows to outputs ``(M, *)``.
        x: the points ``(B, ...)``; the noise has the shape of one row of ``x``.
        sigma: the noise scale ``σ ≥ 0``.
        num_samples: the number of Monte Carlo samples ``n ≥ 2`` per row (default: ``1000``).
        batch_size: noisy copies passed to ``function`` at once (default: ``1000``).
        confidence: the confidence level ``1 − δ ∈ (0, 1)`` (default: ``0.99``).
        bounds: ``(a, b)`` with the outputs known to lie in ``[a, b]``, selecting Hoeffding's bound;
            ``None`` uses the normal approximation (default: ``None``).
        generator: random generator for the noise (default: ``None``, the global one).

    Returns:
        A :class:`SmoothedEstimate` with ``mean`` and ``half_width`` of shape ``(B, *)``.

    Raises:
        ValueError: invalid ``sigma``, ``num_samples``, ``confidence`` or ``bounds``, an empty ``x``, or
            a ``function`` returning the wrong number of rows or non-finite values.

    Examples:
        >>> import torch
        >>> x = torch.zeros(1, 2, dtype=torch.float64)
        >>> est = gaussian_smoothing(lambda z: z.square().sum(1), x, sigma=0.5, num_samples=20000,
        ...                          generator=torch.Generator().manual_seed(0))
        >>> bool(abs(est.mean - 0.5) <= est.half_width)   # E‖σε‖² = dσ² = 0.5
        True
    """
    check_floating(x, "x")
    sigma = float(check_positive(sigma, "sigma")) if sigma != 0 else 0.0
    num_samples = check_positive_int(num_samples, "num_samples", minimum=2)
    batch_size = check_positive_int(batch_size, "batch_size")
    confidence = check_probability(confidence, "confidence")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if bounds is not None:
        low, high = (float(b) for b in bounds)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"bounds must be finite with a < b, got {bounds}")
    if x.dim() < 1 or x.shape[0] == 0:
        raise ValueError(f"x must have shape (B, ...) with B >= 1, got {tuple(x.shape)}")
    means, half_widths = [], []
    for row in x:
        total: Optional[torch.Tensor] = None
        total_sq: Optional[torch.Tensor] = None
        done = 0
        while done < num_samples:
            count = min(batch_size, num_samples - done)
            noise = torch.randn((count, *row.shape), dtype=x.dtype, device=x.device, generator=generator)
            values = function(row.unsqueeze(0) + sigma * noise)
            if not isinstance(values, torch.Tensor) or values.shape[:1] != (count,):
                raise ValueError(
                    f"the function must return one output row per input row ({count}), got "
                    f"{tuple(values.shape) if isinstance(values, torch.Tensor) else type(values)}"
                )
            values = values.to(torch.float64)
            if not torch.isfinite(values).all():
                raise ValueError("the function returned non-finite values on noisy inputs")
            total = values.sum(0) if total is None else total + values.sum(0)
            total_sq = values.square().sum(0) if total_sq is None else total_sq + values.square().sum(0)
            done += count
        assert total is not None and total_sq is not None  # num_samples >= 2: the loop drew
        mean = total / num_samples
        if bounds is not None:
            half = torch.full_like(
                mean, (high - low) * math.sqrt(math.log(2 / (1 - confidence)) / (2 * num_samples))
            )
        else:
            variance = ((total_sq - num_samples * mean.square()) / (num_samples - 1)).clamp_min(0)
            quantile = NormalDist().inv_cdf(0.5 + confidence / 2)
            half = quantile * variance.sqrt() / math.sqrt(num_samples)
        means.append(mean)
        half_widths.append(half)
    return SmoothedEstimate(
        torch.stack(means).to(x.dtype), torch.stack(half_widths).to(x.dtype), num_samples, confidence
    )


def sine_heat_solution(
    x: torch.Tensor, omega: torch.Tensor, time: Union[float, torch.Tensor]
) -> torch.Tensor:
    r"""``u(x, t) = e^{−‖ω‖² t / 2} sin(ωᵀx)``: the solution of ``u_t = ½Δu`` from ``u(·, 0) = sin(ωᵀ·)``.

    ``u(x, t) = e^{−‖ω‖² t / 2} sin(ωᵀx)``,

    with ``ω`` the frequency vector and ``t`` the time: a closed form to test Gaussian smoothing
    against, since ``g_σ(x) = u(x, σ²)`` for ``f(x) = sin(ωᵀx)``.

    Args:
        x: points of shape ``(B, d)``.
        omega: the frequency ``ω`` of shape ``(d,)``.
        time: the time ``t ≥ 0`` (a float or a tensor broadcastable to ``(B,)``).

    Returns:
        ``u(x, t)`` of shape ``(B,)``.

    Examples:
        >>> import torch
        >>> x = torch.tensor([[0.5, 0.0]])
        >>> omega = torch.tensor([1.0, 1.0])         # ‖ω‖² = 2: u(x, 1) = e^{-1} sin(0.5)
        >>> round(float(sine_heat_solution(x, omega, 1.0)), 4)
        0.1764
    """
    return torch.exp(-omega.square().sum() * time / 2) * torch.sin(x @ omega)


class RandomizedSmoothing(nn.Module):
    r"""``g_σ(x) = E_ε f(x + σε)``: a model smoothed by Gaussian noise, i.e. its output diffused for ``t =
    σ²``.

    ``g_σ(x) = E_{ε∼N(0, I)} f(x + σε) = u(x, σ²)``,  ``∂_t u = ½Δu``,  ``u(·, 0) = f``,

    with ``f`` the model, ``σ`` the noise scale and ``u`` the solution of the heat equation: the
    reading of noise injection as diffusion in "Convection-Diffusion Equation: A Theoretically
    Certified Framework for Neural Networks"; as a defence it is the randomized smoothing of
    "Certified Adversarial Robustness via Randomized Smoothing" (Cohen et al.).

    $$
        g_\sigma = u(\cdot, \sigma^2), \qquad \partial_t u = \tfrac12 \Delta u, \quad u(\cdot, 0) = f .
    $$

    Args:
        model: ``f``, any module ``(M, ...) -> (M, *)``.
        sigma: noise scale ``σ ≥ 0`` (``0``: the model itself).
        num_samples: Monte Carlo samples ``n ≥ 2`` per input row (default: ``100``).
        batch_size: noisy copies evaluated at once (default: ``1000``).
        output: ``"scores"`` (average the model's outputs) or ``"probabilities"`` (average
            ``softmax`` of the outputs; bounded in ``[0, 1]``, so Hoeffding's bound)
            (default: ``"scores"``).
        confidence: level ``1 − δ`` of :meth:`estimate`'s interval (default: ``0.99``).

    Raises:
        TypeError: ``model`` is not an ``nn.Module``.
        ValueError: a negative or non-finite ``sigma``, or another invalid option.

    Shapes:
        - input: ``(B, ...)``; output: ``(B, *)`` — the estimate of ``g_σ``.

    :meth:`forward` returns the estimate; :meth:`estimate` also gives the confidence half-width.
    In training mode the module does noise injection instead: one noisy copy per input (the
    stochastic gradient of the smoothed loss).

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> smooth = RandomizedSmoothing(torch.nn.Linear(3, 2), sigma=0.25, num_samples=64).eval()
        >>> smooth(torch.randn(5, 3)).shape
        torch.Size([5, 2])
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        sigma: float,
        num_samples: int = 100,
        batch_size: int = 1000,
        output: str = "scores",
        confidence: float = 0.99,
    ):
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
        self.model = model
        if not isinstance(sigma, (int, float)) or not math.isfinite(sigma) or sigma < 0:
            raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")
        self.sigma = float(sigma)
        self.num_samples = check_positive_int(num_samples, "num_samples", minimum=2)
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.output = check_choice(output, "output", ("scores", "probabilities"))
        self.confidence = check_probability(confidence, "confidence")

    @property
    def diffusion_time(self) -> float:
        """``t = σ²``, the time of ``u_t = ½Δu`` that the smoothing runs."""
        return self.sigma**2

    def _function(self, inputs: torch.Tensor) -> torch.Tensor:
        out = self.model(inputs)
        return torch.softmax(out, dim=-1) if self.output == "probabilities" else out

    def estimate(self, x: torch.Tensor, generator: Optional[torch.Generator] = None) -> SmoothedEstimate:
        """The Monte Carlo estimate of ``g_σ(x)`` and its confidence half-width."""
        if self.sigma == 0:
            with torch.no_grad():
                out = self._function(x)
            return SmoothedEstimate(out, torch.zeros_like(out), 1, self.confidence)
        with torch.no_grad():
            return gaussian_smoothing(
                self._function,
                x,
                sigma=self.sigma,
                num_samples=self.num_samples,
                batch_size=self.batch_size,
                confidence=self.confidence,
                bounds=(0.0, 1.0) if self.output == "probabilities" else None,
                generator=generator,
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_floating(x, "input to RandomizedSmoothing")
        if self.training:
            return self._function(x + self.sigma * torch.randn_like(x))
        return self.estimate(x).mean

    def extra_repr(self) -> str:
        return (
            f"sigma={self.sigma:g} (diffusion time {self.diffusion_time:g}), num_samples={self.num_samples}, "
            f"output={self.output!r}"
        )
