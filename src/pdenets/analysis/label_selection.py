r"""Which items to label next: criteria that rank a model's unlabelled items for a labelling budget.

With few labels, the next ones matter more than any setting. Each criterion picks ``B`` of the candidate
items (those without a label) from the model's class probabilities $p_i$ and, for the graph-aware one, from
how the model spreads a score over the graph (for a Diff-ResNet $A^r$, $A = I - \gamma L$: a label at item
$j$ changes the scores $s_j$ that reach item $i$ by $(A^r)_{ij}$).

- ``uncertainty``: the candidates of smallest margin between their two most probable classes,
  $u_i = 1 - (p_{i(1)} - p_{i(2)})$ largest first (margin sampling: what uncertainty queries of
  active-learning libraries do on a supervised model).
- ``coverage``: greedy, graph-aware. Every item without a label keeps its uncertainty $u_i$ (a labelled one
  0). The next item is the candidate $j$ whose score reaches the most uncertainty,
  $g_j = \sum_i (A^r)_{ij} u_i = ((A^r)^\top u)_j$; once it is chosen, the uncertainty it answers is taken
  off in proportion to its reach, $u_i \leftarrow u_i \bigl(1 - c_i / \max_k c_k\bigr)$ with
  $c = A^r e_j$, so that the next pick covers another part of the graph rather than the neighbours of
  this one. Each pick costs ``2 r`` sparse products of one column.
- ``typical``: graph-aware, for a labelling budget that is still small (TypiClust, Hacohen, Dekel and
  Weinshall, ICML 2022, on the model's own representation). The items' representation $z_i$ (for a
  Diff-ResNet the features its classifier reads, $A^r h$: the diffused hidden state) is cut into
  $k = L + B$ clusters by k-means ($L$ the labelled items; at most :data:`MAX_CLUSTERS` unless $B$ is
  more; :func:`~.clustering.kmeans`); each pick goes to
  the cluster with the fewest labelled or chosen items (ties: the largest), and takes its candidate of
  largest typicality, the inverse mean distance to its 10 nearest items of the cluster
  (:func:`~.clustering.typicality`): the dense centre of a part of the data no label speaks for yet, not an
  outlier. It reads no probabilities: what it needs is a representation that groups items as the model
  does. ``O(N k d)`` a k-means iteration.
- ``random``: candidates drawn uniformly (seeded): the baseline the others must beat.

Examples:
    >>> import torch
    >>> probabilities = torch.tensor([[0.9, 0.1], [0.55, 0.45], [0.6, 0.4], [0.5, 0.5]])
    >>> candidates = torch.tensor([True, True, True, False])
    >>> items, scores = select_items(probabilities, candidates, budget=2, criterion="uncertainty")
    >>> items.tolist(), [round(score, 2) for score in scores.tolist()]
    ([1, 2], [0.9, 0.8])
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch

from .clustering import kmeans, typicality

__all__ = ["CRITERIA", "MAX_CLUSTERS", "margin_uncertainty", "select_items", "typical_clusters"]

#: the criteria :func:`select_items` knows (module docstring)
CRITERIA = ("typical", "coverage", "uncertainty", "random")

#: the most clusters ``typical`` cuts the items into, unless the budget is more (:func:`typical_clusters`)
MAX_CLUSTERS = 500

#: ``(N, k) -> (N, k)``: a score's spread over the graph (``A^r``), or its transpose
Spread = Callable[[torch.Tensor], torch.Tensor]


def margin_uncertainty(probabilities: torch.Tensor) -> torch.Tensor:
    """``(N,)`` one less the margin between each row's two largest probabilities: 0 for a sure prediction, 1
    for a tie.

    Args:
        probabilities: ``(N, C)`` class probabilities, ``C ≥ 2``.

    Examples:
        >>> import torch
        >>> margin_uncertainty(torch.tensor([[0.7, 0.2, 0.1], [0.4, 0.4, 0.2]]))
        tensor([0.5000, 1.0000])
    """
    if probabilities.dim() != 2 or probabilities.shape[1] < 2:
        raise ValueError(f"probabilities must be (N, C) with C ≥ 2, got shape {tuple(probabilities.shape)}")
    top = probabilities.topk(2, dim=1).values
    return 1.0 - (top[:, 0] - top[:, 1])


def select_items(
    probabilities: torch.Tensor,
    candidates: torch.Tensor,
    budget: int,
    criterion: str,
    *,
    spread: Optional[Spread] = None,
    gather: Optional[Spread] = None,
    labelled: Optional[torch.Tensor] = None,
    embedding: Optional[torch.Tensor] = None,
    seed: int = 0,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The ``budget`` candidates to label next by ``criterion`` (module docstring), best first.

    Args:
        probabilities: ``(N, C)`` the model's class probabilities of every item.
        candidates: ``(N,)`` bool, the items that may be chosen (those without a label).
        budget: ``B ≥ 1``; at most the number of candidates.
        criterion: one of :data:`CRITERIA`.
        spread: ``coverage``: ``v ↦ A^r v`` on ``(N, k)`` columns.
        gather: ``coverage``: ``v ↦ (A^r)ᵀ v`` (default: ``spread``, a symmetric spread).
        labelled: ``coverage``, ``typical``: ``(N,)`` bool, the items with a label: their reach is covered
            already, their clusters spoken for (default: none).
        embedding: ``typical``: ``(N, d)`` the model's representation of every item.
        seed: ``random``: the seed of the draw; ``typical``: of the k-means starts.

    Returns:
        ``(B,)`` item numbers, in the order chosen, and ``(B,)`` float64 their scores: their uncertainty
        (``uncertainty``, ``random``), the uncertainty they reached when chosen (``coverage``) or their
        typicality in their cluster (``typical``).

    Raises:
        ValueError: an unknown criterion, a budget out of range, ``coverage`` without ``spread``,
            ``typical`` without an ``(N, d)`` finite ``embedding``.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    candidates = torch.as_tensor(candidates, dtype=torch.bool, device=probabilities.device)
    if candidates.shape != probabilities.shape[:1]:
        raise ValueError(
            f"candidates must be ({probabilities.shape[0]},) bools, got {tuple(candidates.shape)}"
        )
    available = int(candidates.sum())
    if available == 0:
        raise ValueError("every item has a label: nothing is left to suggest")
    if isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget <= available:
        raise ValueError(
            f"budget must be a whole number in [1, {available:,}] (the items without a label), got {budget!r}"
        )
    positions = torch.nonzero(candidates).flatten()
    uncertainty = margin_uncertainty(probabilities.double())
    if criterion == "random":
        generator = torch.Generator().manual_seed(int(seed))
        chosen = positions[
            torch.randperm(available, generator=generator, device="cpu")[:budget].to(positions.device)
        ]
        return chosen, uncertainty[chosen]
    if criterion == "uncertainty":
        order = torch.sort(-uncertainty[positions], stable=True).indices
        chosen = positions[order[:budget]]
        return chosen, uncertainty[chosen]
    if criterion == "typical":
        return _typical(embedding, candidates, budget, labelled, seed)
    if spread is None:
        raise ValueError("coverage needs the model's spread over the graph")
    return _coverage(uncertainty, candidates, budget, spread, gather or spread, labelled)


#: the labelled items whose reach is spread at once (``N ×`` this many columns)
_COVER_CHUNK = 256


def _uncovered(items: torch.Tensor, like: torch.Tensor, spread: Spread) -> torch.Tensor:
    """``(N, 1)``: ``Π_l (1 − c^l_i / max_k c^l_k)`` over ``items`` ``l`` (``c^l = A^r e_l``), what their
    labels leave uncovered."""
    left = torch.ones_like(like)
    for start in range(0, len(items), _COVER_CHUNK):
        chunk = items[start : start + _COVER_CHUNK]
        columns = torch.zeros(like.shape[0], len(chunk), dtype=like.dtype, device=like.device)
        columns[chunk, torch.arange(len(chunk), device=like.device)] = 1.0
        reach = spread(columns)
        covered = (reach / reach.max(0).values.clamp_min(torch.finfo(reach.dtype).tiny)).clamp(0.0, 1.0)
        left = left * torch.prod(1.0 - covered, dim=1, keepdim=True)
    return left


def _coverage(
    uncertainty: torch.Tensor,
    candidates: torch.Tensor,
    budget: int,
    spread: Spread,
    gather: Spread,
    labelled: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The greedy of ``coverage`` (module docstring): the picks and the uncertainty each reached."""
    remaining = torch.where(candidates, uncertainty, torch.zeros_like(uncertainty)).unsqueeze(1)
    if labelled is not None and bool(labelled.any()):
        remaining = remaining * _uncovered(torch.nonzero(labelled).flatten(), remaining, spread)
    open_ = candidates.clone()
    chosen, gains = [], []
    for _ in range(budget):
        gain = gather(remaining).flatten()
        gain = torch.where(open_, gain, torch.full_like(gain, -torch.inf))
        pick = int(torch.argmax(gain))
        chosen.append(pick)
        gains.append(float(gain[pick]))
        one_hot = torch.zeros_like(remaining)
        one_hot[pick] = 1.0
        reach = spread(one_hot).flatten()
        covered = (reach / reach.max().clamp_min(torch.finfo(reach.dtype).tiny)).clamp(0.0, 1.0)
        remaining = remaining * (1.0 - covered).unsqueeze(1)
        remaining[pick] = 0.0
        open_[pick] = False
    device = uncertainty.device
    return (
        torch.tensor(chosen, dtype=torch.long, device=device),
        torch.tensor(gains, dtype=torch.float64, device=device),
    )


