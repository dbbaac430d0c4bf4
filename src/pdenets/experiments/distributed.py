"""Training across processes with PyTorch DistributedDataParallel, when launched by ``torchrun``.

``torchrun --nproc_per_node=2 --standalone my_training.py`` starts two processes (see
``tests/helpers/ddp_train.py``); :func:`distributed_context` reads the launcher's environment (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), joins the process group (``gloo`` on the
CPU, ``nccl`` on CUDA) and returns the pieces :func:`~pdenets.experiments.training.train_epoch`
needs: every process draws the same global batch, keeps its slice (:meth:`DistributedContext.shard`),
and DDP averages the gradients, so the model follows the single-process trajectory for the same
global batch and seed. Launched without ``torchrun``, the context is the identity.

Example:
    >>> context = distributed_context()
    >>> (context.rank, context.world_size, context.is_main)
    (0, 1, True)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

__all__ = ["DistributedContext", "distributed_context", "RendezvousError"]


@dataclass
class DistributedContext:
    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def shard(self, batch: torch.Tensor) -> torch.Tensor:
        """This process's rows of a global batch (contiguous, equal sizes: the batch must divide evenly)."""
        if not self.active:
            return batch
        if batch.shape[0] % self.world_size:
            raise ValueError(f"a global batch of {batch.shape[0]} does not split over {self.world_size} processes; "
                             "choose a batch size (and data size) divisible by the number of processes")
        size = batch.shape[0] // self.world_size
        return batch[self.rank * size:(self.rank + 1) * size]

    def reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum over processes."""
        if self.active:
            tensor = tensor.clone()
            dist.all_reduce(tensor)
        return tensor

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """DistributedDataParallel around ``model`` when running in several processes."""
        if not self.active:
            return model
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model)

    def close(self) -> None:
        if self.active and dist.is_initialized():
            dist.barrier()  # no process tears its gloo connections down while a peer still uses them
            dist.destroy_process_group()


#: seconds a process waits for the other ranks (``$PDENETS_RENDEZVOUS_TIMEOUT`` overrides)
RENDEZVOUS_TIMEOUT_S = 120.0


class RendezvousError(RuntimeError):
    """The launcher's environment names other ranks that never joined (or is incomplete)."""


def _environment_int(name: str, default=None) -> int:
    text = os.environ.get(name)
    if text is None:
        if default is None:
            raise RendezvousError(f"WORLD_SIZE is set but ${name} is not: start distributed runs with torchrun "
                                  "(torchrun --nproc-per-node N ...), which sets RANK, WORLD_SIZE, MASTER_ADDR and "
                                  "MASTER_PORT")
        return default
    try:
        return int(text)
    except ValueError:
        raise RendezvousError(f"${name}={text!r} is not an integer") from None


def distributed_context(device: str = "cpu") -> DistributedContext:
    """Join the process group ``torchrun`` prepared, or a single-process context.

    Raises:
        RendezvousError: the other ranks did not join within ``$PDENETS_RENDEZVOUS_TIMEOUT`` seconds
            (default 120), or the environment is incomplete — one line, never a silent wait.
    """
    world_size = _environment_int("WORLD_SIZE", 1)
    if world_size <= 1:
        return DistributedContext()
    rank = _environment_int("RANK")
    if not 0 <= rank < world_size:
        raise RendezvousError(f"RANK={rank} is outside 0…{world_size - 1} (WORLD_SIZE={world_size})")
    if not dist.is_initialized():
        from datetime import timedelta

        timeout = float(os.environ.get("PDENETS_RENDEZVOUS_TIMEOUT", RENDEZVOUS_TIMEOUT_S))
        address = f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
        try:
            dist.init_process_group("nccl" if device.startswith("cuda") else "gloo", rank=rank,
                                    world_size=world_size, timeout=timedelta(seconds=timeout))
        except (RuntimeError, ValueError) as error:
            raise RendezvousError(
                f"rank {rank} of {world_size} could not join the other ranks at {address} within {timeout:g} s "
                f"({str(error).splitlines()[0][:120]}); WORLD_SIZE={world_size} is set without the other "
                "processes? Start them together with torchrun --nproc-per-node N") from None
    return DistributedContext(rank, world_size)
