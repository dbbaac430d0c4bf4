"""Shared helpers of the benchmark scripts: median timings and memory-capped trials."""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time


def median_time(function, repeats: int) -> float:
    """Median wall time of ``function()`` over ``repeats`` calls after one warm-up call."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_memory_gib() -> float:
    """This process's peak resident memory, GiB: ``VmHWM`` of ``/proc/self/status`` on Linux, else
    ``ru_maxrss``. (``ru_maxrss`` of a process started by fork and exec also counts the parent's resident
    memory at the fork: a worker started by a benchmark that holds a graph reports that graph too.)"""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_trial(script: str, arguments, cap_gib: float, timeout: float):
    """Run ``script --trial *arguments`` in a child limited to ``cap_gib`` of address space.

    The child prints a JSON line last. Returns ``(result dict, None)`` or ``(None, reason)``.
    """

    def limit():
        cap = int(cap_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, script, "--trial", *map(str, arguments)],
            preexec_fn=limit,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None, f"over {timeout:g} s"
    if done.returncode != 0:
        text = (done.stderr + done.stdout).lower()
        if "memory" in text or done.returncode < 0:
            return None, "out of memory"
        return None, (done.stderr.strip().splitlines() or ["failed"])[-1]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["seconds"] = time.perf_counter() - start
    return result, None


def largest_size(script: str, kind: str, start: int, cap_gib: float, timeout: float, max_size: int):
    """Double N from ``start`` until the trial fails; returns ``(largest N, its result, failure reason)``."""
    size, best, reason = start, None, "limit of the search"
    while size <= max_size:
        result, failure = run_trial(script, [kind, size], cap_gib, timeout)
        if failure:
            reason = failure
            break
        best = (size, result)
        size *= 2
    return best, reason
