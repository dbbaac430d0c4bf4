import math

import pytest
import torch

from pdenets.analysis import distance_diameter


def test_exact_values(device):
    points = torch.tensor(
        [[0.0, 0.0], [3.0, 4.0], [10.0, 0.0], [10.0, 1.0]], dtype=torch.float64, device=device
    )
    result = distance_diameter(points, torch.tensor([0, 0, 1, 1], device=device))
    assert result.diameter == pytest.approx(5.0)
    assert result.distance == pytest.approx(math.hypot(7.0, 3.0))
    assert result.ratio == pytest.approx(math.hypot(7.0, 3.0) / 5.0)


def test_chunking_does_not_change_the_answer(device):
    points = torch.randn(300, 3, dtype=torch.float64).to(device)
    groups = torch.randint(0, 4, (300,)).to(device)
    whole = distance_diameter(points, groups, chunk_size=1000)
    blocks = distance_diameter(points, groups, chunk_size=7)
    assert whole == blocks


def test_collapsed_groups_have_infinite_ratio(device):
    points = torch.tensor([[0.0], [0.0], [1.0], [1.0]], dtype=torch.float64, device=device)
    assert distance_diameter(points, torch.tensor([0, 0, 1, 1], device=device)).ratio == math.inf


def test_bad_inputs(device):
    with pytest.raises(ValueError, match="two groups"):
        distance_diameter(torch.randn(5, 2).to(device), torch.zeros(5, dtype=torch.long, device=device))
    with pytest.raises(ValueError, match="groups must have shape"):
        distance_diameter(torch.randn(5, 2).to(device), torch.zeros(4, dtype=torch.long, device=device))
