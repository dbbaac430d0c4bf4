"""Few-shot methods: separable problems solved exactly, batched == one by one, LaplacianShot's objective, the
preprocessing formulas, the scikit-learn estimator."""

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from fewshot_tasks import separable_tasks

from pdenets.models.fewshot import (
    METHOD_CLASSES,
    PTMAP,
    FewShotBatch,
    FewShotMethod,
    Preprocessing,
    PTMAPSettings,
    classify,
    method_from_name,
    register_method,
)
from pdenets.models.fewshot.base import finite_probabilities
from pdenets.operators import batched_knn_gaussian_weights, knn_gaussian_weights


def test_batched_graph_equals_the_sparse_graph_of_each_task(device):
    points = torch.randn(3, 40, 6, dtype=torch.float64).to(device)
    batched = batched_knn_gaussian_weights(
        points, 7, sigma_neighbor=4, include_self=True, normalization="symmetric", symmetrize_weights=True
    )
    for task in range(3):
        single = knn_gaussian_weights(
            points[task],
            7,
            sigma_neighbor=4,
            include_self=True,
            normalization="symmetric",
            symmetrize_weights=True,
        ).to_dense()
        assert torch.allclose(batched[task], single, atol=1e-14)
    fixed = batched_knn_gaussian_weights(points, 5, sigma=1.5, normalization="row")
    assert torch.allclose(
        fixed[1], knn_gaussian_weights(points[1], 5, sigma=1.5, normalization="row").to_dense()
    )


def test_classify_refuses_badseparable_tasks(device):
    support, support_labels, query, _ = separable_tasks(tasks=2, device=device)
    with pytest.raises(ValueError, match="at least one support sample of each of the 6 classes"):
        classify(support, support_labels, query, 6, "prototype")
    with pytest.raises(ValueError, match="must agree"):
        classify(support, support_labels, query[:, :, :3], 5, "prototype")
    with pytest.raises(ValueError, match="unknown few-shot method 'pt_map' \\(did you mean 'pt-map'\\?\\)"):
        classify(support, support_labels, query, 5, "pt_map")
    with pytest.raises(TypeError, match="support must be float32 or float64"):
        classify(support.long(), support_labels, query, 5, "prototype")
    with pytest.raises(ValueError, match="base_mean must have shape \\(12,\\)"):
        classify(
            support,
            support_labels,
            query,
            5,
            "prototype",
            Preprocessing(centre=True),
            base_mean=torch.zeros(3, device=device),
        )
    with pytest.raises(ValueError, match="support_labels must lie in 0 … 4"):
        classify(support, support_labels + 1, query, 5, "prototype")
    with pytest.raises(ValueError, match="at least one query"):
        classify(support, support_labels, query[:, :0], 5, "prototype")
    for name, bad_setting, message in (
        ("internal", {"step_size": 0.0}, "step_size must be > 0"),
        ("convection", {"epochs": 0}, "epochs must be an integer >= 1"),
        ("tim", {"lr": -1.0}, "lr must be > 0"),
        ("pt-map", {"alpha": 1.5}, "alpha must be in"),
        ("internal", {"init": "zeros"}, "init must be one of"),
    ):
        with pytest.raises(ValueError, match=message):
            method_from_name(name, **bad_setting)
    with pytest.raises(TypeError, match="unexpected keyword argument 'num_steps'"):
        method_from_name("convection", num_steps=3)
    bad = query.clone()
    bad[0, 0, 0] = math.nan
    with pytest.raises(ValueError, match="query contains 1 NaN/inf"):
        classify(support, support_labels, bad, 5, "prototype")


