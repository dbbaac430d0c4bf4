"""A fitted node model's answers past its predictions: why a node gets its class, and which nodes to label
next, by the ids of the user's graph.

:func:`explain_nodes` shares each asked node's prediction over the nodes whose scores its diffusion carried
to it (:mod:`pdenets.analysis.explanations`): the margin of the predicted class over the runner-up, in the
log-odds of the model's probabilities (the calibrated ones where it keeps a temperature), is exactly the sum
of the shares and the classifier's bias. The diffusion family only: a message-passing GNN (GCN, GAT, …) is
not a sum over nodes, and is refused in one line.

:func:`suggest_nodes` ranks the nodes without a label in the graph given (label ``-1``) by a criterion of
:mod:`pdenets.analysis.label_selection`; ``typical`` clusters the network's own representation of the nodes
(its ``features``: for a Diff-ResNet the diffused hidden state its classifier reads, for a GNN baseline the
input of its last layer); ``coverage`` spreads over the graph as the model does (a Diff-ResNet's ``r``
diffusion steps; a baseline's ``L`` propagations by the graph's normalized weights).
:func:`write_explanations` and :func:`write_suggestions` write either as a CSV file for the user.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from ..._output import write_csv
from ...analysis.explanations import explain_diffusion
from ...analysis.label_selection import CRITERIA, margin_uncertainty, select_items
from ...data.errors import DatasetError
from ...data.transforms import PreparedGraph
from ...models.training import evaluation_mode

__all__ = [
    "Contributor",
    "NodeExplanation",
    "Suggestion",
    "MAX_EXPLAINED",
    "MAX_TOP",
    "explain_nodes",
    "suggest_nodes",
    "write_explanations",
    "write_suggestions",
]

#: the most nodes one call explains (each costs ``r`` sparse products of a column)
MAX_EXPLAINED = 10_000
#: the most contributors named per node
MAX_TOP = 1_000
#: the nodes explained together (``r`` products of this many columns at a time)
_CHUNK = 128


@dataclass(frozen=True)
class Contributor:
    """One node's share of an explained node's margin.

    Args:
        id: its id in the user's graph.
        share: its share of the margin (log-odds; positive: towards the prediction).
        label: its class in the graph given (``None``: unlabelled there).
        itself: it is the explained node.
    """

    id: str
    share: float
    label: Optional[str]
    itself: bool


@dataclass(frozen=True)
class NodeExplanation:
    """Why a node gets its class (module docstring).

    Args:
        id: the node's id.
        predicted: its class; runner_up: the next most probable one.
        probability: the predicted class's probability.
        margin: ``log(p[predicted] / p[runner_up])``, the sum of every node's share and ``bias``.
        bias: the classifier's bias difference (the part of the margin no node carries).
        contributors: the ``top`` nodes of largest share (in absolute value), largest first.
        others: the share of the other nodes; reach: how many nodes have a share at all (its receptive
            field).
    """

    id: str
    predicted: str
    runner_up: str
    probability: float
    margin: float
    bias: float
    contributors: Tuple[Contributor, ...]
    others: float
    reach: int


@dataclass(frozen=True)
class Suggestion:
    """A node to label next: its rank, id, the model's class and probability for it now, its uncertainty
    (one less the margin of its two most probable classes) and its criterion's score (typical: its
    typicality in its cluster; coverage: the uncertainty its label would reach when chosen; uncertainty,
    random: the uncertainty)."""

    rank: int
    id: str
    predicted: str
    probability: float
    uncertainty: float
    score: float


def _positions(
    graph: PreparedGraph, ids: Sequence[object], what: str = "explain", limit: int = MAX_EXPLAINED
) -> torch.Tensor:
    """The node numbers of ``ids`` in ``graph`` (one line naming the unknown ones otherwise)."""
    asked = [str(ids)] if isinstance(ids, (str, bytes)) else [str(node) for node in ids]
    if not asked:
        raise ValueError(f"give at least one node id to {what}")
    if len(asked) > limit:
        raise ValueError(f"{len(asked):,} node ids: at most {limit:,} at once ({what})")
    where: Dict[str, int] = {}
    for position, node in enumerate(graph.node_ids()):
        where.setdefault(node, position)
    unknown = [node for node in asked if node not in where]
    if unknown:
        outside = set(graph.outside_ids())
        left_out = [node for node in unknown if node in outside]
        named = ", ".join(repr(node) for node in unknown[:5]) + (" …" if len(unknown) > 5 else "")
        why = (
            f" ({len(left_out)} lie outside the graph's largest component, which has no predictions)"
            if left_out
            else ""
        )
        raise DatasetError(f"{len(unknown)} node id(s) not in the graph: {named}{why}")
    return torch.tensor([where[node] for node in asked], dtype=torch.long, device="cpu")


def _check_top(top: int) -> int:
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= MAX_TOP:
        raise ValueError(f"top must be a whole number in [1, {MAX_TOP:,}], got {top!r}")
    return top


def explain_nodes(
    model: Any, graph: PreparedGraph, ids: Sequence[object], top: int = 10
) -> List[NodeExplanation]:
    """Why each node of ``ids`` (the user's ids in ``graph``) gets its class (module docstring).

    Args:
        model: the fitted model (the diffusion family).
        graph: the graph its nodes are in, read as the model reads one.
        ids: the nodes to explain (at most :data:`MAX_EXPLAINED`).
        top: the contributors named per node (the rest add up in ``others``).

    Raises:
        ValueError: a model that is not a sum over nodes, an id not in the graph, ``top`` out of range.
    """
    top = _check_top(top)
    positions = _positions(graph, ids)
    network, graph, inputs = model.network_on(graph)
    node_ids = graph.node_ids()
    names = model.class_names
    given = graph.class_names or tuple(str(c) for c in range(graph.num_classes))
    labels = [given[int(label)] if 0 <= int(label) < len(given) else None for label in graph.y.tolist()]
    temperature = float(model.temperature)
    explanations: List[NodeExplanation] = []
    for start in range(0, len(positions), _CHUNK):
        chunk = positions[start : start + _CHUNK]
        shares = explain_diffusion(network, inputs[0], chunk)
        logits = shares.logits()
        first, second = logits.topk(2, dim=1).indices.T
        margins = shares.margin_shares(first, second) / temperature
        bias = (shares.bias[first] - shares.bias[second]) / temperature
        probabilities = torch.softmax(logits / temperature, dim=1)
        for row, node in enumerate(chunk.tolist()):
            values = margins[row]
            reach = int((shares.rows[row] != 0).sum())
            count = min(top, reach) if reach else 1
            order = torch.sort(values.abs(), descending=True, stable=True).indices[:count].tolist()
            named = tuple(Contributor(node_ids[j], float(values[j]), labels[j], j == node) for j in order)
            total = float(values.sum())
            explanations.append(
                NodeExplanation(
                    node_ids[node],
                    names[int(first[row])],
                    names[int(second[row])],
                    float(probabilities[row, first[row]]),
                    total + float(bias[row]),
                    float(bias[row]),
                    named,
                    total - sum(contributor.share for contributor in named),
                    reach,
                )
            )
    return explanations


def _model_spread(
    model: Any, network: torch.nn.Module, graph: PreparedGraph, inputs
) -> Tuple[Callable[[torch.Tensor], torch.Tensor], Callable[[torch.Tensor], torch.Tensor]]:
    """``v ↦ A^r v`` and its transpose as the model spreads a score over ``graph``: a Diff-ResNet's ``r``
    diffusion steps (none: itself), else the baseline's layers of the graph's normalized weights."""
    if hasattr(network, "diffusion_scores"):
        scores_of: Callable = getattr(network, "diffusion_scores")
        _, _, operator, steps = scores_of(inputs[0])
        if operator is None or steps == 0:
            return (lambda v: v), (lambda v: v)

        return (lambda v: operator.power(v, steps)), (lambda v: operator.power(v, steps, transpose=True))
    layers = int(model.settings.depth) if model.settings.depth is not None else 2
    weights = graph.weights.to(torch.float64)

    def propagate(columns: torch.Tensor) -> torch.Tensor:  # symmetric weights: its own transpose
        for _ in range(layers):
            columns = weights @ columns
        return columns

    return propagate, propagate


def suggest_nodes(
    model: Any,
    graph: PreparedGraph,
    budget: int,
    criterion: str = "typical",
    seed: int = 0,
    among: Optional[Sequence[object]] = None,
) -> List[Suggestion]:
    """The ``budget`` nodes without a label in ``graph`` to label next by ``criterion`` (module docstring).

    Args:
        model: the fitted model.
        graph: the graph, read as the model reads one; its nodes of label ``-1`` are the candidates.
        budget: ``B``, at most the nodes without a label.
        criterion: ``typical`` (default), ``coverage``, ``uncertainty`` or ``random``
            (:mod:`pdenets.analysis.label_selection`).
        seed: ``random``: the seed of the draw; ``typical``: of its k-means.
        among: the ids of the nodes that may be chosen (default: every node without a label); a labelled
            one among them is not.

    Raises:
        ValueError: an unknown criterion, a budget out of range, a graph whose nodes all have a label, an
            id of ``among`` not in the graph.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    network, graph, inputs = model.network_on(graph)
    with evaluation_mode(network), torch.no_grad():
        probabilities = torch.softmax(network(*inputs).double() / model.temperature, dim=1).cpu()
    candidates = graph.y.cpu() < 0
    if among is not None:
        allowed = torch.zeros_like(candidates)
        allowed[_positions(graph, among, "suggest among", limit=graph.num_nodes)] = True
        candidates &= allowed
    spread, gather, embedding = None, None, None
    if criterion == "coverage":
        spread, gather = _model_spread(model, network, graph, inputs)
    if criterion == "typical":
        with evaluation_mode(network), torch.no_grad():
            embedding = network.features(*inputs).cpu()
    chosen, scores = select_items(
        probabilities,
        candidates,
        budget,
        criterion,
        spread=spread,
        gather=gather,
        labelled=graph.y.cpu() >= 0,
        embedding=embedding,
        seed=seed,
    )
    uncertainty = margin_uncertainty(probabilities)
    node_ids, names = graph.node_ids(), model.class_names
    best = probabilities.max(1)
    return [
        Suggestion(
            rank + 1,
            node_ids[node],
            names[int(best.indices[node])],
            float(best.values[node]),
            float(uncertainty[node]),
            float(scores[rank]),
        )
        for rank, node in enumerate(chosen.tolist())
    ]


EXPLANATION_COLUMNS = (
    "id",
    "predicted",
    "probability",
    "runner_up",
    "margin",
    "rank",
    "contributor",
    "contributor_label",
    "share",
)


def write_explanations(
    path: Union[str, Path],
    explanations: Sequence[NodeExplanation],
    *,
    overwrite: bool = False,
    inputs: Sequence[Union[str, Path]] = (),
) -> Path:
    """Write ``explanations`` to the CSV file ``path``: per node its ``top`` contributors (``rank`` 1, 2,
    …; ``contributor_label`` empty where unlabelled, ``(itself)`` marks the node's own share), then
    ``(other nodes)`` and ``(bias)``, whose shares add up to ``margin``."""
    rows: List[List[object]] = []
    for item in explanations:
        head = [item.id, item.predicted, f"{item.probability:.6f}", item.runner_up, f"{item.margin:.6g}"]
        for rank, contributor in enumerate(item.contributors, 1):
            name = contributor.id + (" (itself)" if contributor.itself else "")
            rows.append([*head, rank, name, contributor.label or "", f"{contributor.share:.6g}"])
        rows.append(
            [*head, "", f"(other {item.reach - len(item.contributors)} nodes)", "", f"{item.others:.6g}"]
        )
        rows.append([*head, "", "(bias)", "", f"{item.bias:.6g}"])
    return write_csv(path, EXPLANATION_COLUMNS, rows, overwrite=overwrite, inputs=inputs)


SUGGESTION_COLUMNS = ("rank", "id", "predicted", "probability", "uncertainty", "score")


def write_suggestions(
    path: Union[str, Path],
    suggestions: Sequence[Suggestion],
    *,
    overwrite: bool = False,
    inputs: Sequence[Union[str, Path]] = (),
) -> Path:
    """Write ``suggestions`` to the CSV file ``path``, one row per node in the order chosen."""
    rows = [
        [s.rank, s.id, s.predicted, f"{s.probability:.6f}", f"{s.uncertainty:.6f}", f"{s.score:.6g}"]
        for s in suggestions
    ]
    return write_csv(path, SUGGESTION_COLUMNS, rows, overwrite=overwrite, inputs=inputs)
