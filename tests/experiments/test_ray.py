"""The Ray executor on a real local Ray instance (2 CPUs, this machine only).

Same store keys and numbers as the process pool, for the engine's toy task and for a real task; a Ray
run interrupted by Ctrl-C resumes to exactly the uninterrupted results; an address where no cluster
answers fails in one line before anything is written.
"""

import os
import signal
import subprocess
import time

import pytest
from toytask import HELPERS, ToyConfig, ToyTask, stored_count, toy_command

from pdenets.cli import main
from pdenets.experiments import job_key, run_task
from pdenets.experiments.store import ResultsStore

ray = pytest.importorskip("ray")


def _with_helpers(environment):
    """Ray workers import the toy task from tests/helpers: put it on their path."""
    paths = [HELPERS] + [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**environment, "PYTHONPATH": os.pathsep.join(paths)}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": _with_helpers(os.environ)["PYTHONPATH"]}},
    )
    yield "auto"
    ray.shutdown()


def _records(out, task):
    with ResultsStore(out / "results.sqlite", task=task) as store:
        return {
            run.key: {k: v for k, v in run.record.items() if k not in ("seconds", "pid")}
            for run in store.rows()
        }


def test_toy_task_on_ray_equals_the_process_pool(local_ray, tmp_path):
    on_ray = run_task(
        ToyTask(ToyConfig(count=6, scale=0.5, ray_address=local_ray, threads=1)),
        out=tmp_path / "ray",
        progress=False,
    )
    pooled = run_task(
        ToyTask(ToyConfig(count=6, scale=0.5, workers=2)), out=tmp_path / "pool", progress=False
    )
    assert on_ray.new == pooled.new == 6 and on_ray.results["total"] == pooled.results["total"] == 7.5
    assert _records(tmp_path / "ray", "toy") == _records(tmp_path / "pool", "toy")


def test_a_real_task_on_ray_gives_the_same_numbers(local_ray, tmp_path):
    from pdenets.tasks.coin_claims.task import CoinClaimsConfig, CoinClaimsTask

    settings = dict(
        checks=["smoothing", "dropout"], samples=300, sigmas=[0.5, 1.0], drop_rates=[0.25], threads=1
    )
    run_task(
        CoinClaimsTask(CoinClaimsConfig(ray_address=local_ray, **settings)),
        out=tmp_path / "ray",
        progress=False,
    )
    run_task(CoinClaimsTask(CoinClaimsConfig(workers=2, **settings)), out=tmp_path / "pool", progress=False)
    on_ray, pooled = _records(tmp_path / "ray", "coin-claims"), _records(tmp_path / "pool", "coin-claims")
    assert len(on_ray) == 2 and on_ray == pooled


def _interrupt_after_two(out, options, environment):
    """Start the toy run, send SIGINT once two runs are stored; ``(exit code, stderr, runs stored)``."""
    # As from a terminal: a suite started in the background by a non-interactive shell inherits SIGINT
    # ignored, and Python would keep it ignored in the child
    process = subprocess.Popen(
        toy_command(out, *options),
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 120
    while time.time() < deadline and stored_count(out / "results.sqlite") < 2:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=120)
    return process.returncode, errors, stored_count(out / "results.sqlite")


