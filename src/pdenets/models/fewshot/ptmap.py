r"""PT-MAP (Hu, Gripon, Pateux, *Leveraging the Feature Distribution in Transfer-based Few-Shot Learning*,
2021).

1. Power transform of every feature, ``f ← sign(f)(|f| + ε)^β`` (``β = 0.5``; the paper's
   ``(f + ε)^β`` for the non-negative features of a ReLU backbone; optionally unit length after).
2. Class centres ``m_c`` start at the support means. Each of ``iterations`` steps computes the
   query–centre costs ``D_{ic} = ‖f_i − m_c‖²`` and the soft assignment of the queries by
   Sinkhorn's algorithm on ``exp(−λ D)`` with row sums 1 and column sums ``Q / C`` (the
   queries are assumed balanced over the classes; ``sinkhorn_iterations`` scalings), then
   moves every centre towards the assignment-weighted mean of support ∪ query,

    $$
        \mu_c = \frac{\sum_{i \in S} [y_i = c] f_i + \sum_{i \in Q} P_{ic} f_i}
                     {|S_c| + \sum_{i \in Q} P_{ic}}, \qquad m_c \leftarrow m_c + \alpha(\mu_c - m_c).
    $$

3. The final Sinkhorn assignment ``P`` (rows normalized) is the prediction.

Because the column sums are fixed, PT-MAP assumes every class has the same number of queries
(:attr:`PTMAP.assumes_balanced_queries`): on a task with unbalanced queries it moves some
queries to the wrong class on purpose. With fewer queries than classes no plan can give every
class ``Q / C`` of them but the uniform one (one query: ``1/C`` to every class, whatever the
costs); there PT-MAP returns nearest prototype, ``softmax_c(−λ ‖q_i − m_c‖²)`` on the features as
given (:meth:`~.base.FewShotBatch.nearest_prototype_proba`): the power transform's means can answer a
single query otherwise, and worse, on features it does not suit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from ..._checks import check_positive, check_positive_int, check_probability
from .base import FewShotBatch, FewShotMethod, register_method
from .preprocessing import unit_length

__all__ = ["PTMAP", "PTMAPSettings", "power_transform", "sinkhorn", "log_domain_sinkhorn", "distinct_points"]


@dataclass(frozen=True)
class PTMAPSettings:
    """Args:
    power: ``β`` of the power transform (default 0.5; 1 switches it off).
    epsilon: ``ε`` added before the power (default 1e-6).
    lam: ``λ``, the inverse temperature of the Sinkhorn kernel (default 10).
    alpha: centre update rate (default 0.2).
    iterations: centre updates (default 30).
    sinkhorn_iterations: Sinkhorn scalings per update (default 50).
    normalize: scale the transformed features to unit length (default False, as easyfsl; the
        official code also normalizes and centres, which erred 5.5 % instead of 4.25 % on the 20
        Lake runs with a 30-epoch Conv-4).
    """

    power: float = 0.5
    epsilon: float = 1e-6
    lam: float = 10.0
    alpha: float = 0.2
    iterations: int = 30
    sinkhorn_iterations: int = 50
    normalize: bool = False

    def __post_init__(self) -> None:
        check_positive(self.power, "power")
        check_positive(self.epsilon, "epsilon", allow_zero=True)
        check_positive(self.lam, "lam")
        check_probability(self.alpha, "alpha")
        check_positive_int(self.iterations, "iterations", minimum=0)
        check_positive_int(self.sinkhorn_iterations, "sinkhorn_iterations")


def power_transform(features: torch.Tensor, power: float = 0.5, epsilon: float = 1e-6) -> torch.Tensor:
    """``sign(f)(|f| + ε)^β`` elementwise; ``(…, M)`` → ``(…, M)``."""
    return features.sign() * (features.abs() + epsilon).pow(power)


#: the largest ``λ (max_c D_ic − min_c D_ic)`` of a row for which the scalings run on the kernel itself: its
#: entries, shifted so each row's largest is 1, then stay above ``e^{-600}`` (float64 reaches ``e^{-708}``)
EXP_DOMAIN_RANGE = 600.0


def sinkhorn(costs: torch.Tensor, lam: float, iterations: int) -> torch.Tensor:
    """Entropic transport plan ``(T, Q, C)`` of ``exp(−λ costs)`` with row sums 1 and column sums ``Q / C``,
    after ``iterations`` scalings (a column scaling, then a row scaling); the last is over rows, so every row
    sums to one exactly.

    The plan is ``diag(u) K diag(v)`` with ``K = exp(−λ costs)``, each row shifted so its largest entry is 1
    (a row's scale is the row scaling's to choose): the scalings are the vectors ``v = (Q/C) / Kᵀu`` and
    ``u = 1 / K v``, two products of ``Q × C`` a scaling, computed in float64 (NumPy on the CPU, where the
    tensors are small and torch's per-call cost would dominate). Where a row's ``λ`` times cost range passes
    :data:`EXP_DOMAIN_RANGE`, or the scalings do not stay finite, it runs in the log domain
    (:func:`log_domain_sinkhorn`), the same iterations on ``log P``.

    Examples:
        >>> import torch
        >>> costs = torch.rand(2, 12, 3, dtype=torch.float64)
        >>> plan = sinkhorn(costs, 5.0, 200)
        >>> rows, columns = plan.sum(2), plan.sum(1)
        >>> rows.allclose(torch.ones_like(rows)), columns.allclose(torch.full_like(columns, 4.0))
        (True, True)
        >>> torch.allclose(plan, log_domain_sinkhorn(costs, 5.0, 200))
        True
    """
    queries, ways = costs.shape[1], costs.shape[2]
    log_kernel = -lam * costs.detach().double()
    log_kernel = log_kernel - log_kernel.amax(2, keepdim=True)
    if not bool(torch.isfinite(log_kernel).all()) or -float(log_kernel.min()) > EXP_DOMAIN_RANGE:
        return log_domain_sinkhorn(costs, lam, iterations)
    kernel = log_kernel.exp()
    scalings = _numpy_scalings if costs.device.type == "cpu" else _torch_scalings
    plan = scalings(kernel, queries / ways, iterations)
    if not bool(torch.isfinite(plan).all()):
        return log_domain_sinkhorn(costs, lam, iterations)
    return plan.to(device=costs.device, dtype=costs.dtype)


def _torch_scalings(kernel: torch.Tensor, column: float, iterations: int) -> torch.Tensor:
    """``diag(u) K diag(v)`` after ``iterations`` column-then-row scalings of ``K`` ``(T, Q, C)``, starting
    from the row scaling of ``v = 1``."""
    rows = 1.0 / kernel.sum(2, keepdim=True)  # (T, Q, 1)
    columns = torch.ones_like(rows[:, : kernel.shape[2]])
    transposed = kernel.transpose(1, 2)
    for _ in range(iterations):
        columns = column / torch.bmm(transposed, rows)  # (T, C, 1)
        rows = 1.0 / torch.bmm(kernel, columns)
    return rows * kernel * columns.transpose(1, 2)


def _numpy_scalings(kernel: torch.Tensor, column: float, iterations: int) -> torch.Tensor:
    """:func:`_torch_scalings` in NumPy (a CPU kernel): the same products, a microsecond each."""
    kernel_ = kernel.numpy()
    transposed = np.ascontiguousarray(kernel_.transpose(0, 2, 1))
    rows = 1.0 / kernel_.sum(2, keepdims=True)
    columns = np.ones((kernel_.shape[0], kernel_.shape[2], 1))
    with np.errstate(all="ignore"):  # a scaling that leaves the floats is caught by the caller
        for _ in range(iterations):
            columns = column / (transposed @ rows)
            rows = 1.0 / (kernel_ @ columns)
        return torch.from_numpy(rows * kernel_ * columns.transpose(0, 2, 1))


def log_domain_sinkhorn(costs: torch.Tensor, lam: float, iterations: int) -> torch.Tensor:
    """:func:`sinkhorn`'s plan computed on ``log P`` (``logsumexp`` over rows and columns): any cost range,
    ``Q · C`` exponentials a scaling; the reference of the scalings' fast path."""
    queries, ways = costs.shape[1], costs.shape[2]
    log_kernel = -lam * costs
    log_column = torch.log(torch.tensor(queries / ways, dtype=costs.dtype, device=costs.device))
    log_plan = log_kernel - torch.logsumexp(log_kernel, dim=2, keepdim=True)
    for _ in range(iterations):
        log_plan = log_plan + (log_column - torch.logsumexp(log_plan, dim=1, keepdim=True))
        log_plan = log_plan - torch.logsumexp(log_plan, dim=2, keepdim=True)
    return log_plan.exp()


def distinct_points(points: torch.Tensor) -> torch.Tensor:
    """The number of distinct points of each task, ``(T, N, M)`` → ``(T,)``: rows compared through one fixed
    random projection in float64 (equal rows always fall together; distinct ones almost never do).

    Examples:
        >>> distinct_points(torch.tensor([[[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]]])).tolist()
        [2]
    """
    generator = torch.Generator().manual_seed(0)
    direction = torch.randn(points.shape[2], generator=generator, dtype=torch.float64).to(points.device)
    keys = (points.double() @ direction).sort(dim=1).values
    return 1 + (keys[:, 1:] != keys[:, :-1]).sum(1)


@register_method
class PTMAP(FewShotMethod):
    """Power transform + Sinkhorn-balanced MAP centre estimation (module docstring); ``(T, Q, C)``."""

    name = "pt-map"
    description = (
        "PT-MAP (Hu et al. 2021): power transform + Sinkhorn-balanced centres, among the best on balanced "
        "query sets; only when the queries are known to be balanced"
    )
    is_transductive = True
    settings_class = PTMAPSettings
    settings: PTMAPSettings
    assumes_balanced_queries = True

    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        settings = self.settings
        support_count = batch.support.shape[1]
        points = torch.cat([batch.support, batch.query], 1)
        points = power_transform(points, settings.power, settings.epsilon)
        if settings.normalize:
            points = unit_length(points, 2)
        support, query = points[:, :support_count], points[:, support_count:]
        onehot = F.one_hot(batch.support_labels, batch.ways).to(points.dtype)  # (T, S, C)
        centres = torch.bmm(onehot.transpose(1, 2), support) / onehot.sum(1)[..., None]
        if not batch.can_balance:  # nearest prototype, on the features as given: no transform to trust
            return batch.nearest_prototype_proba(2 * settings.lam)
        # a task of fewer distinct queries than classes cannot be balanced over them either (Sinkhorn's plan
        # would be uniform): that task, and it alone, is answered as nearest prototype
        degenerate = distinct_points(query) < batch.ways
        support_sums = torch.bmm(onehot.transpose(1, 2), support)
        for _ in range(settings.iterations):
            plan = sinkhorn(torch.cdist(query, centres).square(), settings.lam, settings.sinkhorn_iterations)
            weighted = support_sums + torch.bmm(plan.transpose(1, 2), query)
            means = weighted / (onehot.sum(1) + plan.sum(1))[..., None]
            centres = centres + settings.alpha * (means - centres)
        plan = sinkhorn(torch.cdist(query, centres).square(), settings.lam, settings.sinkhorn_iterations)
        if bool(degenerate.any()):
            nearest = batch.nearest_prototype_proba(2 * settings.lam)
            plan = torch.where(degenerate[:, None, None], nearest, plan)
        return plan
