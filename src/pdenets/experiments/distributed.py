"""Training across processes with PyTorch DistributedDataParallel, when launched by ``torchrun``.

``torchrun --nproc_per_node=2 --standalone my_training.py`` starts two processes (see
``tests/helpers/ddp_train.py``); :func:`distributed_context` reads the launcher's environment (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), joins the process group (``gloo`` on the
CPU, ``nccl`` on CUDA) and returns the pieces :func:`~pdenets.models.training.train_epoch`
needs: every process draws the same global batch, keeps its slice (:meth:`DistributedContext.shard`),
and DDP averages the gradients, so the model follows the single-process trajectory for the same
global batch and seed. Launched without ``torchrun``, the context is the identity.

Examples:
    >>> context = distributed_context()
    >>> (context.rank, context.world_size, context.is_main)
    (0, 1, True)
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .._checks import environment_number

__all__ = ["DistributedContext", "distributed_context", "process_device", "RendezvousError"]


@dataclass
class DistributedContext:
    """This process's place among the processes ``torchrun`` started, and its device.

    Args:
        rank: this process's rank.
        world_size: the number of processes.
        device: the device this process trains on (on CUDA, each process its own GPU: ``cuda:<LOCAL_RANK>``
            unless the configuration named an index).
    """

    rank: int = 0
    world_size: int = 1
    device: str = "cpu"

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
            raise ValueError(
                f"a global batch of {batch.shape[0]} does not split over {self.world_size} processes; "
                "choose a batch size (and data size) divisible by the number of processes"
            )
        size = batch.shape[0] // self.world_size
        return batch[self.rank * size : (self.rank + 1) * size]

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

        if torch.device(self.device).type == "cuda":  # one GPU per process: DDP's buckets live on it
            return DistributedDataParallel(model, device_ids=[torch.device(self.device).index])
        return DistributedDataParallel(model)

    def close(self) -> None:
        if self.active and dist.is_initialized():
            dist.barrier()  # no process tears its gloo connections down while a peer still uses them
            dist.destroy_process_group()


#: seconds a process waits for the other ranks (``$PDENETS_RENDEZVOUS_TIMEOUT`` overrides)
RENDEZVOUS_TIMEOUT_S = 120.0
#: the longest ``$PDENETS_RENDEZVOUS_TIMEOUT`` or ``$PDENETS_COLLECTIVE_TIMEOUT`` accepted (seconds)
_LONGEST_TIMEOUT_S = 1e7
#: seconds a collective (a halo exchange, a gradient all-reduce, the list of pending jobs) may wait for the
#: other processes before it fails (``$PDENETS_COLLECTIVE_TIMEOUT`` overrides)
COLLECTIVE_TIMEOUT_S = 1800.0
#: seconds between two attempts to reach rank 0's store
_POLL_S = 0.1
#: seconds torch's own timeout error is given to arrive before the deadline is enforced without it
_GRACE_S = 1.5


class RendezvousError(RuntimeError):
    """The launcher's environment names other ranks that never joined (or is incomplete)."""


def _environment_int(name: str, default=None, *, minimum: int = 0, maximum=None) -> int:
    """``$name`` as an integer (:func:`~pdenets._checks.environment_number`); a missing required one is a
    :class:`RendezvousError` saying to start the run with torchrun."""
    value = environment_number(name, None, minimum_exclusive=minimum - 1, integer=True, maximum=maximum)
    if value is None:
        if default is None:
            raise RendezvousError(
                f"WORLD_SIZE is set but ${name} is not: start distributed runs with torchrun (torchrun "
                "--nproc-per-node N ...), which sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT"
            )
        return default
    return value


def _wait_for_rank_zero(host: str, port: int, deadline: float) -> None:
    """Return once ``host:port`` (rank 0's store) accepts a TCP connection; ``TimeoutError`` at ``deadline``.

    torch's store client retries a missing server with growing delays, well past its timeout; polling here
    first keeps the whole rendezvous within the deadline.
    """
    reason = "nothing answered"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"rank 0's store did not answer: {reason}")
        try:
            socket.create_connection((host, port), timeout=min(max(left, 0.01), 1.0)).close()
            return
        except OSError as error:
            reason = error.strerror or type(error).__name__
        time.sleep(min(_POLL_S, max(deadline - time.monotonic(), 0)))


def _end_without_waiting_for(thread: threading.Thread) -> None:
    """At exit, a rendezvous thread still inside torch's store would keep the process alive (its C++
    threads are joined when the interpreter ends): a process that has given up ends at once, with status 1,
    after flushing what it printed."""
    if thread.is_alive():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(1)


