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

# the package's public names are its modules' own (each module's ``__all__``), in this order, plus the
# estimator and the live ``METHODS``, served by ``__getattr__`` below
from . import (
    adaptive,
    alpha_tim,
    base,
    bdcspn,
    ensemble,
    heads,
    laplacianshot,
    methods,
    paddle,
    preprocessing,
    prototype,
    ptmap,
    tim,
)
from .adaptive import *  # noqa: F403
from .alpha_tim import *  # noqa: F403
from .base import *  # noqa: F403
from .bdcspn import *  # noqa: F403
from .ensemble import *  # noqa: F403
from .heads import *  # noqa: F403
from .laplacianshot import *  # noqa: F403
from .methods import PREPROCESSING as PREPROCESSING  # not *: METHODS is read when asked for
from .methods import Preprocessing as Preprocessing
from .methods import ablation_method as ablation_method
from .methods import classify as classify
from .methods import preprocess as preprocess
from .paddle import *  # noqa: F403
from .preprocessing import *  # noqa: F403
from .prototype import *  # noqa: F403
from .ptmap import *  # noqa: F403
from .tim import *  # noqa: F403

_MODULES = (base, prototype, laplacianshot, heads, bdcspn, ptmap, tim, alpha_tim, paddle, ensemble, adaptive)
__all__ = [name for module in _MODULES for name in module.__all__]
__all__ += methods.__all__ + preprocessing.__all__ + ["DiffusionFewShotClassifier"]  # noqa: F405


def __getattr__(name: str):
    if name == "METHODS":  # the registered names, read now: a method registered later is included
        return tuple(METHOD_CLASSES)  # noqa: F405 - base's
    # the estimator subclasses scikit-learn's BaseEstimator: import sklearn only when it is asked for
    if name == "DiffusionFewShotClassifier":
        from .estimator import DiffusionFewShotClassifier

        return DiffusionFewShotClassifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
