r"""Diffusion steps whose backward pass stores no activations: it runs the adjoint steps.

``r`` explicit diffusion steps with dropout (Diff-ResNet paper, Appendix E.2.3),

$$
    X_k = A\, D_k X_{k-1} \ \ (\text{dropout before}) \quad\text{or}\quad
    X_k = D_k A X_{k-1} \ \ (\text{after}), \qquad k = 1, \dots, r,
    \qquad A = I - \gamma L ,
$$

are linear in ``X`` (``D_k`` is a fixed diagonal 0 / ``1/(1−p)`` mask), so the gradient
with respect to the input is the same steps transposed, in reverse order:

$$
    \frac{\partial \ell}{\partial X_0} = D_1 A^\top D_2 A^\top \cdots D_r A^\top
    \frac{\partial \ell}{\partial X_r} \quad(\text{before; after: } A^\top D_k).
$$

Autograd would keep every step's mask (``N × C`` bytes a step) for this; :func:`adjoint_diffusion`
keeps ``r`` integer seeds and redraws each mask when the backward pass needs it, so the
memory of a training step does not grow with ``r``: the input, the output and one work
array of ``N × C`` (plus a bounded chunk of mask bytes). ``Aᵀ`` is the operator's
precomputed transpose. On the CPU the masks are the ones :func:`~pdenets.nn.dropout.fast_dropout`
draws (same seeds from torch's generator, same bytes), so a model gives the same numbers
with either backward; on other devices they come from a ``torch.Generator`` per step. An operator stored
in a locality order (:class:`~pdenets.operators.DiffusionOperator`'s ``node_order``) runs the steps in that
order, between one permutation in and one out, and both backward passes draw the masks on it. Large masks
(:data:`~pdenets.nn.mask_kernel.MIN_ENTRIES` entries) are drawn and applied in one compiled pass on every
thread where ``numba`` is installed (:mod:`~pdenets.nn.mask_kernel`: the same bytes).

Examples:
    >>> import torch
    >>> from pdenets.operators import DiffusionOperator
    >>> operator = DiffusionOperator(torch.tensor([[0., 1.], [1., 0.]]), step_size=0.25)
    >>> x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    >>> y = adjoint_diffusion(operator, x, num_steps=2)
    >>> y.sum().backward(); x.grad            # columns of A sum to 1 here: the sum is conserved
    tensor([[1., 1.],
            [1., 1.]])
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from .._checks import check_choice, check_positive_int, check_probability
from ..operators.diffusion import DiffusionOperator
from ..operators.partitioned import PartitionedDiffusion
from . import mask_kernel
from .dropout import keep_threshold

__all__ = ["adjoint_diffusion", "adjoint_diffusion_readout", "apply_dropout_mask_"]

#: the operators whose steps this runs: a whole graph's, or one process's rows of a partitioned graph
Operator = Union[DiffusionOperator, PartitionedDiffusion]

#: the error of a backward pass asked to build a graph for a second derivative
SECOND_ORDER_MESSAGE = (
    "the adjoint diffusion backward is first order only and cannot build a graph for a second "
    'derivative (create_graph=True): build the layer with backward="autograd"'
)

#: entries of one mask chunk (its bytes and its float copy are the only mask memory)
MASK_CHUNK_ENTRIES = 1 << 22


def apply_dropout_mask_(features: torch.Tensor, seed: int, p: float, row_offset: int = 0) -> torch.Tensor:
    """Multiply ``features`` (2-D, contiguous) in place by the dropout mask of ``seed``: 0 or ``1/keep``.

    On the CPU the mask is :func:`~pdenets.nn.dropout.fast_dropout`'s for the same seed
    (bytes of PCG64's raw output compared with a threshold), drawn in row chunks so that
    no ``N × C`` mask is ever held; elsewhere it is ``torch.rand(generator=seed) ≥ p``.

    ``row_offset``: the rows are rows ``row_offset, row_offset + 1, …`` of a larger matrix of the same width,
    and get that matrix's mask (the generator jumps ahead to them: a graph partitioned over processes draws,
    on each, the entries the single process draws). CPU only.
    """
    if p == 0:
        return features
    dtype, threshold, keep = keep_threshold(p)
    scale = 1.0 / keep
    if features.device.type != "cpu":
        if row_offset:
            raise ValueError("dropout masks of a row block (row_offset > 0) are drawn on the CPU only")
        generator = torch.Generator(device=features.device).manual_seed(seed)
        keep_mask = torch.rand(features.shape, generator=generator, device=features.device) >= p
        return features.mul_(keep_mask.to(features.dtype).mul_(scale))
    rows, columns = features.shape
    itemsize = np.dtype(dtype).itemsize
    if features.numel() >= mask_kernel.MIN_ENTRIES and features.is_contiguous() and mask_kernel.available():
        mask_kernel.apply_mask(  # the same bytes, drawn on every thread and applied in the same pass
            features.detach().numpy(), seed, row_offset * columns * itemsize, itemsize, threshold, scale
        )
        return features
    rows_per_chunk = max(8, (MASK_CHUNK_ENTRIES // max(columns, 1)) // 8 * 8)  # chunks of whole 8-byte words
    value_type = np.float64 if features.dtype == torch.float64 else np.float32
    bits = np.random.PCG64(seed)
    first_byte = row_offset * columns * itemsize
    skip = first_byte % 8  # the block starts inside a word: draw it whole, drop its leading bytes
    if first_byte >= 8:
        bits.advance(first_byte // 8)
    for start in range(0, rows, rows_per_chunk):
        block = features[start : start + rows_per_chunk]
        count = block.numel()
        words = bits.random_raw((skip + count * itemsize + 7) // 8)
        keep_mask = np.less(
            words.view(dtype)[skip // itemsize : skip // itemsize + count].reshape(block.shape), threshold
        )
        block.mul_(
            torch.from_numpy(np.multiply(keep_mask, value_type(scale), dtype=value_type)).to(block.dtype)
        )
        if skip:  # the next chunk starts where this one's bytes end, inside the last word drawn
            used = skip + count * itemsize
            skip = used % 8
            if skip:
                bits.advance(-1)  # that word is drawn again by the next chunk
    return features


def _mask_of(seed: int, p: float, row_offset: int, features: torch.Tensor):
    """``(seed, first_byte, itemsize, threshold, scale)``: :func:`apply_dropout_mask_`'s mask of a step's
    output, for a product that applies it as it writes (rows of ``features``' width)."""
    dtype, threshold, keep = keep_threshold(p)
    itemsize = np.dtype(dtype).itemsize
    width = features.shape[1] if features.dim() > 1 else 1
    return seed, row_offset * width * itemsize, itemsize, threshold, 1.0 / keep


def _steps(
    operator: Operator,
    features: torch.Tensor,
    seeds: Sequence[Optional[int]],
    p: float,
    before: bool,
    transpose: bool,
    owned: bool = False,
) -> torch.Tensor:
    """``r`` steps forward (``transpose=False``) or their adjoint in reverse order, no autograd.

    Each product writes into the array the step before last wrote (it is read no more), so a run of steps
    allocates two arrays, not one a step. ``owned``: ``features``' memory may be overwritten (the caller
    made it and reads it no more): it is then one of the two, and the steps hold two ``N × C`` arrays
    instead of three.
    """
    order = list(reversed(seeds) if transpose else seeds)
    mask_first = before != transpose  # forward-before and adjoint-after mask the step's input
    offset = operator.row_offset  # a process's rows of a partitioned graph get those rows' masks
    features = features.detach()
    spare: Optional[torch.Tensor] = None  # an array read no more: the next product writes into it
    if operator.order is not None:  # stored in a locality order: the steps run in it, masks too
        stored = operator.to_stored(features)  # a copy: the masks below may write into it
        spare, features, owned = (features if owned else None), stored, True
    if mask_first and order and order[0] is not None:
        features = apply_dropout_mask_(features if owned else features.clone(), order[0], p, offset)
        owned = True
    for index in range(len(order)):
        # the mask that follows this product: the next step's input mask, or this step's output mask
        following = (order[index + 1] if index + 1 < len(order) else None) if mask_first else order[index]
        result = None
        if following is not None:  # product and mask in one pass where the compiled kernel runs
            result = operator.masked_stored_product(
                features, transpose, _mask_of(following, p, offset, features), spare
            )
        if result is None:
            result = operator.stored_product(features, transpose, spare)
            if following is not None:
                apply_dropout_mask_(result, following, p, offset)
        spare, features, owned = (features if owned else None), result, True
    return operator.to_nodes(features, spare)


class _AdjointDiffusion(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        features: torch.Tensor,
        operator: Operator,
        seeds: Sequence[Optional[int]],
        p: float,
        before: bool,
    ) -> torch.Tensor:
        ctx.operator, ctx.seeds, ctx.p, ctx.before = operator, seeds, p, before
        return _steps(operator, features.contiguous(), seeds, p, before, transpose=False)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[torch.Tensor, None, None, None, None]:
        if (
            torch.is_grad_enabled()
        ):  # create_graph=True: the adjoint steps run outside autograd, refuse at once
            raise RuntimeError(SECOND_ORDER_MESSAGE)
        grad = _steps(ctx.operator, grad_output.contiguous(), ctx.seeds, ctx.p, ctx.before, transpose=True)
        return grad, None, None, None, None


def _check_steps(
    operator: Operator, features: torch.Tensor, num_steps: int, dropout: float, dropout_position: str
) -> Tuple[int, float, bool]:
    """``(r, p, before)`` checked, and ``features``' rows against the graph's nodes."""
    num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
    p = check_probability(dropout, "dropout")
    before = check_choice(dropout_position, "dropout_position", ("after", "before")) == "before"
    if features.shape[0] != operator.num_nodes:
        raise ValueError(
            f"features have {features.shape[0]} rows but the graph has {operator.num_nodes} nodes"
        )
    return num_steps, p, before


def _step_seeds(
    operator: Operator, num_steps: int, p: float, seeds: Optional[Sequence[Optional[int]]]
) -> List[Optional[int]]:
    """One mask seed per step: ``seeds`` checked, or drawn from torch's generator (all processes of a
    partitioned graph agreeing)."""
    if seeds is not None:
        if len(seeds) != num_steps:
            raise ValueError(f"{len(seeds)} seeds for {num_steps} steps: give one seed per step")
        return list(seeds)
    drawn: List[Optional[int]] = [
        int(torch.randint(0, 2**62, (1,)).item()) if p > 0 else None for _ in range(num_steps)
    ]
    if isinstance(operator, PartitionedDiffusion):
        drawn = operator.agree_seeds(drawn)
    return drawn


def adjoint_diffusion(
    operator: Operator,
    features: torch.Tensor,
    num_steps: int,
    *,
    dropout: float = 0.0,
    dropout_position: str = "after",
    seeds: Optional[Sequence[Optional[int]]] = None,
) -> torch.Tensor:
    """``r`` diffusion steps with dropout, differentiable in ``features``, storing no activations.

    Args:
        operator: the steps' ``A = I − γL`` (a :class:`~pdenets.operators.PartitionedDiffusion`: this
            process's rows of a graph split over processes, ``features`` its rows).
        features: ``X`` of shape ``(N, *)``.
        num_steps: ``r``.
        dropout: drop rate ``p`` of every step (0: no masks).
        dropout_position: ``"after"`` or ``"before"`` each step.
        seeds: one mask seed per step; default: drawn from torch's generator, one per step,
            as :func:`~pdenets.nn.dropout.fast_dropout` draws them.

    Returns:
        ``X_r`` of the shape of ``features``. Its backward runs the adjoint steps, first order
        only: a backward with ``create_graph=True`` (for a second derivative) raises a
        ``RuntimeError`` at once, telling to build the layer with ``backward="autograd"``.
    """
    num_steps, p, before = _check_steps(operator, features, num_steps, dropout, dropout_position)
    seeds = _step_seeds(operator, num_steps, p, seeds)
    if num_steps == 0:
        return features
    if features.dim() == 2:
        return _AdjointDiffusion.apply(features, operator, list(seeds), p, before)
    flat = features.reshape(features.shape[0], -1)
    return _AdjointDiffusion.apply(flat, operator, list(seeds), p, before).reshape(features.shape)


def _sole_holder(features: torch.Tensor) -> bool:
    """Whether no other tensor shares ``features``' memory (autograd keeps an output it saves as a second
    tensor on the same storage). ``False`` where torch does not tell."""
    use_count = getattr(torch._C, "_storage_Use_Count", None)
    if use_count is None or features._base is not None or not features.is_contiguous():
        return False
    storage = features.untyped_storage()
    return use_count(storage._cdata) == 2 and storage.nbytes() == features.numel() * features.element_size()


class _AdjointDiffusionReadout(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        features: torch.Tensor,
        weight: torch.Tensor,
        bias: Optional[torch.Tensor],
        operator: Operator,
        seeds: Sequence[Optional[int]],
        p: float,
        before: bool,
        consume: bool,
    ) -> torch.Tensor:
        consumed = consume and _sole_holder(features)  # asked before this function's own alias below
        contiguous = features.detach().contiguous()
        owned = consumed or contiguous.data_ptr() != features.data_ptr()
        diffused = _steps(operator, contiguous, seeds, p, before, transpose=False, owned=owned)
        ctx.operator, ctx.seeds, ctx.p, ctx.before = operator, seeds, p, before
        # not an input or output of this function: kept as an attribute, dropped early in the backward
        ctx.diffused = diffused
        ctx.has_bias = bias is not None
        ctx.save_for_backward(weight)
        return torch.nn.functional.linear(diffused, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        if torch.is_grad_enabled():
            raise RuntimeError(SECOND_ORDER_MESSAGE)
        (weight,) = ctx.saved_tensors
        diffused, ctx.diffused = ctx.diffused, None
        grad_output = grad_output.contiguous()
        grad_weight = grad_output.t().mm(diffused) if ctx.needs_input_grad[1] else None
        grad_bias = grad_output.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        del diffused  # its memory is free before the gradient's steps start
        grad = None
        if ctx.needs_input_grad[0]:  # the gradient at X_r is made here: its memory is the steps' own
            grad = _steps(
                ctx.operator, grad_output.mm(weight), ctx.seeds, ctx.p, ctx.before, transpose=True, owned=True
            )
        return grad, grad_weight, grad_bias, None, None, None, None, None


def adjoint_diffusion_readout(
    operator: Operator,
    features: torch.Tensor,
    num_steps: int,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    *,
    dropout: float = 0.0,
    dropout_position: str = "after",
    seeds: Optional[Sequence[Optional[int]]] = None,
    consume_input: bool = False,
) -> torch.Tensor:
    """``X_r Wᵀ + b``: :func:`adjoint_diffusion` followed by a linear read-out, in one function.

    The same numbers (the same masks for the same seeds) and gradients as
    ``torch.nn.functional.linear(adjoint_diffusion(...), weight, bias)``, in less memory. The chain holds
    three ``N × C`` arrays in each pass (the input, the array a step reads and the one it writes; backward:
    the gradient autograd hands in, and the two). Here the backward makes the gradient at ``X_r``
    (``G Wᵀ``) itself, after ``∂ℓ/∂W = Gᵀ X_r`` has freed ``X_r``, and runs the adjoint steps in that
    array and one more; with ``consume_input=True`` the forward steps do the same in the input's memory.
    That is what a network does with the activation it diffuses before its classifier
    (:class:`~pdenets.models.DiffResNet`): at 20,000,000 nodes × 64 features each array is 4.8 GiB.

    Args:
        operator: the steps' ``A = I − γL``, as :func:`adjoint_diffusion`'s.
        features: ``X`` of shape ``(N, C)``.
        num_steps: ``r``.
        weight: ``W`` of shape ``(K, C)``.
        bias: ``b`` of shape ``(K,)`` or ``None``.
        dropout: drop rate ``p`` of every step (0: no masks).
        dropout_position: ``"after"`` or ``"before"`` each step.
        seeds: one mask seed per step; default: drawn from torch's generator, as :func:`adjoint_diffusion`.
        consume_input: ``features``' memory may be overwritten: the caller made the tensor, nothing else
            holds it, and it is not read again (taken only where no other tensor shares its memory, e.g.
            an output autograd saved; otherwise it is left intact).

    Returns:
        ``(N, K)``.

    Examples:
        >>> import torch
        >>> from pdenets.operators import DiffusionOperator
        >>> operator = DiffusionOperator(torch.tensor([[0., 1.], [1., 0.]]), step_size=0.25)
        >>> x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        >>> weight = torch.tensor([[1., -1.]], requires_grad=True)
        >>> logits = adjoint_diffusion_readout(operator, x, 2, weight)
        >>> torch.allclose(logits, adjoint_diffusion(operator, x, 2) @ weight.t())
        True
        >>> logits.sum().backward(); x.grad
        tensor([[ 1., -1.],
                [ 1., -1.]])
    """
    num_steps, p, before = _check_steps(operator, features, num_steps, dropout, dropout_position)
    if features.dim() != 2:
        raise ValueError(
            f"features must be 2-D (N, C) for a linear read-out, got shape {tuple(features.shape)}"
        )
    seeds = _step_seeds(operator, num_steps, p, seeds)
    if num_steps == 0:
        return torch.nn.functional.linear(features, weight, bias)
    return _AdjointDiffusionReadout.apply(
        features, weight, bias, operator, seeds, p, before, bool(consume_input)
    )
