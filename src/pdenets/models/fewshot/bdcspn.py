r"""BD-CSPN (Liu, Song, Qin, *Prototype Rectification for Few-Shot Learning*, ECCV 2020), batched over tasks.

Two biases of the support prototypes ``m_c`` (support means) are reduced with the unlabelled queries:

* cross-class bias: the queries move by ``Δ = mean(support) − mean(query)`` of their task
  (:func:`~.preprocessing.cross_domain_shift`) — *for the rectification only*;
* intra-class bias: every point ``z`` of support ∪ shifted queries belongs to a class (its label on
  the support, its nearest prototype by cosine on the queries) and the prototypes become the
  weighted means of their members,

    $$
        \tilde m_c = \sum_{z \in c} w_z z, \qquad
        w_z = \frac{\exp(T\cos(z, m_c))}{\sum_{z' \in c} \exp(T\cos(z', m_c))} .
    $$

  With ``balanced_share`` (the default) the queries are assigned to the classes as balanced queries
  would be, every class at most its share ``⌊Q/C⌋`` of them (:func:`balanced_assignment`): the most
  similar query–class pair by cosine first, so a query whose nearest class has taken ``⌊Q/C⌋`` more
  similar ones joins its next class. BD-CSPN assumes balanced queries, which give every class ``Q/C`` of
  them; without the share a prototype that many queries are nearest to (a hub, common where the classes
  overlap) is rectified mostly by other classes' queries, and a class that no query is nearest to is not
  rectified at all.

The queries themselves (not shifted) are then classified by cosine similarity to the rectified
prototypes, ``p(c | x) = softmax_c(T cos(x, \tilde m_c))``; ``T = 1`` by default (easyfsl's), the paper's
ε = 10 in the preset ``"paper"``.

The shift assumes the queries hold the classes in the support's proportions: with unbalanced
queries ``Δ`` also carries ``Σ_c (π^S_c − π^Q_c) m_c`` and moves every query towards the classes the
queries lack (:attr:`BDCSPN.assumes_balanced_queries`). A query set smaller than the number of
classes cannot hold them in those proportions, nor rectify a prototype of every class: there BD-CSPN
returns nearest prototype (:meth:`~.base.FewShotBatch.nearest_prototype_proba`; the shift alone would
put a single query on the support mean). ``shift=False`` drops the shift everywhere.

The default ``T = 1`` is easyfsl's: its ``BDCSPN`` weighs the members by ``exp(cos(z, m_c))``, and the preset
``"easyfsl"`` (``T = 1`` without the balanced share, every pseudo-labelled query a member) gives its
predictions (``python benchmarks/fewshot_peers.py`` compares them task by task). The balanced share is what
the default adds to it; the paper's ``T = 10`` (preset ``"paper"``) weighs the members nearest the mean far
more. What each changes, measured on four feature kinds, is in docs/fewshot.md (*BD-CSPN's assignment*), from
the command named there. The probabilities are flatter with ``T = 1`` (the same ``T`` makes the final
softmax); the predictions are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch.nn import functional as F

from ..._checks import check_positive
from .base import FewShotBatch, FewShotMethod, register_method
from .preprocessing import RECTIFICATION_TEMPERATURE, cross_domain_shift, prototypes, unit_length

__all__ = ["BDCSPN", "BDCSPNSettings", "balanced_assignment", "bdcspn_prototypes"]


@dataclass(frozen=True)
class BDCSPNSettings:
    """Args:
    temperature: ``T`` of the cosine weights and of the final softmax (default 1, easyfsl's; the paper's 10
        in the preset ``"paper"``).
    shift: reduce the cross-class bias before rectifying (default True).
    balanced_share: every class is rectified by at most ``⌊Q/C⌋`` queries, the most similar query–class pair
        first (:func:`balanced_assignment`; default True; False in the presets ``"easyfsl"`` and
        ``"paper"``: every query rectifies its nearest prototype's class).
    """

    temperature: float = 1.0
    shift: bool = True
    balanced_share: bool = True

    def __post_init__(self) -> None:
        check_positive(self.temperature, "temperature")


def balanced_assignment(scores: torch.Tensor, capacity: int) -> torch.Tensor:
    """Each query's class ``(T, Q)`` (``-1``: none) when every class takes at most ``capacity`` queries: the
    stable matching of ``scores (T, Q, C)`` — the query–class pair of highest score first, as a greedy
    assignment in descending order of the scores, which is the only stable one when no two scores tie.

    Computed by deferred acceptance, batched over tasks: every unassigned query proposes to its best class
    that has not refused it; a class keeps its ``capacity`` best of the queries it holds and those
    proposing, and refuses the rest. ``max(0, Q − C · capacity)`` queries stay unassigned.

    Examples:
        >>> scores = torch.tensor([[[0.9, 0.8], [0.7, 0.1], [0.6, 0.5]]])  # all three prefer class 0
        >>> balanced_assignment(scores, 1).tolist()  # the best pair (0, 0) first, then (2, 1)
        [[0, -1, 1]]
    """
    tasks, queries, ways = scores.shape
    assigned = torch.full((tasks, queries), -1, dtype=torch.long, device=scores.device)
    if capacity <= 0:
        return assigned
    open_scores = scores.clone()  # a refused pair's score becomes -inf
    refusals = torch.zeros(tasks, queries, dtype=torch.long, device=scores.device)
    live = torch.arange(tasks, device=scores.device)  # the tasks with a query still proposing
    for _ in range(queries * ways + 1):  # every round but the last refuses a pair or assigns every proposer
        proposing = (assigned[live] < 0) & (refusals[live] < ways)
        still = proposing.any(1)
        if not bool(still.any()):
            break
        live, proposing = live[still], proposing[still]
        held = assigned[live]
        candidate = torch.where(proposing, open_scores[live].argmax(2), held)  # (L, Q); -1: none
        # each class's queries in a row of its own (row 0: none), by score; each class keeps its best
        rows = torch.full(
            (len(live), ways + 1, queries), float("-inf"), dtype=scores.dtype, device=scores.device
        )
        score = scores[live].gather(2, candidate.clamp(min=0).unsqueeze(2)).squeeze(2)
        rows.scatter_(1, (candidate + 1).unsqueeze(1), score.unsqueeze(1))
        best = rows[:, 1:].topk(min(capacity, queries), dim=2).indices  # (L, C, capacity)
        kept = torch.zeros(len(live), ways + 1, queries, dtype=torch.bool, device=scores.device)
        kept[:, 1:].scatter_(2, best, True)
        kept = kept.gather(1, (candidate + 1).unsqueeze(1)).squeeze(1) & (candidate >= 0)
        refused = (candidate >= 0) & ~kept
        task, query = refused.nonzero(as_tuple=True)
        open_scores[live[task], query, candidate[task, query]] = float("-inf")
        refusals[live] += refused.long()
        assigned[live] = torch.where(kept, candidate, -1)
    return assigned


def bdcspn_prototypes(
    support: torch.Tensor,
    support_labels: torch.Tensor,
    query: torch.Tensor,
    ways: int,
    temperature: float = RECTIFICATION_TEMPERATURE,
    share: Optional[int] = None,
) -> torch.Tensor:
    """The rectified prototypes ``(T, C, M)`` of the module docstring from support ``(T, S, M)`` (labels ``(T,
    S)``) and the (already shifted) queries ``(T, Q, M)``. ``share``: every class takes at most this many
    queries, assigned by :func:`balanced_assignment` of the cosines (``None``: every query joins its
    nearest prototype's class).

    Examples:
        >>> support = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
        >>> query = torch.tensor([[[1.0, 0.1], [1.0, 0.2], [0.1, 1.0]]])  # two nearest to class 0
        >>> bdcspn_prototypes(support, torch.tensor([[0, 1]]), query, 2, 1.0, share=1)[0, 0, 1].item() < 0.06
        True
    """
    means = prototypes(support, support_labels, ways)
    points = torch.cat([support, query], 1)  # (T, N, M)
    cosine = torch.bmm(unit_length(points, 2), unit_length(means, 2).transpose(1, 2))  # (T, N, C)
    query_cosine = cosine[:, support.shape[1] :]  # (T, Q, C)
    if share is None:  # every query joins its nearest prototype's class
        classes = query_cosine.argmax(2)
    else:  # every class its `share` queries, the most similar query-class pair first
        classes = balanced_assignment(query_cosine, share)
    member = torch.cat(
        [
            F.one_hot(support_labels, ways).bool(),
            F.one_hot(classes.clamp(min=0), ways).bool() & (classes >= 0)[..., None],
        ],
        1,
    )
    # softmax over the members of each class: exp(T cos) normalized column by column
    scores = (temperature * cosine).masked_fill(~member, float("-inf"))
    weights = torch.softmax(scores, dim=1).nan_to_num(
        0.0
    )  # every class has its support members: no empty column
    return torch.bmm(weights.transpose(1, 2), points)


@register_method
class BDCSPN(FewShotMethod):
    """Prototype rectification (module docstring); ``(T, Q, C)`` probabilities.

    Examples:
        >>> import torch
        >>> batch = FewShotBatch(torch.eye(2)[None], torch.tensor([[0, 1]]), torch.tensor([[[0.9, 0.1]]]), 2)
        >>> BDCSPN().predict_proba(batch).argmax(2).tolist()
        [[0]]
    """

    name = "bd-cspn"
    description = (
        "prototype rectification by the queries (BD-CSPN, Liu et al. 2020): fast, for query sets known to "
        "be balanced"
    )
    is_transductive = True
    settings_class = BDCSPNSettings
    settings: BDCSPNSettings
    assumes_balanced_queries = True
    presets = {
        "paper": {"temperature": RECTIFICATION_TEMPERATURE, "balanced_share": False},
        "easyfsl": {"temperature": 1.0, "balanced_share": False},
    }

    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        settings = self.settings
        if not batch.can_balance:  # too few queries to rectify by: nearest prototype
            return batch.nearest_prototype_proba(settings.temperature)
        shifted = cross_domain_shift(batch.support, batch.query) if settings.shift else batch.query
        share = batch.queries // batch.ways if settings.balanced_share else None
        centres = bdcspn_prototypes(
            batch.support, batch.support_labels, shifted, batch.ways, settings.temperature, share
        )
        cosine = torch.bmm(unit_length(batch.query, 2), unit_length(centres, 2).transpose(1, 2))
        return torch.softmax(settings.temperature * cosine, dim=2)
