import math

import pytest
import torch

from pdenets.analysis import distance_diameter


def test_exact_values():
    points = torch.tensor([[0.0, 0.0], [3.0, 4.0], [10.0, 0.0], [10.0, 1.0]], dtype=torch.float64)
    result = distance_diameter(points, torch.tensor([0, 0, 1, 1]))
    assert result.diameter == pytest.approx(5.0)
    assert result.distance == pytest.approx(math.hypot(7.0, 3.0))
    assert result.ratio == pytest.approx(math.hypot(7.0, 3.0) / 5.0)


def test_chunking_does_not_change_the_answer():
    points = torch.randn(300, 3, dtype=torch.float64)
    groups = torch.randint(0, 4, (300,))
    whole = distance_diameter(points, groups, chunk_size=1000)
    blocks = distance_diameter(points, groups, chunk_size=7)
    assert whole == blocks


def test_collapsed_groups_have_infinite_ratio():
    points = torch.tensor([[0.0], [0.0], [1.0], [1.0]], dtype=torch.float64)
    assert distance_diameter(points, torch.tensor([0, 0, 1, 1])).ratio == math.inf


def test_bad_inputs():
    with pytest.raises(ValueError, match="two groups"):
        distance_diameter(torch.randn(5, 2), torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="groups must have shape"):
        distance_diameter(torch.randn(5, 2), torch.zeros(4, dtype=torch.long))
