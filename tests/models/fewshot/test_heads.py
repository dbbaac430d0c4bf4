"""The trained few-shot heads against one network per episode, as the Diff-ResNet paper's code trains them.

The reference shares no code with the batched heads: three ``nn.Linear`` layers per task, its graph built
point by point, ``(I − γL)^r`` applied to the hidden features (``M`` columns; the batched heads diffuse the
``C`` logits instead, which rows summing to one allow), the losses written term by term, an SGD optimizer
per task, its own draw of the initial parameters. Shared are the conventions only: a task's parameters
are uniform draws from its seed in the order ``W1, b1, W2, b2, W3, b3``, and the prototype start is the
nearest-prototype classifier. (``test_reference.py`` pins every method to its written-out
equations on standardized features; this file checks the heads on raw and normalized ones, with
unbalanced query sets.)
"""

import math

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from pdenets.models.fewshot import Convection, External, FewShotBatch, Internal


def reference_graph(points, n_top, sigma_neighbor, support_labels=None):
    """Gaussian weights of each point's ``n_top`` nearest points (itself first), bandwidth: the distance to
    entry ``sigma_neighbor``; ``D^{-1/2} W D^{-1/2}``, then ``(W + Wᵀ)/2``; optionally no edge between
    two support points of different classes."""
    count = points.shape[0]
    distances = torch.zeros(count, count, dtype=points.dtype)
    for i in range(count):
        for j in range(count):
            distances[i, j] = math.sqrt(float(((points[i] - points[j]) ** 2).sum()))
    weights = torch.zeros(count, count, dtype=points.dtype)
    for i in range(count):
        nearest = sorted(range(count), key=lambda j: float(distances[i, j]))
        sigma = float(distances[i, nearest[sigma_neighbor - 1]])
        for j in nearest[:n_top]:
            weights[i, j] = math.exp(-(float(distances[i, j]) ** 2) / sigma**2)
    degrees = weights.sum(1)
    weights = weights / torch.sqrt(degrees[:, None] * degrees[None, :])
    weights = (weights + weights.t()) / 2
    if support_labels is not None:
        for a in range(len(support_labels)):
            for b in range(len(support_labels)):
                if support_labels[a] != support_labels[b]:
                    weights[a, b] = 0.0
    return weights


class ReferenceHead(nn.Module):
    """``o = FC3(A^r (x + FC2 ReLU FC1 x))`` with ``A = I − γ(diag(W1) − W)`` (no diffusion: ``A = I``)."""

    def __init__(self, width, ways, seed, diffusion=None):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = (
            nn.Linear(width, width),
            nn.Linear(width, width),
            nn.Linear(width, ways),
        )
        bound = 1 / math.sqrt(width)
        layers = [
            self.fc1.weight,
            self.fc1.bias,
            self.fc2.weight,
            self.fc2.bias,
            self.fc3.weight,
            self.fc3.bias,
        ]
        total = sum(p.numel() for p in layers)
        drawn = torch.rand(total, generator=torch.Generator().manual_seed(seed)).double() * 2 * bound - bound
        with torch.no_grad():
            start = 0
            for parameter in layers:
                parameter.copy_(drawn[start : start + parameter.numel()].reshape(parameter.shape))
                start += parameter.numel()
        self.double()
        self.diffusion = diffusion

    def start_as_nearest_prototype(self, prototypes, temperature):
        ways = prototypes.shape[0]
        pairs = [
            float(((prototypes[a] - prototypes[b]) ** 2).sum()) for a in range(ways) for b in range(ways)
        ]
        scale = temperature / (sum(pairs) / (ways * (ways - 1)))
        with torch.no_grad():
            self.fc2.weight.zero_()
            self.fc2.bias.zero_()
            self.fc3.weight.copy_(scale * prototypes)
            self.fc3.bias.copy_(-scale / 2 * (prototypes**2).sum(1))

    def forward(self, x):
        hidden = x + self.fc2(F.relu(self.fc1(x)))
        if self.diffusion is not None:
            hidden = self.diffusion @ hidden
        return self.fc3(hidden)


def reference_probabilities(
    support, labels, query, ways, seed, *, steps, step_size, n_top, sigma, mu, epochs
):
    """One task: the head trained alone, query probabilities ``(Q, C)``."""
    points = torch.cat([support, query])
    uses_graph = steps > 0 or mu > 0
    weights = reference_graph(points, n_top, min(sigma, n_top), labels) if uses_graph else None
    diffusion = None
    if steps > 0:
        laplacian = torch.diag(weights.sum(1)) - weights
        diffusion = torch.linalg.matrix_power(
            torch.eye(len(points), dtype=points.dtype) - step_size * laplacian, steps
        )
    head = ReferenceHead(points.shape[1], ways, seed, diffusion)
    prototypes = torch.stack([support[labels == c].mean(0) for c in range(ways)])
    temperature = 10.0
    head.start_as_nearest_prototype(prototypes, temperature)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    milestones = sorted({max(1, round(0.5 * epochs)), max(1, round(0.75 * epochs))})
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones, gamma=0.1)
    for _ in range(epochs):
        optimizer.zero_grad()
        outputs = head(points)
        loss = F.cross_entropy(outputs[: len(support)], labels)
        if mu > 0:
            scaled = outputs / temperature  # the prototype start's logits are τ times larger
            regularizer = 0.0
            for i in range(len(points)):
                for j in range(len(points)):
                    regularizer = regularizer + weights[i, j] * ((scaled[i] - scaled[j]) ** 2).sum()
            loss = loss + mu / 2 * regularizer
        loss.backward()
        optimizer.step()
        scheduler.step()
    with torch.no_grad():
        return head(points)[len(support) :].softmax(1)


