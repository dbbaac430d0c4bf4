r"""Robustness of a network to random and adversarial noise, layer by layer ("A Mathematical Principle of
Deep Learning: Learn the Geodesic Curve in the Wasserstein Space", appendix 7.2).

* Random noise: ``x_r = x + e_r``, ``e_r ~ N(0, σ² I)``.
* FGSM (fast gradient sign method): ``x_a = x + ε · sign(∂L/∂x)`` with ``L`` the cross entropy of the
  network's logits and the true labels, the gradient taken in evaluation mode.
* Variation rate of the representation after block ``l`` (eq. 49):

    $$
        V_r(l, σ) = \frac{1}{|\mathcal D|} \sum_{x \in \mathcal D}
        \frac{\|x^{(l)} - x_r^{(l)}\|_2}{\|x^{(l)}\|_2}
    $$

  and ``V_a(l, ε)`` the same with ``x_a``. A point with ``x^{(l)} = 0`` contributes ``0`` when its noisy
  representation is also ``0`` and ``inf`` otherwise (never NaN).

The representations come from :func:`~pdenets.analysis.tracks.record_tracks`, so any ``nn.Module`` and any
choice of blocks works; the rates are listed along the tracks, stage after stage (``l = 0`` is the input of
a stage's first block).

Examples:
    >>> import torch
    >>> from torch import nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    >>> x, y = torch.randn(50, 4), torch.randint(0, 3, (50,))
    >>> curve = robustness_curve(net, x, y, [0.0, 0.1], attack="fgsm", blocks=["1"])
    >>> curve["accuracy"][0] == int((net(x).argmax(1) == y).sum()) / len(y)
    True
    >>> curve["variation"][0]
    [0.0, 0.0]
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from .tracks import BlockSpec, record_tracks

__all__ = ["ATTACKS", "fgsm", "gaussian_noise", "variation_rates", "robustness_curve"]

ATTACKS = ("gaussian", "fgsm")


def _device(model: nn.Module) -> torch.device:
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


def _check(inputs: torch.Tensor, targets: Optional[torch.Tensor] = None) -> None:
    if not isinstance(inputs, torch.Tensor) or inputs.dim() < 2 or inputs.shape[0] == 0:
        raise ValueError("inputs must be a tensor (m, ...) of at least one point")
    if not bool(torch.isfinite(inputs).all()):
        raise ValueError("inputs contain NaN or inf")
    if targets is not None and (targets.dim() != 1 or targets.shape[0] != inputs.shape[0]):
        raise ValueError(f"targets must be (m,) = ({inputs.shape[0]},) labels, got {tuple(targets.shape)}")


def _level(value: float, name: str) -> float:
    value = float(value)
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name} must be finite and >= 0, got {value}")
    return value


def gaussian_noise(
    inputs: torch.Tensor, sigma: float, *, generator: Optional[torch.Generator] = None
) -> torch.Tensor:
    """Random noise: ``x_r = x + σ·e`` with ``e ~ N(0, I)`` drawn from ``generator``.

    ``σ`` is the noise level and ``e`` has the shape of ``x``; the random perturbation of the robustness
    study in "A Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the Wasserstein
    Space" (appendix 7.2).

    Args:
        inputs: ``(m, ...)`` finite points ``x`` (at least one).
        sigma: standard deviation ``σ ≥ 0`` of the noise.
        generator: random generator the noise is drawn from, on the CPU (default: ``None``, the global one).

    Returns:
        Tensor of the shape, dtype and device of ``inputs``: the noisy points ``x_r``.

    Raises:
        ValueError: if ``inputs`` is not a finite ``(m, ...)`` tensor or ``sigma`` is negative or infinite.

    Examples:
        >>> import torch
        >>> x = torch.zeros(3, 2)
        >>> gaussian_noise(x, 0.0).equal(x)
        True
        >>> noisy = gaussian_noise(x, 0.5, generator=torch.Generator().manual_seed(0))
        >>> noisy.shape, bool((noisy != 0).all())
        (torch.Size([3, 2]), True)
    """
    _check(inputs)
    sigma = _level(sigma, "sigma")
    # drawn on the CPU generator (the same noise on every device), then moved to the inputs
    noise = torch.randn(inputs.shape, generator=generator, dtype=inputs.dtype).to(inputs.device)
    return inputs + sigma * noise


def fgsm(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, epsilon: float, *, batch_size: int = 500
) -> torch.Tensor:
    """Fast gradient sign method: ``x_a = x + ε · sign(∂L/∂x)``, ``L`` = cross entropy of ``model(x)`` and
    ``targets``.

    ``ε`` is the attack size and ``L = Σ_i CE(model(x_i), y_i)`` is summed over the batch, so every point
    moves by ``ε`` in each coordinate in the direction that increases its own loss; the gradient is taken in
    evaluation mode. This is the adversarial perturbation of the robustness study in
    "A Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the Wasserstein Space" (appendix
    7.2). The model's parameters get no gradient and its mode is restored afterwards.

    Args:
        model: classifier mapping ``(m, ...)`` inputs to ``(m, C)`` logits.
        inputs: ``(m, ...)`` finite points ``x``.
        targets: ``(m,)`` integer labels ``y``.
        epsilon: attack size ``ε ≥ 0``.
        batch_size: number of points per forward/backward pass (default: ``500``).

    Returns:
        Tensor of the shape and device of ``inputs``: the adversarial points ``x_a`` (detached).

    Raises:
        ValueError: if ``inputs`` is not a finite ``(m, ...)`` tensor, ``targets`` is not ``(m,)``, or
            ``epsilon`` is negative or infinite.

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Linear(4, 3)
        >>> x, y = torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])
        >>> x_a = fgsm(net, x, y, epsilon=0.1)
        >>> x_a.shape, round(float((x_a - x).abs().max()), 4)
        (torch.Size([5, 4]), 0.1)
    """
    _check(inputs, targets)
    epsilon = _level(epsilon, "epsilon")
    device = _device(model)
    training = model.training
    model.eval()
    requires = [p.requires_grad for p in model.parameters()]
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    try:
        out = []
        for start in range(0, inputs.shape[0], batch_size):
            x = inputs[start : start + batch_size].to(device).detach().requires_grad_(True)
            loss = F.cross_entropy(model(x), targets[start : start + batch_size].to(device), reduction="sum")
            (gradient,) = torch.autograd.grad(loss, x)
            out.append((x + epsilon * gradient.sign()).detach().to(inputs.device))
    finally:
        for parameter, flag in zip(model.parameters(), requires):
            parameter.requires_grad_(flag)
        model.train(training)
    return torch.cat(out)


def variation_rates(
    model: nn.Module,
    clean: torch.Tensor,
    perturbed: torch.Tensor,
    *,
    blocks: BlockSpec,
    batch_size: int = 256,
) -> List[float]:
    """Variation rate ``V(l)`` (eq. 49) for every point of the tracks through ``blocks``, stage after stage.

    ``V(l) = (1/|D|) Σ_{x ∈ D} ‖x^{(l)} − x̂^{(l)}‖₂ / ‖x^{(l)}‖₂``

    where ``D`` is the set of clean points, ``x^{(l)}`` the representation of ``x`` at track point ``l``
    (:func:`~pdenets.analysis.tracks.record_tracks`) and ``x̂^{(l)}`` that of its perturbed copy; ``V_r`` and
    ``V_a`` of "A Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the Wasserstein
    Space" (appendix 7.2) for random and adversarial perturbations. A point with ``x^{(l)} = 0`` contributes
    ``0`` when ``x̂^{(l)} = 0`` and ``inf`` otherwise. The representations are recorded ``batch_size`` points
    at a time, so memory stays bounded for wide convolutional stages.

    Args:
        model: any ``nn.Module``.
        clean: ``(m, ...)`` finite clean inputs ``x``.
        perturbed: ``(m, ...)`` perturbed inputs, row ``i`` the perturbed copy of ``clean[i]``.
        blocks: the blocks whose outputs form the tracks: module names, a module type (or tuple of types) or
            a predicate ``(name, module) -> bool`` (see :func:`~pdenets.analysis.tracks.select_blocks`).
        batch_size: number of points recorded at a time (default: ``256``).

    Returns:
        One float per track point, the ``n + 1`` points of every stage concatenated stage after stage
        (``l = 0`` is the input of a stage's first block).

    Raises:
        ValueError: if ``clean`` or ``perturbed`` is not a finite ``(m, ...)`` tensor or their shapes differ.

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Linear(8, 3))
        >>> x = torch.randn(20, 4)
        >>> variation_rates(net, x, x.clone(), blocks=["2"])
        [0.0, 0.0]
        >>> rates = variation_rates(net, x, x + 0.1, blocks=["2"])
        >>> len(rates), all(rate > 0 for rate in rates)
        (2, True)
    """
    _check(clean)
    _check(perturbed)
    if clean.shape != perturbed.shape:
        raise ValueError(
            f"clean and perturbed inputs differ in shape: {tuple(clean.shape)} vs {tuple(perturbed.shape)}"
        )
    sums: Optional[torch.Tensor] = None
    for start in range(0, clean.shape[0], batch_size):
        per_batch = []
        stages = zip(
            record_tracks(model, clean[start : start + batch_size], blocks=blocks, batch_size=batch_size),
            record_tracks(model, perturbed[start : start + batch_size], blocks=blocks, batch_size=batch_size),
        )
        for reference, noisy in stages:
            norms = reference.tracks.to(torch.float64).norm(dim=-1)
            changes = (reference.tracks.to(torch.float64) - noisy.tracks.to(torch.float64)).norm(dim=-1)
            ratio = torch.where(
                norms > 0,
                changes / torch.where(norms > 0, norms, torch.ones_like(norms)),
                torch.where(changes > 0, torch.full_like(norms, float("inf")), torch.zeros_like(norms)),
            )
            per_batch.append(ratio.sum(0))
        batch_sums = torch.cat(per_batch)
        sums = batch_sums if sums is None else sums + batch_sums
    assert sums is not None  # _check refused an empty batch: the loop ran
    return [float(value) for value in sums / clean.shape[0]]


@torch.no_grad()
def _accuracy(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, batch_size: int) -> float:
    device = _device(model)
    training = model.training
    model.eval()
    try:
        correct = sum(
            int(
                (
                    model(inputs[start : start + batch_size].to(device)).argmax(1).cpu()
                    == targets[start : start + batch_size].cpu()
                ).sum()
            )
            for start in range(0, inputs.shape[0], batch_size)
        )
    finally:
        model.train(training)
    return correct / inputs.shape[0]


def robustness_curve(
    model: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    levels: Sequence[float],
    *,
    attack: str = "gaussian",
    blocks: BlockSpec,
    seed: int = 0,
    batch_size: int = 256,
) -> Dict[str, Any]:
    """Accuracy and variation rates per noise level: ``{"attack", "levels", "accuracy", "variation"}``.

    ``levels`` are ``σ`` (``attack="gaussian"``, :func:`gaussian_noise`) or ``ε`` (``"fgsm"``, :func:`fgsm`);
    ``variation[i]`` lists ``V(l)`` (:func:`variation_rates`) along the tracks at ``levels[i]``. The Gaussian
    noise of every level is drawn from ``seed``. This reproduces the robustness curves of
    "A Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the Wasserstein Space" (appendix
    7.2).

    Args:
        model: classifier mapping ``(m, ...)`` inputs to ``(m, C)`` logits.
        inputs: ``(m, ...)`` finite clean points.
        targets: ``(m,)`` integer labels of ``inputs``.
        levels: noise levels ``σ`` or ``ε``, each finite and ``≥ 0``; at least one.
        attack: ``"gaussian"`` (random noise) or ``"fgsm"`` (adversarial) (default: ``"gaussian"``).
        blocks: the blocks whose outputs form the tracks: module names, a module type (or tuple of types) or
            a predicate ``(name, module) -> bool`` (see :func:`~pdenets.analysis.tracks.select_blocks`).
        seed: seed of the Gaussian noise, the same for every level (default: ``0``).
        batch_size: number of points per forward pass (default: ``256``).

    Returns:
        ``{"attack": str, "levels": [...], "accuracy": [...], "variation": [[...], ...]}``: one accuracy in
        ``[0, 1]`` and one list of variation rates per level.

    Raises:
        ValueError: if ``attack`` is unknown, ``levels`` is empty or holds a negative or infinite level, or
            ``inputs`` and ``targets`` are malformed.

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        >>> x, y = torch.randn(30, 4), torch.randint(0, 3, (30,))
        >>> curve = robustness_curve(net, x, y, [0.0, 0.5], blocks=["1"])
        >>> levels, rates = curve["levels"], curve["variation"]
        >>> levels, rates[0]
        ([0.0, 0.5], [0.0, 0.0])
    """
    if attack not in ATTACKS:
        raise ValueError(f"attack must be one of {ATTACKS}, got {attack!r}")
    _check(inputs, targets)
    levels = [_level(level, "levels") for level in levels]
    if not levels:
        raise ValueError("levels must hold at least one noise level")
    curve: Dict[str, Any] = {"attack": attack, "levels": levels, "accuracy": [], "variation": []}
    for level in levels:
        if attack == "gaussian":
            noisy = gaussian_noise(inputs, level, generator=torch.Generator().manual_seed(seed))
        else:
            noisy = fgsm(model, inputs, targets, level, batch_size=batch_size)
        curve["accuracy"].append(_accuracy(model, noisy, targets, batch_size))
        curve["variation"].append(variation_rates(model, inputs, noisy, blocks=blocks, batch_size=batch_size))
    return curve
