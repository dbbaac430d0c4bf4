r"""The prototype-initialized Diff-ResNet head's training without autograd: its gradients in closed form and
its first layer kept factored (:func:`train_prototype_heads`).

The head of :mod:`~pdenets.models.fewshot.heads` on the points ``X`` ``(N, M)`` of a task (support rows
first),

$$
    A = X W_1^\top + b_1, \quad H = \mathrm{ReLU}(A), \quad F = X + H W_2^\top + b_2, \quad
    Z = F W_3^\top, \quad o = D Z + b_3,
$$

``D`` ``(S, N)`` the support rows of ``(I − γL)^r`` (the identity's without diffusion), trained by SGD
(momentum ``μ``, weight decay ``λ``, the rate of each step given) on the mean cross entropy of the
``S`` support outputs. Its gradients, with ``G_o = (softmax(o) − Y)/S``:

$$
    G_Z = D^\top G_o, \quad \nabla W_3 = G_Z^\top F, \quad G_F = G_Z W_3, \quad
    \nabla W_2 = W_3^\top (G_Z^\top H), \quad G_A = [A > 0] \odot G_Z (W_3 W_2), \quad
    \nabla W_1 = G_A^\top X,
$$

and the biases' the column sums of ``G_o``, ``G_F`` and ``G_A``. Every gradient of ``W_1`` is ``Pᵀ X`` for
some ``(N, M)`` matrix ``P``, and weight decay and momentum only combine them with ``W_1``'s start, so
``W_1 = a W_1^{(0)} + P^\top X`` at every step (``a`` a number) and

$$
    X W_1^\top = a\,X W_1^{(0)\top} + (X X^\top) P,
$$

``N² M`` operations a step instead of ``N M²`` (``N = 80`` points of 384 features in a 5-way 1-shot task
with 15 queries a class), ``X W_1^{(0)⊤}`` and ``X Xᵀ`` formed once. ``∇W_2`` has rank ``C``: ``C M²`` to
form it. The heads start as nearest prototype (``W_2 = 0``, ``b_2 = 0``, :func:`~.heads._imprint`): the
regularizers of the external head (``μ > 0``) and the prototypical loss (``α > 0``) take the autograd path.
The numbers are autograd's up to round-off (``tests/models/fewshot/test_closed_form_head.py``).
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import torch

__all__ = ["train_prototype_heads"]


def train_prototype_heads(
    inputs: torch.Tensor,
    support_labels: torch.Tensor,
    diffusion_rows: Optional[torch.Tensor],
    parameters: List[torch.Tensor],
    learning_rates: Sequence[float],
    momentum: float,
    weight_decay: float,
) -> List[torch.Tensor]:
    """SGD on every task's head, one step per entry of ``learning_rates`` (module docstring).

    Args:
        inputs: ``(T, N, M)`` points of every task, its ``S`` support points first.
        support_labels: ``(T, S)`` in ``0 … C−1``.
        diffusion_rows: ``(T, S, N)`` support rows of the diffusion, or ``None`` (no diffusion).
        parameters: the start ``[W1, b1, W2, b2, W3, b3]``, stacked over tasks, with ``W2`` and ``b2`` zero.
        learning_rates: the rate of each step (the schedule's).
        momentum, weight_decay: SGD's (torch's: the decay added to the gradient, the first step's buffer the
            gradient itself, no dampening).

    Returns:
        The trained ``[W1, b1, W2, b2, W3, b3]`` (``W1`` formed densely at the end).

    Examples:
        >>> import torch
        >>> x, labels = torch.randn(2, 6, 4), torch.tensor([[0, 1], [1, 0]])
        >>> start = [torch.randn(2, 4, 4), torch.randn(2, 4), torch.zeros(2, 4, 4), torch.zeros(2, 4),
        ...          torch.randn(2, 2, 4), torch.randn(2, 2)]
        >>> trained = train_prototype_heads(x, labels, None, start, [0.1] * 5, 0.9, 1e-4)
        >>> [tuple(p.shape) for p in trained][::2]
        [(2, 4, 4), (2, 4, 4), (2, 2, 4)]
    """
    first_weight, first_bias, second_weight, second_bias, out_weight, out_bias = (
        p.detach().clone() for p in parameters
    )
    if bool(second_weight.any()) or bool(second_bias.any()):
        raise ValueError("train_prototype_heads starts from a residual branch that is off (W2 = 0, b2 = 0)")
    tasks, support = support_labels.shape
    ways = out_weight.shape[1]
    targets = torch.nn.functional.one_hot(support_labels, ways).to(inputs.dtype)
    start_products = torch.bmm(inputs, first_weight.transpose(1, 2))  # X W1⁽⁰⁾ᵀ, (T, N, M)
    gram = torch.bmm(inputs, inputs.transpose(1, 2))  # X Xᵀ, (T, N, N)
    scale, factor = 1.0, torch.zeros_like(inputs)  # W1 = scale · W1⁽⁰⁾ + factorᵀ X
    buffers: Optional[List] = None
    for step, rate in enumerate(learning_rates):
        pre_activation = torch.baddbmm(first_bias[:, None, :], gram, factor).add_(start_products, alpha=scale)
        hidden = pre_activation.clamp_min(0)
        features = inputs + second_bias[:, None, :]
        if step > 0:  # W2 = 0 before the first step
            features = features.baddbmm(hidden, second_weight.transpose(1, 2))
        undiffused = torch.bmm(features, out_weight.transpose(1, 2))  # Z, (T, N, C)
        outputs = undiffused[:, :support] if diffusion_rows is None else torch.bmm(diffusion_rows, undiffused)
        outputs = outputs + out_bias[:, None, :]
        output_grad = (torch.softmax(outputs, 2) - targets) / support  # (T, S, C)
        if diffusion_rows is None:
            undiffused_grad = torch.zeros_like(undiffused)
            undiffused_grad[:, :support] = output_grad
        else:
            undiffused_grad = torch.bmm(diffusion_rows.transpose(1, 2), output_grad)  # (T, N, C)
        feature_grad = torch.bmm(undiffused_grad, out_weight)  # G_F, (T, N, M)
        hidden_grad = torch.bmm(undiffused_grad, torch.bmm(out_weight, second_weight))  # G_F W2
        pre_grad = hidden_grad.mul_(pre_activation > 0)  # G_A
        gradients = [
            torch.bmm(out_weight.transpose(1, 2), torch.bmm(undiffused_grad.transpose(1, 2), hidden)),  # ∇W2
            feature_grad.sum(1),  # ∇b2
            torch.bmm(undiffused_grad.transpose(1, 2), features),  # ∇W3
            output_grad.sum(1),  # ∇b3
            pre_grad.sum(1),  # ∇b1
        ]
        dense = [second_weight, second_bias, out_weight, out_bias, first_bias]
        # SGD: the decay added to the gradient; the buffer μ·buffer + that (the first step: that alone)
        steps = [gradient.add_(value, alpha=weight_decay) for gradient, value in zip(gradients, dense)]
        scale_step, factor_step = weight_decay * scale, pre_grad.add_(factor, alpha=weight_decay)
        if buffers is None:
            buffers = [*steps, scale_step, factor_step]
        else:
            for buffer, update in zip(buffers[:5], steps):
                buffer.mul_(momentum).add_(update)
            buffers[5] = momentum * buffers[5] + scale_step
            buffers[6].mul_(momentum).add_(factor_step)
        for value, buffer in zip(dense, buffers[:5]):
            value.sub_(buffer, alpha=rate)
        scale = scale - rate * buffers[5]
        factor = factor.sub(buffers[6], alpha=rate)
    first = torch.baddbmm(first_weight * scale, factor.transpose(1, 2), inputs)  # a W1⁽⁰⁾ + Pᵀ X
    return [first, first_bias, second_weight, second_bias, out_weight, out_bias]