def episodes(normalized, tasks=3, ways=4, shots=2, queries=5, width=6, seed=0):
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(tasks, ways, width, generator=generator, dtype=torch.float64) * 1.5
    support = centres.repeat_interleave(shots, 1) + torch.randn(
        tasks, ways * shots, width, generator=generator, dtype=torch.float64
    )
    query_labels = torch.randint(0, ways, (tasks, queries * ways), generator=generator)  # unbalanced
    query = centres.gather(1, query_labels[..., None].expand(-1, -1, width)) + torch.randn(
        tasks, queries * ways, width, generator=generator, dtype=torch.float64
    )
    if normalized:
        support, query = F.normalize(support, dim=2), F.normalize(query, dim=2)
    labels = torch.arange(ways).repeat_interleave(shots).expand(tasks, -1)
    return support, labels, query, ways


HEADS = {
    "convection": (Convection, dict(steps=0, mu=0.0)),
    "external": (External, dict(steps=0, mu=0.3)),
    "internal": (Internal, dict(steps=3, mu=0.0)),
}


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("name", list(HEADS))
def test_the_batched_heads_give_the_per_task_references_probabilities(name, normalized):
    method_class, shape = HEADS[name]
    epochs, n_top, sigma, step_size = 6, 4, 3, 0.3
    graph = {} if name == "convection" else dict(n_top=n_top, sigma_neighbor=sigma)
    if name == "internal":
        graph.update(num_steps=shape["steps"], step_size=step_size)
    if name == "external":
        graph.update(mu=shape["mu"])
    method = method_class(epochs=epochs, **graph)
    support, labels, query, ways = episodes(normalized)
    seeds = [11, 12, 13]
    ours = method.predict_proba(FewShotBatch(support, labels, query, ways, seeds))
    for task in range(support.shape[0]):
        expected = reference_probabilities(
            support[task], labels[task], query[task], ways, seeds[task], step_size=step_size, n_top=n_top,
            sigma=sigma, epochs=epochs, **shape,
        )  # fmt: skip
        torch.testing.assert_close(ours[task], expected, rtol=0, atol=1e-7)
        assert torch.equal(ours[task].argmax(1), expected.argmax(1))


def _untrained_head_probabilities(support, labels, query, ways, temperature=10.0):
    """Nearest prototype as the prototype-initialized head starts: ``softmax(−s‖q − m_c‖²/2)``, ``s = τ/d̄²``
    with ``d̄²`` the mean squared distance between two distinct prototypes; one task, written out."""
    means = torch.stack([support[labels == c].mean(0) for c in range(ways)])
    pairs = [((means[a] - means[b]) ** 2).sum() for a in range(ways) for b in range(ways) if a != b]
    scale = temperature / (sum(pairs) / len(pairs))
    squared = torch.stack([((query - means[c]) ** 2).sum(1) for c in range(ways)], 1)
    return torch.softmax(-scale / 2 * squared, dim=1)


def test_below_two_queries_per_class_the_internal_head_answers_as_nearest_prototype():
    ways = 4
    support, labels, query, _ = episodes(False, ways=ways, queries=2)  # Q = 2C
    below = query[:, : 2 * ways - 1]
    ours = Internal().predict_proba(FewShotBatch(support, labels, below, ways))
    for task in range(support.shape[0]):
        expected = _untrained_head_probabilities(support[task], labels[task], below[task], ways)
        torch.testing.assert_close(ours[task], expected, rtol=0, atol=1e-12)
    # at Q = 2C exactly, and with the threshold off, the head trains (and moves off nearest prototype)
    for method, points in ((Internal(), query), (Internal(min_queries_per_class=0), below)):
        trained = method.predict_proba(FewShotBatch(support, labels, points, ways))
        untrained = torch.stack(
            [_untrained_head_probabilities(support[t], labels[t], points[t], ways) for t in range(3)]
        )
        assert (trained - untrained).abs().max() > 1e-3
    # a threshold of 1 query per class: 2C − 1 queries train
    assert not Internal(min_queries_per_class=1).too_few_queries(FewShotBatch(support, labels, below, ways))
    assert Internal(min_queries_per_class=1).too_few_queries(
        FewShotBatch(support, labels, query[:, : ways - 1], ways)
    )
    assert Internal.preset("paper").settings.min_queries_per_class == 0
    with pytest.raises(ValueError, match="min_queries_per_class"):
        Internal(min_queries_per_class=-1.0)
