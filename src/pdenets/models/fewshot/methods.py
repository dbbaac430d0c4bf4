r"""Few-shot classification of many tasks at once: preprocessing, then any registered method.

The registered methods (:func:`~.base.registered_methods`, read live: a method registered later is
included) are, built in:

==================  ============================================================  ============  ========
name                method                                                        transductive  balanced
==================  ============================================================  ============  ========
``prototype``       nearest prototype (:mod:`.prototype`)                         no            no
``laplacianshot``   LaplacianShot (:mod:`.laplacianshot`)                         yes           no
``convection``      residual head trained on the support set (:mod:`.heads`)      no            no
``external``        ``convection`` + graph regularizer on the outputs             yes           no
``internal``        the Diff-ResNet head: diffusion layers inside the network     yes           no
``bd-cspn``         prototype rectification (:mod:`.bdcspn`)                      yes           yes
``pt-map``          power transform + Sinkhorn-balanced centres (:mod:`.ptmap`)   yes           yes
``tim``             transductive information maximization (:mod:`.tim`)           yes           yes
``alpha-tim``       TIM with α-entropies (:mod:`.alpha_tim`)                      yes           yes
``paddle``          minimum description length, PADDLE (:mod:`.paddle`)           yes           no
==================  ============================================================  ============  ========

("balanced": :attr:`~.base.FewShotMethod.assumes_balanced_queries`.) Every method sees the same
preprocessing (:class:`Preprocessing`): centering by the base mean and L2 normalization, or raw
features in units of their task's support spread; the cross-domain shift of the queries; rectified
prototypes for the methods that read prototypes.

:func:`classify` takes ``T`` tasks as tensors ``(T, S, M)`` / ``(T, Q, M)`` and returns the
query class probabilities ``(T, Q, C)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence, Union

import torch

from ..._checks import check_positive_int
from .base import METHOD_CLASSES, FewShotBatch, FewShotMethod, method_from_name
from .preprocessing import centre_and_normalize, cross_domain_shift, standardize_scale

# METHODS is the live registry, served by the module's __getattr__
__all__ = ["METHODS", "Preprocessing", "PREPROCESSING", "classify", "preprocess", "ablation_method"]  # noqa: F822


def __getattr__(name: str):
    if name == "METHODS":  # the registered names, read now: a method registered later is included
        return tuple(METHOD_CLASSES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Preprocessing:
    """Feature preprocessing shared by all methods.

    Without ``normalize`` the features of every task are measured in units of its support set's spread
    (:func:`~.preprocessing.standardize_scale`): the methods' temperatures and step sizes then mean the
    same on features of any scale, and features multiplied by ``c > 0`` give the same probabilities.

    Args:
        centre: subtract the base-class mean (needs ``base_mean``).
        normalize: scale every feature vector to unit length.
        shift: move the queries by ``mean(support) − mean(query)`` of their task.
        rectify: methods that read prototypes get rectified ones.
    """

    centre: bool = False
    normalize: bool = False
    shift: bool = False
    rectify: bool = False

    def for_method(self, method: FewShotMethod) -> "Preprocessing":
        """The same preprocessing with ``rectify`` off where the method does not read prototypes (equal
        predictions, equal settings)."""
        return self if method.reads_prototypes() else replace(self, rectify=False)


#: the named preprocessings of the task (``--preprocessing``).
PREPROCESSING = {
    "raw": Preprocessing(),
    "normalize": Preprocessing(normalize=True),
    "centre": Preprocessing(centre=True, normalize=True),
    "tricks": Preprocessing(centre=True, normalize=True, shift=True, rectify=True),
}


def preprocess(
    support: torch.Tensor,
    query: torch.Tensor,
    preprocessing: Preprocessing,
    base_mean: Optional[torch.Tensor] = None,
):
    """Centering + normalization (both sets) or the support's unit (raw features), then the cross-domain shift
    (queries), as switched on."""
    if preprocessing.centre and base_mean is None:
        raise ValueError("centre=True needs base_mean, the mean of the base-class features")
    if base_mean is not None and tuple(base_mean.shape) != (support.shape[-1],):
        raise ValueError(f"base_mean must have shape ({support.shape[-1]},), got {tuple(base_mean.shape)}")
    if preprocessing.centre or preprocessing.normalize:
        mean = base_mean if preprocessing.centre else None
        support = centre_and_normalize(support, mean, normalize=preprocessing.normalize)
        query = centre_and_normalize(query, mean, normalize=preprocessing.normalize)
    if not preprocessing.normalize:
        support, query = standardize_scale(support, query)
    if preprocessing.shift:
        query = cross_domain_shift(support, query)
    return support, query


def classify(
    support: torch.Tensor,
    support_labels: torch.Tensor,
    query: torch.Tensor,
    ways: int,
    method: Union[str, FewShotMethod],
    preprocessing: Preprocessing = Preprocessing(),
    *,
    base_mean: Optional[torch.Tensor] = None,
    seeds: Optional[Sequence[int]] = None,
    batched: bool = True,
    chunk_size: int = 0,
) -> torch.Tensor:
    """Query class probabilities ``(T, Q, C)`` of ``T`` tasks.

    Args:
        support: ``(T, S, M)``; support_labels ``(T, S)`` with every class ``0 … C−1`` present.
        query: ``(T, Q, M)``.
        ways: ``C``.
        method: a method instance, or a registered name (default settings).
        preprocessing: :class:`Preprocessing` (default: none).
        base_mean: ``(M,)`` mean of the base-class features (``preprocessing.centre``).
        seeds: initialization seed per task (trained heads; default ``0, 1, …``).
        batched: solve the tasks together (``False``: one task at a time, the reference of the batched path).
        chunk_size: tasks solved together when batched (0: all); memory grows with it (the trained heads
            hold ``chunk · M²`` parameters).

    Raises:
        ValueError: bad shapes or labels, features off any common scale, or a method whose probabilities are
            not finite (named).

    Examples:
        >>> import torch
        >>> support, query = torch.randn(10, 5, 16), torch.randn(10, 30, 16)
        >>> labels = torch.arange(5).expand(10, -1)
        >>> classify(support, labels, query, 5, "pt-map", Preprocessing(normalize=True)).shape
        torch.Size([10, 30, 5])
    """
    if isinstance(method, str):
        method = method_from_name(method)
    if not isinstance(method, FewShotMethod):
        raise TypeError(f"method must be a FewShotMethod or a registered name, got {type(method).__name__}")
    batch = FewShotBatch(support, support_labels, query, ways, seeds)  # checks shapes and labels first
    support, query = preprocess(batch.support, batch.query, preprocessing, base_mean)
    batch = FewShotBatch(support, batch.support_labels, query, ways, batch.seeds, preprocessing.rectify)
    step = 1 if not batched else (check_positive_int(chunk_size, "chunk_size", minimum=0) or batch.tasks)
    parts = [
        method.predict_proba(batch.chunk(first, min(first + step, batch.tasks)))
        for first in range(0, batch.tasks, step)
    ]
    probabilities = parts[0] if len(parts) == 1 else torch.cat(parts)
    if not bool(torch.isfinite(probabilities).all()):
        raise ValueError(
            f"{method.name} gave non-finite probabilities; the features are off the scale this method "
            "can work on (try Preprocessing(normalize=True))"
        )
    return probabilities


def ablation_method(name: str, **changes) -> FewShotMethod:
    """A method with its ``"paper"`` preset (:meth:`~.base.FewShotMethod.preset`): the Diff-ResNet ablation's
    settings (Appendix E.3.3) for its five methods — LaplacianShot with ``λ = 0.5`` on plain prototypes and
    distances, the heads from PyTorch's random initialization at lr 0.1 with 7 graph entries — and the peers'
    own papers' for the others."""
    return method_from_name(name, preset="paper", **changes)
