"""The 18-parameter networks of the synthetic experiments of "Diffusion Mechanism in Residual Neural Network:
Theory and Applications" (§5.1 and Appendix E.1), their settings per set, and what the paper's scripts print.

The network is ``x + FC2 ReLU FC1 x → r diffusion steps → FC3`` on 2-D points; ``"diff-resnet"`` takes the
``r`` diffusion steps on the kNN Gaussian graph of its batch, ``"resnet"`` none (:func:`synthetic_network`).
:data:`TABLE4` holds the paper's weights, diffusion and learning rate per set; :data:`PAPER_SCRIPT_REFERENCE`
the seeds of the authors' scripts and the correct predictions they print after 20 steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, cast

from .._checks import unknown_name
from .._settings import setting
from .registry import create_model

if TYPE_CHECKING:
    from .diffresnet import DiffResNet

__all__ = ["SyntheticHyperparameters", "TABLE4", "PAPER_SCRIPT_REFERENCE", "VARIANTS", "synthetic_network"]


@dataclass
class SyntheticHyperparameters:
    """Weights, diffusion and learning rate of one set (Table 4).

    Args:
        n_top: neighbours per point, the point itself included (default: ``25``).
        sigma: width of the Gaussian kernel (default: ``0.5``).
        step_size: diffusion step size ``γ`` (default: ``1.0``).
        num_steps: diffusion steps ``r`` of Diff-ResNet (default: ``60``).
        lr: SGD learning rate (default: ``1.0``).

    Examples:
        >>> TABLE4["spiral"].num_steps, TABLE4["spiral"].lr
        (900, 0.8)
    """

    n_top: int = setting(25, "neighbours per point, self included")
    sigma: float = setting(0.5, "Gaussian kernel width")
    step_size: float = setting(1.0, "diffusion step size gamma")
    num_steps: int = setting(60, "diffusion steps r")
    lr: float = setting(1.0, "SGD learning rate")


#: Table 4 (and E.1: lr 1.0, spiral 0.8).
TABLE4: Dict[str, SyntheticHyperparameters] = {
    "moon": SyntheticHyperparameters(n_top=25, sigma=0.5, step_size=1.0, num_steps=60, lr=1.0),
    "circle": SyntheticHyperparameters(n_top=50, sigma=0.5, step_size=1.0, num_steps=200, lr=1.0),
    "spiral": SyntheticHyperparameters(n_top=25, sigma=0.5, step_size=1.0, num_steps=900, lr=0.8),
}

#: The paper scripts' seeds and their output (correct of 1000 after 20 steps): without → with diffusion.
PAPER_SCRIPT_REFERENCE: Dict[str, Dict[str, int]] = {
    "moon": {"seed": 40, "resnet": 877, "diff-resnet": 1000},
    "circle": {"seed": 42, "resnet": 516, "diff-resnet": 1000},
    "spiral": {"seed": 42, "resnet": 524, "diff-resnet": 1000},
}

#: Result names of the two networks (without, then with diffusion) and the registry model behind each.
VARIANTS = ("resnet", "diff-resnet")
_MODEL = {"resnet": "no-diff-resnet", "diff-resnet": "diff-resnet"}


def synthetic_network(variant: str, hyperparameters: SyntheticHyperparameters) -> DiffResNet:
    """The 18-parameter network of ``variant``; only Diff-ResNet takes the diffusion steps of
    ``hyperparameters``.

    Args:
        variant: ``"resnet"`` (no diffusion) or ``"diff-resnet"`` (one of :data:`VARIANTS`).
        hyperparameters: the set's settings; ``num_steps`` and ``step_size`` shape the diffusion.

    Returns:
        A freshly initialized network (from the current torch seed) taking 2-D points and their weights.

    Raises:
        UnknownNameError: ``variant`` is not one of :data:`VARIANTS` (the message names the closest).

    Examples:
        >>> net = synthetic_network("diff-resnet", TABLE4["moon"])
        >>> sum(p.numel() for p in net.parameters()), net.num_steps
        (18, 60)
    """
    if variant not in _MODEL:
        raise unknown_name("synthetic variant", variant, list(_MODEL))
    num_steps = hyperparameters.num_steps if variant == "diff-resnet" else 0
    # both registered names build a DiffResNet ("no-diff-resnet" with num_steps=0)
    return cast(
        "DiffResNet",
        create_model(
            _MODEL[variant],
            in_features=2,
            num_classes=2,
            num_steps=num_steps,
            step_size=hyperparameters.step_size,
        ),
    )
