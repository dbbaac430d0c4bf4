r"""The full-batch training step of a COIN over an MLP, its gradients in closed form (no autograd graph).

A COIN whose backbone is an MLP — affine maps ``x ↦ x Wᵢᵀ + bᵢ`` with ReLU (and dropout) between them — and
whose head is affine, trained by the cross-entropy of some rows ``L`` of its output, is

$$
    a_0 = X, \quad a_i = m_i \odot \mathrm{relu}(a_{i-1} W_i^\top + b_i) \ (i < k), \quad
    O = a_{k-1} (W_h W_k)^\top + (W_h b_k + b_h), \quad Y = (I - \gamma L)^r O,
$$

with ``m_i`` the dropout masks (``0`` or ``1/keep``) and the last affine map folded into the head: the
diffusion keeps constants and commutes with affine maps (:meth:`~pdenets.models.COIN.commutes_with_head`),
so only the head's ``C`` columns are diffused. The loss is ``ℓ = −(1/|L|) Σ_{i∈L} log softmax(Y_i)_{y_i}``;
its gradients, backwards:

$$
    \frac{\partial ℓ}{\partial Y_L} = \frac{\mathrm{softmax}(Y_L) - \mathbb{1}_{y}}{|L|}, \quad
    G_O = ((I - \gamma L)^\top)^r G_Y, \quad G_M = G_O^\top a_{k-1}, \quad g_c = G_O^\top \mathbb{1},
$$
$$
    \frac{\partial ℓ}{\partial W_h} = G_M W_k^\top + g_c b_k^\top, \quad
    \frac{\partial ℓ}{\partial W_k} = W_h^\top G_M, \quad
    \frac{\partial ℓ}{\partial b_k} = W_h^\top g_c, \quad
    \frac{\partial ℓ}{\partial b_h} = g_c, \quad G_{a_{k-1}} = G_O (W_h W_k),
$$

then through each block ``G_{z_i} = G_{a_i} ⊙ m_i ⊙ [z_i > 0]``, ``∂ℓ/∂W_i = G_{z_i}ᵀ a_{i−1}``,
``∂ℓ/∂b_i = G_{z_i}ᵀ 1``, ``G_{a_{i−1}} = G_{z_i} W_i``. Per epoch that is two products of ``N × d × d``
for a two-layer MLP (the first map forward and its gradient) where autograd through the unfolded network
takes five, and no graph of saved tensors: a step of the table task costs what its arithmetic does. The
masks are drawn as :class:`~pdenets.nn.FastDropout` draws them, so a step from the same generator state gives
autograd's gradients of the same network (tests compare them in float64).

Examples:
    >>> import torch
    >>> from pdenets.models import coin_mlp
    >>> ring = torch.roll(torch.eye(6), 1, 0)
    >>> net = coin_mlp(3, 2, hidden_features=4, graph=ring + ring.T, step_size=0.2, num_steps=2).double()
    >>> step = CoinMLPStep.of(net)
    >>> x, rows = torch.randn(6, 3, dtype=torch.float64), torch.tensor([0, 3])
    >>> labels = torch.tensor([0, 1, 0, 1, 0, 1])
    >>> loss = step.loss_and_gradients(x, rows, labels)
    >>> reference = torch.nn.functional.cross_entropy(net(x)[rows], labels[rows]).item()
    >>> abs(loss - reference) < 1e-12
    True
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np
import torch
from torch import nn

from ..nn.dropout import FastDropout, dropout_keep_mask
from .coin import COIN

__all__ = ["CoinMLPStep"]


class CoinMLPStep:
    """The closed-form training step of a :class:`~pdenets.models.COIN` over an MLP (module docstring).

    Build it with :meth:`of`, which returns ``None`` for a model of another shape (then train it with
    autograd). The step writes each parameter's ``.grad`` (an optimizer steps them as usual).
    """

    def __init__(
        self,
        model: COIN,
        blocks: List[Tuple[nn.Linear, float]],
        last: nn.Linear,
        head: nn.Linear,
        operator: Optional[object],
    ):
        self.model, self.blocks, self.last, self.head, self.operator = model, blocks, last, head, operator
        self._rows_key: Optional[tuple] = None
        self._rows_matrices: Optional[Tuple[torch.Tensor, torch.Tensor]] = None
        self._ones: Optional[np.ndarray] = None

    @classmethod
    def of(cls, model: nn.Module) -> Optional["CoinMLPStep"]:
        """The step of ``model``, where it is a COIN over ``Sequential(Linear, ReLU, [FastDropout], …,
        Linear)`` with a linear head and a fixed graph on which the head commutes with the diffusion (or no
        diffusion); ``None`` otherwise."""
        if not isinstance(model, COIN) or type(model.head) is not nn.Linear or model.step_logit is not None:
            return None
        backbone = model.backbone
        if (
            not isinstance(backbone, nn.Sequential)
            or not len(backbone)
            or type(backbone[-1]) is not nn.Linear
        ):
            return None
        layers = list(backbone)
        blocks: List[Tuple[nn.Linear, float]] = []
        index = 0
        while index < len(layers) - 1:
            linear = layers[index]
            if (
                type(linear) is not nn.Linear
                or index + 1 >= len(layers)
                or type(layers[index + 1]) is not nn.ReLU
            ):
                return None
            index += 2
            p = 0.0
            dropout = layers[index] if index < len(layers) - 1 else None
            if isinstance(dropout, FastDropout):
                p, index = dropout.p, index + 1
            blocks.append((linear, p))
        last, head = layers[-1], model.head
        assert isinstance(last, nn.Linear) and isinstance(head, nn.Linear)
        if last.out_features != head.in_features:
            return None
        operator = None
        if model.num_steps > 0:
            weights = model._fixed
            if weights is None or isinstance(weights, list) or not model.commutes_with_head():
                return None
            operator = model.diffusion.operator_for(torch.zeros(0, device=last.weight.device), weights)
        return cls(model, blocks, last, head, operator)

    def _rows_of_diffusion(self, rows: torch.Tensor, dtype: np.dtype) -> Tuple[torch.Tensor, torch.Tensor]:
        """``S`` (the rows ``rows`` of ``(I − γL)^r``) and ``Sᵀ`` as CSR tensors, once per set of rows: the
        diffused outputs a loss reads are ``S O`` and their gradient ``Sᵀ G``, one sparse product each
        instead of ``r`` (``S`` holds about as many entries as ``L``: the rows of a kNN graph's power stay
        local)."""
        key = (rows.data_ptr(), tuple(rows.shape), np.dtype(dtype).str)
        if self._rows_key != key:
            operator: Any = self.operator
            matrix = operator.matrix()
            import scipy.sparse as sp

            coo = matrix.coalesce() if matrix.is_sparse else matrix.to_sparse().coalesce()
            indices, values = coo.indices().numpy(), coo.values().numpy().astype(dtype)
            full = sp.csr_matrix((values, (indices[0], indices[1])), shape=tuple(coo.shape))
            part = full[rows.numpy()]
            for _ in range(self.model.num_steps - 1):
                part = part @ full
            part, transposed = part.tocsr(), part.T.tocsr()
            self._rows_matrices = (_csr_tensor(part), _csr_tensor(transposed))
            self._rows_key = key
        assert self._rows_matrices is not None
        return self._rows_matrices

    def _column_sums(self, rows: int, dtype: np.dtype) -> np.ndarray:
        """A vector of ``rows`` ones: ``1ᵀ G`` by it is a matrix-vector product, several times faster than a
        reduction over the rows of a thin array."""
        ones = self._ones
        if ones is None or len(ones) != rows or ones.dtype != dtype:
            ones = self._ones = np.ones(rows, dtype=dtype)
        return ones

    @torch.no_grad()
    def loss_and_gradients(self, inputs: torch.Tensor, rows: torch.Tensor, labels: torch.Tensor) -> float:
        """The mean cross-entropy of the rows ``rows`` of the model's output for ``inputs`` ``(N, F)`` (a CPU
        tensor; ``labels``: every row's class, read at ``rows``), in the model's mode; each parameter's
        ``.grad`` set to its gradient. Returns the loss (NaN or infinity where it is not finite: the gradients
        are then left unset).

        The arithmetic runs in NumPy on views of the tensors (no copies): its BLAS multiplies the thin
        ``N × d × C`` products several times faster than torch's CPU kernels do at these sizes. A dropout
        mask's scale ``1/keep`` is carried by the next (small) weight matrix rather than multiplied into the
        ``N × d`` activations, and each column sum is a product with a vector of ones."""
        x = inputs.detach().numpy()
        ones = self._column_sums(len(x), x.dtype)
        # activations[i]: block i's input up to the factor scales[i] (the previous block's 1/keep)
        activations, masks, scales = [x], [], [1.0]
        hidden = x
        training = self.model.training
        for linear, p in self.blocks:
            weight = linear.weight.detach().numpy()
            hidden = hidden @ (weight.T if scales[-1] == 1.0 else weight.T * weight.dtype.type(scales[-1]))
            if linear.bias is not None:
                hidden += linear.bias.detach().numpy()
            passed = hidden > 0  # where the ReLU passes the gradient, and dropout keeps the entry
            np.maximum(hidden, 0, out=hidden)
            scale = 1.0
            if training and p > 0:
                keep, scale = dropout_keep_mask(hidden.shape, p)
                passed &= keep
                hidden *= keep
            masks.append(passed)
            scales.append(scale)
            activations.append(hidden)
        last, head = self.last, self.head
        head_weight, last_weight = head.weight.detach().numpy(), last.weight.detach().numpy()
        folded = head_weight @ last_weight  # (C, d): the last map and the head in one
        if scales[-1] != 1.0:
            folded *= folded.dtype.type(scales[-1])  # the last mask's 1/keep
        out = hidden @ folded.T
        last_bias = last.bias.detach().numpy() if last.bias is not None else None
        if last_bias is not None or head.bias is not None:
            bias = head_weight @ last_bias if last_bias is not None else 0.0
            if head.bias is not None:
                bias = bias + head.bias.detach().numpy()
            out += bias
        chosen, picked = rows.numpy(), labels.numpy()[rows.numpy()]
        if self.operator is None:
            logits = out[chosen]
        else:
            rows_matrix, transposed = self._rows_of_diffusion(rows, out.dtype)
            logits = (rows_matrix @ torch.from_numpy(out)).numpy()
        shifted = logits - logits.max(1, keepdims=True)
        log_probabilities = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        value = float(-log_probabilities[np.arange(len(chosen)), picked].mean())
        if not np.isfinite(value):
            return value
        gradient = np.exp(log_probabilities)
        gradient[np.arange(len(chosen)), picked] -= 1.0
        gradient /= len(chosen)
        if self.operator is None:
            grad_out = np.zeros_like(out)
            grad_out[chosen] = gradient
        else:
            grad_out = (transposed @ torch.from_numpy(gradient)).numpy()
        grad_folded = grad_out.T @ hidden  # G_Mᵀ up to the last mask's 1/keep
        if scales[-1] != 1.0:
            grad_folded *= grad_folded.dtype.type(scales[-1])
        grad_bias = ones @ grad_out
        grad_head = grad_folded @ last_weight.T
        if last_bias is not None:
            grad_head += grad_bias[:, None] * last_bias[None, :]
            last.bias.grad = torch.from_numpy(head_weight.T @ grad_bias)  # type: ignore[union-attr]
        head.weight.grad = torch.from_numpy(grad_head)
        if head.bias is not None:
            head.bias.grad = torch.from_numpy(grad_bias)
        last.weight.grad = torch.from_numpy(head_weight.T @ grad_folded)
        grad = grad_out @ folded  # the gradient of the last block's masked output, its 1/keep included
        for index in range(len(self.blocks) - 1, -1, -1):
            linear, _ = self.blocks[index]
            grad *= masks[index]
            weight_grad = grad.T @ activations[index]
            if scales[index] != 1.0:
                weight_grad *= weight_grad.dtype.type(scales[index])
            linear.weight.grad = torch.from_numpy(weight_grad)
            if linear.bias is not None:
                linear.bias.grad = torch.from_numpy(ones @ grad)
            if index:
                weight = linear.weight.detach().numpy()
                grad = grad @ (weight if scales[index] == 1.0 else weight * weight.dtype.type(scales[index]))
        return value


def _csr_tensor(matrix) -> torch.Tensor:
    """A SciPy CSR matrix as a torch CSR tensor (its arrays shared)."""
    return torch.sparse_csr_tensor(
        torch.from_numpy(matrix.indptr.astype(np.int64)),
        torch.from_numpy(matrix.indices.astype(np.int64)),
        torch.from_numpy(matrix.data),
        matrix.shape,
    )
