r"""Training a Diff-ResNet on a graph split over processes: the loss, gradients and accuracy of the whole
graph.

Every layer of the graph Diff-ResNet but the diffusion acts on each node alone, so process ``k`` runs the
network on its rows ``P_k`` (its part of a :func:`~pdenets.operators.partition_graph`) with a
:class:`~pdenets.operators.PartitionedDiffusion`, and only three things are shared:

* the loss of the labelled nodes ``T``, ``ℓ = (1/|T|) Σ_{i ∈ T} CE(z_i, y_i)``: each process sums over
  ``T ∩ P_k`` and divides by the global ``|T|`` (:func:`partitioned_cross_entropy`; the value is
  ``all_reduce``-d, the gradient stays local);
* the parameters' gradients, summed over processes (:func:`all_reduce_gradients`), which makes them the
  gradients of ``ℓ``: every process then takes the same optimizer step from the same parameters;
* counts for accuracies (:func:`partitioned_accuracy`).

With the same torch seed on every process (same initial parameters, same dropout seeds, broadcast from
process 0 anyway) the loss and the gradients are the single process's to rounding
(tests/operators/test_partitioned.py; ``benchmarks/graph.py --distributed 2``).

One process alone: the whole graph, the functions reduce over nothing.

Examples:
    >>> import torch
    >>> logits = torch.tensor([[2., 0.], [0., 1.]]); labels = torch.tensor([0, 0])
    >>> round(float(partitioned_cross_entropy(logits, labels, torch.tensor([0, 1]), 2)), 4)
    0.7201
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.distributed as dist
from torch.nn import functional as F

from ..operators.partition import (
    METIS_EXTRA,
    PARTITIONERS,
    GraphPartition,
    PartFile,
    load_partition,
    partition_graph,
    scipy_graph,
)
from ..operators.partitioned import PartitionedDiffusion
from .diffresnet import DiffResNet
from .training import EarlyStopping, FitResult, evaluation_mode, fit

__all__ = [
    "partitioned_cross_entropy",
    "all_reduce_gradients",
    "partitioned_accuracy",
    "partitioned_diff_resnet",
    "global_count",
    "fit_partitioned_node_classifier",
    "rows_of_part",
    "local_nodes",
    "agreed_partition",
]


def _active(group: Optional[Any] = None) -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1


def _collective_device(group: Optional[Any] = None) -> torch.device:
    """Where a collective's tensor must live: the current GPU under NCCL, else the CPU."""
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def global_count(local: int, group: Optional[Any] = None) -> int:
    """``Σ_k local_k`` over the processes."""
    if not _active(group):
        return int(local)
    tensor = torch.tensor([int(local)], dtype=torch.int64, device=_collective_device(group))
    dist.all_reduce(tensor, group=group)
    return int(tensor)


def partitioned_cross_entropy(
    logits: torch.Tensor, labels: torch.Tensor, nodes: torch.Tensor, total: int, group: Optional[Any] = None
) -> torch.Tensor:
    """The mean cross-entropy over the labelled nodes of all processes, from this process's share.

    Args:
        logits: ``(n_k, C)`` this process's logits.
        labels: ``(n_k,)`` their classes.
        nodes: this process's labelled rows (local ids).
        total: ``|T|``, the labelled nodes of all processes (:func:`global_count`).
        group: the process group (default: the default group).

    Returns:
        A scalar whose value is the global mean loss and whose gradient is this process's share of it.
    """
    if total <= 0:
        raise ValueError("no labelled nodes on any process: the loss is undefined")
    local = (
        F.cross_entropy(logits[nodes], labels[nodes], reduction="sum") / total
        if nodes.numel()
        else logits.sum() * 0.0
    )
    if not _active(group):
        return local
    value = local.detach().clone()
    dist.all_reduce(value, group=group)
    return local + (value - local.detach())


