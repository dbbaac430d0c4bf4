r"""The trained heads of transductive few-shot learning — one small network per task, many tasks at once.

Each task trains the Diff-ResNet head (Wang et al., §5.3 and Appendix E.3) on its support set,
full batch, with the task's queries present in the graph:

.. math::

    h = x + \mathrm{FC}_2(\mathrm{ReLU}(\mathrm{FC}_1 x)), \qquad
    h \leftarrow (I - \gamma L)^r h, \qquad o = \mathrm{FC}_3(h),

``FC₁, FC₂: R^M → R^M``, ``FC₃: R^M → R^C``, ``L = diag(W1) − W`` of the task's graph over
support ∪ query. The loss is the cross entropy of the support outputs, plus

* ``μ/2 Σ_{i,j} w_{ij} ‖o_i − o_j‖²`` over support ∪ query (*external* convection-diffusion), and
* ``α Σ_{i ∈ query} Σ_c softmax(o_i)_c ‖x_i − \tilde m_c‖`` (the prototypical loss of E.3.1).

``r = 0, μ = 0`` is *convection*, ``r = 0, μ > 0`` *external*, ``r > 0`` *internal*
convection-diffusion. SGD (lr 0.1, momentum 0.9, weight decay 1e-4), 100 full-batch steps,
learning rate × 0.1 at 50 % and 75 % of them.

:func:`train_heads` trains ``T`` tasks as stacked parameter tensors ``(T, ·, ·)`` with batched
matrix products: one optimizer step updates every task, and because SGD is elementwise and
the tasks' losses are summed, each task follows exactly the trajectory it would follow
alone. Without dropout the ``r`` diffusion steps are one fixed linear map: ``(I − γL)^r`` is
formed once per task and, its rows summing to one, applied after the classifier to ``C``
columns instead of ``M`` — the same numbers up to round-off. :func:`train_heads_one_by_one` is that reference: a :class:`~pdenets.models.DiffResNet`
and an optimizer per task, in a Python loop. Both start from the same parameters (a
:class:`DiffResNet` built under each task's seed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import torch
from torch.nn import functional as F

from ...operators.laplacian import UnstableStepSizeError
from ...operators.weights import batched_knn_gaussian_weights
from ..diffresnet import DiffResNet

__all__ = ["HeadSettings", "task_graphs", "train_heads", "train_heads_one_by_one", "initial_parameters"]


@dataclass(frozen=True)
class HeadSettings:
    """Hyperparameters of the trained heads (defaults: the Diff-ResNet paper's)."""

    num_steps: int = 10
    step_size: float = 0.5
    n_top: int = 7
    sigma_neighbor: int = 4
    mu: float = 0.0
    alpha: float = 0.0
    epochs: int = 100
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    milestones: Tuple[float, ...] = (0.5, 0.75)
    check_stability: bool = True

    @property
    def uses_graph(self) -> bool:
        return self.num_steps > 0 or self.mu > 0


def task_graphs(points: torch.Tensor, settings: HeadSettings) -> torch.Tensor:
    """The graph of every task over support ∪ query: ``(T, N, N)`` (self in the top-k, adaptive σ, sym. normalized,
    then ``(W + Wᵀ)/2`` — the Diff-ResNet code's few-shot convention)."""
    return batched_knn_gaussian_weights(points, settings.n_top, sigma_neighbor=settings.sigma_neighbor,
                                        include_self=True, normalization="symmetric", symmetrize_weights=True)


def _diffusion_matrices(weights: torch.Tensor, step_size: float, num_steps: int, check: bool) -> torch.Tensor:
    """``(I − γL)^r`` per task (the heads have no dropout, so the r steps are one fixed linear map, applied with
    one product per forward pass); refuses ``γ`` above ``2/λ_max(L)`` of any task."""
    degrees = weights.sum(2)
    laplacian = torch.diag_embed(degrees) - weights
    if check:
        largest = torch.linalg.eigvalsh(laplacian.double())[:, -1]
        worst = float(largest.max())
        if worst > 0 and step_size > 2.0 / worst * (1 + 1e-6):
            raise UnstableStepSizeError(f"step_size={step_size:g} exceeds the stability bound 2/lambda_max(L) = "
                                        f"{2.0 / worst:.4g} of at least one task's graph; lower it")
    eye = torch.eye(weights.shape[1], dtype=weights.dtype, device=weights.device)
    return torch.linalg.matrix_power(eye - step_size * laplacian, num_steps)


def _reference_model(in_features: int, ways: int, seed: int) -> DiffResNet:
    torch.manual_seed(int(seed))
    return DiffResNet(in_features, ways, num_steps=0, step_size=1.0)


def initial_parameters(in_features: int, ways: int, seeds: Sequence[int]) -> List[torch.Tensor]:
    """Stacked ``[W1, b1, W2, b2, W3, b3]`` of a :class:`DiffResNet` head built under each task's seed."""
    models = [_reference_model(in_features, ways, seed) for seed in seeds]

    def stack(get):
        return torch.stack([get(m).detach() for m in models]).clone()

    return [stack(lambda m: m.blocks[0].fc1.weight), stack(lambda m: m.blocks[0].fc1.bias),
            stack(lambda m: m.blocks[0].fc2.weight), stack(lambda m: m.blocks[0].fc2.bias),
            stack(lambda m: m.classifier.weight), stack(lambda m: m.classifier.bias)]


def _batched_forward(parameters: List[torch.Tensor], inputs: torch.Tensor, diffusion: Optional[torch.Tensor]
                     ) -> torch.Tensor:
    fc1_w, fc1_b, fc2_w, fc2_b, out_w, out_b = parameters
    hidden = F.relu(torch.baddbmm(fc1_b[:, None, :], inputs, fc1_w.transpose(1, 2)))
    features = inputs + torch.baddbmm(fc2_b[:, None, :], hidden, fc2_w.transpose(1, 2))
    if diffusion is None:
        return torch.baddbmm(out_b[:, None, :], features, out_w.transpose(1, 2))
    # FC3((I − γL)^r h) = (I − γL)^r (h W3ᵀ) + b3 (rows of I − γL sum to 1): diffuse C columns, not M
    return torch.baddbmm(out_b[:, None, :], diffusion, torch.bmm(features, out_w.transpose(1, 2)))


def _loss(logits: torch.Tensor, support_labels: torch.Tensor, settings: HeadSettings, weights: Optional[torch.Tensor],
          proto_distances: Optional[torch.Tensor]) -> torch.Tensor:
    """Sum over tasks of each task's loss; logits ``(T, N, C)``, support rows first."""
    tasks, support = support_labels.shape
    loss = F.cross_entropy(logits[:, :support].reshape(-1, logits.shape[-1]), support_labels.reshape(-1),
                           reduction="none").reshape(tasks, support).mean(1).sum()
    if settings.mu > 0:
        squared = logits.square().sum(2)  # (T, N)
        pairwise = (weights.sum(2) * squared).sum(1) + (weights.sum(1) * squared).sum(1) - 2 * (
            weights * torch.bmm(logits, logits.transpose(1, 2))).sum((1, 2))
        loss = loss + settings.mu / 2 * pairwise.sum()
    if settings.alpha > 0:
        probabilities = logits[:, support:].softmax(2)
        loss = loss + settings.alpha * (probabilities * proto_distances).sum()
    return loss


def _schedule(optimizer, settings: HeadSettings):
    milestones = sorted({max(1, int(round(m * settings.epochs))) for m in settings.milestones})
    return torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=milestones, gamma=0.1)


