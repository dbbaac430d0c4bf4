r"""Dropout on hidden units as a diffusion term: the derivation and what it predicts.

From "Convection-Diffusion Equation: A Theoretically Certified Framework for Neural Networks" (COIN).

Inverted dropout replaces hidden units ``h ∈ R^m`` by ``h̃ = h ⊙ b / (1 − p)`` with independent
``b_i ~ Bernoulli(1 − p)``. Write ``h̃ = h + ξ``: ``E ξ = 0`` and the noise is independent across
units with

$$
    \operatorname{Var} \xi_i = a_i(h) = \frac{p}{1 - p} h_i^2 .
$$

For the rest of the network ``f`` (any smooth function of the hidden units), Taylor's theorem to
second order gives

$$
    \mathbb{E} f(\tilde h) = f(h) + \tfrac12 \sum_i a_i(h)\, \partial_{ii} f(h) + O(\mathbb{E}|\xi|^3),
$$

which is one unit of time of the anisotropic, state-dependent diffusion
``∂_t u = ½ Σ_i a_i(h) ∂_ii u`` started from ``f``: dropout averages the network over a
diffusion in the hidden space whose coefficient is proportional to the squared activation
(zero for inactive units — unlike Gaussian noise injection, whose coefficient ``σ²`` is
constant, see :mod:`pdenets.nn.smoothing`). Gaussian multiplicative noise
``h ⊙ (1 + √(p/(1−p)) ε)`` has the same coefficient.

Predictions checked in the tests:

* the expansion is **exact** for quadratic ``f`` (third and higher derivatives vanish, and the
  independent units have no cross terms): ``E f(h̃) = f(h) + ½ Σ_i a_i ∂_ii f(h)``;
* for a linear read-out ``y = W h̃ + c`` the output variance is
  ``Var y_k = Σ_i W_ki² a_i(h) = p/(1−p) Σ_i W_ki² h_i²`` (exactly);
* for a general smooth ``f`` the second-order mean is closer to the Monte Carlo mean than
  ``f(h)`` is (the diffusion term accounts for the bias dropout introduces).
"""

from __future__ import annotations

from typing import Callable

import torch

from .._checks import check_floating, check_probability

__all__ = ["dropout_diffusion_coefficients", "dropout_readout_variance", "dropout_second_order_mean"]


def _check(hidden: torch.Tensor, p: float) -> float:
    check_floating(hidden, "hidden")
    return check_probability(p, "p")  # in [0, 1): p = 1 would drop every unit


def dropout_diffusion_coefficients(hidden: torch.Tensor, p: float) -> torch.Tensor:
    r"""``a_i(h) = p/(1−p) · h_i²``: the variance dropout adds to each hidden unit (the diffusion
    coefficient).

    ``a_i(h) = Var ξ_i = p / (1 − p) · h_i²``,  ``h̃ = h ⊙ b / (1 − p) = h + ξ``,

    with ``h`` the hidden units, ``b_i ∼ Bernoulli(1 − p)`` the dropout mask and ``p`` the dropout
    rate: the coefficient of the diffusion ``∂_t u = ½ Σ_i a_i(h) ∂_ii u`` that dropout runs on the
    rest of the network (the reading of "Convection-Diffusion Equation: A Theoretically Certified
    Framework for Neural Networks").

    Args:
        hidden: the hidden units ``h``, any shape (e.g. ``(m,)`` or ``(B, m)``).
        p: the dropout rate ``p ∈ [0, 1)``.

    Returns:
        ``a(h)``, same shape as ``hidden``.

    Raises:
        ValueError: ``p`` outside ``[0, 1)``.

    Examples:
        >>> import torch
        >>> dropout_diffusion_coefficients(torch.tensor([1.0, -2.0, 0.0]), 0.5)
        tensor([1., 4., 0.])
    """
    p = _check(hidden, p)
    return p / (1 - p) * hidden.square()