def test_a_ray_run_interrupted_by_ctrl_c_resumes_to_the_uninterrupted_results(tmp_path):
    """Its own local cluster (``--ray-address local``), as a user's command line would start it.

    Ray's own core worker sometimes aborts on a SIGINT that lands inside one of its callbacks (a C++ stack on
    stderr, exit 1, or the interrupt lost): up to three attempts, each in a fresh folder, and at least one
    must end as ours do — exit 130, saying how many runs are stored — before the resumed run is checked.
    """
    count = 16  # enough that a slow poll of the store (a busy machine) still sees the run before it ends
    options = ["--count", str(count), "--sleep", "1.0", "--ray-address", "local", "--threads", "1"]
    environment = _with_helpers(os.environ)
    attempts = []
    for attempt in range(3):
        out = tmp_path / f"run{attempt}"
        code, errors, interrupted_at = _interrupt_after_two(out, options, environment)
        attempts.append(f"exit {code}, {interrupted_at} stored: {errors[-600:]}")
        if code == 130:
            break
    assert code == 130, "\n".join(attempts)
    assert (
        2 <= interrupted_at < count and f"interrupted: {interrupted_at} of {count} runs are stored" in errors
    )
    subprocess.run(
        toy_command(out, *options),
        env=environment,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=180,
    )
    resumed = _records(out, "toy")
    jobs = ToyTask(ToyConfig(count=count, sleep=1.0)).jobs()
    planned = {job_key("toy", job): job.index * job.scale for job in jobs}
    assert {key: record["value"] for key, record in resumed.items()} == planned  # each job once, none lost


@pytest.mark.parametrize(
    "address, message",
    [
        ("127.0.0.1:1", "no Ray cluster answers at 127.0.0.1:1"),
        ("ray://127.0.0.1:1", "no Ray cluster answers at ray://127.0.0.1:1"),
        ("cluster-head", "is not 'auto', 'local', 'HOST:PORT' or 'ray://HOST:PORT'"),
    ],
)
def test_an_address_without_a_cluster_fails_in_one_line_before_anything_is_written(
    tmp_path, capsys, address, message
):
    started = time.perf_counter()
    code = main(["run", "toy", "--ray-address", address, "--out", str(tmp_path / "never"), "--no-progress"])
    error = capsys.readouterr().err.strip()
    assert (
        code == 2
        and error.startswith("pdenets: error: ")
        and message in error
        and len(error.splitlines()) == 1
    )
    assert not (tmp_path / "never").exists() and time.perf_counter() - started < 30


def _listener(behaviour):
    """A local TCP server that accepts and then stays silent, or answers as a web server does; its port."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def serve():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            held.append(connection)
            if behaviour == "http":
                connection.recv(1024)
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    return server


@pytest.mark.parametrize(
    "behaviour, problem",
    [
        ("silent", "it accepted a connection but gave no gRPC answer within 2 s"),
        ("http", "it answered b'HTTP/1.1 ', not gRPC"),
    ],
)
def test_an_address_that_takes_connections_but_is_not_ray_fails_fast_and_writes_nothing(
    tmp_path, capsys, monkeypatch, behaviour, problem
):
    """Without the handshake, the check passed, the run folder was written and ray.init waited without end."""
    server = _listener(behaviour)
    address = f"127.0.0.1:{server.getsockname()[1]}"
    monkeypatch.setenv("PDENETS_RAY_CONNECT_TIMEOUT", "2")
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    try:
        code = main(
            ["run", "toy", "--ray-address", address, "--out", str(tmp_path / "never"), "--no-progress"]
        )
    finally:
        server.close()
    seconds = time.perf_counter() - started
    assert code == 2 and capsys.readouterr().err == (
        f"pdenets: error: no Ray cluster answers at {address} ({problem}); start one with `ray start --head` "
        "and "
        "pass its address (or --ray-address auto on its head node)\n"
    )
    assert list(tmp_path.iterdir()) == [] and seconds < 2 + 3


def test_a_ray_clusters_own_address_passes_the_handshake(local_ray):
    from pdenets.experiments.parallel import check_ray_address

    check_ray_address(ray.get_runtime_context().gcs_address, timeout=5)


@pytest.mark.parametrize("value", ["abc", "inf", "-1", "nan", "lots", "-5G"])
def test_a_bad_connect_timeout_names_its_variable(monkeypatch, value):
    from pdenets.experiments.parallel import check_ray_address

    monkeypatch.setenv("PDENETS_RAY_CONNECT_TIMEOUT", value)
    with pytest.raises(ValueError) as caught:
        check_ray_address("127.0.0.1:1")
    assert str(caught.value) == (
        f"$PDENETS_RAY_CONNECT_TIMEOUT={value!r} is not valid: expected a finite number > 0 and <= 10000000"
    )
