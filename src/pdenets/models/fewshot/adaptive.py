r"""The default few-shot method: a method that assumes balanced queries where the queries look balanced, one
that assumes nothing elsewhere.

The methods that assume every class has the same number of queries (PT-MAP, TIM, BD-CSPN; marked † in
reports) gain most on such tasks — one query per class, 20-way 1-shot — and fall far below nearest
prototype where that is false. This method decides per task, from the queries it is given.

1. The free method (default :class:`~.ensemble.Ensemble`) answers every task, ``p^{free}`` ``(T, Q, C)``.
2. Its predicted classes ``ŷ_i = argmax_c p^{free}_{ic}`` count ``n_c`` queries per class, and Pearson's test
   of "every class equally likely" gives a p-value (below; ``Γ_Q`` the regularized upper incomplete gamma
   function).
3. Where the p-value is at least ``balance_level`` the queries look balanced and the task takes the
   balanced method's answer: PT-MAP below ``tim_from_shots`` shots per class, TIM from there on. Elsewhere,
   and on tasks whose ``Q`` is not a multiple of ``C`` (no class counts can be equal, e.g. fewer queries than
   classes), the free method's answer.

$$
    X^2 = \sum_{c=1}^{C} \frac{(n_c - Q/C)^2}{Q/C}, \qquad
    \text{p-value} = P\big(\chi^2_{C-1} \ge X^2\big) = \Gamma_Q\Big(\frac{C-1}{2}, \frac{X^2}{2}\Big).
$$

Hard counts, not the mean of the probabilities: the ensemble's probabilities are soft, and their mean sits
close to uniform whatever the queries (on sentence-embedding tasks with Dirichlet(2) class proportions the
median ``X²`` was 5.9 from the mean probabilities, 19.8 from the counts; 4 degrees of freedom). Under
exactly balanced queries only the free method's errors move the counts, so ``X²`` stays well below its
``χ²`` law there and the test accepts nearly every balanced task; tasks it accepts with unbalanced queries are
the nearly balanced ones, where forcing balance costs least (on Omniglot's Dirichlet(2) draws, which its 20
samples per character cap near balance, it still cost the default 2.96 points against the best method).
The test has little power with few queries per class: 39 queries of 20 classes, 1 to 3 each, pass it
(p ≈ 0.99), and forcing 1.95 per class then costs queries; that ``C`` does not divide ``Q`` says for sure that
the counts are not equal.

Why ``balance_level = 0.2`` and ``tim_from_shots = 5`` is measured in ``benchmarks/fewshot_adaptive.py``
(its docstring names the cells and the commands); docs/fewshot.md gives the tables. The method assumes
nothing of the query set as a whole (its class is not marked †): each answer from the balanced method was
preceded by a test its queries passed.

After :meth:`Adaptive.predict_proba`, :attr:`Adaptive.last_p_values` ``(T,)``,
:attr:`Adaptive.last_balanced` ``(T,)`` and :attr:`Adaptive.last_answered_by` say what the test found for
each task of the last call and which method answered it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union

import torch

from ..._checks import check_positive
from .base import FewShotBatch, FewShotMethod, canonical_method_name, method_from_name, register_method

__all__ = ["Adaptive", "AdaptiveSettings", "balance_p_values"]

Member = Union[str, FewShotMethod]


def balance_p_values(probabilities: torch.Tensor) -> torch.Tensor:
    """Pearson's χ² p-value per task that the predicted classes of ``probabilities`` ``(T, Q, C)`` come from
    equally likely classes (module docstring); ``(T,)``, float64, on the probabilities' device; 1 where
    ``C = 1``.

    Examples:
        >>> import torch
        >>> even = torch.eye(4).repeat(1, 5, 1)          # 20 queries, 5 predicted per class
        >>> skewed = torch.eye(4)[[0] * 17 + [1, 2, 3]][None]
        >>> balance_p_values(torch.cat([even, skewed])).tolist()[0]
        1.0
        >>> balance_p_values(skewed).item() < 1e-6
        True
    """
    if probabilities.dim() != 3:
        raise ValueError(f"probabilities must be (T, Q, C), got shape {tuple(probabilities.shape)}")
    tasks, queries, ways = probabilities.shape
    device = probabilities.device
    if ways == 1:
        return torch.ones(tasks, dtype=torch.float64, device=device)
    counts = torch.zeros(tasks, ways, dtype=torch.float64, device=device)
    ones = torch.ones(tasks, queries, dtype=torch.float64, device=device)
    counts.scatter_add_(1, probabilities.argmax(2), ones)
    expected = queries / ways
    statistic = ((counts - expected) ** 2 / expected).sum(1)
    degrees = torch.full_like(statistic, (ways - 1) / 2)
    return torch.special.gammaincc(degrees, statistic / 2)


@dataclass(frozen=True)
class AdaptiveSettings:
    """Args:
    free: the method for queries of unknown balance: a registered name or a method instance that does not
        assume balanced queries (default ``"ensemble"``).
    balanced: the balance-assuming method below ``tim_from_shots`` shots per class (default ``"pt-map"``).
    balanced_many_shots: the balance-assuming method from ``tim_from_shots`` shots per class on (default
        ``"tim"``).
    tim_from_shots: average support samples per class from which ``balanced_many_shots`` answers (default 5).
    balance_level: the smallest p-value of the balance test at which a task counts as balanced (default 0.2;
        0: every task with at least one query per class; 1: only tasks whose predicted counts are exactly
        equal).
    """

    free: Member = "ensemble"
    balanced: Member = "pt-map"
    balanced_many_shots: Member = "tim"
    tim_from_shots: float = 5.0
    balance_level: float = 0.2

    def __post_init__(self) -> None:
        for name in ("free", "balanced", "balanced_many_shots"):
            value = getattr(self, name)
            if not isinstance(value, (str, FewShotMethod)):
                raise TypeError(
                    f"{name} must be a registered method name or a method, got {type(value).__name__}"
                )
            object.__setattr__(self, name, canonical_method_name(value) if isinstance(value, str) else value)
        check_positive(self.tim_from_shots, "tim_from_shots", allow_zero=True)
        check_positive(self.balance_level, "balance_level", allow_zero=True)
        if self.balance_level > 1:
            raise ValueError(f"balance_level must be in [0, 1] (a p-value), got {self.balance_level}")
        if _resolve(self.free).assumes_balanced_queries:
            raise ValueError(
                f"the free method {_resolve(self.free).name!r} assumes balanced queries; it answers the "
                "tasks whose queries do not look balanced, so it must not"
            )


def _resolve(member: Member) -> FewShotMethod:
    return member if isinstance(member, FewShotMethod) else method_from_name(member)


@register_method
class Adaptive(FewShotMethod):
    """A balance-assuming method where the queries pass a balance test, the free method elsewhere (module
    docstring); ``(T, Q, C)``.

    Examples:
        >>> import torch
        >>> from pdenets.models.fewshot import Adaptive, FewShotBatch
        >>> centres = torch.randn(2, 3, 8) * 4
        >>> batch = FewShotBatch(centres, torch.arange(3).expand(2, -1),
        ...                      centres.repeat_interleave(4, 1) + torch.randn(2, 12, 8), 3)
        >>> method = Adaptive()
        >>> method.predict_proba(batch).sum(2).allclose(torch.ones(2, 12))
        True
        >>> method.last_balanced.tolist()   # four queries of each class: both tasks look balanced
        [True, True]
    """

    name = "adaptive"
    description = (
        "the default: PT-MAP (TIM from 5 shots) on tasks whose queries pass a balance test, the ensemble "
        "elsewhere; for queries and features of unknown kind"
    )
    is_transductive = True
    settings_class = AdaptiveSettings
    settings: AdaptiveSettings
    uses_prototypes = True

    #: the balance test's p-value per task of the last :meth:`predict_proba` call ``(T,)``
    last_p_values: Optional[torch.Tensor] = None
    #: which tasks of the last call took the balanced method's answer ``(T,)``
    last_balanced: Optional[torch.Tensor] = None
    #: the name of the method that answered each task of the last call
    last_answered_by: Tuple[str, ...] = ()

    def free_method(self) -> FewShotMethod:
        """The method for tasks whose queries do not look balanced."""
        return _resolve(self.settings.free)

    def balanced_method(self, shots: float) -> FewShotMethod:
        """The balance-assuming method for tasks of ``shots`` support samples per class (on average)."""
        settings = self.settings
        return _resolve(
            settings.balanced_many_shots if shots >= settings.tim_from_shots else settings.balanced
        )

    def decide(self, free_probabilities: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """The balance test's p-values ``(T,)`` on the free method's probabilities ``(T, Q, C)``, and which
        tasks take the balanced method's answer ``(T,)``: those that pass it, where ``Q`` is a multiple of
        ``C``."""
        p_values = balance_p_values(free_probabilities)
        queries, ways = free_probabilities.shape[1:]
        can_be_even = queries >= ways and queries % ways == 0
        return p_values, (p_values >= self.settings.balance_level) & can_be_even

    def reads_prototypes(self) -> bool:
        return self.free_method().reads_prototypes() or any(
            _resolve(member).reads_prototypes()
            for member in (self.settings.balanced, self.settings.balanced_many_shots)
        )

    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        free_method, balanced_method = self.free_method(), self.balanced_method(batch.shots)
        probabilities = free_method.predict_proba(batch)
        p_values, balanced = self.decide(probabilities)
        self.last_p_values, self.last_balanced = p_values, balanced
        self.last_answered_by = tuple(
            (balanced_method if took else free_method).name for took in balanced.tolist()
        )
        chosen = balanced.nonzero().flatten()
        if len(chosen) > 0:
            answers = balanced_method.predict_proba(batch.select(chosen))
            probabilities = probabilities.clone()
            probabilities[chosen.to(probabilities.device)] = answers.to(probabilities.dtype)
        return probabilities
