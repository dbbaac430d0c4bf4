r"""Data tracks of any ``nn.Module``: the representation after each chosen block, recorded with forward hooks.

A stage is a run of consecutive chosen blocks whose (flattened) outputs have one width; its tracks are
``x^{(0)} → x^{(1)} → … → x^{(n)}`` with ``x^{(0)}`` the input of the stage's first block and ``x^{(l)}``
the output of its ``l``-th block — an array ``(m, n + 1, d)`` ready for
:func:`~pdenets.analysis.transport.line_shape_score` and
:func:`~pdenets.analysis.transport.optimal_transport_score`. Stages of different widths (``K > 1``)
are kept apart and scored per stage.

Recording runs under ``torch.no_grad`` in evaluation mode, streams the data batch by batch, keeps the
representations on the CPU in ``float32`` and refuses to exceed a memory budget (``max_bytes``); ask
for fewer points with ``max_points`` (the first ``max_points`` of the data, or a seeded random subset
with ``subsample_seed``). The hooks are removed afterwards, and the model's outputs and gradients are
unchanged (tested).

Examples:
    >>> import torch
    >>> from torch import nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> tracks = record_tracks(net, torch.randn(100, 4), blocks=["1", "3"])
    >>> [tuple(stage.tracks.shape) for stage in tracks]
    [(100, 3, 8)]
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, Type, Union, cast

import torch
from torch import nn

__all__ = ["record_tracks", "Stage", "select_blocks", "project_tracks"]

BlockSpec = Union[
    Sequence[str], Type[nn.Module], Tuple[Type[nn.Module], ...], Callable[[str, nn.Module], bool]
]


@dataclass
class Stage:
    """Tracks of one stage: ``tracks (m, n + 1, d)`` and the names of its ``n`` blocks.

    Row ``i`` of ``tracks`` is the track ``x_i^{(0)} → x_i^{(1)} → … → x_i^{(n)}`` of point ``i``:
    ``x_i^{(0)}`` is the (flattened) input of the stage's first block and ``x_i^{(l)}`` the output of its
    ``l``-th block, all of width ``d`` (the property ``width``). Built by :func:`record_tracks`.

    Args:
        blocks: the names of the stage's ``n`` blocks, in order.
        tracks: ``(m, n + 1, d)`` representations of ``m`` points.

    Examples:
        >>> import torch
        >>> stage = Stage(["0", "1"], torch.zeros(5, 3, 4))
        >>> stage.width
        4
    """

    blocks: List[str]
    tracks: torch.Tensor

    @property
    def width(self) -> int:
        return int(self.tracks.shape[-1])


def select_blocks(model: nn.Module, blocks: BlockSpec) -> List[Tuple[str, nn.Module]]:
    """The chosen blocks in the order ``named_modules`` lists them: by names, by type(s) or by a predicate.

    Names are returned in the order given; types and predicates keep the order of ``model.named_modules()``
    (the root module, with the empty name, is never chosen).

    Args:
        model: any ``nn.Module``.
        blocks: module names (``["layer1.0", "layer1.1"]``), a module type (``BasicBlock``), a tuple of types,
            or a predicate ``(name, module) -> bool``.

    Returns:
        List of ``(name, module)`` pairs.

    Raises:
        ValueError: if a name is not a module of ``model``, or no module matches a type or predicate.
        TypeError: if ``blocks`` is none of the accepted forms.

    Examples:
        >>> from torch import nn
        >>> net = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 4))
        >>> tuple(name for name, _ in select_blocks(net, nn.Linear))
        ('0', '2')
        >>> name, module = select_blocks(net, lambda name, module: name == "1")[0]
        >>> name, type(module).__name__
        ('1', 'ReLU')
    """
    named = [(name, module) for name, module in model.named_modules() if name]
    if isinstance(blocks, (list, tuple)) and all(isinstance(b, str) for b in blocks):
        names = cast(Sequence[str], blocks)  # every entry is a string
        lookup = dict(named)
        missing = [name for name in names if name not in lookup]
        if missing:
            valid = ", ".join(name for name, _ in named[:12])
            raise ValueError(f"no module named {missing[0]!r} in the model; names look like: {valid}")
        return [(name, lookup[name]) for name in names]
    chosen: List[Tuple[str, nn.Module]]
    if isinstance(blocks, type) or (isinstance(blocks, tuple) and all(isinstance(b, type) for b in blocks)):
        kinds = cast(Union[Type[nn.Module], Tuple[Type[nn.Module], ...]], blocks)  # every entry is a type
        chosen = [(name, module) for name, module in named if isinstance(module, kinds)]
    elif callable(blocks):
        chosen = [(name, module) for name, module in named if blocks(name, module)]
    else:
        raise TypeError(
            "blocks must be a list of module names, a module type (or tuple of types) or a predicate "
            f"(name, module) -> bool, got {type(blocks).__name__}"
        )
    if not chosen:
        raise ValueError("no module of the model matches the blocks asked for")
    return chosen


def _batches(data, batch_size: int) -> Iterable[torch.Tensor]:
    if isinstance(data, torch.Tensor):
        for start in range(0, data.shape[0], batch_size):
            yield data[start : start + batch_size]
        return
    for batch in data:  # a DataLoader or any iterable of tensors / (inputs, labels)
        yield batch[0] if isinstance(batch, (list, tuple)) else batch


def record_tracks(
    model: nn.Module,
    data: Union[torch.Tensor, Iterable],
    *,
    blocks: BlockSpec,
    batch_size: int = 256,
    max_points: Optional[int] = None,
    subsample_seed: Optional[int] = None,
    max_bytes: int = 4 * 2**30,
    device: Union[str, torch.device, None] = None,
) -> List[Stage]:
    """Record the tracks of ``data`` through the chosen ``blocks`` of ``model``.

    Args:
        model: any ``nn.Module``.
        data: a tensor of inputs, or an iterable (``DataLoader``) of tensors or ``(inputs, labels)`` pairs.
        blocks: module names (``["layer1.0", "layer1.1"]``), a module type (``BasicBlock``) or a predicate.
        batch_size: batch size for a tensor ``data``.
        max_points: keep this many points (default all).
        subsample_seed: draw the kept points at random with this seed (tensor ``data`` only) instead of
            taking the first ``max_points``.
        max_bytes: refuse to keep more than this many bytes of representations (default 4 GiB).
        device: where the model runs (default: where its parameters are).

    Returns:
        One :class:`Stage` per run of consecutive blocks of one width, in order; each holds the tracks
        ``(m, n + 1, d)`` (``float32``, on the CPU) of the ``m`` kept points.

    Raises:
        ValueError: if a named block is missing or changes the width, no block keeps its width, a block does
            not run exactly once per forward pass, ``max_points < 1``, ``subsample_seed`` is given with a
            loader, or the data is empty.
        TypeError: if a chosen block does not take and return tensors.
        MemoryError: if the representations would exceed ``max_bytes``.

    Warns:
        UserWarning: when blocks chosen by type or predicate change the width (they start no track).

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> stages = record_tracks(net, torch.randn(10, 4), blocks=["2", "3"], max_points=6)
        >>> len(stages), stages[0].blocks, tuple(stages[0].tracks.shape)
        (1, ['2', '3'], (6, 3, 8))
    """
    chosen = select_blocks(model, blocks)
    if max_points is not None and max_points < 1:
        raise ValueError(f"max_points must be >= 1, got {max_points}")
    if subsample_seed is not None:
        if not isinstance(data, torch.Tensor):
            raise ValueError(
                "subsample_seed needs the data as one tensor; pass max_points alone for a loader"
            )
        count = data.shape[0] if max_points is None else min(max_points, data.shape[0])
        order = torch.randperm(data.shape[0], generator=torch.Generator().manual_seed(subsample_seed))[:count]
        data = data[order.sort().values]
    if device is None:
        parameter = next(model.parameters(), None)
        device = parameter.device if parameter is not None else torch.device("cpu")
    inputs: List[List[torch.Tensor]] = [[] for _ in chosen]
    outputs: List[List[torch.Tensor]] = [[] for _ in chosen]
    kept = {"points": 0, "bytes": 0}

    def hook(index: int) -> Callable[[nn.Module, Tuple[Any, ...], Any], None]:
        def capture(module: nn.Module, args: Tuple[Any, ...], output: Any) -> None:
            if not isinstance(output, torch.Tensor) or not args or not isinstance(args[0], torch.Tensor):
                raise TypeError(f"block {chosen[index][0]!r} must take and return tensors to be tracked")
            inputs[index].append(args[0].detach().flatten(1).to("cpu", torch.float32))
            outputs[index].append(output.detach().flatten(1).to("cpu", torch.float32))

        return capture

    handles = [module.register_forward_hook(hook(index)) for index, (_, module) in enumerate(chosen)]
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for batch in _batches(data, batch_size):
                if max_points is not None and kept["points"] >= max_points:
                    break
                if max_points is not None:
                    batch = batch[: max_points - kept["points"]]
                before = [len(o) for o in outputs]
                model(batch.to(device))
                if any(len(o) != b + 1 for o, b in zip(outputs, before)):
                    raise ValueError("every chosen block must run exactly once per forward pass")
                kept["points"] += batch.shape[0]
                kept["bytes"] += sum(o[-1].numel() * 4 for o in outputs) + inputs[0][-1].numel() * 4
                if kept["bytes"] > max_bytes:
                    raise MemoryError(
                        f"the tracks of {kept['points']} points already take {kept['bytes'] / 2**30:.2f} "
                        f"GiB (max_bytes={max_bytes / 2**30:.2f} GiB): pass max_points or record fewer "
                        "blocks"
                    )
    finally:
        for handle in handles:
            handle.remove()
        model.train(training)
    if kept["points"] == 0:
        raise ValueError("no data: the loader or tensor gave no points")
    stages: List[Stage] = []
    skipped = []
    for index, (name, _) in enumerate(chosen):
        block_in, block_out = torch.cat(inputs[index]), torch.cat(outputs[index])
        same_width = (
            stages and stages[-1].width == block_out.shape[1] and block_in.shape[1] == block_out.shape[1]
        )
        if same_width:
            stages[-1] = Stage(
                stages[-1].blocks + [name], torch.cat([stages[-1].tracks, block_out[:, None]], 1)
            )
        elif block_in.shape[1] == block_out.shape[1]:
            stages.append(Stage([name], torch.stack([block_in, block_out], 1)))
        else:  # a projection between stages: it starts no track of its own
            skipped.append(f"{name} ({block_in.shape[1]} -> {block_out.shape[1]} features)")
    named = isinstance(blocks, str) or (
        isinstance(blocks, (list, tuple)) and all(isinstance(b, str) for b in blocks)
    )
    if skipped and named and stages:
        raise ValueError(
            f"block(s) {', '.join(skipped)} change the width: a track needs blocks whose input and "
            "output widths agree; leave them out of blocks="
        )
    if skipped and stages:
        warnings.warn(
            f"record_tracks: {len(skipped)} chosen block(s) change the width and start no track: "
            f"{', '.join(skipped)}",
            stacklevel=2,
        )
    if not stages:
        raise ValueError(
            "no chosen block keeps its width; tracks need blocks whose input and output widths agree"
        )
    return stages


def project_tracks(tracks: torch.Tensor, dim: int = 2, *, seed: int = 0) -> torch.Tensor:
    """Tracks ``(m, n + 1, d)`` seen through a random Gaussian matrix ``G (dim, d)``: ``(m, n + 1, dim)``
    (Fig. 3).

    ``y_i^{(l)} = G x_i^{(l)}`` for every point ``i`` and track point ``l``, with ``G`` of i.i.d. standard
    normal entries drawn from ``seed``, so two networks' tracks projected with the same seed are seen in the
    same plane (the track pictures, Fig. 3, of "A Mathematical Principle of Deep Learning: Learn the Geodesic
    Curve in the Wasserstein Space").

    Args:
        tracks: ``(m, n + 1, d)`` tracks, e.g. :attr:`Stage.tracks`.
        dim: output dimension of the projection (default: ``2``).
        seed: seed of the Gaussian matrix ``G`` (default: ``0``).

    Returns:
        ``(m, n + 1, dim)`` ``float64`` tensor of projected tracks.

    Raises:
        ValueError: if ``tracks`` is not a 3-D tensor or ``dim`` is not a positive integer.

    Examples:
        >>> import torch
        >>> projected = project_tracks(torch.randn(5, 3, 8), dim=2)
        >>> projected.shape, projected.dtype
        (torch.Size([5, 3, 2]), torch.float64)
    """
    if not isinstance(tracks, torch.Tensor) or tracks.dim() != 3:
        raise ValueError(
            f"tracks must be a tensor (m, n + 1, d), got {getattr(tracks, 'shape', type(tracks))}"
        )
    if not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    # drawn on the CPU from the seed (the same plane on every device), moved to the tracks
    matrix = torch.randn(
        dim, tracks.shape[-1], generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    ).to(tracks.device)
    return tracks.to(torch.float64) @ matrix.T
