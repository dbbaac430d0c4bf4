"""Dropout with cheap random masks on the CPU.

Diffusion layers apply dropout at every step to an ``N × C`` feature matrix (20 times per
forward pass on the citation graphs). On the CPU, ``torch.nn.functional.dropout`` draws a
Bernoulli variable per entry, which costs ~8 ns an entry and dominates the whole layer.
:func:`fast_dropout` takes one random *byte* per entry from the raw 64-bit output of
NumPy's PCG64 generator (~0.2 ns an entry: every byte of a uniform 64-bit word is an
independent uniform byte), compares it with a threshold and multiplies by the resulting
0/1 mask times the scale: 5–10× faster than ``F.dropout``, same distribution. Only a
one-byte boolean mask is kept for the backward pass.

Keep probabilities are multiples of 1/256 when ``p · 256`` is an integer (e.g. 0.25, 0.5:
exact) and otherwise multiples of 1/65536 (two bytes per entry; e.g. ``p = 0.35`` keeps
with probability 42598/65536 = 0.6499939), or of 2⁻³² for ``p > 0.996`` (four bytes). The
output is scaled by the inverse of the keep probability actually used, so ``E[dropout(x)] = x``
exactly. The generator is seeded from torch's default generator, so ``torch.manual_seed`` makes masks
reproducible. Other devices use ``torch.nn.functional.dropout``.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np
import torch
from torch.nn import functional as F

from .._checks import check_probability

__all__ = ["fast_dropout", "keep_threshold", "FastDropout", "dropout_scale_mask", "dropout_keep_mask"]


def keep_threshold(p: float):
    """``(dtype, threshold, keep_probability)`` of the integer comparison used for drop rate ``p``.

    One byte per entry when ``256 p`` is a whole number (exact), else two bytes; a keep
    probability below ``256 / 65536`` (``p > 0.996``) takes four bytes so that the relative
    error of the keep probability stays below 0.4 %.
    """
    keep = 1.0 - p
    if float(p * 256).is_integer():
        threshold = int(round(keep * 256))
        return np.uint8, threshold, threshold / 256
    threshold = int(round(keep * 65536))
    if threshold >= 256:
        return np.uint16, threshold, threshold / 65536
    threshold = int(round(keep * 2**32))
    if threshold == 0:
        raise ValueError(
            f"dropout p={p!r} keeps a fraction {keep:.3g} of the entries, below the 2^-32 resolution "
            "of the masks; such a layer would output (almost) nothing but zeros"
        )
    return np.uint32, threshold, threshold / 2**32


def fast_dropout(features: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout: zero each entry with probability ``p``, scale the rest by ``1/(1−p)``.

    Args:
        features: the tensor to drop entries of, any shape.
        p: the probability of zeroing an entry, in ``[0, 1)``.
        training: when ``False`` the features are returned unchanged.

    Returns:
        A tensor of the shape of ``features``; on the CPU the mask comes from one seed drawn from torch's
        default generator, elsewhere from :func:`torch.nn.functional.dropout`.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> out = fast_dropout(torch.ones(1000, 100), 0.25)
        >>> round(float((out == 0).float().mean()), 2), round(float(out.mean()), 2)
        (0.25, 1.0)
    """
    p = check_probability(p, "dropout probability")
    if not training or p == 0:
        return features
    if features.device.type != "cpu" or not features.is_floating_point():
        return F.dropout(features, p, training=True)
    dtype, threshold, keep = keep_threshold(p)
    seed = int(torch.randint(0, 2**62, (1,)).item())
    keep_mask = _keep_mask(features.shape, seed, dtype, threshold)
    return _BoolMaskDropout.apply(features, keep_mask, 1.0 / keep)


def dropout_scale_mask(shape, p: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The mask :func:`fast_dropout` would multiply a CPU tensor of ``shape`` by, as a float tensor: ``0``
    where an entry is dropped, ``1/keep`` elsewhere, drawn from torch's default generator exactly as
    :func:`fast_dropout` draws it (one 62-bit seed, then PCG64 bytes): for code that writes its own backward.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(3)
        >>> mask = dropout_scale_mask((4, 5), 0.5)
        >>> _ = torch.manual_seed(3)
        >>> torch.equal(fast_dropout(torch.ones(4, 5), 0.5), mask)
        True
    """
    p = check_probability(p, "dropout probability")
    kind, threshold, keep = keep_threshold(p)
    seed = int(torch.randint(0, 2**62, (1,)).item())
    return _scaled_mask(_keep_mask(tuple(shape), seed, kind, threshold), 1.0 / keep, dtype)


def dropout_keep_mask(shape, p: float) -> Tuple[np.ndarray, float]:
    """The entries :func:`fast_dropout` would keep in a CPU tensor of ``shape`` (a boolean array) and the
    scale ``1/keep`` of the kept ones, drawn from torch's default generator exactly as :func:`fast_dropout`
    draws them: for code that writes its own backward in NumPy.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(3)
        >>> keep, scale = dropout_keep_mask((4, 5), 0.5)
        >>> _ = torch.manual_seed(3)
        >>> torch.equal(fast_dropout(torch.ones(4, 5), 0.5), torch.from_numpy(keep * scale).float())
        True
    """
    p = check_probability(p, "dropout probability")
    kind, threshold, keep = keep_threshold(p)
    seed = int(torch.randint(0, 2**62, (1,)).item())
    return _keep_mask(tuple(shape), seed, kind, threshold), 1.0 / keep


def _keep_mask(shape, seed: int, dtype, threshold: int) -> np.ndarray:
    """Boolean array of ``shape``: ``True`` where a uniform ``dtype`` draw is below ``threshold``."""
    count = int(np.prod(shape))
    itemsize = np.dtype(dtype).itemsize
    words = np.random.PCG64(seed).random_raw((count * itemsize + 7) // 8)
    return np.less(words.view(dtype)[:count].reshape(shape), threshold)


def _scaled_mask(keep_mask: np.ndarray, scale: float, dtype: torch.dtype) -> torch.Tensor:
    """``keep_mask · scale`` as a float tensor (NumPy's bool → float kernels are the fast ones)."""
    value_type = np.float64 if dtype == torch.float64 else np.float32
    return torch.from_numpy(np.multiply(keep_mask, value_type(scale), dtype=value_type)).to(dtype)


class _BoolMaskDropout(torch.autograd.Function):
    """``x ⊙ mask · scale``; saves the boolean mask (1 byte an entry) instead of a float one."""

    @staticmethod
    def forward(ctx: Any, features: torch.Tensor, keep_mask: np.ndarray, scale: float) -> torch.Tensor:
        ctx.keep_mask, ctx.scale = keep_mask, scale
        return features * _scaled_mask(keep_mask, scale, features.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[torch.Tensor, None, None]:
        return grad_output * _scaled_mask(ctx.keep_mask, ctx.scale, grad_output.dtype), None, None


class FastDropout(torch.nn.Module):
    """:class:`torch.nn.Dropout` with :func:`fast_dropout`'s masks: one random byte (or two) per entry on the
    CPU instead of a Bernoulli draw, the same distribution and scaling (module docstring).

    Args:
        p: the probability of zeroing an entry, in ``[0, 1)``.

    Shapes:
        - input: any; output: the same.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> layer = FastDropout(0.5)
        >>> out = layer(torch.ones(100, 100))
        >>> round(float((out == 0).float().mean()), 1), torch.equal(layer.eval()(out), out)
        (0.5, True)
    """

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = check_probability(p, "dropout probability")

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return fast_dropout(features, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p:g}"