def all_reduce_gradients(model: torch.nn.Module, group: Optional[Any] = None) -> None:
    """Sum every parameter's gradient over the processes (the gradient of the global loss), in place."""
    if not _active(group):
        return
    for parameter in model.parameters():
        if parameter.grad is None:
            parameter.grad = torch.zeros_like(parameter)
        dist.all_reduce(parameter.grad, group=group)


def partitioned_accuracy(
    logits: torch.Tensor, labels: torch.Tensor, nodes: torch.Tensor, group: Optional[Any] = None
) -> float:
    """The accuracy over the given rows of all processes (the counts summed where the logits are: NCCL
    reduces CUDA tensors)."""
    correct = (logits[nodes].argmax(1) == labels[nodes]).sum()
    counts = torch.stack([correct, correct.new_tensor(nodes.numel())])
    if _active(group):
        dist.all_reduce(counts, group=group)
    return float(counts[0]) / max(int(counts[1]), 1)


def partitioned_diff_resnet(
    part: PartFile,
    num_classes: int,
    *,
    step_size: float,
    num_steps: int,
    dropout: float = 0.0,
    dropout_position: str = "after",
    check_stability: bool = True,
    in_features: Optional[int] = None,
    group: Optional[Any] = None,
    **settings: Any,
) -> DiffResNet:
    """A :class:`~pdenets.models.DiffResNet` on this process's part of a saved partition.

    Args:
        part: this process's part (:func:`~pdenets.operators.load_part`).
        num_classes: ``C``.
        step_size: ``γ``, as :class:`DiffResNet`.
        num_steps: ``r``, as :class:`DiffResNet`.
        dropout: as :class:`DiffResNet`.
        dropout_position: as :class:`DiffResNet`.
        check_stability: as :class:`DiffResNet`.
        in_features: the input width (default: the part's features' width).
        group: the process group (default: the default group).
        settings: further :class:`DiffResNet` arguments (``num_blocks``, ``hidden_features``, ``block``).

    Returns:
        The model; its input is the part's ``(n_k, d)`` features.
    """
    if in_features is None:
        if part.features is None:
            raise ValueError("the part has no features saved: give in_features")
        in_features = int(part.features.shape[1])
    operator = PartitionedDiffusion(
        part.weights, part.first, step_size, check_stability=check_stability, group=group
    )
    return DiffResNet(
        in_features,
        num_classes,
        num_steps=num_steps,
        step_size=step_size,
        dropout=dropout,
        dropout_position=dropout_position,
        weights=operator,
        check_stability=check_stability,
        **settings,
    )


class _SummedGradients:
    """An optimizer whose ``step`` first sums the gradients over the processes."""

    def __init__(self, optimizer: torch.optim.Optimizer, model: torch.nn.Module, group: Optional[Any] = None):
        self.optimizer, self.model, self.group = optimizer, model, group

    def zero_grad(self) -> None:
        self.optimizer.zero_grad()

    def step(self) -> None:
        all_reduce_gradients(self.model, self.group)
        self.optimizer.step()


