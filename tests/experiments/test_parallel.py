"""Process hygiene: no orphaned workers after SIGKILL; Ctrl-C / SIGTERM store what finished and say so."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from toytask import stored_count

from ..conftest import HELPERS


def _command(out, *options):
    # As from a terminal: SIGINT raises KeyboardInterrupt. (A test run started in the background by a
    # non-interactive shell inherits SIGINT ignored, and Python keeps it ignored in the child.)
    script = (
        f"import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        f"sys.path.insert(0, {HELPERS!r}); import toytask; from pdenets.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    return [sys.executable, "-c", script, "run", "toy", "--out", str(out), "--no-progress", *options]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in state  # a zombie has stopped computing


def _worker_pids(markers: Path, at_least: int, timeout: float = 60) -> set:
    deadline = time.time() + timeout
    while time.time() < deadline:
        pids = {int(p.read_text()) for p in markers.iterdir() if p.read_text()}
        if len(pids) >= at_least:
            return pids
        time.sleep(0.05)
    raise AssertionError(f"fewer than {at_least} workers started")


pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")


def test_sigkill_of_the_main_process_leaves_no_worker_computing(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    process = subprocess.Popen(
        _command(
            tmp_path / "run", "--count", "4", "--sleep", "60", "--workers", "2", "--marker-dir", str(markers)
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers = _worker_pids(markers, 2)
    assert os.getpid() not in workers and process.pid not in workers
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.05)
    survivors = [pid for pid in workers if _alive(pid)]
    assert survivors == [], f"orphaned workers still running: {survivors}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_stores_finished_runs_stops_workers_and_says_so(tmp_path, signum):
    out, markers = tmp_path / "run", tmp_path / "markers"
    markers.mkdir()
    options = ["--count", "6", "--sleep", "1.5", "--workers", "2", "--marker-dir", str(markers)]
    # a new session, as a terminal gives: Ctrl-C reaches the whole process group
    process = subprocess.Popen(
        _command(out, *options),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and stored_count(out / "results.sqlite") < 2:
        time.sleep(0.05)
    workers = {int(p.read_text()) for p in markers.iterdir()}
    os.killpg(process.pid, signum)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    stored = stored_count(out / "results.sqlite")
    assert 2 <= stored < 6
    message = re.search(
        r"pdenets: interrupted: (\d+) of 6 runs are stored in (\S+); rerun the same command to "
        r"resume",
        stderr,
    )
    assert message is not None, stderr
    assert int(message.group(1)) == stored and Path(message.group(2)) == out
    assert "Traceback" not in stderr
    time.sleep(0.5)
    assert not any(_alive(pid) for pid in workers)
    rerun = subprocess.run(_command(out, *options[:-2]), capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert stored_count(out / "results.sqlite") == 6
    assert f"{6 - stored} new run(s), 6 of 6 stored" in rerun.stdout


def test_interrupt_before_any_run_finished_says_nothing_is_stored(tmp_path):
    out = tmp_path / "run"
    process = subprocess.Popen(
        _command(out, "--count", "2", "--sleep", "30", "--workers", "1"),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not (out / "config.yaml").exists():
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert f"interrupted before any run finished; nothing is stored yet in {out}" in stderr