def dropout_readout_variance(hidden: torch.Tensor, weight: torch.Tensor, p: float) -> torch.Tensor:
    r"""The output variance of a linear read-out after dropout: ``Var y_k = p/(1−p) Σ_i W_ki² h_i²``.

    ``Var y_k = Σ_i W_ki² a_i(h) = p/(1 − p) · Σ_i W_ki² h_i²``  for  ``y = W · dropout(h) + c``,

    with ``h`` the hidden units, ``W`` the read-out weights, ``p`` the dropout rate and ``a_i(h)``
    the diffusion coefficients of :func:`dropout_diffusion_coefficients` (exact, since the units are
    dropped independently).

    Args:
        hidden: the hidden units ``h`` of shape ``(B, m)`` or ``(m,)``.
        weight: the read-out weights ``W`` of shape ``(c, m)``.
        p: the dropout rate ``p ∈ [0, 1)``.

    Returns:
        ``Var y`` of shape ``(B, c)`` or ``(c,)``.

    Raises:
        ValueError: ``p`` outside ``[0, 1)`` or ``weight`` not of shape ``(c, m)``.

    Shapes: ``hidden`` ``(B, m)`` or ``(m,)``; ``weight`` ``(c, m)``; output ``(B, c)`` or ``(c,)``.

    Examples:
        >>> import torch
        >>> dropout_readout_variance(torch.tensor([1.0, 2.0]), torch.tensor([[1.0, 1.0], [0.0, 3.0]]), 0.5)
        tensor([ 5., 36.])
    """
    p = _check(hidden, p)
    check_floating(weight, "weight")
    if weight.dim() != 2 or weight.shape[1] != hidden.shape[-1]:
        raise ValueError(f"weight must have shape (c, {hidden.shape[-1]}), got {tuple(weight.shape)}")
    return dropout_diffusion_coefficients(hidden, p) @ weight.square().T


def dropout_second_order_mean(
    function: Callable[[torch.Tensor], torch.Tensor], hidden: torch.Tensor, p: float
) -> torch.Tensor:
    r"""``f(h) + ½ Σ_i a_i(h) ∂_ii f(h)``: the diffusion (second-order) prediction of ``E f(dropout(h))``.

    ``E f(h̃) ≈ f(h) + ½ Σ_i a_i(h) ∂_ii f(h)``,  ``a_i(h) = p/(1 − p) · h_i²``,

    with ``f = function``, ``h`` the hidden units, ``h̃`` their dropped-out version and ``p`` the
    dropout rate: one unit of time of the diffusion ``∂_t u = ½ Σ_i a_i ∂_ii u`` started from ``f``
    (exact for quadratic ``f``; "Convection-Diffusion Equation: A Theoretically Certified Framework
    for Neural Networks"). The Hessian diagonal is computed exactly with ``torch.func`` (cost
    ``O(c m²)``).

    Args:
        function: ``f``, mapping one hidden vector ``(m,)`` to ``(c,)`` (or a scalar).
        hidden: the hidden units ``h`` of shape ``(m,)`` or ``(B, m)``.
        p: the dropout rate ``p ∈ [0, 1)``.

    Returns:
        The second-order mean, of shape ``(c,)`` (or scalar) per row: ``(c,)`` or ``(B, c)``.

    Raises:
        ValueError: ``p`` outside ``[0, 1)`` or ``hidden`` not of shape ``(m,)`` or ``(B, m)``.

    Examples:
        >>> import torch
        >>> h = torch.tensor([1.0, 2.0], dtype=torch.float64)
        >>> dropout_second_order_mean(lambda v: v.square().sum(), h, 0.5)   # exact: 5 + (1 + 4)
        tensor(10., dtype=torch.float64)
    """
    from torch.func import hessian, vmap

    p = _check(hidden, p)
    single = hidden.dim() == 1
    rows = hidden.unsqueeze(0) if single else hidden
    if rows.dim() != 2:
        raise ValueError(f"hidden must have shape (m,) or (B, m), got {tuple(hidden.shape)}")

    def second_order(vector: torch.Tensor) -> torch.Tensor:
        value = function(vector)
        curvature = hessian(function)(vector)  # (*out, m, m)
        diagonal = torch.diagonal(curvature, dim1=-2, dim2=-1)
        return value + 0.5 * (diagonal * (p / (1 - p)) * vector.square()).sum(-1)

    out = vmap(second_order)(rows)
    return out[0] if single else out
