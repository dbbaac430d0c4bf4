r"""Why a diffusion network predicts what it predicts: each prediction as an exact sum over the items.

A Diff-ResNet's last ``r`` diffusion steps are linear and commute with its linear classifier (evaluation
mode, no dropout): with $h_j$ the last block's output of item $j$, $W, b$ the classifier and
$A = I - \gamma L$ the diffusion operator,

$$
    \ell_i = \bigl(A^r (h W^\top)\bigr)_i + b = \sum_j (A^r)_{ij}\, s_j + b, \qquad s_j = W h_j,
$$

so item $j$'s *share* of item $i$'s score for class $c$ is $(A^r)_{ij}\, s_{jc}$, and the shares with the
bias add up to the logit exactly. A prediction is a comparison: the *margin* of the predicted class $\hat c$
over the runner-up $c'$, $\ell_{i\hat c} - \ell_{ic'} = \log(p_{i\hat c} / p_{ic'})$, is shared the same way,
$(A^r)_{ij}(s_{j\hat c} - s_{jc'})$, plus $b_{\hat c} - b_{c'}$; a share is positive where item $j$ pushed
towards the prediction, negative where against it. (A single class's logit is shared too, but adding one
number to every class of an item's scores leaves the prediction as it is, so its margin is what a share
of a prediction means.)

$s_j$ depends on item $j$'s own features only where the network has one block (the node task's
Diff-ResNet): its map, block and classifier act item by item. With more blocks the earlier diffusions have
already mixed the items, and $s_j$ is what reached item $j$ by the last block; the sum is exact all the same.

The rows $(A^r)_{i\cdot}$ of the ``k`` items explained come from ``r`` products of ``Aᵀ`` with ``k``
one-hot columns (:func:`diffusion_rows`): ``r · nnz(A) · k`` work and ``N × k`` memory, no ``N × N`` matrix.

Examples:
    >>> import torch
    >>> from pdenets.operators import DiffusionOperator
    >>> ring = torch.roll(torch.eye(4, dtype=torch.float64), 1, 0)
    >>> operator = DiffusionOperator(ring + ring.T, step_size=0.25)
    >>> diffusion_rows(operator, torch.tensor([0]), num_steps=1)   # A's first row
    tensor([[0.5000, 0.2500, 0.0000, 0.2500]], dtype=torch.float64)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

__all__ = ["DiffusionShares", "diffusion_rows", "diffusion_columns", "explain_diffusion", "isolate_nodes"]


def _one_hot_columns(items: torch.Tensor, num_nodes: int, like: torch.Tensor) -> torch.Tensor:
    """``(N, k)`` columns ``e_{items[0]}, …, e_{items[k-1]}``, of ``like``'s dtype and device."""
    items = torch.as_tensor(items, dtype=torch.long, device=like.device).reshape(-1)
    if items.numel() and (int(items.min()) < 0 or int(items.max()) >= num_nodes):
        raise ValueError(f"items must be node numbers in [0, {num_nodes}), got {items.tolist()[:5]}")
    columns = torch.zeros(num_nodes, items.numel(), dtype=like.dtype, device=like.device)
    columns[items, torch.arange(items.numel(), device=like.device)] = 1
    return columns


def _device_of(items: Any) -> torch.device:
    """The device of ``items`` (a list: the CPU): the one-hot columns are built where the items are."""
    return items.device if isinstance(items, torch.Tensor) else torch.device("cpu")


def _steps(operator: Any, columns: torch.Tensor, num_steps: int, transpose: bool) -> torch.Tensor:
    if not hasattr(operator, "power") or not hasattr(operator, "num_nodes"):
        raise TypeError(f"operator must be a DiffusionOperator, got {type(operator).__name__}")
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 0:
        raise ValueError(f"num_steps must be a whole number ≥ 0, got {num_steps!r}")
    return operator.power(columns, num_steps, transpose=transpose)


