"""Transductive few-shot classification on pre-extracted features (Diff-ResNet §5.3, Appendix E.3, and peers).

* :mod:`.base` — the method interface (:class:`FewShotMethod`, :class:`FewShotBatch`) and registry;
* :mod:`.prototype`, :mod:`.laplacianshot`, :mod:`.heads` (convection / external / internal),
  :mod:`.bdcspn`, :mod:`.ptmap`, :mod:`.tim`, :mod:`.alpha_tim`, :mod:`.paddle` — one method per module,
  batched over tasks; :mod:`.ensemble` — a weighted mixture of methods; :mod:`.adaptive` — a
  balance-assuming method where a test finds the queries balanced, the ensemble elsewhere: the default;
* :mod:`.methods` — :class:`Preprocessing` and :func:`classify`;
* :mod:`.preprocessing` — centering + L2, cross-domain shift, prototype rectification;
* :mod:`.estimator` — :class:`DiffusionFewShotClassifier`, a scikit-learn estimator for any embeddings.
"""

from .adaptive import Adaptive, AdaptiveSettings, balance_p_values
from .alpha_tim import AlphaTIM, AlphaTIMSettings
from .base import (
    DEFAULT_METHOD,
    METHOD_CLASSES,
    FewShotBatch,
    FewShotMethod,
    canonical_method_name,
    method_from_name,
    register_method,
    registered_methods,
    stored_method_name,
)
from .bdcspn import BDCSPN, BDCSPNSettings
from .ensemble import Ensemble, EnsembleSettings
from .heads import (
    Convection,
    ConvectionSettings,
    External,
    ExternalSettings,
    HeadSettings,
    Internal,
    InternalSettings,
    adaptive_neighbours,
    episode_neighbours,
    train_heads,
    train_heads_one_by_one,
)
from .laplacianshot import (
    LaplacianShot,
    LaplacianShotSettings,
    knn_affinity,
    laplacian_energy,
    laplacian_shot,
)
from .methods import PREPROCESSING, Preprocessing, ablation_method, classify, preprocess
from .paddle import PADDLE, PADDLESettings
from .preprocessing import (
    centre_and_normalize,
    cross_domain_shift,
    prototypes,
    rectified_prototypes,
    standardize_scale,
)
from .prototype import NearestPrototype, PrototypeSettings
from .ptmap import PTMAP, PTMAPSettings, power_transform, sinkhorn
from .tim import TIM, TIMSettings

__all__ = [
    "Adaptive",
    "AdaptiveSettings",
    "balance_p_values",
    "FewShotBatch",
    "FewShotMethod",
    "METHOD_CLASSES",
    "DEFAULT_METHOD",
    "method_from_name",
    "register_method",
    "registered_methods",
    "canonical_method_name",
    "stored_method_name",
    "NearestPrototype",
    "PrototypeSettings",
    "LaplacianShot",
    "LaplacianShotSettings",
    "knn_affinity",
    "laplacian_energy",
    "laplacian_shot",
    "Convection",
    "ConvectionSettings",
    "External",
    "ExternalSettings",
    "HeadSettings",
    "Internal",
    "InternalSettings",
    "episode_neighbours",
    "adaptive_neighbours",
    "train_heads",
    "train_heads_one_by_one",
    "BDCSPN",
    "BDCSPNSettings",
    "PTMAP",
    "PTMAPSettings",
    "power_transform",
    "sinkhorn",
    "TIM",
    "TIMSettings",
    "AlphaTIM",
    "AlphaTIMSettings",
    "PADDLE",
    "PADDLESettings",
    "Ensemble",
    "EnsembleSettings",
    "METHODS",
    "PREPROCESSING",
    "Preprocessing",
    "ablation_method",
    "classify",
    "preprocess",
    "centre_and_normalize",
    "cross_domain_shift",
    "prototypes",
    "rectified_prototypes",
    "standardize_scale",
    "DiffusionFewShotClassifier",
]


def __getattr__(name: str):
    if name == "METHODS":  # the registered names, read now: a method registered later is included
        return tuple(METHOD_CLASSES)
    # the estimator subclasses scikit-learn's BaseEstimator: import sklearn only when it is asked for
    if name == "DiffusionFewShotClassifier":
        from .estimator import DiffusionFewShotClassifier

        return DiffusionFewShotClassifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
