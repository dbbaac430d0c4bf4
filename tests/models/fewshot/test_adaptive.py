"""The default few-shot method (``"adaptive"``): the balance test against scipy's, the level and the shots at
their boundaries, the answer composed of its two methods task by task, and the refusals."""

import numpy as np
import pytest
import torch
from scipy import stats

from pdenets.models.fewshot import (
    DEFAULT_METHOD,
    PTMAP,
    TIM,
    Adaptive,
    AdaptiveSettings,
    Ensemble,
    FewShotBatch,
    NearestPrototype,
    balance_p_values,
    classify,
    method_from_name,
)


def _one_hot(classes, ways: int) -> torch.Tensor:
    return torch.eye(ways, dtype=torch.float64)[torch.as_tensor(classes)]


def _tasks(query_classes, ways: int = 4, shots: int = 1, seed: int = 0) -> FewShotBatch:
    """One task per list of query classes (all of one length), well separated classes in 6 dimensions."""
    generator = torch.Generator().manual_seed(seed)
    tasks = len(query_classes)
    centres = 3.0 * torch.randn(tasks, ways, 6, generator=generator, dtype=torch.float64)
    support_labels = torch.arange(ways).repeat(shots).expand(tasks, -1)
    support = torch.gather(centres, 1, support_labels[..., None].expand(-1, -1, 6))
    support = support + 0.5 * torch.randn(support.shape, generator=generator, dtype=torch.float64)
    labels = torch.as_tensor(query_classes)
    query = torch.gather(centres, 1, labels[..., None].expand(-1, -1, 6))
    query = query + 0.5 * torch.randn(query.shape, generator=generator, dtype=torch.float64)
    return FewShotBatch(support, support_labels, query, ways)


def test_the_balance_test_is_pearsons_chi_square_test_of_equal_class_shares():
    counts_of_tasks = [(5, 5, 5, 5), (8, 4, 4, 4), (17, 1, 1, 1), (6, 6, 4, 4), (20, 0, 0, 0)]
    probabilities = torch.stack(
        [_one_hot(np.repeat(np.arange(4), counts), 4) * 0.7 + 0.075 for counts in counts_of_tasks]
    )
    expected = [stats.chisquare(counts).pvalue for counts in counts_of_tasks]  # equal expected counts
    got = balance_p_values(probabilities)
    assert got.dtype == torch.float64 and got.shape == (5,)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    assert got[0] == 1.0 and got[4] < 1e-8


def test_the_balance_test_counts_predicted_classes_not_mean_probabilities():
    # every query leans 0.4 to class 0: the predicted counts are all class 0, the mean probabilities even-ish
    leaning = torch.full((1, 12, 3), 0.3, dtype=torch.float64)
    leaning[..., 0] = 0.4
    assert balance_p_values(leaning).item() == pytest.approx(stats.chisquare([12, 0, 0]).pvalue, rel=1e-10)
    assert balance_p_values(torch.ones(2, 7, 1)).tolist() == [1.0, 1.0]  # one class: nothing to test
    with pytest.raises(ValueError, match=r"\(T, Q, C\)"):
        balance_p_values(torch.ones(7, 3))


def test_the_default_is_adaptive_with_the_ensemble_pt_map_and_tim():
    assert DEFAULT_METHOD == "adaptive"
    settings = method_from_name(DEFAULT_METHOD).settings
    assert (settings.free, settings.balanced, settings.balanced_many_shots) == ("ensemble", "pt-map", "tim")
    assert (settings.balance_level, settings.tim_from_shots) == (0.2, 5.0)
    assert not Adaptive.assumes_balanced_queries


def test_each_task_takes_the_balanced_answer_exactly_where_its_queries_pass_the_test():
    balanced = [0, 1, 2, 3] * 4
    skewed = [0] * 13 + [1, 2, 3]
    batch = _tasks([balanced, skewed, balanced, skewed])
    method = Adaptive()
    got = method.predict_proba(batch)
    free = Ensemble().predict_proba(batch)
    together = PTMAP().predict_proba(batch)  # every task, together: the method's own answer per task
    assert method.last_balanced.tolist() == [True, False, True, False]
    np.testing.assert_allclose(method.last_p_values.numpy(), balance_p_values(free).numpy())
    torch.testing.assert_close(got[[0, 2]], together[[0, 2]], rtol=0, atol=1e-12)
    torch.testing.assert_close(got[[1, 3]], free[[1, 3]], rtol=0, atol=1e-12)
    assert (got[1].argmax(1) == torch.tensor(skewed)).all()
    assert method.last_p_values[1] < 1e-4 < 0.99 < method.last_p_values[0]


def test_the_level_is_met_at_its_boundary_and_its_extremes_mean_always_and_exactly_even():
    near = [0, 1, 2, 3] * 3 + [0, 0, 1, 2]  # counts 5, 4, 4, 3
    batch = _tasks([near])
    p_value = float(balance_p_values(Ensemble().predict_proba(batch))[0])
    assert 0 < p_value < 1
    at = Adaptive(balance_level=p_value)
    at.predict_proba(batch)
    above = Adaptive(balance_level=min(1.0, p_value * (1 + 1e-9)))
    above.predict_proba(batch)
    assert at.last_balanced.tolist() == [True] and above.last_balanced.tolist() == [False]
    always, even_only = Adaptive(balance_level=0.0), Adaptive(balance_level=1.0)
    skewed_and_even = _tasks([[0] * 15 + [1], [0, 1, 2, 3] * 4])
    always.predict_proba(skewed_and_even)
    even_only.predict_proba(skewed_and_even)
    assert always.last_balanced.tolist() == [True, True]
    assert even_only.last_balanced.tolist() == [False, True]


