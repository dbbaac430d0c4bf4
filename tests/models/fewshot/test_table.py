"""``benchmarks/fewshot_table.py``: the cell table marks, bolds and subtracts what the docs quote from it."""

import pytest
from scripts import load_script

from pdenets.models.fewshot import DEFAULT_METHOD


@pytest.fixture(scope="module")
def fewshot_table():
    return load_script("benchmarks/fewshot_table.py", "fewshot_table")


def _row(cell, method, accuracy, empty=None):
    row = {"cell": cell, "method": method, "pdenets_accuracy": accuracy, "pdenets_ci95": 0.5}
    if empty is not None:
        row.update(share_with_empty_class=0.5, pdenets_accuracy_empty_class=empty)
    return row


def test_the_best_method_without_the_balance_assumption_is_bold_and_the_gaps_are_the_defaults(fewshot_table):
    rows = [
        _row("balanced 5-way 1-shot", "prototype", 90.0),
        _row("balanced 5-way 1-shot", DEFAULT_METHOD, 92.0),
        _row("balanced 5-way 1-shot", "paddle", 93.0),
        _row("balanced 5-way 1-shot", "pt-map", 99.0),
        _row("balanced 5-way 1-shot", "bd-cspn", 89.5),
        _row("dirichlet:0.5 5-way 1-shot", "prototype", 90.0, empty=88.0),
        _row("dirichlet:0.5 5-way 1-shot", DEFAULT_METHOD, 91.0, empty=87.0),
        _row("dirichlet:0.5 5-way 1-shot", "paddle", 89.0, empty=80.0),
        _row("dirichlet:0.5 5-way 1-shot", "pt-map", 95.0, empty=94.0),
    ]
    lines = fewshot_table.table(rows, "toy").splitlines()
    by_method = {line.split(" | ")[0].strip("| *"): line for line in lines if line.startswith("|")}
    # PT-MAP assumes balance: never bold, marked † where the query sets are not balanced
    assert "**93.00 ± 0.50**" in by_method["paddle"] and "**" not in by_method["pt-map"]
    assert by_method["pt-map"].endswith("99.00 ± 0.50 | 95.00 ± 0.50 † |")
    assert "**91.00 ± 0.50**" in by_method[DEFAULT_METHOD]
    assert by_method[f"{DEFAULT_METHOD} − prototype"].endswith(
        "| +2.00 | +1.00 (-1.00 on the 50 % with an empty class) |"
    )
    assert by_method[f"{DEFAULT_METHOD} − best without †"].endswith(
        f"| -1.00 (paddle) | +0.00 ({DEFAULT_METHOD}) |"
    )
    assert by_method["lowest † − prototype, balanced"].endswith("| -0.50 (bd-cspn) | — |")


def test_a_difference_that_rounds_to_zero_has_no_minus_sign(fewshot_table):
    assert fewshot_table.signed(-0.004) == "+0.00" and fewshot_table.signed(-1e-12) == "+0.00"
    assert fewshot_table.signed(-0.006) == "-0.01" and fewshot_table.signed(1.234) == "+1.23"
