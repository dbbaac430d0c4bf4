r"""Unit ablation: is a network dominated by a few units of one layer? ("A Mathematical Principle of Deep
Learning: Learn the Geodesic Curve in the Wasserstein Space", appendix 7.1)

For the block ``l`` under study, ``x^{(l)} = f_l(x^{(l−1)})``:

1. the *important units* of class ``c`` are the ``k`` coordinates of ``x^{(l)}`` (flattened) with the
   largest mean over the reference points of class ``c`` (:func:`important_units`);
2. for every evaluated point, the important units of its class are set back to their values in
   ``x^{(l−1)}`` — the layer's effect on them is removed — and the network runs on;
3. the accuracy as ``k`` grows is the ablation curve (Fig. 7: ResNet barely moves, a plain network falls).

The class of an evaluated point is the one the intact network predicts (``class_source="predicted"``,
the default: no label enters the ablated prediction) or its true label (``"label"``).
With ``k`` equal to the width, every unit is replaced: the block is skipped (tested).

Examples:
    >>> import torch
    >>> from torch import nn
    >>> net = nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 6), nn.Linear(6, 3))
    >>> x, y = torch.randn(40, 4), torch.randint(0, 3, (40,))
    >>> curve = unit_ablation(net, "1", x, y, x, y, [0, 6])
    >>> curve["accuracy"][0] == int((net(x).argmax(1) == y).sum()) / len(y)
    True
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import torch
from torch import nn

from .tracks import select_blocks

__all__ = ["important_units", "unit_ablation"]


def important_units(
    representations: torch.Tensor, labels: torch.Tensor, num_classes: int, count: int
) -> torch.Tensor:
    """``(num_classes, count)`` indices of the units with the largest class means (descending).

    For every class ``c``, the units are ranked by their class mean

    ``μ_c[u] = (1 / |I_c|) Σ_{i ∈ I_c} r_i[u]``

    where ``r_i`` is row ``i`` of ``representations`` and ``I_c`` the points labelled ``c``; row ``c`` of the
    result holds the ``count`` units with the largest ``μ_c`` (ties keep the unit order). A class without
    reference points ranks its units by the mean over all points. This is the choice of "important units"
    of the unit-ablation study in "A Mathematical Principle of Deep Learning: Learn the Geodesic Curve in
    the Wasserstein Space" (appendix 7.1).

    Args:
        representations: ``(m, d)`` flattened representations of ``m`` reference points after the block.
        labels: ``(m,)`` integer class of every reference point, in ``0 … num_classes − 1``.
        num_classes: number of classes ``C``, i.e. rows of the result.
        count: number of units ``k`` kept per class, ``0 ≤ k ≤ d``.

    Returns:
        ``(C, k)`` ``int64`` tensor: row ``c`` lists the unit indices of class ``c`` by decreasing ``μ_c``.

    Raises:
        ValueError: if ``representations`` is not ``(m, d)`` with ``labels`` of shape ``(m,)``, or if
            ``count`` lies outside ``0 … d``.

    Examples:
        >>> import torch
        >>> reps = torch.tensor([[1., 5., 0.], [2., 4., 0.], [0., 1., 9.]])
        >>> important_units(reps, torch.tensor([0, 0, 1]), num_classes=2, count=2)
        tensor([[1, 0],
                [2, 1]])
    """
    if representations.dim() != 2 or labels.shape != representations.shape[:1]:
        raise ValueError(
            f"representations must be (m, d) with labels (m,), got {tuple(representations.shape)} "
            f"and {tuple(labels.shape)}"
        )
    if not 0 <= count <= representations.shape[1]:
        raise ValueError(f"count must lie in 0..{representations.shape[1]} (the width), got {count}")
    values = representations.to(torch.float64)
    overall = values.mean(0)
    means = torch.stack(
        [values[labels == c].mean(0) if bool((labels == c).any()) else overall for c in range(num_classes)]
    )
    return means.argsort(dim=1, descending=True, stable=True)[:, :count]


def _device(model: nn.Module) -> torch.device:
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


@torch.no_grad()
def unit_ablation(
    model: nn.Module,
    block: str,
    reference_inputs: torch.Tensor,
    reference_labels: torch.Tensor,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    counts: Sequence[int],
    *,
    class_source: str = "predicted",
    batch_size: int = 500,
) -> Dict[str, Any]:
    """Accuracy on ``(inputs, labels)`` with the ``k`` important units of ``block`` eliminated, for each
    ``k``.

    With ``x^{(l)} = f_l(x^{(l−1)})`` the block under study and ``U_c(k)`` the ``k`` important units of
    class ``c`` (:func:`important_units`, ranked on ``reference_inputs``), a point of class ``c`` runs
    through the network with

    ``x^{(l)}_u ← x^{(l−1)}_u  for u ∈ U_c(k)``

    i.e. the block's effect on those units is removed ("A Mathematical Principle of Deep Learning: Learn
    the Geodesic Curve in the Wasserstein Space", appendix 7.1, Fig. 7). The model runs in evaluation
    mode without gradients; its mode is restored and its hooks removed afterwards.

    Args:
        model: any classifier mapping ``(N, ...)`` inputs to ``(N, C)`` logits.
        block: name of the module under study, as ``model.named_modules()`` lists it (e.g. ``"layer1.0"``);
            its input and output must have the same shape.
        reference_inputs: ``(M, ...)`` points whose class means rank the units (e.g. training data).
        reference_labels: ``(M,)`` integer labels of ``reference_inputs``.
        inputs: ``(N, ...)`` points scored with units eliminated.
        labels: ``(N,)`` integer labels of ``inputs``.
        counts: the numbers ``k`` of eliminated units, each in ``0 … width`` (``0`` gives the intact
            accuracy, ``width`` skips the block).
        class_source: whose class picks the eliminated units of a point: ``"predicted"`` (the intact
            network's prediction) or ``"label"`` (its true label) (default: ``"predicted"``).
        batch_size: number of points per forward pass (default: ``500``).

    Returns:
        ``{"block": name, "counts": [k, …], "accuracy": [a_k, …], "width": d}`` with one accuracy in
        ``[0, 1]`` per count and ``d`` the flattened width of the block's output.

    Raises:
        ValueError: if ``class_source`` is unknown, inputs and labels differ in length, a count lies
            outside ``0 … width``, ``block`` changes the shape of its input or names no module.

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 6), nn.Linear(6, 3))
        >>> x, y = torch.randn(40, 4), torch.randint(0, 3, (40,))
        >>> curve = unit_ablation(net, "1", x, y, x, y, counts=[0, 3, 6])
        >>> curve["counts"], curve["width"], len(curve["accuracy"])
        ([0, 3, 6], 6, 3)
    """
    if class_source not in ("predicted", "label"):
        raise ValueError(f"class_source must be 'predicted' or 'label', got {class_source!r}")
    if inputs.shape[0] != labels.shape[0] or reference_inputs.shape[0] != reference_labels.shape[0]:
        raise ValueError("inputs and labels must have the same number of points")
    ((name, module),) = select_blocks(model, [block])
    device = _device(model)
    training = model.training
    model.eval()
    state: Dict[str, Any] = {"mode": "record", "kept": []}

    def hook(_: nn.Module, args: Tuple[Any, ...], output: torch.Tensor) -> Optional[torch.Tensor]:
        x_in = args[0]
        if x_in.shape != output.shape:
            raise ValueError(
                f"block {name!r} changes the shape {tuple(x_in.shape)} → {tuple(output.shape)}; "
                "unit ablation needs a block that keeps it"
            )
        if state["mode"] == "record":
            state["kept"].append(output.flatten(1).cpu())
            return None
        index = state["units"][state["classes"]].to(output.device)  # (batch, k)
        flat = output.flatten(1).clone()
        flat.scatter_(1, index, x_in.flatten(1).gather(1, index))
        return flat.view_as(output)

    handle = module.register_forward_hook(hook)
    try:
        for start in range(0, reference_inputs.shape[0], batch_size):
            model(reference_inputs[start : start + batch_size].to(device))
        kept = torch.cat(state["kept"])
        width = kept.shape[1]
        bad = [k for k in counts if not 0 <= int(k) <= width]
        if bad:
            raise ValueError(f"counts must lie in 0..{width} (the width of block {name!r}), got {bad[0]}")
        num_classes = int(max(int(reference_labels.max()), int(labels.max()))) + 1
        handle.remove()
        intact = torch.cat(
            [
                model(inputs[start : start + batch_size].to(device)).argmax(1).cpu()
                for start in range(0, inputs.shape[0], batch_size)
            ]
        )
        num_classes = max(num_classes, int(intact.max()) + 1)
        classes = intact if class_source == "predicted" else labels.cpu()  # indexes the host table of units
        handle = module.register_forward_hook(hook)
        state["mode"] = "ablate"
        accuracy = []
        for count in counts:
            state["units"] = important_units(kept, reference_labels.cpu(), num_classes, int(count))
            correct = 0
            for start in range(0, inputs.shape[0], batch_size):
                state["classes"] = classes[start : start + batch_size]
                predicted = model(inputs[start : start + batch_size].to(device)).argmax(1).cpu()
                correct += int((predicted == labels[start : start + batch_size].cpu()).sum())
            accuracy.append(correct / inputs.shape[0])
    finally:
        handle.remove()
        model.train(training)
    return {"block": name, "counts": [int(k) for k in counts], "accuracy": accuracy, "width": width}
