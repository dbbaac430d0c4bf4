"""The Diff-ResNet head on large query sets: a task whose graph would refuse the paper's step size diffuses as
strongly as stability allows; the tasks within their bound compute what they computed before."""

import torch

from pdenets.models.fewshot import classify, method_from_name
from pdenets.models.fewshot.heads import stable_task_weights


def _laplacian_top(weights):
    graphs = weights.double()
    return torch.linalg.eigvalsh(torch.diag_embed(graphs.sum(2)) - graphs)[:, -1]


def test_only_the_graphs_beyond_their_bound_are_scaled_and_exactly_to_it():
    generator = torch.Generator().manual_seed(0)
    calm = torch.rand(1, 6, 6, generator=generator) * 0.05
    calm = (calm + calm.transpose(1, 2)) / 2
    star = torch.zeros(1, 6, 6)
    star[0, 0, 1:] = star[0, 1:, 0] = 1.0  # λ_max(L) = 6
    batch = torch.cat([calm, star])
    assert stable_task_weights(calm, 0.5) is calm  # nothing to do: the same tensor
    scaled = stable_task_weights(batch, 0.5, margin=0.99)
    assert torch.equal(scaled[0], batch[0])  # the stable task untouched, bit for bit
    assert abs(float(0.5 * _laplacian_top(scaled[1:])[0]) - 2 * 0.99) < 1e-6  # γ λ_max = 2 x margin
    assert float(0.5 * _laplacian_top(batch[1:])[0]) > 2  # it was beyond


def test_the_head_classifies_a_hundred_queries_a_class_and_batched_equals_one_by_one():
    generator = torch.Generator().manual_seed(1)
    centres = torch.randn(5, 32, generator=generator) * 2
    support = (centres.repeat(2, 1) + torch.randn(10, 32, generator=generator)).expand(2, -1, -1).clone()
    labels = torch.arange(5).repeat(2).expand(2, -1)
    many = centres.repeat(100, 1) + torch.randn(500, 32, generator=generator)
    query = torch.stack([many, many.flip(0)])
    method = method_from_name("internal")
    together = classify(support, labels, query, 5, method, batched=True)
    alone = classify(support, labels, query, 5, method, batched=False)
    assert torch.isfinite(together).all() and torch.allclose(together, alone, atol=1e-5)
    truth = torch.arange(5).repeat(100)
    assert (together[0].argmax(1) == truth).double().mean() > 0.9
