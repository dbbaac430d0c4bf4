r"""Few-shot classification of many tasks at once: preprocessing, then any registered method.

=============  ==========================================================  ==============
name           method                                                      transductive
=============  ==========================================================  ==============
``prototype``  nearest prototype (:mod:`.prototype`)                        no
``diffusion``  LaplacianShot (:mod:`.laplacianshot`)                        yes
``convection`` residual head trained on the support set (:mod:`.heads`)     no
``external``   ``convection`` + graph regularizer on the outputs            yes
``internal``   the Diff-ResNet head: diffusion layers inside the network    yes
``bd-cspn``    prototype rectification (:mod:`.bdcspn`)                     yes
``pt-map``     power transform + Sinkhorn-balanced centres (:mod:`.ptmap`)  yes
``tim``        transductive information maximization (:mod:`.tim`)          yes
=============  ==========================================================  ==============

Every method sees the same preprocessing (:class:`Preprocessing`): centering by the base
mean and L2 normalization, the cross-domain shift of the queries, and rectified prototypes
for the methods that read prototypes.

:func:`classify` takes ``T`` tasks as tensors ``(T, S, M)`` / ``(T, Q, M)`` and returns the
query class probabilities ``(T, Q, C)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence, Union

import torch

from .base import METHOD_CLASSES, FewShotBatch, FewShotMethod, method_from_name
from .heads import TrainedHead
from .preprocessing import centre_and_normalize, cross_domain_shift

__all__ = ["METHODS", "Preprocessing", "PREPROCESSING", "classify", "preprocess", "ablation_method"]

#: the registered method names (the built-in eight; :func:`~.base.register_method` adds more).
METHODS = tuple(METHOD_CLASSES)


@dataclass(frozen=True)
class Preprocessing:
    """Feature preprocessing shared by all methods.

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


def preprocess(support: torch.Tensor, query: torch.Tensor, preprocessing: Preprocessing,
               base_mean: Optional[torch.Tensor] = None):
    """Centering + normalization (both sets), then the cross-domain shift (queries), as switched on."""
    if preprocessing.centre and base_mean is None:
        raise ValueError("centre=True needs base_mean, the mean of the base-class features")
    if base_mean is not None and tuple(base_mean.shape) != (support.shape[-1],):
        raise ValueError(f"base_mean must have shape ({support.shape[-1]},), got {tuple(base_mean.shape)}")
    if preprocessing.centre or preprocessing.normalize:
        mean = base_mean if preprocessing.centre else None
        support = centre_and_normalize(support, mean, normalize=preprocessing.normalize)
        query = centre_and_normalize(query, mean, normalize=preprocessing.normalize)
    if preprocessing.shift:
        query = cross_domain_shift(support, query)
    return support, query


def classify(support: torch.Tensor, support_labels: torch.Tensor, query: torch.Tensor, ways: int,
             method: Union[str, FewShotMethod], preprocessing: Preprocessing = Preprocessing(), *,
             base_mean: Optional[torch.Tensor] = None, seeds: Optional[Sequence[int]] = None, batched: bool = True,
             chunk_size: int = 0) -> torch.Tensor:
    """Query class probabilities ``(T, Q, C)`` of ``T`` tasks.

    Args:
        support: ``(T, S, M)``; support_labels ``(T, S)`` with every class ``0 … C−1`` present.
        query: ``(T, Q, M)``.
        ways: ``C``.
        method: a method instance, or a registered name (default settings).
        preprocessing: :class:`Preprocessing` (default: none).
        base_mean: ``(M,)`` mean of the base-class features (``preprocessing.centre``).
        seeds: initialization seed per task (trained heads; default ``0, 1, …``).
        batched: train the heads of all tasks together (``False``: one by one, the reference).
        chunk_size: tasks trained together when batched (0: all).

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
    if isinstance(method, TrainedHead):
        return method.predict_proba(batch, chunk_size=chunk_size, one_by_one=not batched)
    return method.predict_proba(batch)


def ablation_method(name: str, **changes) -> FewShotMethod:
    """A method with the Diff-ResNet ablation's settings (Appendix E.3.3): LaplacianShot with ``λ = 0.5`` on plain
    prototypes and distances, the heads from PyTorch's random initialization at lr 0.1 with 7 graph entries."""
    paper = {"diffusion": dict(lam=0.5, squared=False, rectify=False, knn=3),
             "convection": dict(init="random", lr=0.1), "external": dict(init="random", n_top=7),
             "internal": dict(init="random", n_top=7)}.get(name, {})
    return method_from_name(name, **{**paper, **changes})
