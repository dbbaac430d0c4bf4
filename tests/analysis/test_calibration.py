"""Calibration: the expected calibration error against a reference written here from its definition (no code
shared), its bins' boundaries, temperature scaling's exact answers and optimum, and the expected accuracy of
calibrated probabilities."""

import math

import pytest
import torch

from pdenets.analysis.calibration import (
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    ReliabilityBins,
    expected_accuracy,
    expected_calibration_error,
    fit_temperature,
    reliability_bins,
    temperature_scaled,
)


def reference_ece(probabilities, labels, num_bins):
    """Guo et al. (2017), eq. 3, item by item: bins (lo, hi], a confidence of 0 in the first."""
    rows = probabilities.tolist()
    total = 0.0
    for b in range(num_bins):
        lo, hi = b / num_bins, (b + 1) / num_bins
        members = [
            i
            for i, row in enumerate(rows)
            if (max(row) > lo or (b == 0 and max(row) == 0.0)) and max(row) <= hi
        ]
        if not members:
            continue
        right = sum(1 for i in members if rows[i].index(max(rows[i])) == int(labels[i]))
        confidence = sum(max(rows[i]) for i in members)
        total += abs(right - confidence)
    return total / len(rows)


@pytest.mark.parametrize("num_bins", [1, 7, 15])
def test_the_calibration_error_is_the_references(num_bins):
    generator = torch.Generator().manual_seed(num_bins)
    probabilities = torch.softmax(3 * torch.randn(400, 5, generator=generator, dtype=torch.float64), dim=1)
    labels = torch.randint(0, 5, (400,), generator=generator)
    ours = expected_calibration_error(probabilities, labels, num_bins)
    assert ours == pytest.approx(reference_ece(probabilities, labels, num_bins), abs=1e-12)
    assert 0 < ours <= 1


def test_a_calibrated_classifier_has_an_error_near_zero_and_a_confident_wrong_one_near_one():
    generator = torch.Generator().manual_seed(0)
    confidence = 0.5 + 0.5 * torch.rand(200_000, generator=generator, dtype=torch.float64)
    right = (
        torch.rand(200_000, generator=generator, dtype=torch.float64) < confidence
    )  # right as often as sure
    probabilities = torch.stack([confidence, 1 - confidence], dim=1)
    assert expected_calibration_error(probabilities, (~right).long()) < 0.005
    sure_and_wrong = torch.tensor([[0.999, 0.001]] * 10, dtype=torch.float64)
    assert expected_calibration_error(sure_and_wrong, torch.ones(10, dtype=torch.long)) == pytest.approx(
        0.999
    )


def test_a_confidence_on_a_bin_edge_falls_in_the_lower_bin():
    edge = torch.tensor([[0.5, 0.5], [0.75, 0.25], [1.0, 0.0]], dtype=torch.float64)
    bins = reliability_bins(edge, torch.tensor([0, 0, 0]), num_bins=4)
    assert bins.counts == [0, 1, 1, 1]  # 0.5 in (0.25, 0.5], 0.75 in (0.5, 0.75], 1.0 in (0.75, 1]
    assert bins.accuracy()[1:] == [1.0, 1.0, 1.0] and math.isnan(bins.accuracy()[0])
    assert bins.confidence()[1:] == [0.5, 0.75, 1.0]
    nudged = reliability_bins(
        edge + torch.tensor([[1e-9, -1e-9], [0, 0], [0, 0]]), torch.tensor([0, 0, 0]), 4
    )
    assert nudged.counts == [0, 0, 2, 1]


def test_the_bins_of_two_sets_merge_into_the_bins_of_both_and_keep_through_json():
    generator = torch.Generator().manual_seed(3)
    probabilities = torch.softmax(torch.randn(300, 3, generator=generator, dtype=torch.float64), dim=1)
    labels = torch.randint(0, 3, (300,), generator=generator)
    whole = reliability_bins(probabilities, labels, 10)
    halves = reliability_bins(probabilities[:120], labels[:120], 10).merged(
        reliability_bins(probabilities[120:], labels[120:], 10)
    )
    assert halves.counts == whole.counts and halves.correct == whole.correct
    assert halves.confidence_sums == pytest.approx(whole.confidence_sums, abs=1e-12)
    assert halves.error() == pytest.approx(whole.error(), abs=1e-12)
    assert ReliabilityBins.from_json(whole.as_json()) == whole
    with pytest.raises(ValueError, match="10 bins and 5 bins"):
        whole.merged(reliability_bins(probabilities, labels, 5))