def _within(seconds: float, function, *args, **kwargs) -> None:
    """Call ``function`` in a daemon thread; ``TimeoutError`` if it has not returned after ``seconds``.

    torch's store retries an address that takes connections but does not answer, with growing delays and
    without end; the thread is left to torch and the caller gets its answer on time. The process then ends
    at exit without waiting for it (:func:`_end_without_waiting_for`).
    """
    outcome: dict = {}

    def run() -> None:
        try:
            function(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True, name="pdenets-rendezvous")
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        atexit.register(_end_without_waiting_for, thread)
        raise TimeoutError("the other ranks did not answer")
    if "error" in outcome:
        raise outcome["error"]


def process_device(device: str) -> str:
    """The device of this process: ``cuda`` under ``torchrun`` is ``cuda:<LOCAL_RANK>`` (one GPU per process,
    made the current one); an explicit index, or any other device, is kept.

    Examples:
        >>> process_device("cpu")
        'cpu'
    """
    chosen = torch.device(device)
    if chosen.type != "cuda" or chosen.index is not None:
        return str(chosen)
    local = _environment_int("LOCAL_RANK", 0)
    index = local % max(torch.cuda.device_count(), 1)
    torch.cuda.set_device(index)
    return f"cuda:{index}"


def distributed_context(device: str = "cpu") -> DistributedContext:
    """Join the process group ``torchrun`` prepared, or a single-process context.

    On CUDA the processes use ``nccl`` and one GPU each (:func:`process_device`: the context's ``device``); on
    the CPU ``gloo``. The whole rendezvous — reaching rank 0's store, then every rank joining — ends within
    ``$PDENETS_RENDEZVOUS_TIMEOUT`` seconds (default 120); a collective of the joined group then fails after
    ``$PDENETS_COLLECTIVE_TIMEOUT`` seconds without its peers (default 1800).

    Raises:
        RendezvousError: the other ranks did not join within the timeout, or the environment is
            incomplete — one line, never a silent wait.
        ValueError: ``$WORLD_SIZE``, ``$RANK``, ``$MASTER_PORT`` or ``$PDENETS_RENDEZVOUS_TIMEOUT`` is not a
            valid number (the message names the variable).
    """
    world_size = _environment_int("WORLD_SIZE", 1, minimum=1)
    if world_size <= 1:
        return DistributedContext(device=str(torch.device(device)))
    rank = _environment_int("RANK")
    if not 0 <= rank < world_size:
        raise RendezvousError(f"RANK={rank} is outside 0…{world_size - 1} (WORLD_SIZE={world_size})")
    if not dist.is_initialized():
        from datetime import timedelta

        timeout = environment_number(
            "PDENETS_RENDEZVOUS_TIMEOUT", RENDEZVOUS_TIMEOUT_S, maximum=_LONGEST_TIMEOUT_S
        )
        collective = environment_number(
            "PDENETS_COLLECTIVE_TIMEOUT", COLLECTIVE_TIMEOUT_S, maximum=_LONGEST_TIMEOUT_S
        )
        deadline = time.monotonic() + timeout
        host = os.environ.get("MASTER_ADDR")
        port = _environment_int("MASTER_PORT", 0, minimum=1, maximum=65535) or None
        address = f"{host or '?'}:{port or '?'}"

        def failed(reason: str) -> RendezvousError:
            return RendezvousError(
                f"rank {rank} of {world_size} could not join the other ranks at {address} within "
                f"{timeout:g} s ($PDENETS_RENDEZVOUS_TIMEOUT; {reason[:120]}); WORLD_SIZE={world_size} is "
                "set without the other processes? Start them together with torchrun --nproc-per-node N"
            )

        try:
            if rank != 0 and host and port:
                _wait_for_rank_zero(host, port, deadline)
            left = max(deadline - time.monotonic(), 1.0)
            _within(
                left + _GRACE_S,
                dist.init_process_group,
                "nccl" if device.startswith("cuda") else "gloo",
                rank=rank,
                world_size=world_size,
                timeout=timedelta(seconds=left),  # joining is bounded by the rendezvous' deadline alone
            )
        except (RuntimeError, ValueError, TimeoutError) as error:
            raise failed(str(error).splitlines()[0]) from None
        # the joined group's collectives and its store's waits take $PDENETS_COLLECTIVE_TIMEOUT, however short
        dist.distributed_c10d._set_pg_timeout(timedelta(seconds=collective))
        if dist.is_initialized():
            dist.distributed_c10d._get_default_store().set_timeout(timedelta(seconds=collective))
    return DistributedContext(rank, world_size, process_device(device))
