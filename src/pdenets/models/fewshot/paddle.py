r"""PADDLE (Martin, Boudiaf, Chouzenoux, Pesquet, Ben Ayed, *Towards Practical Few-shot Query Sets:
Transductive Minimum Description Length Inference*, NeurIPS 2022), batched over tasks.

Soft assignments ``u_i`` of the queries, class centres ``w_c`` and the class proportions
``\hat π_c = \frac{1}{Q}\sum_i u_{ic}`` minimise a K-means-like objective plus a description-length
penalty on the proportions,

$$
    \frac{τ}{2}\Big(\sum_{i \in S} \lVert z_i - w_{y_i} \rVert^2 + \sum_{i \in Q} \sum_c u_{ic}
    \lVert z_i - w_c \rVert^2\Big) + \sum_{i \in Q} \sum_c u_{ic} \log u_{ic}
    - λ \sum_c \hat π_c \log \hat π_c ,
$$

which *lowers* the entropy of the proportions: classes the queries do not hold lose their share,
so the method neither assumes balanced queries nor that every class is present. Block
minimisation (the concave penalty linearised at the current proportions) alternates, from
``w`` = support means and ``v = 0``,

$$
    u_{ic} = \operatorname{softmax}_c\Big(-\frac{τ}{2}\lVert z_i - w_c\rVert^2 + \frac{λ}{Q} v_c\Big),\quad
    v_c = \log(\hat π_c + 10^{-6}) + 1,\quad
    w_c = \frac{\sum_{i \in S_c} z_i + \sum_{i \in Q} u_{ic} z_i}{|S_c| + \sum_{i \in Q} u_{ic}} .
$$

With ``λ = Q`` (the paper's setting, the preset ``paper``) the assignment step is the E-step of a Gaussian
mixture with learned proportions ``u_{ic} ∝ \hat π_c e^{−τ‖z_i − w_c‖²/2}``, and the method has no
hyperparameter left but ``τ``, the inverse variance of the mixture's components. The default weighs the
proportions by the queries beyond one per class, ``λ = Q − C``: with one query per class (``Q = C``) they
say nothing a uniform prior does not, and with ``λ = Q`` PADDLE dropped classes such tasks hold. On the 20
Lake runs (one query per class) it fell 1.00 point below nearest prototype with a Conv-4 after 3 epochs and
3.25 after 1 epoch; with ``Q − C`` it is 1.25 and 0.25 above; on 20-way tasks of one query per class
(Omniglot, 10 epochs, 200 tasks) −0.20 became +1.42 (``benchmarks/fewshot_peers.py``, docs/fewshot.md, "Weak
backbones"). With 15 queries per class ``λ`` is 14/15 of the paper's. The authors run it
on min-max-scaled raw features (``τ = 1`` there, their squared distances being large); here ``τ``
is set per task relative to the spread of its support prototypes, ``τ = κ / \bar d^2`` with ``\bar d^2``
the mean squared distance between two of them, so any feature scale reads the same. ``κ`` matters:
too soft a mixture (``κ ≤ 20``) merges classes — on 5-way Omniglot tasks accuracy fell to 64 % at
``κ = 10`` — and too hard a one follows the prototypes. ``κ = 50`` was the best on the base classes
of the Omniglot features and on synthetic clusters (50–60 alike), never below ``κ = 30``. 100 iterations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch.nn import functional as F

from ..._checks import check_positive, check_positive_int
from .base import FewShotBatch, FewShotMethod, register_method
from .preprocessing import _power_of_two

__all__ = ["PADDLE", "PADDLESettings"]


@dataclass(frozen=True)
class PADDLESettings:
    """Args:
    lam: ``λ``, the weight of the proportions' description length (``None``, default: ``Q − C``, the queries
        beyond one per class; with ``paper_lam`` ``Q``, the paper's).
    paper_lam: with ``lam=None``, ``λ = Q`` as in the paper (default False; the preset ``paper``).
    temperature: ``κ``, the inverse variance of the mixture relative to the prototypes' spread,
        ``τ = κ / d̄²`` (default 50).
    iterations: block-minimisation rounds (default 100).
    """

    lam: Optional[float] = None
    paper_lam: bool = False
    temperature: float = 50.0
    iterations: int = 100

    def __post_init__(self) -> None:
        if self.lam is not None:
            check_positive(self.lam, "lam", allow_zero=True)
        check_positive(self.temperature, "temperature")
        check_positive_int(self.iterations, "iterations", minimum=0)


@register_method
class PADDLE(FewShotMethod):
    """PADDLE (module docstring); ``(T, Q, C)`` soft assignments.

    Examples:
        >>> import torch
        >>> batch = FewShotBatch(torch.eye(2)[None], torch.tensor([[0, 1]]), torch.tensor([[[0.9, 0.1]]]), 2)
        >>> PADDLE().predict_proba(batch).argmax(2).tolist()
        [[0]]
    """

    name = "paddle"
    description = (
        "PADDLE (Martin et al. 2022): estimates which classes the queries hold, for many classes of which "
        "few are present; assumes no balance"
    )
    is_transductive = True
    settings_class = PADDLESettings
    settings: PADDLESettings
    presets = {"paper": {"paper_lam": True}}

    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        settings = self.settings
        # an exact power-of-two rescaling of the task: its squared distances neither overflow nor underflow,
        # and τ (scaled by the prototypes' spread) makes the result the same at any magnitude
        exact = _power_of_two(torch.cat([batch.support, batch.query], 1), (1, 2))
        support, query = batch.support / exact, batch.query / exact
        if settings.lam is not None:
            factor = settings.lam / batch.queries
        else:  # the module docstring: Q (the paper's) or the queries beyond one per class
            factor = 1.0 if settings.paper_lam else max(batch.queries - batch.ways, 0) / batch.queries
        onehot = F.one_hot(batch.support_labels, batch.ways).to(support.dtype)  # (T, S, C)
        support_sums, support_counts = torch.bmm(onehot.transpose(1, 2), support), onehot.sum(1)
        centres = support_sums / support_counts[..., None]
        spread = torch.cdist(centres, centres).square().sum((1, 2)) / (batch.ways * (batch.ways - 1))
        # coinciding prototypes (no spread to measure): the absolute κ
        tau = torch.where(spread > 0, settings.temperature / spread.clamp_min(1e-30), settings.temperature)
        tau = tau[:, None, None]
        log_prior = torch.zeros_like(support_counts)  # λ/Q · v, (T, C)
        assignments = torch.softmax(-tau / 2 * torch.cdist(query, centres).square(), dim=2)
        for _ in range(settings.iterations):
            assignments = torch.softmax(
                -tau / 2 * torch.cdist(query, centres).square() + log_prior[:, None, :], dim=2
            )
            log_prior = factor * (torch.log(assignments.mean(1) + 1e-6) + 1)
            centres = (support_sums + torch.bmm(assignments.transpose(1, 2), query)) / (
                support_counts + assignments.sum(1)
            )[..., None]
        return assignments