def _objective(logits, labels, beta, prior_weight=1.0):
    """n NLL(β) + λ (β - 1)² / 2, written from the definition."""
    nll = (torch.logsumexp(beta * logits, dim=1) - beta * logits.gather(1, labels[:, None]).squeeze(1)).sum()
    return nll + prior_weight * (beta - 1) ** 2 / 2


def test_the_fitted_temperature_is_where_the_held_out_likelihood_is_flat_and_recovers_the_one_drawn_from():
    generator = torch.Generator().manual_seed(1)
    logits = 2 * torch.randn(20_000, 4, generator=generator, dtype=torch.float64)
    drawn_at = 2.5  # labels drawn from softmax(logits / 2.5): the model is over-confident
    labels = torch.multinomial(torch.softmax(logits / drawn_at, dim=1), 1, generator=generator).squeeze(1)
    temperature = fit_temperature(logits, labels)
    assert temperature == pytest.approx(drawn_at, rel=0.05)
    beta = torch.tensor(1 / temperature, dtype=torch.float64, requires_grad=True)
    (slope,) = torch.autograd.grad(_objective(logits, labels, beta), beta)
    assert abs(float(slope)) < 1e-6  # the optimum, by autograd rather than the fit's own formula
    before = expected_calibration_error(torch.softmax(logits, 1), labels)
    after = expected_calibration_error(temperature_scaled(logits, temperature), labels)
    assert after < 0.02 < before
    scaled = temperature_scaled(logits, temperature)
    assert torch.equal(scaled.argmax(1), logits.argmax(1))  # the predictions stay
    from_probabilities = fit_temperature(torch.softmax(logits, 1), labels, probabilities=True)
    assert from_probabilities == pytest.approx(temperature, rel=1e-6)


def test_an_exact_temperature_and_the_range_it_is_kept_in():
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [2.0, 0.0]], dtype=torch.float64)
    three_of_four = fit_temperature(logits, torch.tensor([0, 1, 0, 1]), prior_weight=0.0)
    assert three_of_four == pytest.approx(2 / math.log(3), rel=1e-9)  # sigmoid(2 / T) = 3/4
    all_right, half_right = torch.tensor([0, 1, 0, 0]), torch.tensor([1, 0, 0, 1])
    assert fit_temperature(logits, all_right, prior_weight=0.0) == MIN_TEMPERATURE  # as sharp as kept
    assert fit_temperature(logits, half_right, prior_weight=0.0) == MAX_TEMPERATURE  # as flat as kept


def test_the_prior_keeps_a_few_held_out_items_that_are_all_right_from_sharpening_without_end():
    """Four items, all right: the likelihood alone sends T to its floor; the prior stops where its pull
    balances the likelihood's (a root of the objective's derivative), and a stronger prior stops nearer 1."""
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [2.0, 0.0]], dtype=torch.float64)
    all_right = torch.tensor([0, 1, 0, 0])
    weak, strong = (fit_temperature(logits, all_right, prior_weight=weight) for weight in (1.0, 10.0))
    assert MIN_TEMPERATURE < weak < strong < 1.0
    for weight, temperature in ((1.0, weak), (10.0, strong)):
        beta = torch.tensor(1 / temperature, dtype=torch.float64, requires_grad=True)
        (slope,) = torch.autograd.grad(_objective(logits, all_right, beta, weight), beta)
        assert abs(float(slope)) < 1e-9
    with pytest.raises(ValueError, match="prior_weight"):
        fit_temperature(logits, all_right, prior_weight=-1.0)


def test_the_expected_accuracy_of_unlabelled_items_is_their_mean_confidence_with_a_bernoulli_interval():
    probabilities = torch.tensor([[1.0, 0.0], [0.5, 0.5], [0.2, 0.8], [0.1, 0.9]], dtype=torch.float64)
    estimate, low, high = expected_accuracy(probabilities, level=0.95)
    assert estimate == pytest.approx((1 + 0.5 + 0.8 + 0.9) / 4)
    spread = math.sqrt(0 + 0.25 + 0.16 + 0.09) / 4
    assert (low, high) == pytest.approx(
        (estimate - 1.959964 * spread, min(1.0, estimate + 1.959964 * spread))
    )
    narrow = expected_accuracy(probabilities, level=0.5)
    assert low < narrow[1] < narrow[2] < high


