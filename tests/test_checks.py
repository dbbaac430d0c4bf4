import math

import pytest
import torch

from pdenets import NonFiniteError
from pdenets._checks import check_finite


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_entries_are_counted_and_refused(bad):
    values = torch.ones(50, 4)
    values[7, 2] = bad
    values[30, 0] = bad
    with pytest.raises(NonFiniteError, match="features contains 2 NaN/inf"):
        check_finite(values, "features")
    with pytest.raises(ValueError):  # NonFiniteError is a ValueError
        check_finite(values.to_sparse(), "features")


def test_large_finite_values_whose_sum_overflows_pass():
    values = torch.full((10,), 3e38, dtype=torch.float32)
    assert not torch.isfinite(values.sum())
    check_finite(values, "features")


def test_empty_and_integer_tensors_pass():
    check_finite(torch.empty(0, 3), "features")
    check_finite(torch.arange(5), "labels")