def diffusion_rows(
    operator: Any, items: torch.Tensor, num_steps: int, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """The rows of ``A^r`` of ``items``: ``(k, N)``, row ``a`` is ``e_{items[a]}ᵀ A^r`` (``r`` products of
    ``Aᵀ``, module docstring).

    Args:
        operator: a :class:`~pdenets.operators.DiffusionOperator` of ``N`` nodes (one whole graph).
        items: ``(k,)`` node numbers.
        num_steps: ``r ≥ 0`` (``0``: the rows of the identity).
        dtype: the dtype of the result (default: float64).

    Examples:
        >>> import torch
        >>> from pdenets.operators import DiffusionOperator
        >>> operator = DiffusionOperator(torch.tensor([[0., 1.], [1., 0.]]), step_size=0.25)
        >>> diffusion_rows(operator, torch.tensor([1]), num_steps=2)   # (A²)₁. = [3/8, 5/8]
        tensor([[0.3750, 0.6250]], dtype=torch.float64)
    """
    start = _one_hot_columns(items, operator.num_nodes, torch.empty(0, dtype=dtype, device=_device_of(items)))
    return _steps(operator, start, num_steps, transpose=True).T.contiguous()


def diffusion_columns(
    operator: Any, items: torch.Tensor, num_steps: int, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """The columns of ``A^r`` of ``items``: ``(N, k)``, column ``a`` is ``A^r e_{items[a]}``, how much of
    item ``items[a]``'s score reaches every node (``r`` products of ``A``).

    Args:
        operator: a :class:`~pdenets.operators.DiffusionOperator` of ``N`` nodes.
        items: ``(k,)`` node numbers.
        num_steps: ``r ≥ 0``.
        dtype: the dtype of the result (default: float64).

    Examples:
        >>> import torch
        >>> from pdenets.operators import DiffusionOperator
        >>> operator = DiffusionOperator(torch.tensor([[0., 1.], [1., 0.]]), step_size=0.25)
        >>> diffusion_columns(operator, torch.tensor([0]), num_steps=1).flatten()
        tensor([0.7500, 0.2500], dtype=torch.float64)
    """
    start = _one_hot_columns(items, operator.num_nodes, torch.empty(0, dtype=dtype, device=_device_of(items)))
    return _steps(operator, start, num_steps, transpose=False)


@dataclass(frozen=True)
class DiffusionShares:
    """The predictions of ``k`` items as sums over the ``N`` items (module docstring).

    Args:
        items: ``(k,)`` the items explained (node numbers).
        rows: ``(k, N)`` their rows of ``A^r``: ``rows[a, j]`` is how much of item ``j``'s scores reach item
            ``items[a]``.
        scores: ``(N, C)`` every item's class scores ``s_j = W h_j`` before the last diffusion.
        bias: ``(C,)`` the classifier's bias.
    """

    items: torch.Tensor
    rows: torch.Tensor
    scores: torch.Tensor
    bias: torch.Tensor

    def logits(self) -> torch.Tensor:
        """``(k, C)`` the items' logits, ``rows @ scores + bias``: the network's own."""
        return self.rows @ self.scores + self.bias

    def class_shares(self, classes: torch.Tensor) -> torch.Tensor:
        """``(k, N)`` each item's shares of its logit of ``classes[a]``,
        ``rows[a, j] · scores[j, classes[a]]`` (they add up to the logit less ``bias[classes[a]]``)."""
        classes = torch.as_tensor(classes, dtype=torch.long, device=self.scores.device)
        return self.rows * self.scores[:, classes].T

    def margin_shares(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        """``(k, N)`` each item's shares of its margin ``ℓ[first] − ℓ[second]`` (they add up to the margin
        less ``bias[first] − bias[second]``)."""
        return self.class_shares(first) - self.class_shares(second)

    def predictions(self) -> torch.Tensor:
        """``(k, 2)`` each item's predicted class and runner-up (the two largest logits; ``(k, 1)`` for one
        class)."""
        return self.logits().topk(min(2, self.scores.shape[1]), dim=1).indices


def explain_diffusion(
    network: Any, x: torch.Tensor, items: torch.Tensor, weights: Optional[Any] = None
) -> DiffusionShares:
    """The shares of ``items``' predictions by a Diff-ResNet (module docstring), in float64.

    Args:
        network: a :class:`~pdenets.models.DiffResNet` (anything with its ``diffusion_scores``).
        x: ``(N, d)`` the input of every item (dense or sparse, as the network takes it).
        items: ``(k,)`` the items to explain.
        weights: the graph, where the network is not built with one (as its ``forward``).

    Returns:
        :class:`DiffusionShares` whose :meth:`~DiffusionShares.logits` are the network's evaluation logits.

    Raises:
        ValueError: ``network`` is not linear in its last diffusion (a message-passing GNN), naming it.
    """
    if not hasattr(network, "diffusion_scores"):
        raise ValueError(
            f"{type(network).__name__} is not a sum over the items: its layers are nonlinear between "
            "propagations, so no share of a prediction is exact; explanations are for the diffusion "
            "family (diff-resnet, no-diff-resnet)"
        )
    scores, bias, operator, num_steps = network.diffusion_scores(x, weights)
    scores, bias = scores.double(), bias.double()
    items = torch.as_tensor(items, dtype=torch.long, device=scores.device).reshape(-1)
    if operator is None or num_steps == 0:
        rows = _one_hot_columns(items, scores.shape[0], scores).T.contiguous()
    else:
        rows = diffusion_rows(operator, items, num_steps).to(scores.device)
    return DiffusionShares(items, rows, scores, bias)


def isolate_nodes(weights: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
    """``weights`` with every edge of ``nodes`` removed (their rows and columns zero): the graph as if they
    were not in it, the nodes kept in their places (their own features reach no other node, the others'
    degrees drop). What a faithfulness check removes (a removed contributor's share must matter).

    Args:
        weights: ``(N, N)`` dense, sparse COO or CSR weights.
        nodes: the node numbers to isolate.

    Returns:
        The weights of the same layout, dtype and device.

    Examples:
        >>> import torch
        >>> isolate_nodes(torch.ones(3, 3), torch.tensor([1]))
        tensor([[1., 0., 1.],
                [0., 0., 0.],
                [1., 0., 1.]])
    """
    keep = torch.ones(weights.shape[0], dtype=torch.bool, device=weights.device)
    keep[torch.as_tensor(nodes, dtype=torch.long, device=weights.device)] = False
    if weights.layout == torch.strided:
        return weights * (keep[:, None] & keep[None, :]).to(weights.dtype)
    csr = weights.layout == torch.sparse_csr
    coo = (weights.to_sparse_coo() if csr else weights).coalesce()
    row, column = coo.indices()
    kept = keep[row] & keep[column]
    result = torch.sparse_coo_tensor(
        coo.indices()[:, kept], coo.values()[kept], coo.shape, device=weights.device
    ).coalesce()
    return result.to_sparse_csr() if csr else result
