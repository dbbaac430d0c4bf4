"""How a run runs, resolved once: the device, the data folder, the seed, the thread budget and this process's
place under ``torchrun``.

A job spec says *what* a run is (its fields are what the store key hashes); a :class:`RunContext` says *how*
it runs here. The runner resolves the context once from the configuration (:func:`run_context`: the device
string parsed once, the distributed set-up joined once) and hands it to every job,
``Task.run_job(spec, context)``. Two machines, two devices or two data folders run the same spec under the
same key; a job never parses a device string or joins the process group itself.

Examples:
    >>> from pdenets.experiments.config import TaskConfig
    >>> context = run_context(TaskConfig(device="cpu", seed=3))
    >>> context.device, context.seed, context.distributed.world_size
    (device(type='cpu'), 3, 1)
    >>> context.to(torch.zeros(2)).device
    device(type='cpu')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch

from .config import TaskConfig
from .distributed import DistributedContext

__all__ = ["RunContext", "run_context", "CPU"]

#: the CPU, the default device of a function that computes where its caller says
CPU = torch.device("cpu")


@dataclass(frozen=True)
class RunContext:
    """Where and how the jobs of one run compute (never part of a store key).

    Args:
        device: the ``torch.device`` every job computes on (under ``torchrun`` on CUDA, this process's own
            GPU, ``cuda:<LOCAL_RANK>``).
        data_dir: the data folder (``None``: ``$PDENETS_DATA``, else the default).
        seed: the configuration's base seed (a job's own seeds are fields of its spec).
        threads: torch threads per worker process (``0``: torch's default).
        distributed: this process's rank among the processes ``torchrun`` started (the identity context
            outside ``torchrun``).

    Examples:
        >>> RunContext().device
        device(type='cpu')
    """

    device: torch.device = CPU
    data_dir: Optional[str] = None
    seed: int = 0
    threads: int = 0
    distributed: DistributedContext = field(default_factory=DistributedContext)

    def __post_init__(self) -> None:
        if not isinstance(self.device, torch.device):
            raise TypeError(
                f"RunContext.device must be a torch.device (parsed once, by run_context), got "
                f"{type(self.device).__name__} {self.device!r}"
            )

    def to(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` on the context's device."""
        return tensor.to(self.device)


def run_context(config: TaskConfig, distributed: Optional[DistributedContext] = None) -> RunContext:
    """The context of a run of ``config``: its device string parsed once, with this process's place.

    Args:
        config: the task's configuration (``device``, ``data_dir``, ``seed``, ``threads``).
        distributed: the process group the runner joined under ``torchrun`` (default: ``None``: a single
            process, on ``config.device``).

    Returns:
        The :class:`RunContext`; under ``torchrun`` its ``device`` is the process's own
        (:func:`~pdenets.experiments.distributed.process_device`).
    """
    if distributed is None:
        device = torch.device(config.device)
        distributed = DistributedContext(device=str(device))
    else:
        device = torch.device(distributed.device)
    return RunContext(
        device=device,
        data_dir=config.data_dir,
        seed=config.seed,
        threads=config.threads,
        distributed=distributed,
    )