def test_a_sixth_method_is_one_class(device):
    from dataclasses import dataclass

    from pdenets.models.fewshot import FewShotMethod, register_method
    from pdenets.models.fewshot.base import METHOD_CLASSES as registry

    @dataclass(frozen=True)
    class NearestNeighbourSettings:
        pass

    @register_method
    class NearestNeighbour(FewShotMethod):
        name = "nearest-neighbour-test"
        is_transductive = False
        settings_class = NearestNeighbourSettings

        def predict_proba(self, batch):
            nearest = batch.support_labels.gather(1, torch.cdist(batch.query, batch.support).argmin(2))
            return torch.nn.functional.one_hot(nearest, batch.ways).to(batch.query.dtype)

    try:
        support, support_labels, query, query_labels = separable_tasks(device=device)
        predictions = classify(support, support_labels, query, 5, "nearest-neighbour-test").argmax(2)
        assert torch.equal(predictions, query_labels)
    finally:
        registry.unregister("nearest-neighbour-test")


SUPPORT = torch.tensor([[[0.0, 0.0], [2.0, 0.0], [0.0, 3.0], [0.0, 5.0]]], dtype=torch.float64)
LABELS = torch.tensor([[0, 0, 1, 1]])
QUERY = torch.tensor([[[1.0, 1.0], [0.5, 3.0], [2.0, 2.0]]], dtype=torch.float64)


@pytest.mark.parametrize(
    "changes, error, message",
    [
        (
            {"support": SUPPORT[0]},
            ValueError,
            r"support must have at least 3 dimension\(s\).*got shape \(4, 2\)",
        ),
        ({"query": QUERY[None]}, ValueError, r"must agree, got \(1, 4, 2\) and \(1, 1, 3, 2\)"),
        ({"query": QUERY.expand(2, -1, -1)}, ValueError, r"must agree, got \(1, 4, 2\) and \(2, 3, 2\)"),
        ({"query": QUERY.int()}, TypeError, "query must be float32 or float64"),
        (
            {"support_labels": LABELS.int()},
            ValueError,
            r"int64 tensor of shape \(1, 4\), got torch.int32 \(1, 4\)",
        ),
        ({"support_labels": LABELS[:, :3]}, ValueError, r"shape \(1, 4\), got torch.int64 \(1, 3\)"),
        ({"support_labels": [[0, 0, 1, 1]]}, ValueError, r"int64 tensor of shape \(1, 4\), got list \(\)"),
        ({"ways": 0}, ValueError, "ways must be an integer >= 1, got 0"),
        ({"ways": 2.0}, TypeError, "ways must be an integer, got float"),
        ({"seeds": [1, 2]}, ValueError, "^2 seeds for 1 tasks$"),
    ],
)
def test_a_batch_refuses_bad_inputs_naming_them(changes, error, message):
    arguments = {"support": SUPPORT, "support_labels": LABELS, "query": QUERY, "ways": 2, **changes}
    with pytest.raises(error, match=message):
        FewShotBatch(**arguments)


def test_episode_properties_and_the_balance_boundary_at_as_many_queries_as_classes():
    batch = FewShotBatch(SUPPORT[:, :3], torch.tensor([[0, 1, 1]]), QUERY[:, :2], 2)
    assert (batch.tasks, batch.shots, batch.queries, batch.points_per_class) == (1, 1.5, 2, 2.5)
    assert batch.can_balance and batch.seeds == [0]
    short = FewShotBatch(SUPPORT, LABELS, QUERY[:, :1], 2)
    assert not short.can_balance
    three = FewShotBatch(SUPPORT.expand(3, -1, -1), LABELS.expand(3, -1), QUERY.expand(3, -1, -1), 2)
    assert three.seeds == [0, 1, 2]


def test_nearest_prototype_is_the_softmax_of_minus_half_the_scaled_squared_distance_to_the_means():
    batch = FewShotBatch(SUPPORT, LABELS, QUERY, 2)
    means = np.array([[1.0, 0.0], [0.0, 4.0]])
    squared = ((QUERY[0].numpy()[:, None] - means[None]) ** 2).sum(2)
    for scale in (0.3, 2.0):
        logits = -scale / 2 * squared
        expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        np.testing.assert_allclose(batch.nearest_prototype_proba(scale)[0].numpy(), expected, rtol=1e-12)
    assert batch.prototypes is batch.prototypes  # computed once
    np.testing.assert_array_equal(batch.prototypes[0].numpy(), means)
    rectified = FewShotBatch(SUPPORT, LABELS, QUERY, 2, rectify=True)
    assert not torch.equal(rectified.prototypes, batch.prototypes)


