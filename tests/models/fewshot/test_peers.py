"""``benchmarks/fewshot_peers.py``: the paired difference to nearest prototype is over the same tasks."""

import math

import numpy as np
import pytest
import torch
from scripts import load_script


@pytest.fixture(scope="module")
def fewshot_peers():
    return load_script("benchmarks/fewshot_peers.py", "fewshot_peers")


def test_the_difference_to_prototype_is_paired_over_the_same_tasks(fewshot_peers, capsys):
    generator = torch.Generator().manual_seed(3)
    tasks, ways, queries = 20, 3, 12
    centres = 1.5 * torch.randn(tasks, ways, 5, generator=generator)
    support = centres + 0.9 * torch.randn(tasks, ways, 5, generator=generator)
    query_labels = torch.arange(ways).repeat(queries // ways).expand(tasks, -1)
    query = centres.gather(1, query_labels[..., None].expand(-1, -1, 5)) + torch.randn(
        tasks, queries, 5, generator=generator
    )
    rows = []
    labels = torch.arange(ways).expand(tasks, -1)
    fewshot_peers.measure_cell(
        support,
        labels,
        query,
        query_labels,
        ways,
        ["laplacianshot", "prototype", "laplacianshot"],
        {},
        rows,
        "toy",
    )
    first, prototype, after = rows
    assert "pdenets_minus_prototype" not in first and "pdenets_minus_prototype" not in prototype

    # independent of the script: per-task accuracies of both methods on the same tasks
    def per_task(method):
        predictions = fewshot_peers.classify(
            support, labels, query, ways, method, fewshot_peers.Preprocessing(), seeds=list(range(tasks))
        ).argmax(2)
        return (predictions == query_labels).double().mean(1).numpy()

    differences = per_task("laplacianshot") - per_task("prototype")
    assert differences.std() > 0 and abs(differences.mean()) > 0.01  # they disagree, on average too
    assert after["pdenets_minus_prototype"] == pytest.approx(100 * differences.mean(), abs=1e-4)
    half_width = 1.959964 * differences.std(ddof=1) / math.sqrt(tasks)
    assert after["pdenets_minus_prototype_ci95"] == pytest.approx(100 * half_width, rel=1e-4)
    assert after["pdenets_minus_prototype"] == pytest.approx(
        after["pdenets_accuracy"] - prototype["pdenets_accuracy"], abs=1e-4
    )
    assert "minus prototype (paired)" in capsys.readouterr().out
    assert np.isfinite(after["pdenets_minus_prototype_ci95"])
