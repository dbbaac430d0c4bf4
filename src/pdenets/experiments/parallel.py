"""Run independent jobs in parallel and store each result the moment it finishes.

Three executors, same results (every job carries its own seeds):

* inline (``workers=1``): in this process, for debugging and tests;
* a local process pool (default, one worker per CPU core, ``threads_per_worker`` torch
  threads each so that workers do not oversubscribe the cores);
* a Ray cluster (``ray_address="auto"`` or ``"ray://host:10001"``; ``pip install
  'pdenets[distributed]'``).

Only the scheduling process writes to the :class:`~pdenets.experiments.store.ResultsStore`;
jobs whose key is already stored are skipped, so an interrupted command resumes when run
again.
"""

from __future__ import annotations

import os
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
from tqdm.auto import tqdm

from .store import ResultsStore

__all__ = ["Job", "run_jobs", "default_workers"]


@dataclass(frozen=True)
class Job:
    """One independent run: a unique ``key`` and the ``payload`` handed to the worker."""

    key: str
    payload: Dict[str, Any]


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def _initialize_worker(threads: int) -> None:
    torch.set_num_threads(threads)
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")


def _finish(store: ResultsStore, job: Job, record: Dict[str, Any]) -> None:
    record = dict(record)
    record["key"] = job.key
    store.add(record)


def run_jobs(jobs: Sequence[Job], worker: Callable[[Dict[str, Any]], Dict[str, Any]], *, store: ResultsStore,
             workers: Optional[int] = None, threads_per_worker: Optional[int] = None,
             ray_address: Optional[str] = None, progress: bool = True, description: str = "runs") -> int:
    """Run the jobs not yet in ``store``; returns how many ran now.

    ``worker`` must be a module-level function (it is pickled to the workers); it returns a
    dict of results that is stored with the job's key.
    """
    done = store.keys()
    pending: List[Job] = [job for job in jobs if job.key not in done]
    if not pending:
        return 0
    workers = default_workers() if not workers else workers
    threads = threads_per_worker or max(1, (os.cpu_count() or 1) // max(1, workers))
    bar = tqdm(total=len(jobs), initial=len(jobs) - len(pending), desc=description, disable=not progress,
               smoothing=0.05)
    try:
        if ray_address:
            _run_ray(pending, worker, store, ray_address, threads, bar)
        elif workers == 1 or len(pending) == 1:
            previous = torch.get_num_threads()
            torch.set_num_threads(threads_per_worker or previous)
            try:
                for job in pending:
                    _finish(store, job, worker(job.payload))
                    bar.update(1)
            finally:
                torch.set_num_threads(previous)
        else:
            _run_pool(pending, worker, store, workers, threads, bar)
    finally:
        bar.close()
    return len(pending)


def _run_pool(pending, worker, store, workers, threads, bar) -> None:
    context = get_context("spawn")  # safe with torch's thread pools (fork after OpenMP can hang)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_initialize_worker,
                             initargs=(threads,)) as pool:
        queue = iter(pending)
        running = {}
        for job in queue:  # keep a bounded number of jobs queued
            running[pool.submit(worker, job.payload)] = job
            if len(running) >= 2 * workers:
                break
        try:
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    job = running.pop(future)
                    _finish(store, job, future.result())
                    bar.update(1)
                    following = next(queue, None)
                    if following is not None:
                        running[pool.submit(worker, following.payload)] = following
        except BaseException:
            for future in running:
                future.cancel()
            raise


def _run_ray(pending, worker, store, address, threads, bar) -> None:
    try:
        import ray
    except ImportError as error:
        raise ImportError("--ray-address needs Ray: pip install 'pdenets[distributed]'") from error
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    remote = ray.remote(num_cpus=threads)(_ray_entry)
    references = {remote.remote(worker, job.payload, threads): job for job in pending}
    while references:
        ready, _ = ray.wait(list(references), num_returns=1)
        job = references.pop(ready[0])
        _finish(store, job, ray.get(ready[0]))
        bar.update(1)


def _ray_entry(worker, payload, threads):
    _initialize_worker(threads)
    return worker(payload)
