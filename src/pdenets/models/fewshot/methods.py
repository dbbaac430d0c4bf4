r"""The five transductive few-shot classifiers of the Diff-ResNet ablation, batched over tasks.

=============  ==================================================================================
``prototype``  nearest prototype (class mean of the support set), Euclidean distance
``diffusion``  LaplacianShot: prototype costs + a Laplacian regularizer over the queries,
               bound-optimization iterations (:mod:`.laplacianshot`; λ = 0.5)
``convection`` the 2-layer residual head trained on the support set with cross entropy
``external``   ``convection`` + ``μ/2 Σ w_ij ‖f(x_i) − f(x_j)‖²`` over support ∪ query (μ = 0.01)
``internal``   the Diff-ResNet head: ``r`` diffusion steps inside the network (γ = 0.5,
               r = 10 for 1-shot and 5 otherwise in the ablation)
=============  ==================================================================================

Every method sees the same preprocessing (switchable, off in the ablation of Table 2, on in
Table 3): centering by the base mean and L2 normalization, the cross-domain shift of the
queries, and rectified prototypes (:mod:`.preprocessing`); ``α`` weighs the prototypical
loss of the trained heads.

:func:`classify` takes ``T`` tasks as tensors ``(T, S, M)`` / ``(T, Q, M)`` and returns the
query class probabilities ``(T, Q, C)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

import torch

from ..._checks import check_choice, check_features, check_positive_int
from .heads import HeadSettings, train_heads, train_heads_one_by_one
from .laplacianshot import knn_affinity, laplacian_shot
from .preprocessing import centre_and_normalize, cross_domain_shift, prototypes, rectified_prototypes

__all__ = ["METHODS", "FewShotSettings", "classify", "preprocess"]

METHODS = ("prototype", "diffusion", "convection", "external", "internal")


@dataclass(frozen=True)
class FewShotSettings:
    """Everything that decides a method's predictions (defaults: the paper's ablation, 1-shot)."""

    method: str = "internal"
    centre: bool = False
    normalize: bool = False
    shift: bool = False
    rectify: bool = False
    n_top: int = 7
    sigma_neighbor: int = 4
    step_size: float = 0.5
    num_steps: int = 10
    lam: float = 0.5
    laplacian_knn: int = 3
    laplacian_iterations: int = 20
    mu: float = 0.01
    alpha: float = 0.0
    epochs: int = 100
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4

    def __post_init__(self) -> None:
        check_choice(self.method, "method", METHODS)

    def canonical(self) -> "FewShotSettings":
        """The same method with every setting it does not use reset to its default: equal predictions, equal
        settings (a store key that changes only when the method's own settings change)."""
        used = {"method", "centre", "normalize", "shift", "rectify"}
        training = {"epochs", "lr", "momentum", "weight_decay", "alpha"}
        used |= {"prototype": set(), "diffusion": {"lam", "laplacian_knn", "laplacian_iterations"},
                 "convection": training, "external": training | {"n_top", "sigma_neighbor", "mu"},
                 "internal": training | {"n_top", "sigma_neighbor", "step_size", "num_steps"}}[self.method]
        if self.method == "internal" and self.num_steps == 0:
            used -= {"n_top", "sigma_neighbor", "step_size"}
        defaults = FewShotSettings()
        return replace(self, **{name: getattr(defaults, name) for name in self.__dataclass_fields__
                                if name not in used})

    def head(self) -> HeadSettings:
        """The trained head's settings for this method (convection: no diffusion, no regularizer)."""
        steps = self.num_steps if self.method == "internal" else 0
        mu = self.mu if self.method == "external" else 0.0
        return HeadSettings(num_steps=steps, step_size=self.step_size, n_top=self.n_top,
                            sigma_neighbor=self.sigma_neighbor, mu=mu, alpha=self.alpha, epochs=self.epochs,
                            lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay)


def preprocess(support: torch.Tensor, query: torch.Tensor, settings: FewShotSettings,
               base_mean: Optional[torch.Tensor] = None):
    """Centering + normalization (both sets), then the cross-domain shift (queries), as switched on."""
    if settings.centre or settings.normalize:
        mean = base_mean if settings.centre else None
        support = centre_and_normalize(support, mean, normalize=settings.normalize)
        query = centre_and_normalize(query, mean, normalize=settings.normalize)
    if settings.shift:
        query = cross_domain_shift(support, query)
    return support, query


def classify(support: torch.Tensor, support_labels: torch.Tensor, query: torch.Tensor, ways: int,
             settings: FewShotSettings, *, base_mean: Optional[torch.Tensor] = None,
             seeds: Optional[Sequence[int]] = None, batched: bool = True, chunk_size: int = 0) -> torch.Tensor:
    """Query class probabilities ``(T, Q, C)`` of ``T`` tasks.

    Args:
        support: ``(T, S, M)``; support_labels ``(T, S)`` with every class ``0 … C−1`` present.
        query: ``(T, Q, M)``.
        ways: ``C``.
        seeds: initialization seed per task (trained heads; default ``0, 1, …``).
        batched: train the heads of all tasks together (``False``: one by one, the reference).
        chunk_size: tasks trained together when batched (0: all).
    """
    check_features(support, "support", min_dim=3)
    check_features(query, "query", min_dim=3)
    ways = check_positive_int(ways, "ways")
    if support.dim() != 3 or query.dim() != 3 or support.shape[0] != query.shape[0] or \
            support.shape[2] != query.shape[2]:
        raise ValueError(f"support (T, S, M) and query (T, Q, M) must agree, got {tuple(support.shape)} and "
                         f"{tuple(query.shape)}")
    if support_labels.shape != support.shape[:2]:
        raise ValueError(f"support_labels must have shape {tuple(support.shape[:2])}, got {tuple(support_labels.shape)}")
    present = torch.zeros(support.shape[0], ways, dtype=torch.bool)
    present.scatter_(1, support_labels.cpu(), True)
    if not bool(present.all()):
        raise ValueError(f"every task needs at least one support sample of each of the {ways} classes")
    support, query = preprocess(support, query, settings, base_mean)
    needs_prototypes = settings.method in ("prototype", "diffusion") or settings.alpha > 0
    centres = None
    if needs_prototypes:
        centres = rectified_prototypes(support, support_labels, query, ways) if settings.rectify else \
            prototypes(support, support_labels, ways)
    if settings.method == "prototype":
        return torch.softmax(-torch.cdist(query, centres), dim=2)
    if settings.method == "diffusion":
        affinity = knn_affinity(query, settings.laplacian_knn)
        result = laplacian_shot(torch.cdist(query, centres), affinity, lam=settings.lam,
                                max_iterations=settings.laplacian_iterations)
        return result.assignments
    seeds = list(range(support.shape[0])) if seeds is None else list(seeds)
    head = settings.head()
    if batched:
        logits = train_heads(support, support_labels, query, ways, head, seeds, prototypes=centres,
                             chunk_size=chunk_size)
    else:
        logits = train_heads_one_by_one(support, support_labels, query, ways, head, seeds, prototypes=centres)
    return torch.softmax(logits, dim=2)


def ablation_settings(method: str, shots: int) -> FewShotSettings:
    """The paper's ablation settings (Appendix E.3.3) for a method and a number of shots."""
    return replace(FewShotSettings(method=method), num_steps=10 if shots == 1 else 5)
