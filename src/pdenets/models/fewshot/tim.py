r"""TIM-GD (Boudiaf et al., *Information Maximization for Few-Shot Learning*, NeurIPS 2020), batched over
tasks.

A classifier with one weight vector per class, ``p_{ic} = softmax_c(−τ/2 ‖z_i − w_c‖²)``,
starts at the support means and minimises by gradient descent (Adam)

$$
    \lambda_{\mathrm{CE}}\,\mathrm{CE}(\text{support})
    - \lambda_{\mathrm{marg}}\, H\big(\bar p\big)
    + \lambda_{\mathrm{cond}}\, \frac{1}{Q}\sum_{i \in Q} H(p_i),
    \qquad \bar p = \frac{1}{Q} \sum_{i \in Q} p_i ,
$$

the support cross entropy, the marginal entropy of the query predictions (maximised: it
favours balanced classes) and their conditional entropy (minimised: confident predictions).
Defaults are the paper's TIM-GD, ``τ = 15``, weights ``(0.1, 1, 0.1)``, but Adam at ``10⁻³`` for 100
iterations instead of ``10⁻⁴`` for 1,000 (the preset ``paper``): the same path length (Adam's step is about
``lr`` per coordinate) in a tenth of the steps. Measured on balanced tasks (``benchmarks/fewshot_peers.py
--methods tim:preset=paper,tim:iterations=…``, docs/fewshot.md, "TIM's steps"), 100 steps at ``10⁻³`` were
within 0.1 point of 1,000 at ``10⁻⁴`` in every cell, while at ``10⁻⁴`` even 500 steps fell up to 1.3 points
short. Every task has its own weights; the losses are summed over tasks, and Adam is elementwise, so each
task follows the trajectory it would follow alone.

The marginal term assumes balanced queries (:attr:`TIM.assumes_balanced_queries`): with weights
``(0.1, 1, 0.1)`` it outweighs the support term tenfold, and after 1,000 steps at ``10⁻⁴`` (or 100 at
``10⁻³``) the predictions are as balanced as the queries allow, right or wrong. (easyfsl's ``TIM`` takes 50
steps at ``10⁻⁴`` with weights ``(1, 1, 0.1)`` on cosine logits: its prototypes move by at most ``5·10⁻³``
per coordinate, so it stays close to nearest prototype whatever the query set, and gains little on
balanced ones.) With fewer queries than classes the marginal is no estimate of the class
proportions — with one query it equals the query's own prediction, and maximising its entropy
makes the prediction uniform — so there TIM returns nearest prototype
(:meth:`~.base.FewShotBatch.nearest_prototype_proba`, its starting classifier when the prototypes are the
support means). :class:`~.alpha_tim.AlphaTIM` is the variant built for unbalanced queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import torch

from ..._checks import check_positive, check_positive_int
from ..optim import Adam
from .base import FewShotBatch, FewShotMethod, register_method

__all__ = ["TIM", "TIMSettings", "fit_class_weights", "TaskLoss", "LogitGradients"]


@dataclass(frozen=True)
class TIMSettings:
    """Args:
    temperature: ``τ`` (default 15).
    cross_entropy_weight, marginal_weight, conditional_weight: the loss weights (0.1, 1, 0.1).
    iterations: Adam steps (default 100; the paper's 1000); lr: Adam's learning rate (default 1e-3; the
        paper's 1e-4).
    """

    temperature: float = 15.0
    cross_entropy_weight: float = 0.1
    marginal_weight: float = 1.0
    conditional_weight: float = 0.1
    iterations: int = 100
    lr: float = 1e-3

    def __post_init__(self) -> None:
        check_positive(self.temperature, "temperature")
        for name in ("cross_entropy_weight", "marginal_weight", "conditional_weight"):
            check_positive(getattr(self, name), name, allow_zero=True)
        check_positive_int(self.iterations, "iterations", minimum=0)
        check_positive(self.lr, "lr")


def _log_probabilities(points: torch.Tensor, weights: torch.Tensor, temperature: float) -> torch.Tensor:
    """``log softmax_c(−τ/2 ‖z − w_c‖²)``, computed as ``log softmax_c(τ (z·w_c − ‖w_c‖²/2))`` (the ``‖z‖²``
    term is the same for every class): one batched product instead of a distance matrix."""
    logits = torch.baddbmm(weights.square().sum(2)[:, None, :], points, weights.transpose(1, 2), beta=-0.5)
    return torch.log_softmax(temperature * logits, dim=2)


#: ``loss(support_log, query_log, onehot) -> (T,)``: a task's loss from its log-probabilities ``(T, S, C)``,
#: ``(T, Q, C)`` and the one-hot support labels ``(T, S, C)``.
TaskLoss = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


#: ``gradients(support_log, query_log, onehot) -> (G_support, G_query)``: the gradients of a :data:`TaskLoss`,
#: summed over tasks, with respect to the scaled logits ``τ (z·w_c − ‖w_c‖²/2)`` whose log-softmax the
#: log-probabilities are: a loss's gradient in closed form, for :func:`fit_class_weights` to step without
#: autograd.
LogitGradients = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Tuple[torch.Tensor, torch.Tensor]]


def fit_class_weights(
    batch: FewShotBatch,
    loss: TaskLoss,
    *,
    temperature: float,
    lr: float,
    iterations: int,
    gradients: Optional[LogitGradients] = None,
) -> torch.Tensor:
    """One weight vector per class and task ``(T, C, M)``, from the support means, after ``iterations`` Adam
    steps on the sum over tasks of ``loss`` (TIM and α-TIM); probabilities ``softmax_c(−τ/2 ‖z − w_c‖²)``.

    With ``gradients`` (the loss's, in closed form) the steps take the weights' gradient from them,
    ``∇w_c = τ Σ_i G_{ic} (z_i − w_c)`` over support and query points, without autograd; the same steps
    up to round-off."""
    support, query = batch.support.detach(), batch.query.detach()
    onehot = torch.nn.functional.one_hot(batch.support_labels, batch.ways).to(support.dtype)
    weights = torch.bmm(onehot.transpose(1, 2), support) / onehot.sum(1)[..., None]
    if gradients is not None:
        optimizer = Adam([weights], lr=lr)
        for _ in range(iterations):
            support_grad, query_grad = gradients(
                _log_probabilities(support, weights, temperature),
                _log_probabilities(query, weights, temperature),
                onehot,
            )
            moved = torch.bmm(support_grad.transpose(1, 2), support).baddbmm_(
                query_grad.transpose(1, 2), query
            )
            weights.grad = moved.sub_(weights * (support_grad.sum(1) + query_grad.sum(1))[..., None]).mul_(
                temperature
            )
            optimizer.step()
        weights.grad = None
        return weights
    weights.requires_grad_()
    optimizer = Adam([weights], lr=lr)
    with torch.enable_grad():
        for _ in range(iterations):
            total = loss(
                _log_probabilities(support, weights, temperature),
                _log_probabilities(query, weights, temperature),
                onehot,
            ).sum()
            optimizer.zero_grad()
            total.backward()
            optimizer.step()
    return weights.detach()


@register_method
class TIM(FewShotMethod):
    """Transductive information maximization, gradient-descent version (module docstring); ``(T, Q, C)``."""

    name = "tim"
    description = (
        "TIM (Boudiaf et al. 2020): transductive information maximization, among the best on balanced query"
        " sets; only when the queries are known to be balanced"
    )
    is_transductive = True
    settings_class = TIMSettings
    settings: TIMSettings
    assumes_balanced_queries = True
    presets = {"paper": {"iterations": 1000, "lr": 1e-4}}

    def loss(self, support_log: torch.Tensor, query_log: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
        """The TIM objective of every task ``(T,)`` (module docstring)."""
        settings = self.settings
        query_probabilities = query_log.exp()
        cross_entropy = -(onehot * support_log).sum(2).mean(1)
        marginal = query_probabilities.mean(1)
        marginal_entropy = -(marginal * torch.log(marginal.clamp_min(1e-12))).sum(1)
        conditional_entropy = -(query_probabilities * query_log).sum(2).mean(1)
        return (
            settings.cross_entropy_weight * cross_entropy
            - settings.marginal_weight * marginal_entropy
            + settings.conditional_weight * conditional_entropy
        )

    def logit_gradients(
        self, support_log: torch.Tensor, query_log: torch.Tensor, onehot: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """:meth:`loss`'s gradients (summed over tasks) with respect to the scaled logits
        (:data:`LogitGradients`): with ``p`` the probabilities and ``p̄`` the queries' mean,
        ``λ_CE (p − y)/S`` on the support, and on the queries the softmax's backward,
        ``p_{ic} (g_{ic} − Σ_k p_{ik} g_{ik})``, of ``g_{ic} = (λ_marg log p̄_c − λ_cond log p_{ic})/Q`` (the
        derivatives' ``+ 1`` terms are the same for every class and drop out; a marginal below the clamp of
        :meth:`loss`, ``10⁻¹²``, moves the answer by less than that)."""
        settings = self.settings
        support, queries = support_log.shape[1], query_log.shape[1]
        support_grad = (support_log.exp() - onehot).mul_(settings.cross_entropy_weight / support)
        query_probabilities = query_log.exp()
        log_marginal = torch.log(query_probabilities.mean(1).clamp_min(1e-12))
        upstream = (settings.marginal_weight / queries) * log_marginal[:, None, :] - (
            settings.conditional_weight / queries
        ) * query_log
        query_grad = query_probabilities * (upstream - (query_probabilities * upstream).sum(2, keepdim=True))
        return support_grad, query_grad

    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        settings = self.settings
        if not batch.can_balance:
            return batch.nearest_prototype_proba(settings.temperature)
        weights = fit_class_weights(
            batch,
            self.loss,
            temperature=settings.temperature,
            lr=settings.lr,
            iterations=settings.iterations,
            gradients=self.logit_gradients,
        )
        return _log_probabilities(batch.query, weights, settings.temperature).exp()
