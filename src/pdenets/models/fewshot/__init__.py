"""Transductive few-shot classification on pre-extracted features (Diff-ResNet §5.3, Appendix E.3).

* :mod:`.methods` — the five classifiers of the ablation, batched over tasks (:func:`classify`);
* :mod:`.heads` — the trained heads (convection / external / internal), batched and one by one;
* :mod:`.laplacianshot` — Laplacian-regularized label assignment;
* :mod:`.preprocessing` — centering + L2, cross-domain shift, prototype rectification;
* :mod:`.estimator` — :class:`DiffusionFewShotClassifier`, a scikit-learn estimator for any embeddings.
"""

from .estimator import DiffusionFewShotClassifier
from .heads import HeadSettings, train_heads, train_heads_one_by_one
from .laplacianshot import knn_affinity, laplacian_energy, laplacian_shot
from .methods import METHODS, FewShotSettings, ablation_settings, classify, preprocess
from .preprocessing import centre_and_normalize, cross_domain_shift, prototypes, rectified_prototypes

__all__ = ["DiffusionFewShotClassifier", "HeadSettings", "train_heads", "train_heads_one_by_one", "knn_affinity",
           "laplacian_energy", "laplacian_shot", "METHODS", "FewShotSettings", "ablation_settings", "classify",
           "preprocess", "centre_and_normalize", "cross_domain_shift", "prototypes", "rectified_prototypes"]
