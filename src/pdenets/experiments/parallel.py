"""Run independent jobs in parallel; hand each result back the moment it finishes.

Three executors, same results (every job carries its own seeds):

* inline (``workers=1``): in this process, for debugging and tests;
* a local process pool (default, one worker per CPU core, ``threads`` torch threads each
  so that workers do not oversubscribe the cores);
* a Ray cluster (``ray_address="auto"`` or ``"ray://host:10001"``; ``pip install
  'pdenets[distributed]'``).

Process hygiene of the local pool:

* workers ignore SIGINT: Ctrl-C reaches the scheduling process only, which stops the pool
  (pending jobs cancelled, running workers terminated) and re-raises ``KeyboardInterrupt``
  after every finished result has been handed back;
* every worker watches its parent: when the scheduling process dies, even by SIGKILL, the
  workers exit within a fraction of a second instead of computing on as orphans.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any, Callable, Generator, Iterator, Optional, Sequence, Tuple

import torch

from .._checks import check_positive, environment_number

__all__ = [
    "execute",
    "JobError",
    "default_workers",
    "resolve_parallelism",
    "check_ray_address",
    "PARENT_POLL_SECONDS",
    "RAY_CONNECT_TIMEOUT_S",
]

#: How often a pool worker checks that its parent process is still alive.
PARENT_POLL_SECONDS = 0.2


class JobError(RuntimeError):
    """A job raised; ``identifier`` names it and ``__cause__`` is the original exception."""

    def __init__(self, identifier: Any, error: BaseException):
        super().__init__(f"{type(error).__name__}: {error}")
        self.identifier = identifier


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Parallelism:
    workers: int
    threads: int


def resolve_parallelism(workers: int, threads: int, pending: int) -> Parallelism:
    """``workers = 0``: one per core (at most one per pending job); ``threads = 0``: cores / workers."""
    workers = workers or min(default_workers(), max(1, pending))
    threads = threads or max(1, (os.cpu_count() or 1) // workers)
    return Parallelism(workers, threads)


def _watch_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(1)  # the scheduler is gone: nobody will read this worker's results
        time.sleep(PARENT_POLL_SECONDS)


def _initialize_worker(threads: int, parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="pdenets-parent-watch").start()
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")


Item = Tuple[Any, Any]  # (identifier, argument)


def execute(
    items: Sequence[Item],
    function: Callable[[Any], Any],
    *,
    workers: int = 0,
    threads: int = 0,
    ray_address: Optional[str] = None,
) -> Generator[Tuple[Any, Any], None, None]:
    """Yield ``(identifier, function(argument))`` for every item, in completion order.

    ``function`` must be importable by name (a module-level function or a static method):
    it is pickled to the workers. An exception in a job is raised as :class:`JobError`
    naming the item (the pool is stopped first); ``KeyboardInterrupt`` propagates.
    """
    if not items:
        return
    plan = resolve_parallelism(workers, threads, len(items))
    if ray_address:
        yield from _run_ray(items, function, ray_address, plan.threads)
    elif plan.workers == 1 or len(items) == 1:
        previous = torch.get_num_threads()
        torch.set_num_threads(threads or previous)
        try:
            for identifier, argument in items:
                try:
                    result = function(argument)
                except Exception as error:
                    raise JobError(identifier, error) from error
                yield identifier, result
        finally:
            torch.set_num_threads(previous)
    else:
        yield from _run_pool(items, function, plan)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and terminate the workers now (no waiting for running jobs)."""
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)


def _run_pool(items: Sequence[Item], function, plan: Parallelism) -> Iterator[Tuple[Any, Any]]:
    context = get_context("spawn")  # safe with torch's thread pools (fork after OpenMP can hang)
    pool = ProcessPoolExecutor(
        max_workers=plan.workers,
        mp_context=context,
        initializer=_initialize_worker,
        initargs=(plan.threads, os.getpid()),
    )
    finished_cleanly = False
    try:
        queue = iter(items)
        running = {}
        for identifier, argument in queue:  # keep a bounded number of jobs queued
            running[pool.submit(function, argument)] = identifier
            if len(running) >= 2 * plan.workers:
                break
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                identifier = running.pop(future)
                try:
                    result = future.result()
                except Exception as error:
                    raise JobError(identifier, error) from error
                following = next(queue, None)
                if following is not None:
                    running[pool.submit(function, following[1])] = following[0]
                yield identifier, result
        finished_cleanly = True
    finally:
        if finished_cleanly:
            pool.shutdown(wait=True)
        else:
            _stop(pool)


#: seconds to wait for a Ray cluster's address to answer (``$PDENETS_RAY_CONNECT_TIMEOUT``)
RAY_CONNECT_TIMEOUT_S = 10.0
#: the longest ``$PDENETS_RAY_CONNECT_TIMEOUT`` accepted (seconds)
_LONGEST_CONNECT_TIMEOUT_S = 1e7
#: what a gRPC client sends first: the HTTP/2 connection preface, then an empty SETTINGS frame
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_HTTP2_SETTINGS = 4