def test_tim_answers_from_tim_from_shots_on_and_pt_map_below():
    queries = [[0, 1, 2] * 3]
    for shots, expected in ((4, PTMAP(iterations=3)), (5, TIM(iterations=7))):
        batch = _tasks(queries, ways=3, shots=shots)
        method = Adaptive(
            balanced=PTMAP(iterations=3), balanced_many_shots=TIM(iterations=7), tim_from_shots=5
        )
        assert type(method.balanced_method(batch.shots)) is type(expected)
        torch.testing.assert_close(
            method.predict_proba(batch), expected.predict_proba(batch), rtol=0, atol=1e-12
        )
    one_shot = _tasks(queries, ways=3, shots=1)
    assert isinstance(Adaptive(tim_from_shots=1).balanced_method(one_shot.shots), TIM)
    assert isinstance(Adaptive(tim_from_shots=1.5).balanced_method(one_shot.shots), PTMAP)


@pytest.mark.parametrize("query_classes", [[2, 0, 1], [0, 1, 2, 3, 0, 1, 2]])
def test_queries_that_cannot_be_even_take_the_free_answer(query_classes):
    batch = _tasks([query_classes], ways=4)  # Q = 3 < C = 4, or Q = 7: no equal counts; p-values near 1
    method = Adaptive(balance_level=0.0)
    torch.testing.assert_close(
        method.predict_proba(batch), Ensemble().predict_proba(batch), rtol=0, atol=1e-12
    )
    assert method.last_balanced.tolist() == [False]
    assert method.last_p_values[0] > 0.5
    eight = _tasks([query_classes + [3] * (8 - len(query_classes))], ways=4)
    method.predict_proba(eight)
    assert method.last_balanced.tolist() == [True]  # Q = 8: the level 0 takes every task that can be even


def test_seeds_follow_the_selected_tasks():
    batch = _tasks([[0, 1, 2, 3] * 3, [0] * 12, [0, 1, 2, 3] * 3], seed=3)
    batch.seeds = [11, 12, 13]
    part = batch.select(torch.tensor([2, 0]))
    assert part.seeds == [13, 11]
    torch.testing.assert_close(part.query, batch.query[[2, 0]])
    torch.testing.assert_close(part.prototypes, batch.prototypes[[2, 0]])
    # the free method's trained head draws its initialization from the seed: a task answers alike alone
    method = Adaptive(free=Ensemble(members=("laplacianshot", "internal"), weights=(1.0, 1.0)))
    whole = method.predict_proba(batch)
    alone = method.predict_proba(batch.select(torch.tensor([2])))
    torch.testing.assert_close(whole[2:], alone, rtol=0, atol=1e-10)


def test_settings_are_refused_naming_the_problem():
    with pytest.raises(ValueError, match="free method 'pt-map' assumes balanced queries"):
        AdaptiveSettings(free="pt-map")
    with pytest.raises(ValueError, match="balance_level"):
        AdaptiveSettings(balance_level=1.5)
    with pytest.raises(ValueError, match="tim_from_shots"):
        AdaptiveSettings(tim_from_shots=-1)
    with pytest.raises(TypeError, match="balanced must be a registered method name or a method"):
        AdaptiveSettings(balanced=3)
    with pytest.raises(ValueError, match="pt-mapp"):
        Adaptive(balanced="pt-mapp").predict_proba(_tasks([[0, 1, 2, 3]]))


def test_through_classify_with_preprocessing_and_the_estimators_default():
    batch = _tasks([[0, 1, 2, 3] * 2, [1] * 8])
    got = classify(batch.support, batch.support_labels, batch.query, 4, "adaptive")
    assert got.shape == (2, 8, 4)
    torch.testing.assert_close(got.sum(2), torch.ones(2, 8, dtype=torch.float64))
    assert (got.argmax(2)[1] == 1).all()
    prototype = NearestPrototype().predict_proba(batch)
    assert (got.argmax(2) == prototype.argmax(2)).float().mean() > 0.8


def test_the_estimator_says_which_method_answered_and_the_p_value():
    from pdenets.models.fewshot import DiffusionFewShotClassifier

    generator = np.random.default_rng(0)
    centres = 3 * generator.normal(size=(3, 5))
    support = centres + 0.3 * generator.normal(size=(3, 5))
    even = np.repeat(centres, 4, axis=0) + 0.3 * generator.normal(size=(12, 5))
    skewed = centres[[0] * 10 + [1, 2]] + 0.3 * generator.normal(size=(12, 5))
    model = DiffusionFewShotClassifier().fit(support, ["a", "b", "c"])
    assert list(model.predict(even)) == ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    assert model.answering_method(even) == ("pt-map", 1.0)
    assert list(model.predict(skewed)) == ["a"] * 10 + ["b", "c"]
    name, p_value = model.answering_method(skewed)
    assert name == "ensemble" and p_value == pytest.approx(stats.chisquare([10, 1, 1]).pvalue)
    five_shots = DiffusionFewShotClassifier().fit(
        np.repeat(support, 5, axis=0), np.repeat(["a", "b", "c"], 5)
    )
    assert five_shots.answering_method(even)[0] == "tim"
    other = DiffusionFewShotClassifier("prototype").fit(support, ["a", "b", "c"])
    assert other.answering_method(even) == ("prototype", None)