def train_heads(support: torch.Tensor, support_labels: torch.Tensor, query: torch.Tensor, ways: int,
                settings: HeadSettings, seeds: Sequence[int], *, prototypes: Optional[torch.Tensor] = None,
                chunk_size: int = 0) -> torch.Tensor:
    """Train one head per task, all tasks at once; returns query logits ``(T, Q, C)``.

    Args:
        support, query: ``(T, S, M)``, ``(T, Q, M)`` features; support_labels ``(T, S)`` in ``0 … C−1``.
        seeds: one initialization seed per task.
        prototypes: ``(T, C, M)`` for the prototypical loss (``settings.alpha > 0``).
        chunk_size: tasks trained together (0: all); memory grows as ``chunk · M²``.
    """
    tasks = support.shape[0]
    if len(seeds) != tasks:
        raise ValueError(f"{len(seeds)} seeds for {tasks} tasks")
    step = chunk_size or tasks
    outputs = [_train_chunk(support[i:i + step], support_labels[i:i + step], query[i:i + step], ways, settings,
                            seeds[i:i + step], None if prototypes is None else prototypes[i:i + step])
               for i in range(0, tasks, step)]
    return torch.cat(outputs)


def _train_chunk(support, support_labels, query, ways, settings, seeds, prototypes):
    inputs = torch.cat([support, query], 1)
    weights = task_graphs(inputs, settings) if settings.uses_graph else None
    diffusion = _diffusion_matrices(weights, settings.step_size, settings.num_steps, settings.check_stability) \
        if settings.num_steps > 0 else None
    distances = torch.cdist(query, prototypes) if settings.alpha > 0 else None
    parameters = [p.to(inputs.dtype).requires_grad_() for p in initial_parameters(inputs.shape[2], ways, seeds)]
    optimizer = torch.optim.SGD(parameters, lr=settings.lr, momentum=settings.momentum,
                                weight_decay=settings.weight_decay)
    scheduler = _schedule(optimizer, settings)
    for _ in range(settings.epochs):
        optimizer.zero_grad()
        logits = _batched_forward(parameters, inputs, diffusion)
        _loss(logits, support_labels, settings, weights, distances).backward()
        optimizer.step()
        scheduler.step()
    with torch.no_grad():
        return _batched_forward(parameters, inputs, diffusion)[:, support.shape[1]:]


def train_heads_one_by_one(support: torch.Tensor, support_labels: torch.Tensor, query: torch.Tensor, ways: int,
                           settings: HeadSettings, seeds: Sequence[int], *,
                           prototypes: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The reference: a :class:`DiffResNet` and an optimizer per task, trained in a loop. Same output as
    :func:`train_heads`."""
    outputs = []
    for task in range(support.shape[0]):
        inputs = torch.cat([support[task], query[task]])
        weights = task_graphs(inputs[None], settings)[0] if settings.uses_graph else None
        model = _reference_model(inputs.shape[1], ways, seeds[task]).to(inputs.dtype)
        if settings.num_steps > 0:
            model.diffusion = type(model.diffusion)(step_size=settings.step_size, num_steps=settings.num_steps,
                                                    weights=weights, check_stability=settings.check_stability)
        distances = torch.cdist(query[task], prototypes[task])[None] if settings.alpha > 0 else None
        optimizer = torch.optim.SGD(model.parameters(), lr=settings.lr, momentum=settings.momentum,
                                    weight_decay=settings.weight_decay)
        scheduler = _schedule(optimizer, settings)
        for _ in range(settings.epochs):
            optimizer.zero_grad()
            logits = model.classifier(model.features(inputs))[None]
            _loss(logits, support_labels[task][None], settings, None if weights is None else weights[None],
                  distances).backward()
            optimizer.step()
            scheduler.step()
        with torch.no_grad():
            outputs.append(model.classifier(model.features(inputs))[support.shape[1]:])
    return torch.stack(outputs)
