r"""α-TIM (Veilleux, Boudiaf, Piantanida, Ben Ayed, *Realistic evaluation of transductive few-shot learning*,
NeurIPS 2021), batched over tasks.

TIM's classifier, ``p_{ic} = softmax_c(−τ/2 ‖z_i − w_c‖²)`` with ``w_c`` starting at the support
means, trained by Adam on

$$
    \mathrm{CE}(\text{support})
    - \big( H_\alpha(\bar p) - \tfrac{1}{Q}\textstyle\sum_{i \in Q} H_\alpha(p_i) \big),
    \qquad H_\alpha(p) = \frac{1 - \sum_c p_c^\alpha}{\alpha - 1},
$$

Tsallis α-entropies in place of Shannon's (``α → 1`` gives TIM with weights ``(1, 1, 1)``). The
marginal term still rewards spread predictions, but its gradient in a class proportion,
``−α \bar p_c^{α−1}/(α − 1)``, vanishes as the proportion shrinks (Shannon's, ``−(1 + log \bar p_c)``,
grows without bound), so classes that are rare among the queries are filled up with queries of
other classes far less than by TIM. The pull towards spread predictions remains, though, and query
sets far from balance still break it (:attr:`AlphaTIM.assumes_balanced_queries`): on 5-way 1-shot
Omniglot tasks with 12 queries of one class and one of each other it lost 3.4 points to nearest
prototype (TIM: 42), on Dirichlet(2) query counts it gained 1.7. With fewer queries than classes
(:attr:`~.base.FewShotBatch.can_balance` false) it returns nearest prototype, as TIM does.

Defaults are the paper's: ``τ = 15``, equal weights, Adam at ``10⁻⁴`` for 1,000 iterations, and the
tuned ``α``: 2 for one shot, 7 for five or more, 5 in between (``alpha=None``) — except on tasks of fewer
than 2 queries per class on average, where ``α = 1.2``. The paper tuned ``α`` on 15 queries per class; with
one query per class its ``α = 2`` fell below nearest prototype on the 20 Lake runs (−1.50 points with a
Conv-4 after 1 epoch, −0.50 after 10), and ``α = 1.2`` (closer to TIM, whose balance such tasks have) was
above it (+1.25 and +5.50), as on 200 tasks of one query per class of Omniglot features (10 epochs: +3.80
at 5-way, +3.97 at 20-way, against +0.60 and +0.25) (``benchmarks/fewshot_peers.py``, docs/fewshot.md,
"Weak backbones"). ``paper_alpha=True`` (the preset ``paper``) keeps the paper's ``α`` there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from ..._checks import check_positive, check_positive_int
from .base import FewShotBatch, FewShotMethod, register_method
from .tim import _log_probabilities, fit_class_weights

__all__ = ["AlphaTIM", "AlphaTIMSettings", "tsallis_entropy"]

#: below this many queries per class on average, ``α = 1.2`` (module docstring)
FEW_QUERIES_PER_CLASS = 2


@dataclass(frozen=True)
class AlphaTIMSettings:
    """Args:
    alpha: ``α > 1`` of the entropies (``None``, default: 2 for one shot, 7 for five or more, 5 in between;
        1.2 below 2 queries per class unless ``paper_alpha``).
    paper_alpha: with ``alpha=None``, the paper's ``α`` whatever the queries per class (default False; the
        preset ``paper``).
    temperature: ``τ`` (default 15).
    iterations: Adam steps (default 1000); lr: Adam's learning rate (default 1e-4).
    """

    alpha: Optional[float] = None
    paper_alpha: bool = False
    temperature: float = 15.0
    iterations: int = 1000
    lr: float = 1e-4

    def __post_init__(self) -> None:
        if self.alpha is not None:
            check_positive(self.alpha, "alpha")
            if self.alpha <= 1:
                raise ValueError(f"alpha must be > 1 (alpha -> 1 is TIM's Shannon entropy), got {self.alpha}")
        check_positive(self.temperature, "temperature")
        check_positive_int(self.iterations, "iterations", minimum=0)
        check_positive(self.lr, "lr")


def tsallis_entropy(probabilities: torch.Tensor, alpha: float) -> torch.Tensor:
    """``(1 − Σ_c p_c^α)/(α − 1)`` over the last dimension."""
    return (1 - probabilities.clamp_min(0).pow(alpha).sum(-1)) / (alpha - 1)


@register_method
class AlphaTIM(FewShotMethod):
    """α-TIM (module docstring); ``(T, Q, C)`` probabilities.

    Examples:
        >>> import torch
        >>> batch = FewShotBatch(torch.eye(2)[None], torch.tensor([[0, 1]]), torch.tensor([[[0.9, 0.1]]]), 2)
        >>> AlphaTIM(iterations=10).predict_proba(batch).argmax(2).tolist()
        [[0]]
    """

    name = "alpha-tim"
    description = (
        "TIM with α-entropies (Veilleux et al. 2021): for queries whose class balance is unknown and mildly "
        "skewed"
    )
    is_transductive = True
    settings_class = AlphaTIMSettings
    settings: AlphaTIMSettings
    assumes_balanced_queries = True
    presets = {"paper": {"paper_alpha": True}}

    def alpha(self, batch: FewShotBatch) -> float:
        """``α`` for this batch's shots and queries per class (module docstring) unless set."""
        if self.settings.alpha is not None:
            return self.settings.alpha
        if not self.settings.paper_alpha and batch.queries < FEW_QUERIES_PER_CLASS * batch.ways:
            return 1.2
        return 2.0 if batch.shots <= 1 else (7.0 if batch.shots >= 5 else 5.0)

    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        settings, alpha = self.settings, self.alpha(batch)

        def loss(support_log: torch.Tensor, query_log: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
            query_probabilities = query_log.exp()
            cross_entropy = -(onehot * support_log).sum(2).mean(1)
            marginal = tsallis_entropy(query_probabilities.mean(1), alpha)
            conditional = tsallis_entropy(query_probabilities, alpha).mean(1)
            return cross_entropy - (marginal - conditional)

        if not batch.can_balance:
            return batch.nearest_prototype_proba(settings.temperature)
        weights = fit_class_weights(
            batch, loss, temperature=settings.temperature, lr=settings.lr, iterations=settings.iterations
        )
        return _log_probabilities(batch.query, weights, settings.temperature).exp()