def test_nearest_prototype_takes_one_scale_a_task():
    """A ``(T,)`` scale scales each task's distances by its own entry, as the same number would."""
    three = FewShotBatch(SUPPORT.expand(3, -1, -1), LABELS.expand(3, -1), QUERY.expand(3, -1, -1), 2)
    scales = torch.tensor([0.3, 2.0, 5.0], dtype=three.query.dtype)
    answered = three.nearest_prototype_proba(scales)
    for task, scale in enumerate(scales.tolist()):
        torch.testing.assert_close(answered[task], three.nearest_prototype_proba(scale)[task], rtol=0, atol=0)
    assert not torch.equal(answered[0], answered[1])


def test_chunks_and_selections_keep_seeds_order_settings_and_the_computed_prototypes():
    generator = torch.Generator().manual_seed(0)
    support = torch.randn(4, 4, 2, generator=generator, dtype=torch.float64)
    query = torch.randn(4, 3, 2, generator=generator, dtype=torch.float64)
    batch = FewShotBatch(support, LABELS.expand(4, -1), query, 2, seeds=[7, 8, 9, 10], rectify=True)
    whole = batch.prototypes
    part = batch.chunk(1, 3)
    assert part.seeds == [8, 9] and part.rectify and part.tasks == 2
    assert torch.equal(part.query, query[1:3]) and torch.equal(part.prototypes, whole[1:3])
    picked = batch.select(torch.tensor([3, 0, 3]))
    assert picked.seeds == [10, 7, 10] and torch.equal(picked.support, support[[3, 0, 3]])
    assert torch.equal(picked.prototypes, whole[[3, 0, 3]])


def test_a_method_is_built_from_settings_changes_or_a_preset_and_refuses_the_wrong_kind():
    changed = PTMAP(PTMAPSettings(lam=3.0), alpha=0.5)
    assert (changed.settings.lam, changed.settings.alpha, changed.settings.power) == (3.0, 0.5, 0.5)
    assert method_from_name("pt-map", lam=4.0).settings == PTMAPSettings(lam=4.0)
    with pytest.raises(TypeError, match="^pt-map takes PTMAPSettings, got dict$"):
        PTMAP({"lam": 3.0})
    with pytest.raises(TypeError, match="a preset is named by a string, got int"):
        PTMAP.preset(1)
    with pytest.raises(ValueError, match="give settings or a preset, not both"):
        method_from_name("tim", method_from_name("tim").settings, preset="paper")


def test_registration_refuses_a_class_without_a_name_or_with_mutable_settings():
    @dataclass
    class Mutable:
        pass

    class Nameless(FewShotMethod):
        is_transductive, settings_class = False, Mutable

        def predict_proba(self, batch):
            return batch.nearest_prototype_proba(1.0)

    with pytest.raises(TypeError, match="^Nameless must define 'name'$"):
        register_method(Nameless)

    class Unfrozen(Nameless):
        name = "unfrozen-settings-method"

    with pytest.raises(TypeError, match=r"^Unfrozen.settings_class must be a frozen dataclass$"):
        register_method(Unfrozen)
    assert "unfrozen-settings-method" not in METHOD_CLASSES


def test_finite_probabilities_pass_unchanged_and_infinite_ones_name_the_method_and_the_magnitude():
    batch = FewShotBatch(SUPPORT, LABELS, QUERY, 2)
    method = method_from_name("prototype")
    finite = batch.nearest_prototype_proba(1.0)
    assert finite_probabilities(method, finite, batch) is finite
    broken = finite.clone()
    broken[0, 1, 0] = float("inf")
    with pytest.raises(
        ValueError, match="^prototype: non-finite probabilities on features of magnitude up to 5;"
    ):
        finite_probabilities(method, broken, batch)
