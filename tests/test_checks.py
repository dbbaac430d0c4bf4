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


def test_a_mistyped_name_is_told_the_nearest_valid_one():
    from pdenets._checks import check_choice, nearest_hint
    from pdenets.data.synthetic import make_synthetic
    from pdenets.experiments.config import ConfigError, check_fields
    from pdenets.operators.knn import knn_search

    assert nearest_hint("symetric", ("symmetric", "row", "none")) == " (did you mean 'symmetric'?)"
    assert nearest_hint("zzz", ("symmetric", "row")) == "" and nearest_hint(3, (1, 2)) == ""
    with pytest.raises(ValueError, match=r"got 'rwo' \(did you mean 'row'\?\)"):
        check_choice("rwo", "normalization", ("symmetric", "row", "none"))
    with pytest.raises(ValueError, match=r"unknown synthetic set 'spirla' \(did you mean 'spiral'\?\)"):
        make_synthetic("spirla", 10)
    with pytest.raises(ValueError, match=r"unknown knn backend 'chunkd' \(did you mean 'chunked'\?\)"):
        knn_search(torch.randn(5, 2), 2, backend="chunkd")

    class Settings:
        models = ["diff-resnet", "gnc"]

    with pytest.raises(ConfigError, match=r"got 'gnc' \(did you mean 'gcn'\?\)"):
        check_fields(Settings(), choices={"models": ["diff-resnet", "gcn", "gat"]})


ENVIRONMENT = [
    ("abc", {}, "$DEMO_SECONDS='abc' is not valid: expected a finite number > 0"),
    ("inf", {}, "$DEMO_SECONDS='inf' is not valid: expected a finite number > 0"),
    ("nan", {}, "$DEMO_SECONDS='nan' is not valid: expected a finite number > 0"),
    ("-1", {}, "$DEMO_SECONDS='-1' is not valid: expected a finite number > 0"),
    ("0", {}, "$DEMO_SECONDS='0' is not valid: expected a finite number > 0"),
    ("lots", {}, "$DEMO_SECONDS='lots' is not valid: expected a finite number > 0"),
    ("-5G", {}, "$DEMO_SECONDS='-5G' is not valid: expected a finite number > 0"),
    ("1e999", {}, "$DEMO_SECONDS='1e999' is not valid: expected a finite number > 0"),
    ("1_0", {}, "$DEMO_SECONDS='1_0' is not valid: expected a finite number > 0"),
    ("20", {"maximum": 10}, "$DEMO_SECONDS='20' is not valid: expected a finite number > 0 and <= 10"),
    (
        "1_0",
        {"integer": True, "minimum_exclusive": -1},
        "$DEMO_SECONDS='1_0' is not valid: expected an integer >= 0",
    ),
    ("1.5", {"integer": True}, "$DEMO_SECONDS='1.5' is not valid: expected an integer >= 1"),
    ("0x10", {"integer": True}, "$DEMO_SECONDS='0x10' is not valid: expected an integer >= 1"),
    ("7" * 500, {"integer": True}, f"$DEMO_SECONDS='{'7' * 500}' is not valid: expected an integer >= 1"),
]


@pytest.mark.parametrize(
    "text, options, message", ENVIRONMENT, ids=[f"{t[:10]}-{sorted(o)}" for t, o, _ in ENVIRONMENT]
)
def test_a_bad_number_in_the_environment_names_the_variable(monkeypatch, text, options, message):
    from pdenets._checks import environment_number

    monkeypatch.setenv("DEMO_SECONDS", text)
    with pytest.raises(ValueError) as caught:
        environment_number("DEMO_SECONDS", 10.0, **options)
    assert str(caught.value) == message


def test_a_good_or_missing_number_in_the_environment(monkeypatch):
    from pdenets._checks import environment_number

    monkeypatch.delenv("DEMO_SECONDS", raising=False)
    assert environment_number("DEMO_SECONDS", 10.0) == 10.0
    for text, value in (("2.5", 2.5), (" 3 ", 3.0), ("1e2", 100.0), ("", 10.0)):
        monkeypatch.setenv("DEMO_SECONDS", text)
        assert environment_number("DEMO_SECONDS", 10.0) == value
    monkeypatch.setenv("DEMO_SECONDS", "0")
    assert environment_number("DEMO_SECONDS", None, integer=True, minimum_exclusive=-1) == 0