def typical_clusters(labelled: int, budget: int) -> int:
    """The clusters ``typical`` cuts the items into: ``L + B``, at most :data:`MAX_CLUSTERS` unless the
    budget alone asks for more (then ``B``).

    Examples:
        >>> typical_clusters(14, 14), typical_clusters(5_000, 20), typical_clusters(5_000, 800)
        (28, 500, 800)
    """
    return min(labelled + budget, max(budget, MAX_CLUSTERS))


def _typical(
    embedding: Optional[torch.Tensor],
    candidates: torch.Tensor,
    budget: int,
    labelled: Optional[torch.Tensor],
    seed: int,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The picks of ``typical`` (module docstring) and their typicality."""
    count = candidates.shape[0]
    if embedding is None or embedding.dim() != 2 or embedding.shape[0] != count:
        shape = None if embedding is None else tuple(embedding.shape)
        raise ValueError(
            f"typical needs the model's representation of the {count:,} items (N, d), got {shape}"
        )
    device = candidates.device
    points = embedding.detach().to("cpu", torch.float64)
    candidates = candidates.cpu()
    labelled = torch.zeros_like(candidates) if labelled is None else labelled.to("cpu", torch.bool)
    clusters = min(typical_clusters(int(labelled.sum()), budget), count)
    assignments, _ = kmeans(points, clusters, seed=seed)
    typical = typicality(points, assignments)
    spoken = torch.bincount(assignments[labelled], minlength=clusters)
    sizes = torch.bincount(assignments, minlength=clusters)
    # the candidates cluster by cluster, most typical first: each pick takes the next of its cluster
    order = torch.nonzero(candidates).flatten()
    order = order[torch.sort(-typical[order], stable=True).indices]
    order = order[torch.sort(assignments[order], stable=True).indices]
    available = torch.bincount(assignments[order], minlength=clusters)
    first = torch.cumsum(available, 0) - available
    taken = torch.zeros_like(available)
    never = torch.full_like(spoken, torch.iinfo(torch.long).max)
    chosen = []
    for _ in range(budget):
        # fewest labelled or chosen items first, the largest cluster among those
        rank = torch.where(taken < available, spoken * (count + 1) - sizes, never)
        cluster = int(torch.argmin(rank))
        chosen.append(int(order[first[cluster] + taken[cluster]]))
        taken[cluster] += 1
        spoken[cluster] += 1
    picks = torch.tensor(chosen, dtype=torch.long, device="cpu")
    return picks.to(device), typical[picks].to(device)
