"""Few-shot tasks of separable Gaussian classes, the same on every device: the shared input of the few-shot
method tests."""

import torch


def separable_tasks(
    tasks=4,
    ways=5,
    shots=1,
    queries=15,
    dim=12,
    spread=6.0,
    noise=1.0,
    seed=0,
    dtype=torch.float64,
    device="cpu",
):
    """Support, labels, queries, query labels: drawn on the CPU by a seeded generator, moved to ``device``."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(tasks, ways, dim, generator=generator, dtype=dtype) * spread
    support = centres.repeat_interleave(shots, 1) + noise * torch.randn(
        tasks, ways * shots, dim, generator=generator, dtype=dtype
    )
    query = centres.repeat_interleave(queries, 1) + noise * torch.randn(
        tasks, ways * queries, dim, generator=generator, dtype=dtype
    )
    support_labels = torch.arange(ways).repeat_interleave(shots).expand(tasks, -1)
    query_labels = torch.arange(ways).repeat_interleave(queries).expand(tasks, -1)
    return tuple(tensor.to(device) for tensor in (support, support_labels, query, query_labels))
