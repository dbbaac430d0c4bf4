"""Few-shot methods: separable problems solved exactly, batched == one by one, LaplacianShot's objective, the
preprocessing formulas, the scikit-learn estimator."""

import numpy as np
import pytest
from sklearn.base import clone

from pdenets.models.fewshot import (
    DEFAULT_METHOD,
    METHODS,
    DiffusionFewShotClassifier,
)

# ----------------------------------------------------------------------------------------
# the estimator


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 10)) * 5
    X_support = np.repeat(centres, 2, axis=0) + rng.normal(size=(6, 10))
    y_support = np.repeat(["a", "b", "c"], 2)
    X_query = np.repeat(centres, 8, axis=0) + rng.normal(size=(24, 10))
    return X_support, y_support, X_query, np.repeat(["a", "b", "c"], 8)


ESTIMATOR_ON_NUMPY = (
    "DiffusionFewShotClassifier is a scikit-learn estimator: NumPy arrays in and out, torch on the CPU"
)


@pytest.mark.cpu_only(ESTIMATOR_ON_NUMPY)
@pytest.mark.parametrize("method", METHODS)
def test_estimator_fit_predict_with_any_labels(method):
    X_support, y_support, X_query, y_query = _problem()
    params = {
        "convection": {"epochs": 40},
        "external": {"epochs": 40},
        "internal": {"num_steps": 3, "epochs": 40},
        "tim": {"iterations": 100},
        "alpha-tim": {"iterations": 100},
    }.get(method)
    clf = DiffusionFewShotClassifier(method=method, method_params=params).fit(X_support, y_support)
    assert list(clf.classes_) == ["a", "b", "c"]
    assert (clf.predict(X_query) == y_query).all()
    assert clf.predict_proba(X_query).shape == (24, 3)


@pytest.mark.cpu_only(ESTIMATOR_ON_NUMPY)
def test_estimator_params_and_clone():
    assert DiffusionFewShotClassifier().method == DEFAULT_METHOD == "adaptive"
    clf = DiffusionFewShotClassifier("internal", method_params={"num_steps": 4})
    assert clf.get_params()["method_params"] == {"num_steps": 4}
    clf.set_params(method_params={"mu": 0.1}, method="external")
    twin = clone(clf)
    assert twin.get_params() == clf.get_params() and twin is not clf
    X_support, y_support, X_query, _ = _problem()
    with pytest.raises(ValueError, match="method_params for 'external'"):
        clone(twin).set_params(method_params={"num_steps": 3}).fit(X_support, y_support)
    first = (
        clone(twin.set_params(method_params={"mu": 0.1, "epochs": 20}))
        .fit(X_support, y_support)
        .predict_proba(X_query)
    )
    second = clone(twin).fit(X_support, y_support).predict_proba(X_query)
    assert np.allclose(first, second)  # same random_state, same result
    with pytest.raises(ValueError, match=f"base_mean must be {X_support.shape[1]} finite numbers"):
        DiffusionFewShotClassifier(base_mean=np.zeros(X_support.shape[1] + 1)).fit(X_support, y_support)


@pytest.mark.cpu_only(ESTIMATOR_ON_NUMPY)
def test_estimator_passes_scikit_learns_checks_that_apply_to_transductive_models():
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(
        DiffusionFewShotClassifier("internal", method_params={"epochs": 3, "num_steps": 2}), on_fail=None
    )
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    passed = [r for r in results if r["status"] == "passed"]
    # a transductive model answers each query set as one task: predictions of a subset or a permutation of the
    # queries may differ from those of the whole set, by design
    assert failed == {"check_methods_subset_invariance", "check_methods_sample_order_invariance"}
    assert len(passed) >= 50
