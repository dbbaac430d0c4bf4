"""The weighted mixture of few-shot methods (``"ensemble"``, the default): the formula against its members,
the fallback at its threshold, the weights away from neutral, and the refusals."""

import pytest
import torch

from pdenets.models.fewshot import (
    DEFAULT_METHOD,
    Ensemble,
    EnsembleSettings,
    FewShotBatch,
    Internal,
    LaplacianShot,
    NearestPrototype,
    classify,
    method_from_name,
)


def _batch(queries_per_class: int, ways: int = 4, tasks: int = 3, seed: int = 0) -> FewShotBatch:
    generator = torch.Generator().manual_seed(seed)
    centres = 2.0 * torch.randn(tasks, ways, 6, generator=generator, dtype=torch.float64)
    support = centres + 0.8 * torch.randn(tasks, ways, 6, generator=generator, dtype=torch.float64)
    labels = torch.arange(ways).expand(tasks, -1)
    query_labels = torch.arange(ways).repeat(queries_per_class) if queries_per_class else torch.arange(1)
    query = centres[:, query_labels] + torch.randn(
        tasks, len(query_labels), 6, generator=generator, dtype=torch.float64
    )
    return FewShotBatch(support, labels, query, ways)


def test_the_ensemble_is_laplacianshot_and_the_diffresnet_head_three_to_one_the_defaults_free_method():
    assert method_from_name(DEFAULT_METHOD).settings.free == "ensemble"
    batch = _batch(4)
    expected = 0.75 * LaplacianShot().predict_proba(batch) + 0.25 * Internal().predict_proba(batch)
    got = method_from_name("ensemble").predict_proba(batch)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(got.sum(2), torch.ones(3, 16, dtype=torch.float64))


def test_weights_away_from_equal_are_applied_to_their_own_member():
    batch = _batch(3)
    first, second = LaplacianShot().predict_proba(batch), NearestPrototype().predict_proba(batch)
    assert (first - second).abs().max() > 1e-3  # the members disagree, so the weights show
    ensemble = Ensemble(members=("laplacianshot", "prototype"), weights=(1.0, 4.0))
    torch.testing.assert_close(ensemble.predict_proba(batch), 0.2 * first + 0.8 * second, rtol=0, atol=1e-12)
    only_second = Ensemble(members=("laplacianshot", "prototype"), weights=(0.0, 2.5))
    torch.testing.assert_close(only_second.predict_proba(batch), second, rtol=0, atol=1e-12)


def test_member_instances_keep_their_settings():
    batch = _batch(3)
    tuned = LaplacianShot(lam=0.0, rectify=False)
    ensemble = Ensemble(members=(tuned, "prototype"), weights=(1.0, 1.0))
    expected = 0.5 * tuned.predict_proba(batch) + 0.5 * NearestPrototype().predict_proba(batch)
    torch.testing.assert_close(ensemble.predict_proba(batch), expected, rtol=0, atol=1e-12)
    assert not torch.allclose(
        ensemble.predict_proba(batch),
        Ensemble(members=("laplacianshot", "prototype"), weights=(1.0, 1.0)).predict_proba(batch),
    )


def test_below_the_threshold_of_queries_per_class_the_first_member_answers_alone():
    ways = 4
    # Q = 2C - 1 queries: below q_min = 2 per class
    below = _batch(2, ways)
    below = FewShotBatch(below.support, below.support_labels, below.query[:, : 2 * ways - 1], ways)
    torch.testing.assert_close(
        Ensemble().predict_proba(below), LaplacianShot().predict_proba(below), rtol=0, atol=0
    )
    # Q = 2C exactly: the mixture
    at = _batch(2, ways)
    mixture = 0.75 * LaplacianShot().predict_proba(at) + 0.25 * Internal().predict_proba(at)
    torch.testing.assert_close(Ensemble().predict_proba(at), mixture, rtol=0, atol=1e-12)
    assert not torch.allclose(mixture, LaplacianShot().predict_proba(at))
    # a lower threshold mixes below too
    torch.testing.assert_close(
        Ensemble(min_queries_per_class=0).predict_proba(below),
        0.75 * LaplacianShot().predict_proba(below) + 0.25 * Internal().predict_proba(below),
        rtol=0,
        atol=1e-12,
    )


def test_one_query_at_a_time_is_the_first_member():
    batch = _batch(0)
    torch.testing.assert_close(
        classify(batch.support, batch.support_labels, batch.query, 4, "ensemble"),
        classify(batch.support, batch.support_labels, batch.query, 4, "laplacianshot"),
        rtol=0,
        atol=0,
    )


def test_reads_prototypes_when_a_member_does():
    assert Internal().reads_prototypes() and not LaplacianShot().reads_prototypes()  # rectified: its own
    assert Ensemble().reads_prototypes()
    assert not Ensemble(members=(LaplacianShot(),), weights=(1.0,)).reads_prototypes()
    assert Ensemble(members=(LaplacianShot(), "prototype"), weights=(1.0, 1.0)).reads_prototypes()


def test_lists_from_a_configuration_become_tuples():
    settings = EnsembleSettings(members=["laplacianshot", "prototype"], weights=[1, 2])
    assert settings.members == ("laplacianshot", "prototype") and settings.weights == (1, 2)
    hash(settings)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"members": ()}, "at least one member"),
        ({"members": "laplacianshot"}, "must be a tuple or list"),
        ({"weights": (1.0,)}, "one weight per member"),
        ({"weights": (1.0, -1.0)}, "every weight"),
        ({"weights": (0.0, 0.0)}, "must not all be zero"),
        ({"weights": (1.0, float("nan"))}, "finite numbers"),
        ({"weights": (1.0, "2")}, "finite numbers"),
        ({"members": ("laplacianshot", "pt-map")}, "'pt-map' assumes balanced queries"),
        ({"members": ("laplacianshot", "difusion")}, "laplacianshot"),
        ({"members": ("laplacianshot", 3)}, "a method or a registered name"),
        ({"min_queries_per_class": -1.0}, "min_queries_per_class"),
    ],
)
def test_bad_settings_are_refused_with_a_message_naming_them(changes, message):
    with pytest.raises((ValueError, TypeError, KeyError), match=message):
        Ensemble(**changes)
