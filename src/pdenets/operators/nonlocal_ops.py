r"""Nonlocal (integro-differential) operators on pixel strips: the kernels of PIDE networks (Bohn, Griebel &
Kannan, "Deep Neural Networks and PIDE discretizations", 2021, §3–4).

Given query embeddings ``θ_i`` (``i = 1 … N``), key embeddings ``φ_j`` (``j = 1 … M``), values
``V_j ∈ R^C`` and the queries' own values ``X_i``, each operator computes one term
``T_i ∈ R^C``, normalized by ``𝒩_i`` (``"count"``: ``𝒩 = M``, the number of key strips, the
paper's choice; ``"row-sum"``: ``𝒩_i = Σ_j ω_ij``):

======================  ==========================================================  =====================================
operator                kernel ``ω_ij``                                              term ``T_i``
======================  ==========================================================  =====================================
``diffusion-dot``       ``λ θ_iᵀφ_j`` (scaled embedded dot product)                ``(1/𝒩_i) Σ_j ω_ij (V_j − X_i)``
``diffusion-gaussian``  ``exp(λ θ_iᵀφ_j)`` (embedded Gaussian)                     ``(1/𝒩_i) Σ_j ω_ij (V_j − X_i)``
``fractional``          ``λ / ‖θ_i − φ_j‖^{n+2s}``, ``0 < s < 1``                  ``(c_{n,s}/𝒩_i) Σ_j ω_ij (X_i − V_j)``
``inverse-fractional``  ``λ / ‖θ_i − φ_j‖^{n−2s}``, ``0 < s < n/2``                ``(c_{n,−s}/𝒩_i) Σ_j ω_ij V_j``
``log``                 ``−2λ log‖θ_i − φ_j‖ − γ_E`` (``s = n/2``)                 ``(c_n/𝒩_i) Σ_j ω_ij V_j``
======================  ==========================================================  =====================================

with $c_{n,s} = 4^s Γ(n/2+s) / (π^{n/2} |Γ(−s)|)$, $c_{n,−s} = Γ(n/2−s) / (4^s π^{n/2} Γ(s))$,
$c_n = 1/((4π)^{n/2} Γ(n/2))$ and ``γ_E`` the Euler–Mascheroni constant. ``n`` is the
dimension of the image domain, ``n = 2``; the paper's ``(−Δ)^{−1}`` is the log kernel
(``s = n/2 = 1``). Where a singular kernel is undefined (``θ_i = φ_j``), the entry is 0
("safe divide"; for the log kernel the term is dropped), so outputs and gradients stay finite.

Two ways to compute each operator, equal in exact arithmetic:

* ``path="naive"`` materializes the ``N × M`` kernel — the reference;
* ``path="fast"`` never holds ``N × M`` at once: the dot-product kernel reassociates,
  ``Σ_j λ θ_iᵀφ_j V_j = λ θ_i (Φᵀ V)``; the embedded Gaussian with row-sum normalization is a
  softmax attention (``torch.nn.functional.scaled_dot_product_attention``); every other
  combination runs over cache-sized blocks of query rows, each block's kernel recomputed in
  the backward pass (a custom autograd function), so neither direction stores ``N × M``.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable, Optional, Tuple

import torch
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

from .._checks import check_choice, check_floating

__all__ = [
    "NONLOCAL_OPERATORS",
    "NORMALIZERS",
    "fractional_constant",
    "inverse_fractional_constant",
    "log_constant",
    "nonlocal_kernel",
    "nonlocal_apply",
    "EULER_GAMMA",
    "operator_constant",
]

NONLOCAL_OPERATORS = ("diffusion-dot", "diffusion-gaussian", "fractional", "inverse-fractional", "log")
NORMALIZERS = ("count", "row-sum")
EULER_GAMMA = 0.5772156649015329
#: Kernel entries (batch × rows × keys) per block of the chunked path: blocks that stay in the
#: CPU caches run several times faster than one ``N × M`` pass over memory.
CHUNK_ELEMENTS = 1 << 21


def fractional_constant(n: int, s: float) -> float:
    """$c_{n,s} = 4^s Γ(n/2+s) / (π^{n/2} |Γ(−s)|)$, ``0 < s < 1``.

    Examples:
        >>> round(fractional_constant(1, 0.5) * math.pi, 12)    # c_{1,1/2} = 1/π
        1.0
    """
    if not 0 < s < 1:
        raise ValueError(f"the fractional Laplacian needs 0 < s < 1, got s={s}")
    return 4**s * math.gamma(n / 2 + s) / (math.pi ** (n / 2) * abs(math.gamma(-s)))


def inverse_fractional_constant(n: int, s: float) -> float:
    """$c_{n,−s} = Γ(n/2−s) / (4^s π^{n/2} Γ(s))$, ``0 < s < n/2``."""
    if not 0 < s < n / 2:
        raise ValueError(
            f"the inverse fractional Laplacian needs 0 < s < n/2 = {n / 2}, got s={s} (s = n/2 is the log "
            "kernel)"
        )
    return math.gamma(n / 2 - s) / (4**s * math.pi ** (n / 2) * math.gamma(s))


def log_constant(n: int) -> float:
    """$c_n = 1 / ((4π)^{n/2} Γ(n/2))$ of the log kernel (``s = n/2``)."""
    return 1.0 / ((4 * math.pi) ** (n / 2) * math.gamma(n / 2))


def operator_constant(operator: str, *, s: float, n: int) -> float:
    if operator == "fractional":
        return fractional_constant(n, s)
    if operator == "inverse-fractional":
        return inverse_fractional_constant(n, s)
    if operator == "log":
        return log_constant(n)
    return 1.0


def _distances(theta: torch.Tensor, phi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """‖θ_i − φ_j‖², ``(B, N, M)``, and the mask of the singular pairs: distances at the level of round-off
    (equal embeddings up to the last bits), which the kernels treat as 0."""
    norms = theta.square().sum(-1)[..., :, None] + phi.square().sum(-1)[..., None, :]
    if theta.dim() == 3:
        squared = torch.baddbmm(norms, theta, phi.transpose(-1, -2), alpha=-2)
    else:
        squared = norms - 2 * torch.matmul(theta, phi.transpose(-1, -2))
    return squared, squared <= norms * (64 * torch.finfo(squared.dtype).eps)


def nonlocal_kernel(
    theta: torch.Tensor, phi: torch.Tensor, operator: str, *, lam: float = 0.1, s: float = 0.5, n: int = 2
) -> torch.Tensor:
    """The kernel ``ω`` of the module table, ``(B, N, M)``; singular entries (zero distance) are 0."""
    check_choice(operator, "operator", NONLOCAL_OPERATORS)
    if operator in ("diffusion-dot", "diffusion-gaussian"):
        scores = lam * torch.matmul(theta, phi.transpose(-1, -2))
        return scores if operator == "diffusion-dot" else torch.exp(scores)
    squared, singular = _distances(theta, phi)
    safe = squared.masked_fill(singular, 1.0)  # no inf/NaN in either direction
    if operator == "log":
        values = torch.log(safe).mul_(-lam).sub_(EULER_GAMMA)  # −2λ log‖·‖ = −λ log‖·‖²
    else:
        power = (n + 2 * s) if operator == "fractional" else (n - 2 * s)
        values = _power(safe, -power / 2) * lam
    return values.masked_fill_(singular, 0.0)


def _power(base: torch.Tensor, exponent: float) -> torch.Tensor:
    """``base ** exponent`` for a positive base; the paper's half-integer exponents through ``rsqrt``/``reciprocal``
    and a hand-written derivative ``e·out/base`` (``pow`` with a fractional exponent costs several times more,
    forward and backward)."""
    if exponent in (-0.5, -1.0, -1.5, -2.0):
        return _HalfIntegerPower.apply(base, exponent)
    return base.pow(exponent)


class _HalfIntegerPower(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, base: torch.Tensor, exponent: float) -> torch.Tensor:
        if exponent in (-0.5, -1.5):
            out = torch.rsqrt(base)
            if exponent == -1.5:
                out = out.div_(base)
        else:
            out = torch.reciprocal(base)
            if exponent == -2.0:
                out = out.square_()
        ctx.exponent = exponent
        ctx.save_for_backward(base, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[torch.Tensor, None]:
        base, out = ctx.saved_tensors
        return grad_output * out / base * ctx.exponent, None


def _combine(
    kernel: torch.Tensor,
    values: torch.Tensor,
    centres: torch.Tensor,
    operator: str,
    normalizer: str,
    count: int,
    constant: float,
) -> torch.Tensor:
    """``T_i`` from a block of kernel rows ``(B, n, M)``, the values ``(B, M, C)`` and the rows' centres
    ``(B, n, C)``."""
    weighted = torch.matmul(kernel, values)  # Σ_j ω_ij V_j
    sums: Optional[torch.Tensor]
    scale: torch.Tensor | float
    if normalizer == "row-sum":
        sums = kernel.sum(-1, keepdim=True)
        scale = torch.where(
            sums != 0, 1.0 / torch.where(sums != 0, sums, torch.ones_like(sums)), torch.zeros_like(sums)
        )
    else:
        sums = (
            kernel.sum(-1, keepdim=True)
            if operator in ("diffusion-dot", "diffusion-gaussian", "fractional")
            else None
        )
        scale = 1.0 / count
    if operator in ("diffusion-dot", "diffusion-gaussian"):
        assert sums is not None  # both normalizers sum the rows of these operators
        return scale * (weighted - centres * sums)
    if operator == "fractional":
        assert sums is not None
        return constant * scale * (centres * sums - weighted)
    return constant * scale * weighted


def _rows(
    theta: torch.Tensor,
    phi: torch.Tensor,
    values: torch.Tensor,
    centres: torch.Tensor,
    operator: str,
    normalizer: str,
    count: int,
    constant: float,
    lam: float,
    s: float,
    n: int,
) -> torch.Tensor:
    kernel = nonlocal_kernel(theta, phi, operator, lam=lam, s=s, n=n)
    return _combine(kernel, values, centres, operator, normalizer, count, constant)


def nonlocal_apply(
    theta: torch.Tensor,
    phi: torch.Tensor,
    values: torch.Tensor,
    centres: torch.Tensor,
    operator: str,
    *,
    lam: float = 0.1,
    s: float = 0.5,
    n: int = 2,
    normalizer: str = "count",
    path: str = "fast",
    chunk_rows: Optional[int] = None,
) -> torch.Tensor:
    """The term ``T`` of the module table for every query strip.

    Shapes:
        - theta: ``(B, N, d)`` query embeddings; phi: ``(B, M, d)`` key embeddings
        - values: ``(B, M, C)`` (``V_j``); centres: ``(B, N, C)`` (``X_i``)
        - output: ``(B, N, C)``

    Examples:
        >>> import torch
        >>> theta, phi = torch.randn(1, 6, 3, dtype=torch.float64), torch.randn(1, 4, 3, dtype=torch.float64)
        >>> values, centres = torch.randn(1, 4, 2, dtype=torch.float64), torch.randn(1, 6, 2, dtype=torch.float64)
        >>> naive = nonlocal_apply(theta, phi, values, centres, "fractional", path="naive")
        >>> torch.allclose(naive, nonlocal_apply(theta, phi, values, centres, "fractional", path="fast", chunk_rows=2))
        True
    """
    check_choice(operator, "operator", NONLOCAL_OPERATORS)
    check_choice(normalizer, "normalizer", NORMALIZERS)
    check_choice(path, "path", ("naive", "fast"))
    for tensor, name in ((theta, "theta"), (phi, "phi"), (values, "values"), (centres, "centres")):
        check_floating(tensor, name)
    if (
        theta.shape[-1] != phi.shape[-1]
        or values.shape[-2] != phi.shape[-2]
        or centres.shape[-2] != theta.shape[-2]
        or values.shape[-1] != centres.shape[-1]
    ):
        raise ValueError(
            f"shapes do not fit: theta {tuple(theta.shape)}, phi {tuple(phi.shape)}, values "
            f"{tuple(values.shape)}, centres {tuple(centres.shape)}"
        )
    constant = operator_constant(operator, s=s, n=n)
    count = phi.shape[-2]
    if path == "naive":
        return _rows(theta, phi, values, centres, operator, normalizer, count, constant, lam, s, n)
    if operator == "diffusion-dot":
        if normalizer == "count" and theta.dim() == 3:
            return _DotCount.apply(theta, phi, values, centres, lam / count)
        summary = lam * torch.matmul(phi.transpose(-1, -2), values)  # λ Φᵀ V, (B, d, C)
        weighted = torch.matmul(theta, summary)
        sums = lam * torch.matmul(theta, phi.sum(-2, keepdim=True).transpose(-1, -2))  # (B, N, 1)
        if normalizer == "count":
            return (weighted - centres * sums) / count
        scale = torch.where(
            sums != 0, 1.0 / torch.where(sums != 0, sums, torch.ones_like(sums)), torch.zeros_like(sums)
        )
        return scale * (weighted - centres * sums)
    if operator == "diffusion-gaussian" and normalizer == "row-sum":
        return _attention(theta, phi, values, lam) - centres
    batch = theta[..., 0, 0].numel()
    batch = theta[..., 0, 0].numel()
    if chunk_rows is None and batch * theta.shape[-2] * count <= CHUNK_ELEMENTS:
        # the whole kernel fits one block: plain autograd is faster and stores a few block-sized tensors
        return _rows(theta, phi, values, centres, operator, normalizer, count, constant, lam, s, n)
    rows = chunk_rows or max(1, CHUNK_ELEMENTS // max(1, batch * count))
    block = partial(
        _rows, operator=operator, normalizer=normalizer, count=count, constant=constant, lam=lam, s=s, n=n
    )
    return _ChunkedRows.apply(theta, phi, values, centres, block, rows)


class _DotCount(torch.autograd.Function):
    r"""``T = c (θ (ΦᵀV) − X ⊙ (θ Φᵀ1))`` with ``c = λ / M``: the dot-product kernel, count normalizer.

    Reassociated, with the gradients written out so that neither pass holds more than the
    output-sized tensors it returns: with ``W = c ΦᵀV (d, C)``, ``u = c Φᵀ1 (d)``, ``s = θu (N)``
    and the incoming gradient ``G``, ``r_i = G_iᵀX_i``:
    ``∂X = −s ⊙ G``, ``∂θ = G Wᵀ − r uᵀ``, ``∂Φ = c (V (θᵀG)ᵀ − 1 (θᵀr)ᵀ)``, ``∂V = c Φ (θᵀG)``.
    (Autograd's version of the same expression kept four ``N × C`` temporaries.)
    """

    @staticmethod
    def forward(
        ctx: Any,
        theta: torch.Tensor,
        phi: torch.Tensor,
        values: torch.Tensor,
        centres: torch.Tensor,
        scale: float,
    ) -> torch.Tensor:
        summary = scale * torch.bmm(phi.transpose(1, 2), values)  # W (B, d, C)
        column = scale * phi.sum(1).unsqueeze(-1)  # u (B, d, 1)
        sums = torch.bmm(theta, column)  # s (B, N, 1)
        out = torch.bmm(theta, summary)
        out.addcmul_(centres, sums, value=-1.0)
        ctx.scale = scale
        ctx.save_for_backward(theta, phi, values, centres, summary, column, sums)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        theta, phi, values, centres, summary, column, sums = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_theta = grad_phi = grad_values = grad_centres = None
        grad = grad.contiguous()
        if needs[0] or needs[1]:
            batch, rows, channels = grad.shape
            # r_i = G_iᵀ X_i as a batch of 1×C by C×1 products: no N × C temporary
            dots = torch.bmm(
                grad.reshape(-1, 1, channels), centres.contiguous().reshape(-1, channels, 1)
            ).reshape(batch, rows, 1)
        if needs[0]:
            grad_theta = torch.bmm(grad, summary.transpose(1, 2))
            grad_theta.baddbmm_(dots, column.transpose(1, 2), alpha=-1.0)
        if needs[1] or needs[2]:
            moment = torch.bmm(theta.transpose(1, 2), grad)  # θᵀG (B, d, C)
            if needs[1]:
                grad_phi = ctx.scale * torch.bmm(values, moment.transpose(1, 2))
                grad_phi -= ctx.scale * torch.bmm(theta.transpose(1, 2), dots).transpose(
                    1, 2
                )  # broadcast over M
            if needs[2]:
                grad_values = ctx.scale * torch.bmm(phi, moment)
        if needs[3]:
            grad_centres = grad * (-sums)
        return grad_theta, grad_phi, grad_values, grad_centres, None


def _attention(theta: torch.Tensor, phi: torch.Tensor, values: torch.Tensor, lam: float) -> torch.Tensor:
    """``softmax(λ θ φᵀ) V`` by ``scaled_dot_product_attention``.

    PyTorch's fused CPU kernel (flash attention, memory ``O(N)``) needs contiguous queries, keys
    and values of one width; otherwise the math backend runs and stores the ``N × M`` weights. Zero columns
    leave ``θᵀφ`` unchanged, so the narrower side is padded to the wider and the output cut back.
    """
    width = max(theta.shape[-1], values.shape[-1])
    theta, phi = (F.pad(t, (0, width - t.shape[-1])) for t in (theta, phi))
    padded_values = F.pad(values, (0, width - values.shape[-1]))
    shape = theta.shape[:-2]
    query, key, value = (
        t.reshape(-1, 1, *t.shape[-2:]).contiguous() for t in (theta, phi, padded_values)
    )  # fused: stride 1
    out = F.scaled_dot_product_attention(query, key, value, scale=lam)[:, 0, :, : values.shape[-1]]
    return out.reshape(*shape, *out.shape[-2:])


class _ChunkedRows(torch.autograd.Function):
    """``T`` computed over blocks of ``rows`` query rows; the backward pass recomputes each block's kernel.

    Saves only the four inputs (``O(N + M)``), never a kernel row block beyond the one in use.
    (``torch.utils.checkpoint`` with ``use_reentrant=False`` kept every block's kernel alive
    until the backward pass here — measured in ``benchmarks/nonlocal.py`` — hence this Function.)
    """

    @staticmethod
    def forward(
        ctx: Any,
        theta: torch.Tensor,
        phi: torch.Tensor,
        values: torch.Tensor,
        centres: torch.Tensor,
        block: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
        rows: int,
    ) -> torch.Tensor:
        ctx.block, ctx.rows = block, rows
        ctx.save_for_backward(theta, phi, values, centres)
        return torch.cat(
            [
                block(theta[..., start : start + rows, :], phi, values, centres[..., start : start + rows, :])
                for start in range(0, theta.shape[-2], rows)
            ],
            dim=-2,
        )

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        theta, phi, values, centres = ctx.saved_tensors
        needs = ctx.needs_input_grad[:4]
        grads = [
            torch.zeros_like(t) if need else None for t, need in zip((theta, phi, values, centres), needs)
        ]
        phi_leaf, values_leaf = (
            phi.detach().requires_grad_(needs[1]),
            values.detach().requires_grad_(needs[2]),
        )
        rows, used = ctx.rows, [False] * 4
        for start in range(0, theta.shape[-2], rows):
            rows_theta = theta[..., start : start + rows, :].detach().requires_grad_(needs[0])
            rows_centres = centres[..., start : start + rows, :].detach().requires_grad_(needs[3])
            leaves = (rows_theta, phi_leaf, values_leaf, rows_centres)
            with torch.enable_grad():
                out = ctx.block(*leaves)
                wanted = [leaf for leaf, need in zip(leaves, needs) if need]
                pieces = iter(
                    torch.autograd.grad(
                        out, wanted, grad_output[..., start : start + rows, :], allow_unused=True
                    )
                )
            for index, need in enumerate(needs):
                if not need:
                    continue
                piece = next(pieces)
                if piece is None:  # the operator does not use this input (e.g. X_i in (−Δ)^{−s})
                    continue
                used[index] = True
                total = grads[index]
                assert total is not None  # allocated above for every input that needs a gradient
                if index in (0, 3):
                    total[..., start : start + rows, :] += piece
                else:
                    total += piece
        return (*(g if u else None for g, u in zip(grads, used)), None, None)