@pytest.mark.parametrize(
    "probabilities, labels, message",
    [
        (torch.ones(3), torch.zeros(3, dtype=torch.long), r"\(N, C\)"),
        (torch.full((2, 2), 0.5), torch.zeros(3, dtype=torch.long), "one per row"),
        (torch.full((2, 2), 0.5), torch.zeros(2), "whole class numbers"),
        (torch.full((2, 2), 0.5), torch.tensor([0, 2]), r"class numbers in \[0, 1\]"),
        (torch.tensor([[1.5, -0.5], [0.5, 0.5]]), torch.tensor([0, 1]), r"in \[0, 1\]"),
        (torch.tensor([[math.nan, 0.5], [0.5, 0.5]]), torch.tensor([0, 1]), "finite"),
        (torch.zeros(0, 2), torch.zeros(0, dtype=torch.long), "no items"),
    ],
)
def test_bad_input_is_refused_naming_the_problem(probabilities, labels, message):
    with pytest.raises(ValueError, match=message):
        expected_calibration_error(probabilities, labels)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="num_bins"):
        reliability_bins(torch.full((2, 2), 0.5), torch.tensor([0, 1]), num_bins=0)
    with pytest.raises(ValueError, match="temperature must be in"):
        temperature_scaled(torch.zeros(2, 2), 0.0)
    with pytest.raises(ValueError, match="logits must be finite"):
        fit_temperature(torch.tensor([[math.inf, 0.0]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="level"):
        expected_accuracy(torch.full((2, 2), 0.5), level=1.0)


def test_cross_fitting_measures_each_half_with_the_temperature_of_the_other():
    from pdenets.analysis.calibration import cross_fitted_calibration

    generator = torch.Generator().manual_seed(5)
    probabilities = torch.softmax(3 * torch.randn(101, 3, generator=generator, dtype=torch.float64), dim=1)
    labels = torch.multinomial(probabilities**0.5, 1, generator=generator).squeeze(
        1
    )  # an under-confident model
    items = torch.arange(10, 101)  # the first 10 rows are the training rows: never read
    result = cross_fitted_calibration(probabilities, labels, items, seed=7, probabilities=True)
    order = items[torch.randperm(91, generator=torch.Generator().manual_seed(7))]
    first, second = order[:45], order[45:]
    logits = torch.log(probabilities)
    scaled = torch.cat(
        [
            temperature_scaled(logits[second], fit_temperature(logits[first], labels[first])),
            temperature_scaled(logits[first], fit_temperature(logits[second], labels[second])),
        ]
    )
    measured = torch.cat([labels[second], labels[first]])
    assert result["calibrated_ece"] == pytest.approx(reference_ece(scaled, measured, 15), abs=1e-12)
    assert result["ece"] == pytest.approx(reference_ece(probabilities[items], labels[items], 15), abs=1e-12)
    assert result["temperature"] == pytest.approx(fit_temperature(logits[items], labels[items]), rel=1e-12)
    assert sum(result["reliability"]["counts"]) == 91
    assert cross_fitted_calibration(probabilities, labels, items, seed=8, probabilities=True)[
        "calibrated_ece"
    ] != pytest.approx(result["calibrated_ece"], abs=1e-12)  # the halves follow the seed
    assert cross_fitted_calibration(probabilities, labels, torch.arange(3), seed=0) == {}


def test_a_weight_of_two_is_an_item_counted_twice_and_bad_weights_are_refused():
    generator = torch.Generator().manual_seed(9)
    logits = 2 * torch.randn(60, 3, generator=generator, dtype=torch.float64)
    labels = torch.multinomial(torch.softmax(logits / 1.7, 1), 1, generator=generator).squeeze(1)
    weights = torch.where(torch.arange(60) < 20, 2.0, 1.0)
    doubled = torch.cat([torch.arange(60), torch.arange(20)])
    weighted = fit_temperature(logits, labels, weights=weights, prior_weight=0.0)
    assert weighted == pytest.approx(
        fit_temperature(logits[doubled], labels[doubled], prior_weight=0.0), rel=1e-12
    )
    assert weighted != pytest.approx(fit_temperature(logits, labels, prior_weight=0.0), rel=1e-6)
    for bad in (torch.ones(59), torch.full((60,), -1.0), torch.zeros(60), torch.full((60,), math.nan)):
        with pytest.raises(ValueError, match="weights must be 60 finite numbers"):
            fit_temperature(logits, labels, weights=bad)


def test_class_shift_weights_make_the_held_out_classes_weigh_as_the_predicted_ones():
    from pdenets.analysis.calibration import class_shift_weights

    held_out = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])  # drawn three per class
    predicted = torch.tensor([0] * 6 + [1] * 3 + [2] * 1)  # the items to predict: mostly class 0
    weights = class_shift_weights(held_out, predicted, 3)
    shares = torch.zeros(3, dtype=torch.float64).index_add_(0, held_out, weights) / weights.sum()
    assert shares.tolist() == pytest.approx([0.6, 0.3, 0.1])  # the held-out items now weigh as predicted
    assert class_shift_weights(held_out, torch.tensor([], dtype=torch.long), 3).tolist() == [1.0] * 9