def _grpc_handshake(host: str, port: int, timeout: float) -> Optional[str]:
    """Open ``host:port`` and speak the first words of gRPC (HTTP/2) within ``timeout`` seconds in all.

    Ray's cluster addresses (the GCS at ``HOST:PORT``, the Ray Client server at ``ray://HOST:PORT``) are gRPC
    servers: given the HTTP/2 connection preface, they answer at once with a SETTINGS frame on stream 0.

    Returns:
        ``None`` after such an answer, else why not, in a few words.
    """
    deadline = time.monotonic() + timeout
    try:
        connection = socket.create_connection((host, port), timeout=timeout)
    except OSError as error:
        return f"{error.strerror or type(error).__name__} within {timeout:g} s"
    answer = b""
    with connection:
        try:
            connection.settimeout(max(deadline - time.monotonic(), 0.001))
            connection.sendall(_HTTP2_PREFACE)
            while len(answer) < 9:
                connection.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = connection.recv(9 - len(answer))
                if not chunk:
                    return "it closed the connection without a gRPC answer"
                answer += chunk
        except socket.timeout:
            return f"it accepted a connection but gave no gRPC answer within {timeout:g} s"
        except OSError as error:
            return f"{error.strerror or type(error).__name__} during the gRPC handshake"
    frame_type, flags, stream = answer[3], answer[4], int.from_bytes(answer[5:9], "big") & 0x7FFFFFFF
    if frame_type != _HTTP2_SETTINGS or flags & 1 or stream != 0:
        return f"it answered {answer!r}, not gRPC"
    return None


def check_ray_address(address: str, timeout: Optional[float] = None) -> None:
    """Refuse, in one line, a Ray address that is malformed or where no Ray cluster answers.

    ``"auto"`` (a cluster started on this machine with ``ray start --head``) and ``"local"`` (a
    cluster started for this run) are left to Ray. At ``HOST:PORT`` and ``ray://HOST:PORT`` a gRPC server
    (what Ray's GCS and Ray Client server are) must complete the HTTP/2 handshake within ``timeout`` seconds
    (default ``$PDENETS_RAY_CONNECT_TIMEOUT`` or 10): without this check ``ray.init`` retries an unreachable
    address for minutes, and waits forever on a server that takes the connection but is not Ray, silently.

    Raises:
        ValueError: the address is none of the forms above, or ``$PDENETS_RAY_CONNECT_TIMEOUT`` is not a
            number of seconds.
        ConnectionError: no Ray cluster answers at the address.
    """
    if address in ("auto", "local"):
        return
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"ray_address {address!r} is not 'auto', 'local', 'HOST:PORT' or 'ray://HOST:PORT'")
    if timeout is None:
        timeout = environment_number(
            "PDENETS_RAY_CONNECT_TIMEOUT", RAY_CONNECT_TIMEOUT_S, maximum=_LONGEST_CONNECT_TIMEOUT_S
        )
    else:
        timeout = check_positive(timeout, "timeout")
    problem = _grpc_handshake(host.strip("[]"), int(port), timeout)
    if problem is not None:
        raise ConnectionError(
            f"no Ray cluster answers at {address} ({problem}); start one with `ray start --head` "
            "and pass its address (or --ray-address auto on its head node)"
        )


def _run_ray(items: Sequence[Item], function, address: str, threads: int) -> Iterator[Tuple[Any, Any]]:
    try:
        import ray
    except ImportError as error:
        raise ImportError("ray_address needs Ray: pip install 'pdenets[distributed]'") from error
    check_ray_address(address)
    try:
        if address == "local":  # a cluster of this run only
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False)
        else:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    except ConnectionError as error:
        raise ConnectionError(f"ray_address {address!r}: {str(error).splitlines()[0]}") from None
    remote = ray.remote(num_cpus=threads)(_ray_entry)
    references = {remote.remote(function, argument, threads): identifier for identifier, argument in items}
    try:
        while references:
            ready, _ = ray.wait(list(references), num_returns=1)
            identifier = references.pop(ready[0])
            try:
                result = ray.get(ready[0])
            except Exception as error:
                raise JobError(identifier, error) from error
            yield identifier, result
    finally:
        if references and address == "local":
            # the cluster is this run's own: shutting it down stops its tasks. Force-cancelling them one by
            # one raced with a task completing at that moment and aborted Ray's core worker ("Check failed:
            # it != submissible_tasks_.end()", Ray 2.60, after Ctrl-C)
            ray.shutdown()
        else:
            for reference in references:
                ray.cancel(reference, force=True)


def _ray_entry(function: Callable[[Any], Any], argument: Any, threads: int) -> Any:
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
    return function(argument)
