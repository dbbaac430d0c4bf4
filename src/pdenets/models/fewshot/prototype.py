r"""Nearest prototype (Snell et al., *Prototypical Networks for Few-shot Learning*, 2017): the inductive
baseline.

$$
    p(c \mid x) = \operatorname{softmax}_c\big(-\lVert x - m_c \rVert\big),
$$

``m_c`` the class mean of the support set (or the rectified prototype, :attr:`FewShotBatch.prototypes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import FewShotBatch, FewShotMethod, register_method

__all__ = ["NearestPrototype", "PrototypeSettings"]


@dataclass(frozen=True)
class PrototypeSettings:
    """Nearest prototype has no hyperparameter."""


@register_method
class NearestPrototype(FewShotMethod):
    """Nearest class mean, Euclidean distance; probabilities ``softmax(−distance)`` ``(T, Q, C)``.

    Examples:
        >>> import torch
        >>> batch = FewShotBatch(torch.eye(2)[None], torch.tensor([[0, 1]]), torch.tensor([[[0.9, 0.1]]]), 2)
        >>> NearestPrototype().predict_proba(batch).argmax(2).tolist()
        [[0]]
    """

    name = "prototype"
    description = (
        "nearest class mean (Snell et al. 2017): inductive, the floor to compare with; for one query at a "
        "time"
    )
    is_transductive = False
    settings_class = PrototypeSettings
    settings: PrototypeSettings
    uses_prototypes = True

    def predict_proba(self, batch: FewShotBatch) -> torch.Tensor:
        return torch.softmax(-torch.cdist(batch.query, batch.prototypes), dim=2)