def fit_partitioned_node_classifier(
    model: torch.nn.Module,
    features: torch.Tensor,
    labels: torch.Tensor,
    train: torch.Tensor,
    val: torch.Tensor,
    test: torch.Tensor,
    *,
    lr: float,
    weight_decay: float,
    max_epochs: int,
    patience: int,
    group: Optional[Any] = None,
) -> Tuple[FitResult, Dict[str, Any]]:
    """:func:`~pdenets.models.node_training.fit_node_classifier` on this process's rows of a partitioned
    graph.

    The same Adam steps, early stopping and record, with every loss and accuracy taken over the nodes of all
    processes (``train``, ``val``, ``test``: this process's rows of each set, local ids).

    Returns:
        The fit history and the record (``accuracy``, ``val_accuracy``, ``val_loss``, ``test_loss``,
        ``epochs``, ``best_epoch``, ``diverged_at_epoch``), equal on every process.
    """
    totals = {
        name: global_count(nodes.numel(), group)
        for name, nodes in (("train", train), ("val", val), ("test", test))
    }
    optimizer = _SummedGradients(
        torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay), model, group
    )

    def measured(logits: torch.Tensor, nodes: torch.Tensor, total: str) -> Tuple[float, float]:
        return (
            float(partitioned_cross_entropy(logits, labels, nodes, totals[total], group)),
            partitioned_accuracy(logits, labels, nodes, group),
        )

    def validation() -> Dict[str, float]:
        with evaluation_mode(model):
            loss, accuracy = measured(model(features), val, "val")
        return {"val_loss": loss, "val_accuracy": accuracy}

    stopping = EarlyStopping(patience, monitors={"val_loss": "min", "val_accuracy": "max"})
    result = fit(
        model,
        optimizer,  # type: ignore[arg-type]
        lambda: partitioned_cross_entropy(model(features), labels, train, totals["train"], group),
        max_epochs=max_epochs,
        evaluate=validation,
        early_stopping=stopping,
    )
    with evaluation_mode(model):
        logits = model(features)
        test_loss, test_accuracy = measured(logits, test, "test")
        val_loss, val_accuracy = measured(logits, val, "val")
    record = {
        "accuracy": test_accuracy,
        "val_accuracy": val_accuracy,
        "val_loss": val_loss,
        "test_loss": test_loss,
        "epochs": result.epochs,
        "best_epoch": result.best_epoch,
        "diverged_at_epoch": result.diverged_at,
    }
    return result, record


def rows_of_part(weights: torch.Tensor, partition: GraphPartition, part: int) -> torch.Tensor:
    """Part ``part``'s rows of the ``(N, N)`` sparse weights, columns renumbered: a ``(n_k, N)`` CSR
    tensor."""
    mine = scipy_graph(weights, partition.num_nodes)[partition.nodes(part).numpy()].tocsr()
    mine.indices = partition.new_ids().numpy()[mine.indices]
    mine.sort_indices()
    return torch.sparse_csr_tensor(
        torch.from_numpy(mine.indptr.astype(np.int64)),
        torch.from_numpy(mine.indices.astype(np.int64)),
        torch.from_numpy(mine.data),
        mine.shape,
        check_invariants=False,
    )


def local_nodes(nodes: torch.Tensor, partition: GraphPartition, part: int) -> torch.Tensor:
    """The given (old) node ids that part ``part`` holds, as its local row ids (in their order)."""
    first, end = partition.rows(part)
    new = partition.new_ids()[nodes]
    return new[(new >= first) & (new < end)] - first


def agreed_partition(weights: torch.Tensor, spec: str, group: Optional[Any] = None) -> GraphPartition:
    """The partition of ``weights`` over this group's processes, the same on every process.

    Args:
        weights: the ``(N, N)`` weights (every process holds them).
        spec: ``"metis"`` or ``"contiguous"`` (process 0 computes it and sends it to the others), or the
            folder of a partition saved by :func:`~pdenets.operators.save_partition` / ``pdenets partition``
            (read by all).
        group: the process group (default: the default group).

    Raises:
        ValueError: a saved partition of another graph size or another number of parts, named.
        ImportError: ``"metis"`` without METIS installed, naming the extra (on every process, before any
            collective).
    """
    world = dist.get_world_size(group) if _active(group) else 1
    if spec == "metis":
        try:
            import pymetis  # noqa: F401
        except ImportError:
            raise ImportError(
                f"partition=metis needs METIS: {METIS_EXTRA}; or use partition=contiguous"
            ) from None
    if spec not in PARTITIONERS:
        partition = load_partition(spec)
        if partition.num_parts != world or partition.num_nodes != int(weights.shape[0]):
            raise ValueError(
                f"the partition in {spec} has {partition.num_parts} parts of a {partition.num_nodes}-node "
                f"graph; this run has {world} processes and a {int(weights.shape[0])}-node graph"
            )
        return partition
    message: List[Any] = [None]
    if not _active(group) or dist.get_rank(group) == 0:
        message[0] = partition_graph(weights, world, method=spec)  # METIS missing: named, never swapped
    if _active(group):
        dist.broadcast_object_list(message, src=0, group=group)
    return message[0]
