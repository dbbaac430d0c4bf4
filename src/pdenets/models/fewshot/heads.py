r"""The trained heads of transductive few-shot learning — one small network per task, many tasks at once.

Each task trains the Diff-ResNet head (Wang, Dou, Bao, Shi, *Diffusion Mechanism in Residual
Neural Network: Theory and Applications*, §5.3 and Appendix E.3) on its support set, full
batch, with the task's queries present in the graph:

$$
    h = x + \mathrm{FC}_2(\mathrm{ReLU}(\mathrm{FC}_1 x)), \qquad
    h \leftarrow (I - \gamma L)^r h, \qquad o = \mathrm{FC}_3(h),
$$

``FC₁, FC₂: R^M → R^M``, ``FC₃: R^M → R^C``, ``L = diag(W1) − W`` of the task's graph over
support ∪ query. The loss is the cross entropy of the support outputs, plus

* ``μ/2 Σ_{i,j} w_{ij} ‖o_i − o_j‖²`` over support ∪ query (*external* convection-diffusion; on
  ``o/τ`` for prototype-initialized heads, whose logits are ``τ`` times larger), and
* ``α Σ_{i ∈ query} Σ_c softmax(o_i)_c ‖x_i − \tilde m_c‖`` (the prototypical loss of E.3.1).

``r = 0, μ = 0`` is *convection*, ``r = 0, μ > 0`` *external*, ``r > 0`` *internal*
convection-diffusion (:class:`Convection`, :class:`External`, :class:`Internal`). SGD (lr 0.1,
momentum 0.9, weight decay 1e-4), 100 full-batch steps, learning rate × 0.1 at 50 % and 75 %.

Two choices make the heads hold in every episode shape (derivation in ``docs/fewshot.md``):

* **prototype initialization** (``init="prototype"``): the residual branch starts off
  (``FC2 = 0``) and ``FC3`` starts as the nearest-prototype classifier, logits ``−s‖x − m_c‖²/2``
  with ``s = τ / d̄²`` (``τ = 10``, ``d̄²`` the mean squared distance between two prototypes of the
  task), so an untrained head *is* nearest prototype and training
  refines it. From PyTorch's random initialization (``init="random"``, the paper's) a head must
  learn the classes from ``C·K`` points, which fails with one shot and many ways.
* **the graph adapts to the episode**: with ``n_top=None`` each point keeps
  ``k = clamp(n_min, 2, 7)`` entries, itself included (:func:`adaptive_neighbours`), ``n_min`` the
  points of the task's smallest class by the nearest-prototype guess (:func:`episode_neighbours`) —
  never more than the points that class has, so a point's list can lie inside its class. The
  paper's 7 with 16 points per class (5-way 1-shot, 15 queries); 2 with one query per class,
  where 7 entries put three quarters of the edge weight across classes and ``(I − γL)^10`` left
  a query 19 % of its row mass on its own class (82 % and 88 % with 2 entries; the 20 Lake runs).
  ``σ`` is the distance to entry ``min(sigma_neighbor, k)``. With ``num_steps=None``, ``r`` is
  the ablation's: 10 diffusion layers for one shot, 5 for more.

:func:`train_heads` trains ``T`` tasks as stacked parameter tensors ``(T, ·, ·)`` with batched
matrix products: one optimizer step updates every task, and because SGD is elementwise and
the tasks' losses are summed, each task follows exactly the trajectory it would follow
alone. Without dropout the ``r`` diffusion steps are one fixed linear map: ``(I − γL)^r`` is
formed once per task and, its rows summing to one, applied after the classifier to ``C``
columns instead of ``M`` — the same numbers up to round-off. :func:`train_heads_one_by_one` is
that reference: a :class:`~pdenets.models.DiffResNet` and an optimizer per task, in a Python
loop. Both start from the same parameters (:func:`initial_parameters`, drawn from each task's
seed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch.nn import functional as F

from ..._checks import check_choice, check_num_neighbors, check_positive, check_positive_int
from ...operators.diffusion import BatchedDiffusion
from ...operators.weights import batched_knn_gaussian_weights
from ..diffresnet import DiffResNet
from .base import FewShotBatch, FewShotMethod, register_method
from .closed_form_head import train_prototype_heads
from .preprocessing import prototypes as class_means

__all__ = [
    "HeadSettings",
    "task_graphs",
    "train_heads",
    "train_heads_one_by_one",
    "initial_parameters",
    "prototype_scale",
    "HeadTraining",
    "TrainedHead",
    "Convection",
    "ConvectionSettings",
    "External",
    "ExternalSettings",
    "Internal",
    "InternalSettings",
    "episode_neighbours",
    "adaptive_neighbours",
    "MAX_NEIGHBOURS",
]


@dataclass(frozen=True)
class HeadSettings:
    """What :func:`train_heads` runs (defaults: the Diff-ResNet paper's): a head's settings resolved for one
    batch of tasks. ``n_top`` and ``sigma_neighbor`` are one count for every task or one per task."""

    num_steps: int = 10
    step_size: float = 0.5
    n_top: Union[int, Tuple[int, ...]] = 7
    sigma_neighbor: Union[int, Tuple[int, ...]] = 4
    mu: float = 0.0
    alpha: float = 0.0
    epochs: int = 10
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    milestones: Tuple[float, ...] = (0.5, 0.75)
    check_stability: bool = True
    init: str = "prototype"
    temperature: float = 10.0
    separate_support: bool = False

    @property
    def uses_graph(self) -> bool:
        return self.num_steps > 0 or self.mu > 0


def task_graphs(
    points: torch.Tensor, settings: HeadSettings, support_labels: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """The graph of every task over support ∪ query: ``(T, N, N)`` (self in the top-k, adaptive σ, sym.
    normalized, then ``(W + Wᵀ)/2`` — the Diff-ResNet code's few-shot convention).

    With ``settings.separate_support`` and the support labels ``(T, S)`` (the support points come first), the
    edges between two support points of different classes are removed: their labels say they differ, and
    diffusing along them mixes the very points the head learns the classes from."""
    weights = batched_knn_gaussian_weights(
        points,
        settings.n_top,
        sigma_neighbor=settings.sigma_neighbor,
        include_self=True,
        normalization="symmetric",
        symmetrize_weights=True,
        coincident="link",  # a point with copies (duplicate utterances, say) is linked to them
    )
    if settings.separate_support and support_labels is not None:
        support = support_labels.shape[1]
        keep = torch.ones_like(weights, dtype=torch.bool)
        keep[:, :support, :support] = support_labels[:, :, None] == support_labels[:, None, :]
        weights = weights * keep
    return weights


def stable_task_weights(weights: torch.Tensor, step_size: float, margin: float = 0.99) -> torch.Tensor:
    """Each task's graph ``(T, N, N)``, scaled down where ``γ = step_size`` would exceed its stability bound
    ``2/λ_max(L)``: ``W_t ← c_t W_t`` with ``c_t = margin · bound_t / γ`` (``L`` is linear in ``W``: the
    diffusion as strong as stability allows). Graphs within their bound are returned as they are (the same
    tensor when none needs it), so every task that was stable before computes the same numbers.

    Large query sets need it: with 100 queries a class the adaptive neighbourhood grows, and ``λ_max``
    with it, past the paper's ``γ = 0.5``.

    Examples:
        >>> import torch
        >>> star = torch.zeros(1, 5, 5); star[0, 0, 1:] = star[0, 1:, 0] = 1.0
        >>> scaled = stable_task_weights(star, 0.5)      # λ_max(L) = 5: γ up to 0.4
        >>> round(float(scaled[0, 0, 1]), 3)
        0.792
    """
    weights_ = weights.detach()
    off_diagonal = weights_.sum(2) - torch.diagonal(weights_, dim1=1, dim2=2)
    largest = off_diagonal.max(1).values.double()
    beyond = (largest * step_size > 1).nonzero().flatten()  # only these can exceed the bound (Gershgorin)
    if len(beyond) == 0:
        return weights
    graphs = weights_[beyond].double()
    laplacians = torch.diag_embed(graphs.sum(2)) - graphs
    largest_eigenvalue = torch.linalg.eigvalsh(laplacians)[:, -1]
    over = step_size * largest_eigenvalue > 2 * margin
    if not bool(over.any()):
        return weights
    scale = torch.ones(weights.shape[0], dtype=torch.float64, device=weights.device)
    scale[beyond[over]] = 2 * margin / (step_size * largest_eigenvalue[over])
    return weights * scale.to(weights.dtype)[:, None, None]


def initial_parameters(in_features: int, ways: int, seeds: Sequence[int]) -> List[torch.Tensor]:
    """Stacked ``[W1, b1, W2, b2, W3, b3]`` of every task's head, drawn as :class:`torch.nn.Linear` draws them
    (uniform on ``±1/√M``, ``M`` the input width of all three layers) from a generator seeded with the task's
    seed: a task's parameters depend on its seed only."""
    bound = 1.0 / in_features**0.5
    shapes = [
        (in_features, in_features),
        (in_features,),
        (in_features, in_features),
        (in_features,),
        (ways, in_features),
        (ways,),
    ]
    sizes = [math.prod(shape) for shape in shapes]
    drawn = (
        torch.stack(
            [torch.rand(sum(sizes), generator=torch.Generator().manual_seed(int(seed))) for seed in seeds]
        )
        * (2 * bound)
        - bound
    )  # (T, all parameters), one draw per task
    return [part.reshape(len(seeds), *shape) for part, shape in zip(drawn.split(sizes, dim=1), shapes)]


def _reference_model(parameters: List[torch.Tensor], ways: int) -> DiffResNet:
    """A :class:`DiffResNet` head holding one task's initial parameters ``[W1, b1, W2, b2, W3, b3]``."""
    model = DiffResNet(parameters[0].shape[1], ways, num_steps=0, step_size=1.0)
    block: Any = model.blocks[0]  # a residual block: fc1, fc2 (nn.ModuleList items are typed as Module)
    classifier: Any = model.classifier
    with torch.no_grad():
        for parameter, value in zip(
            (
                block.fc1.weight,
                block.fc1.bias,
                block.fc2.weight,
                block.fc2.bias,
                classifier.weight,
                classifier.bias,
            ),
            parameters,
        ):
            parameter.copy_(value)
    return model


def prototype_scale(centres: torch.Tensor, temperature: float) -> torch.Tensor:
    """``(T,)`` the scale ``s = τ / d̄²`` of a prototype-initialized head's logits ``−s‖x − m_c‖²/2``, ``d̄²``
    each task's mean squared distance between two of its ``(T, C, M)`` prototypes (``τ`` where they all
    coincide).

    Args:
        centres: ``(T, C, M)`` the tasks' prototypes.
        temperature: ``τ``.

    Examples:
        >>> prototype_scale(torch.tensor([[[0.0, 0.0], [3.0, 4.0]]]), 10.0)
        tensor([0.4000])
    """
    ways = centres.shape[1]
    spread = torch.cdist(centres, centres).square().sum((1, 2)) / max(ways * (ways - 1), 1)
    scale = temperature / spread.clamp_min(torch.finfo(centres.dtype).tiny)
    return torch.where(spread > 0, scale, torch.full_like(scale, temperature))


def _imprint(parameters: List[torch.Tensor], centres: torch.Tensor, temperature: float) -> List[torch.Tensor]:
    """Start every head as the nearest-prototype classifier: residual branch off (``FC2 = 0``), ``FC3`` rows
    ``s m_c`` and biases ``−s‖m_c‖²/2``, so the logits are ``−s‖x − m_c‖²/2`` up to a per-row constant, with
    ``s = τ / d̄²`` and ``d̄²`` the task's mean squared distance between two prototypes (scale-free: features
    multiplied by 100 give the same probabilities)."""
    fc1_w, fc1_b, fc2_w, fc2_b, _, _ = parameters
    scale = prototype_scale(centres, temperature)[:, None]
    return [
        fc1_w,
        fc1_b,
        torch.zeros_like(fc2_w),
        torch.zeros_like(fc2_b),
        scale[..., None] * centres,
        -scale / 2 * centres.square().sum(2),
    ]


def _batched_forward(
    parameters: List[torch.Tensor], inputs: torch.Tensor, diffusion: Optional[torch.Tensor]
) -> torch.Tensor:
    """Logits ``(T, R, C)``: of every point without diffusion, else of the rows of ``(I − γL)^r`` given
    ``(T, R, N)``."""
    fc1_w, fc1_b, fc2_w, fc2_b, out_w, out_b = parameters
    hidden = F.relu(torch.baddbmm(fc1_b[:, None, :], inputs, fc1_w.transpose(1, 2)))
    features = inputs + torch.baddbmm(fc2_b[:, None, :], hidden, fc2_w.transpose(1, 2))
    if diffusion is None:
        return torch.baddbmm(out_b[:, None, :], features, out_w.transpose(1, 2))
    # FC3((I − γL)^r h) = (I − γL)^r (h W3ᵀ) + b3 (rows of I − γL sum to 1): diffuse C columns, not M
    return torch.baddbmm(out_b[:, None, :], diffusion, torch.bmm(features, out_w.transpose(1, 2)))


def _loss(
    logits: torch.Tensor,
    support_labels: torch.Tensor,
    settings: HeadSettings,
    weights: Optional[torch.Tensor],
    proto_distances: Optional[torch.Tensor],
) -> torch.Tensor:
    """Sum over tasks of each task's loss; logits ``(T, N, C)``, support rows first."""
    tasks, support = support_labels.shape
    loss = (
        F.cross_entropy(
            logits[:, :support].reshape(-1, logits.shape[-1]), support_labels.reshape(-1), reduction="none"
        )
        .reshape(tasks, support)
        .mean(1)
        .sum()
    )
    if settings.mu > 0:
        assert weights is not None  # the caller builds the graph when mu > 0
        # prototype-initialized logits are ~τ times larger than random ones: the regularizer sees logits / τ
        outputs = logits / settings.temperature if settings.init == "prototype" else logits
        squared = outputs.square().sum(2)  # (T, N)
        pairwise = (
            (weights.sum(2) * squared).sum(1)
            + (weights.sum(1) * squared).sum(1)
            - 2 * (weights * torch.bmm(outputs, outputs.transpose(1, 2))).sum((1, 2))
        )
        loss = loss + settings.mu / 2 * pairwise.sum()
    if settings.alpha > 0:
        assert proto_distances is not None  # the caller measures them when alpha > 0
        probabilities = logits[:, support:].softmax(2)
        loss = loss + settings.alpha * (probabilities * proto_distances).sum()
    return loss


def learning_rates(settings: HeadSettings) -> List[float]:
    """The rate of every step: ``lr``, × 0.1 from each milestone's step on (:func:`_schedule`'s, without an
    optimizer).

    Examples:
        >>> [round(rate, 9) for rate in learning_rates(HeadSettings(epochs=10, lr=1.0))]
        [1.0, 1.0, 1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.01]
    """
    milestones = sorted({max(1, int(round(m * settings.epochs))) for m in settings.milestones})
    return [settings.lr * 0.1 ** sum(step >= m for m in milestones) for step in range(settings.epochs)]


def _schedule(optimizer, settings: HeadSettings):
    milestones = sorted({max(1, int(round(m * settings.epochs))) for m in settings.milestones})
    return torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=milestones, gamma=0.1)


#: Parameters a run of tasks trained together holds per layer (``tasks · M²``) from which the tasks are cut
#: into runs: past a few MiB the layers' batched products leave the CPU's caches. Measured at one thread
#: (1,000 5-way 1-shot tasks, ``benchmarks/fewshot.py``): at ``M = 384`` runs of 3 tasks take 32 ms a task
#: against 59 for all tasks together; at ``M = 64`` runs of 128, 1.5 ms against 1.7.
CACHED_HEAD_ENTRIES = 1 << 19


def cached_chunk(width: int) -> int:
    """Tasks trained together at feature width ``M`` (:data:`CACHED_HEAD_ENTRIES`), at least 2.

    Examples:
        >>> cached_chunk(64), cached_chunk(384)
        (128, 3)
    """
    return max(2, CACHED_HEAD_ENTRIES // max(width, 1) ** 2)


def train_heads(
    support: torch.Tensor,
    support_labels: torch.Tensor,
    query: torch.Tensor,
    ways: int,
    settings: HeadSettings,
    seeds: Sequence[int],
    *,
    prototypes: Optional[torch.Tensor] = None,
    chunk_size: int = 0,
) -> torch.Tensor:
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

    def part(i: int) -> HeadSettings:
        if not (isinstance(settings.n_top, tuple) or isinstance(settings.sigma_neighbor, tuple)):
            return settings
        return replace(
            settings,
            n_top=_slice(settings.n_top, i, i + step),
            sigma_neighbor=_slice(settings.sigma_neighbor, i, i + step),
        )

    outputs = [
        _train_chunk(
            support[i : i + step],
            support_labels[i : i + step],
            query[i : i + step],
            ways,
            part(i),
            seeds[i : i + step],
            None if prototypes is None else prototypes[i : i + step],
        )
        for i in range(0, tasks, step)
    ]
    return torch.cat(outputs)


def _train_chunk(
    support: torch.Tensor,
    support_labels: torch.Tensor,
    query: torch.Tensor,
    ways: int,
    settings: HeadSettings,
    seeds: Sequence[int],
    prototypes: Optional[torch.Tensor],
) -> torch.Tensor:
    inputs = torch.cat([support, query], 1)
    weights = task_graphs(inputs, settings, support_labels) if settings.uses_graph else None
    operator: Optional[BatchedDiffusion] = None
    if settings.num_steps > 0:
        assert weights is not None  # settings.uses_graph holds whenever there are diffusion steps
        if settings.check_stability:  # a task whose graph would refuse γ diffuses as strongly as it allows
            weights = stable_task_weights(weights, settings.step_size)
        operator = BatchedDiffusion(weights, settings.step_size, check_stability=settings.check_stability)
    # the cross entropy reads the support rows only; the regularizers read every row
    every_row = settings.mu > 0 or settings.alpha > 0
    diffusion = (
        None
        if operator is None
        else operator.matrix(settings.num_steps, None if every_row else slice(0, support.shape[1]))
    )
    distances: Optional[torch.Tensor] = None
    if settings.alpha > 0:
        assert prototypes is not None  # the prototypical loss (alpha > 0) is given the prototypes
        distances = torch.cdist(query, prototypes)
    # drawn on the CPU from each task's seed (the same start on every device), then moved to the inputs
    parameters = [p.to(inputs) for p in initial_parameters(inputs.shape[2], ways, seeds)]
    if settings.init == "prototype":
        centres = class_means(support, support_labels, ways) if prototypes is None else prototypes
        parameters = _imprint(parameters, centres, settings.temperature)
    if settings.init == "prototype" and settings.mu == 0 and settings.alpha == 0:
        # the default heads: gradients in closed form, the first layer factored (closed_form_head)
        parameters = train_prototype_heads(
            inputs,
            support_labels,
            diffusion,
            parameters,
            learning_rates(settings),
            settings.momentum,
            settings.weight_decay,
        )
        return _trained_outputs(
            parameters, inputs, diffusion, operator, settings, every_row, support.shape[1]
        )
    parameters = [p.requires_grad_() for p in parameters]
    optimizer = torch.optim.SGD(
        parameters,
        lr=settings.lr,
        momentum=settings.momentum,
        weight_decay=settings.weight_decay,
        foreach=True,
    )
    scheduler = _schedule(optimizer, settings)
    for _ in range(settings.epochs):
        optimizer.zero_grad()
        logits = _batched_forward(parameters, inputs, diffusion)
        _loss(logits, support_labels, settings, weights, distances).backward()
        optimizer.step()
        scheduler.step()
    return _trained_outputs(parameters, inputs, diffusion, operator, settings, every_row, support.shape[1])


def _trained_outputs(
    parameters: List[torch.Tensor],
    inputs: torch.Tensor,
    diffusion: Optional[torch.Tensor],
    operator: Optional[BatchedDiffusion],
    settings: HeadSettings,
    every_row: bool,
    support: int,
) -> torch.Tensor:
    """The trained heads' query logits ``(T, Q, C)``."""
    with torch.no_grad():
        if operator is None or every_row:
            return _batched_forward(parameters, inputs, diffusion)[:, support:]
        fc3_w, fc3_b = parameters[4], parameters[5]
        undiffused = _batched_forward(parameters[:4] + [fc3_w, torch.zeros_like(fc3_b)], inputs, None)
        return operator.apply(undiffused, settings.num_steps)[:, support:] + fc3_b[:, None, :]


def _slice(value: Union[int, Tuple[int, ...]], start: int, stop: int) -> Union[int, Tuple[int, ...]]:
    return value[start:stop] if isinstance(value, tuple) else value


def _of_task(value: Union[int, Tuple[int, ...]], task: int) -> int:
    return value[task] if isinstance(value, tuple) else value


def train_heads_one_by_one(
    support: torch.Tensor,
    support_labels: torch.Tensor,
    query: torch.Tensor,
    ways: int,
    settings: HeadSettings,
    seeds: Sequence[int],
    *,
    prototypes: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """The reference: a :class:`DiffResNet` and an optimizer per task, trained in a loop. Same output as
    :func:`train_heads`."""
    outputs = []
    for task in range(support.shape[0]):
        inputs = torch.cat([support[task], query[task]])
        own = settings
        if isinstance(settings.n_top, tuple) or isinstance(settings.sigma_neighbor, tuple):
            own = replace(
                settings,
                n_top=_of_task(settings.n_top, task),
                sigma_neighbor=_of_task(settings.sigma_neighbor, task),
            )
        weights = (
            task_graphs(inputs[None], own, support_labels[task][None])[0] if settings.uses_graph else None
        )
        parameters = [p.to(inputs) for p in initial_parameters(inputs.shape[1], ways, [seeds[task]])]
        if settings.init == "prototype":
            centres = (
                class_means(support[task][None], support_labels[task][None], ways)
                if prototypes is None
                else prototypes[task][None]
            )
            parameters = _imprint(parameters, centres, settings.temperature)
        model = _reference_model([p[0] for p in parameters], ways).to(inputs)
        if settings.num_steps > 0:
            model.diffusion = type(model.diffusion)(
                step_size=settings.step_size,
                num_steps=settings.num_steps,
                weights=weights,
                check_stability=settings.check_stability,
            )
        distances = None
        if settings.alpha > 0:
            assert prototypes is not None  # given whenever alpha > 0 (reads_prototypes)
            distances = torch.cdist(query[task], prototypes[task])[None]
        optimizer = torch.optim.SGD(
            model.parameters(), lr=settings.lr, momentum=settings.momentum, weight_decay=settings.weight_decay
        )
        scheduler = _schedule(optimizer, settings)
        for _ in range(settings.epochs):
            optimizer.zero_grad()
            logits = model.classifier(model.features(inputs))[None]
            _loss(
                logits,
                support_labels[task][None],
                settings,
                None if weights is None else weights[None],
                distances,
            ).backward()
            optimizer.step()
            scheduler.step()
        with torch.no_grad():
            outputs.append(model.classifier(model.features(inputs))[support.shape[1] :])
    return torch.stack(outputs)


# ----------------------------------------------------------------------------------------
# the three trained-head methods

#: the paper's n_top = 8 keeps 7 entries (self included): the most an adaptive graph keeps.
MAX_NEIGHBOURS = 7
INITIALIZATIONS = ("prototype", "random")


def adaptive_neighbours(class_size: int, maximum: int = MAX_NEIGHBOURS) -> int:
    """The adaptive graph's entries per point, self included: ``clamp(class_size, 2, maximum)``.

    A point's list of ``k`` entries can lie inside its class only if the class holds ``k`` points; two
    entries (self and one neighbour) at least, the paper's 7 at most (module docstring).

    Args:
        class_size: the points the task's smallest class holds (support and queries).
        maximum: the most entries kept (default :data:`MAX_NEIGHBOURS`, 7).

    Returns:
        ``k``.

    Examples:
        >>> adaptive_neighbours(16), adaptive_neighbours(3), adaptive_neighbours(1)
        (7, 3, 2)
    """
    return min(max(int(class_size), 2), int(maximum))


def episode_neighbours(batch: FewShotBatch, maximum: int = MAX_NEIGHBOURS) -> Tuple[int, ...]:
    """Graph entries per point (self included) of every task: the fewest points a class of the task holds by
    the nearest-prototype guess (its support points and the queries nearest to its support mean), clamped to
    ``[2, maximum]`` — so that a point's list can lie inside its class even in the task's smallest class
    (module docstring): :func:`adaptive_neighbours` of that class's size.

    Examples:
        >>> import torch
        >>> support = torch.tensor([[[0.0], [10.0]]])
        >>> queries = torch.tensor([[[0.1]] * 8 + [[9.9]] * 8])
        >>> balanced = FewShotBatch(support, torch.tensor([[0, 1]]), queries, 2)
        >>> skewed = FewShotBatch(support, torch.tensor([[0, 1]]), torch.tensor([[[0.1]] * 15 + [[9.9]]]), 2)
        >>> episode_neighbours(balanced), episode_neighbours(skewed)
        ((7,), (2,))
    """
    nearest = torch.cdist(batch.query, class_means(batch.support, batch.support_labels, batch.ways)).argmin(2)
    counts = F.one_hot(batch.support_labels, batch.ways).sum(1) + F.one_hot(nearest, batch.ways).sum(
        1
    )  # (T, C)
    return tuple(adaptive_neighbours(int(size), maximum) for size in counts.min(1).values)


@dataclass(frozen=True)
class HeadTraining:
    """Training of a head (defaults: the Diff-ResNet paper's optimizer, 10 steps from the prototype
    initialization).

    A head that starts as nearest prototype needs few steps: on 300 novel-alphabet Omniglot tasks the internal
    head scored 98.12 % after 10 steps and 98.24 % after the paper's 100 (5-way 1-shot, 15 queries per class),
    82.17 % and 82.57 % (20-way 1-shot, one query per class), for a tenth of the time.

    Args:
        epochs: full-batch SGD steps (default 10; the paper's 100 in the ``"paper"`` preset); lr (0.1),
            momentum (0.9), weight_decay (1e-4); the rate falls ×0.1 at 50 % and 75 % of the steps.
        alpha: weight of the prototypical loss on the queries (default 0; the paper's tricks: 0.5 for 5-shot).
        init: ``"prototype"`` (the head starts as nearest prototype) or ``"random"`` (PyTorch's, the paper's).
        temperature: ``τ`` of the prototype initialization (default 10).
    """

    epochs: int = 10
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    alpha: float = 0.0
    init: str = "prototype"
    temperature: float = 10.0

    def __post_init__(self) -> None:
        check_positive_int(self.epochs, "epochs")
        check_positive(self.lr, "lr")
        check_positive(self.momentum, "momentum", allow_zero=True)
        check_positive(self.weight_decay, "weight_decay", allow_zero=True)
        check_positive(self.alpha, "alpha", allow_zero=True)
        check_choice(self.init, "init", INITIALIZATIONS)
        check_positive(self.temperature, "temperature")

    def _training(self) -> dict:
        return dict(
            epochs=self.epochs,
            lr=self.lr,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            alpha=self.alpha,
            init=self.init,
            temperature=self.temperature,
        )


@dataclass(frozen=True)
class ConvectionSettings(HeadTraining):
    """:class:`HeadTraining` alone: without a transductive term the head can only refine the nearest-prototype
    classifier it starts from. (After the paper's 100 steps at lr 0.1 it drifted from it on one-shot tasks —
    20 Lake runs, 30-epoch Conv-4: 14.0 % error against nearest prototype's 11.25 %; 10 steps keep it
    close.)"""


@dataclass(frozen=True)
class ExternalSettings(HeadTraining):
    """:class:`HeadTraining` plus the graph and the regularizer.

    Args:
        n_top: graph entries per point, self included (``None``: :func:`episode_neighbours`).
        sigma_neighbor: adaptive kernel width = distance to entry ``min(sigma_neighbor, n_top)`` (default 4).
        mu: weight of ``μ/2 Σ w_ij ‖o_i − o_j‖²`` (default 0.01).
        separate_support: no edge between two support points of different classes (default True; the paper's
            graph keeps them).
    """

    n_top: Optional[int] = None
    sigma_neighbor: int = 4
    mu: float = 0.01
    separate_support: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_top is not None:
            check_positive_int(self.n_top, "n_top", minimum=2)
        check_positive_int(self.sigma_neighbor, "sigma_neighbor", minimum=2)
        check_positive(self.mu, "mu", allow_zero=True)


@dataclass(frozen=True)
class InternalSettings(HeadTraining):
    """:class:`HeadTraining` plus the graph and the diffusion layers.

    Args:
        n_top, sigma_neighbor, separate_support: the graph, as in :class:`ExternalSettings`.
        step_size: ``γ`` (default 0.5; refused above ``2/λ_max(L)``).
        num_steps: ``r`` (``None``: 10 for one shot, 5 for more — the paper's ablation; 0: no diffusion).
        min_queries_per_class: below this many queries per class on average (``Q < q_min · C``) the head is
            not trained and answers as it starts, nearest prototype (default 2, the ensemble's threshold;
            0: always trained, the ``"paper"`` preset). So few queries cannot inform a diffusion over
            support ∪ query: on the 20 Lake runs (one query per class) the trained head erred 2.00 and
            2.25 points more than nearest prototype with Conv-4s of 1 and 10 epochs (docs/fewshot.md).
    """

    n_top: Optional[int] = None
    sigma_neighbor: int = 4
    step_size: float = 0.5
    num_steps: Optional[int] = None
    separate_support: bool = True
    min_queries_per_class: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_top is not None:
            check_positive_int(self.n_top, "n_top", minimum=2)
        check_positive_int(self.sigma_neighbor, "sigma_neighbor", minimum=2)
        check_positive(self.step_size, "step_size")
        if self.num_steps is not None:
            check_positive_int(self.num_steps, "num_steps", minimum=0)
        check_positive(self.min_queries_per_class, "min_queries_per_class", allow_zero=True)


class TrainedHead(FewShotMethod):
    """A Diff-ResNet head trained per task (module docstring); ``(T, Q, C)`` probabilities. The tasks of a
    batch train together in runs of :func:`cached_chunk` tasks (memory ``chunk · M²``);
    :func:`~pdenets.models.fewshot.classify` splits large batches too (``chunk_size``) and runs the
    one-task-at-a-time path (``batched=False``)."""

    is_transductive = False
    settings_class = HeadTraining
    settings: HeadTraining

    def head_settings(self, batch: FewShotBatch) -> HeadSettings:
        return HeadSettings(num_steps=0, mu=0.0, **self.settings._training())

    def _graph(self, batch: FewShotBatch) -> Dict[str, Any]:
        """The task graph's settings of a head that has one (:class:`External`, :class:`Internal`)."""
        settings = self.settings
        assert isinstance(settings, (ExternalSettings, InternalSettings)), "a head without a graph"
        points = batch.support.shape[1] + batch.query.shape[1]
        n_top: Union[int, Tuple[int, ...]]
        sigma: Union[int, Tuple[int, ...]]
        if settings.n_top is None:
            per_task = episode_neighbours(batch)
            n_top, sigma = per_task, tuple(min(settings.sigma_neighbor, k) for k in per_task)
        else:
            n_top = check_num_neighbors(settings.n_top, points, include_self=True, name="n_top")
            sigma = min(settings.sigma_neighbor, n_top)
        return dict(n_top=n_top, sigma_neighbor=sigma, separate_support=settings.separate_support)

    def reads_prototypes(self) -> bool:
        return self.settings.init == "prototype" or self.settings.alpha > 0

    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        head = self.head_settings(batch)
        centres = batch.prototypes if self.reads_prototypes() else None
        logits = train_heads(
            batch.support,
            batch.support_labels,
            batch.query,
            batch.ways,
            head,
            list(range(batch.tasks)) if batch.seeds is None else batch.seeds,
            prototypes=centres,
            chunk_size=cached_chunk(batch.support.shape[2]),
        )
        return torch.softmax(logits, dim=2)


@register_method
class Convection(TrainedHead):
    """The residual head ``x + FC2 ReLU FC1 x → FC3`` trained on the support set (cross entropy)."""

    name = "convection"
    description = (
        "a residual head trained on the support set (Diff-ResNet ablation: convection): inductive; at the "
        "defaults it stays with nearest prototype"
    )
    settings_class = ConvectionSettings
    settings: ConvectionSettings
    presets = {"paper": {"init": "random", "epochs": 100}}


@register_method
class External(TrainedHead):
    """:class:`Convection` + ``μ/2 Σ w_ij ‖o_i − o_j‖²`` over support ∪ query (external
    convection-diffusion)."""

    name = "external"
    description = (
        "convection + a graph regularizer on the outputs (Diff-ResNet ablation: external); for the "
        "ablation, at the defaults it equals convection"
    )
    is_transductive = True
    settings_class = ExternalSettings
    settings: ExternalSettings
    presets = {"paper": {"init": "random", "n_top": 7, "separate_support": False, "epochs": 100}}

    def head_settings(self, batch: FewShotBatch) -> HeadSettings:
        return HeadSettings(
            num_steps=0, mu=self.settings.mu, **self._graph(batch), **self.settings._training()
        )


@register_method
class Internal(TrainedHead):
    """The Diff-ResNet head: ``r`` diffusion layers ``(I − γL)`` inside the network (internal
    convection-diffusion).

    Examples:
        >>> import torch
        >>> from pdenets.models.fewshot import FewShotBatch, Internal
        >>> centres = torch.randn(2, 3, 8) * 4
        >>> batch = FewShotBatch(centres, torch.arange(3).expand(2, -1),
        ...                      centres.repeat_interleave(4, 1) + torch.randn(2, 12, 8), 3)
        >>> Internal(epochs=20).predict_proba(batch).shape
        torch.Size([2, 12, 3])
    """

    name = "internal"
    description = (
        "the Diff-ResNet head (Wang et al.): diffusion layers inside the network; for pixel-like features, "
        "where it is strongest; it can fall below nearest prototype on skewed queries; below 2 queries per "
        "class it answers as nearest prototype"
    )
    is_transductive = True
    settings_class = InternalSettings
    settings: InternalSettings
    presets = {
        "paper": {
            "init": "random",
            "n_top": 7,
            "separate_support": False,
            "epochs": 100,
            "min_queries_per_class": 0.0,
        }
    }

    def too_few_queries(self, batch: FewShotBatch) -> bool:
        """Whether ``batch``'s queries are too few to train on: ``Q < q_min · C``
        (:attr:`InternalSettings.min_queries_per_class`)."""
        return batch.query.shape[1] < self.settings.min_queries_per_class * batch.ways

    def reads_prototypes(self) -> bool:
        return super().reads_prototypes() or self.settings.min_queries_per_class > 0

    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        if self.too_few_queries(batch):  # the untrained prototype-initialized head: nearest prototype
            return batch.nearest_prototype_proba(prototype_scale(batch.prototypes, self.settings.temperature))
        return super().predict_proba(batch)

    def steps(self, batch: FewShotBatch) -> int:
        if self.settings.num_steps is not None:
            return self.settings.num_steps
        return 10 if batch.shots == 1 else 5

    def head_settings(self, batch: FewShotBatch) -> HeadSettings:
        return HeadSettings(
            num_steps=self.steps(batch),
            step_size=self.settings.step_size,
            **self._graph(batch),
            **self.settings._training(),
        )
