"""Adam, as ``torch.optim.Adam`` computes it, without ``torch.optim``'s start-up.

Constructing any ``torch.optim`` optimizer imports ``torch._dynamo`` once per process (its methods are wrapped
to keep the compiler out), about two seconds on a CPU machine: more than a whole fit of a small table or
graph. :class:`Adam` takes the steps of ``torch.optim.Adam`` (the default, single-tensor form, L2 weight decay
added to the gradient) op for op, so a fit gives the same parameters, bit for bit, with either:

$$
    g \\leftarrow \\nabla_\\theta + \\lambda \\theta, \\quad
    m \\leftarrow \\beta_1 m + (1 - \\beta_1) g, \\quad
    v \\leftarrow \\beta_2 v + (1 - \\beta_2) g^2, \\quad
    \\theta \\leftarrow \\theta - \\frac{\\eta}{1 - \\beta_1^t} \\cdot
        \\frac{m}{\\sqrt{v} / \\sqrt{1 - \\beta_2^t} + \\epsilon}.
$$

Examples:
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> ours, theirs = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    >>> theirs.load_state_dict(ours.state_dict())
    <All keys matched successfully>
    >>> optimizers = [Adam(ours.parameters(), lr=0.1, weight_decay=0.01),
    ...               torch.optim.Adam(theirs.parameters(), lr=0.1, weight_decay=0.01)]
    >>> x = torch.randn(8, 3)
    >>> for _ in range(5):
    ...     for model, optimizer in zip((ours, theirs), optimizers):
    ...         optimizer.zero_grad()
    ...         model(x).square().sum().backward()
    ...         optimizer.step()
    >>> torch.equal(ours.weight, theirs.weight)
    True
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Tuple, Union

import torch

__all__ = ["Adam"]


class Adam:
    """``torch.optim.Adam``'s update (module docstring) for ``params``: an iterable of tensors, or of groups
    (``{"params": [...], "weight_decay": 0.0}``, each key over the defaults).

    Args:
        params: the parameters, or groups of them.
        lr: the learning rate ``η``.
        betas: ``(β₁, β₂)``.
        eps: ``ε``.
        weight_decay: ``λ``, L2 added to the gradient.

    Raises:
        ValueError: a learning rate, ``ε`` or weight decay below zero, or a ``β`` outside ``[0, 1)``.
    """

    def __init__(
        self,
        params: Iterable[Union[torch.Tensor, Dict[str, Any]]],
        lr: float = 1e-3,
        betas: Tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        if not lr >= 0 or not eps >= 0 or not weight_decay >= 0:
            raise ValueError(f"lr, eps and weight_decay must be ≥ 0, got {lr}, {eps} and {weight_decay}")
        if not all(0 <= beta < 1 for beta in betas):
            raise ValueError(f"betas must lie in [0, 1), got {betas}")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        given: List[Any] = list(params)
        groups: List[Dict[str, Any]] = given if given and isinstance(given[0], dict) else [{"params": given}]
        self.param_groups: List[Dict[str, Any]] = [
            {**defaults, **group, "params": list(group["params"])} for group in groups
        ]
        self.state: Dict[torch.Tensor, Dict[str, Any]] = {}

    def zero_grad(self) -> None:
        """Forget every parameter's gradient (``set_to_none``, as torch does by default)."""
        for group in self.param_groups:
            for parameter in group["params"]:
                parameter.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One Adam step of every parameter that has a gradient (the parameters of a group at once, with
        torch's ``_foreach`` kernels: the same arithmetic entry by entry, a handful of calls per group)."""
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
            parameters = [parameter for parameter in group["params"] if parameter.grad is not None]
            if not parameters:
                continue
            states = []
            for parameter in parameters:
                state = self.state.get(parameter)
                if state is None:
                    state = self.state[parameter] = {
                        "step": 0,
                        "exp_avg": torch.zeros_like(parameter, memory_format=torch.preserve_format),
                        "exp_avg_sq": torch.zeros_like(parameter, memory_format=torch.preserve_format),
                    }
                state["step"] += 1
                states.append(state)
            grads: Any = [parameter.grad for parameter in parameters]
            if decay != 0:
                grads = torch._foreach_add(grads, parameters, alpha=decay)
            exp_avgs = [state["exp_avg"] for state in states]
            exp_avg_sqs = [state["exp_avg_sq"] for state in states]
            torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
            torch._foreach_mul_(exp_avg_sqs, beta2)
            torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
            for step in sorted({state["step"] for state in states}):
                chosen = [index for index, state in enumerate(states) if state["step"] == step]
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                step_size = lr / bias_correction1
                denominators = torch._foreach_sqrt([exp_avg_sqs[index] for index in chosen])
                torch._foreach_div_(denominators, bias_correction2**0.5)
                torch._foreach_add_(denominators, eps)
                torch._foreach_addcdiv_(
                    [parameters[index] for index in chosen],
                    [exp_avgs[index] for index in chosen],
                    denominators,
                    value=-step_size,
                )
