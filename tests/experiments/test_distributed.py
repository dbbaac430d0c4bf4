"""The launcher's environment read and checked, the rendezvous bounded by its timeout, and the single-process
context: sharding, reduction and wrapping as the identity, and each process's device."""

import json
import os
import subprocess

import pytest


def _launcher_environment(rank, timeout):
    """The environment torchrun gives rank ``rank`` of 2, pointing at a free port where no other rank will
    ever come, with a rendezvous timeout of ``timeout`` seconds."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return dict(
        os.environ,
        WORLD_SIZE="2",
        RANK=str(rank),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        PDENETS_RENDEZVOUS_TIMEOUT=str(timeout),
    )


def test_a_distributed_environment_without_its_other_ranks_fails_in_one_line():
    import subprocess
    import sys

    code = (
        "from pdenets.experiments.distributed import distributed_context, RendezvousError\n"
        "try:\n    distributed_context()\nexcept RendezvousError as error:\n    print(error)\n"
    )
    environment = _launcher_environment(rank=0, timeout=2)
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=60
    )
    assert "rank 0 of 2 could not join the other ranks" in done.stdout and "within 2 s" in done.stdout
    del environment["RANK"]
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=60
    )
    assert "WORLD_SIZE is set but $RANK is not" in done.stdout


def test_a_run_whose_other_ranks_never_come_ends_in_one_line_naming_the_timeout_variable(tmp_path):
    """``pdenets run`` under a launcher environment without the other ranks: exit 1, one line that names
    ``$PDENETS_RENDEZVOUS_TIMEOUT``, no traceback."""
    import sys

    environment = _launcher_environment(rank=1, timeout=2)
    done = subprocess.run(
        [sys.executable, "-m", "pdenets.cli", "run", "synthetic", "--quick", "--out", str(tmp_path / "run")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = [text for text in done.stderr.splitlines() if text.strip()]
    assert line.startswith("pdenets: error: rank 1 of 2 could not join the other ranks")
    assert "within 2 s ($PDENETS_RENDEZVOUS_TIMEOUT; " in line


_RENDEZVOUS = (
    "import json, time\n"
    "from pdenets.experiments.distributed import distributed_context, RendezvousError\n"
    "start = time.monotonic()\n"
    "try:\n    distributed_context()\n    message = 'joined'\n"
    "except RendezvousError as error:\n    message = str(error)\n"
    "print(json.dumps([time.monotonic() - start, message]))\n"
)


@pytest.mark.parametrize("rank_zero", ["absent", "silent"])
def test_a_rank_without_rank_0_gives_up_within_the_rendezvous_timeout(rank_zero):
    """Rank 1 of 2 and no rank 0: nothing listens at MASTER_PORT (torch's store retries past its timeout), or
    something takes the connection and never answers (torch's store waits without end)."""
    import socket
    import sys
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if rank_zero == "silent":
        listener.listen(8)
        accepted = []
        threading.Thread(
            target=lambda: [accepted.append(listener.accept()[0]) for _ in range(8)], daemon=True
        ).start()
    else:
        listener.close()
    environment = dict(
        os.environ,
        WORLD_SIZE="2",
        RANK="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        PDENETS_RENDEZVOUS_TIMEOUT="3",
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", _RENDEZVOUS], env=environment, capture_output=True, text=True, timeout=40
        )
    finally:
        listener.close()
    seconds, message = json.loads(done.stdout.strip().splitlines()[-1])
    reason = (
        "rank 0's store did not answer: Connection refused"
        if rank_zero == "absent"
        else "the other ranks did not answer"
    )
    assert message == (
        f"rank 1 of 2 could not join the other ranks at 127.0.0.1:{port} within 3 s "
        f"($PDENETS_RENDEZVOUS_TIMEOUT; {reason}); "
        "WORLD_SIZE=2 is set without the other processes? Start them together with torchrun "
        "--nproc-per-node N"
    )
    assert 2.9 < seconds < 3 + 5, seconds


RENDEZVOUS_ENVIRONMENTS = [
    ({"WORLD_SIZE": "1_0"}, "$WORLD_SIZE='1_0' is not valid: expected an integer >= 1"),
    ({"WORLD_SIZE": "2", "RANK": "1_0"}, "$RANK='1_0' is not valid: expected an integer >= 0"),
    ({"WORLD_SIZE": "2", "RANK": "-1"}, "$RANK='-1' is not valid: expected an integer >= 0"),
    (
        {"PDENETS_RENDEZVOUS_TIMEOUT": "abc"},
        "$PDENETS_RENDEZVOUS_TIMEOUT='abc' is not valid: expected a finite number > 0 and <= 10000000",
    ),
    (
        {"PDENETS_RENDEZVOUS_TIMEOUT": "inf"},
        "$PDENETS_RENDEZVOUS_TIMEOUT='inf' is not valid: expected a finite number > 0 and <= 10000000",
    ),
    (
        {"PDENETS_RENDEZVOUS_TIMEOUT": "nan"},
        "$PDENETS_RENDEZVOUS_TIMEOUT='nan' is not valid: expected a finite number > 0 and <= 10000000",
    ),
    (
        {"PDENETS_RENDEZVOUS_TIMEOUT": "-1"},
        "$PDENETS_RENDEZVOUS_TIMEOUT='-1' is not valid: expected a finite number > 0 and <= 10000000",
    ),
    (
        {"PDENETS_RENDEZVOUS_TIMEOUT": "lots"},
        "$PDENETS_RENDEZVOUS_TIMEOUT='lots' is not valid: expected a finite number > 0 and <= 10000000",
    ),
    (
        {"PDENETS_RENDEZVOUS_TIMEOUT": "-5G"},
        "$PDENETS_RENDEZVOUS_TIMEOUT='-5G' is not valid: expected a finite number > 0 and <= 10000000",
    ),
    (
        {"PDENETS_RENDEZVOUS_TIMEOUT": "1e300"},
        "$PDENETS_RENDEZVOUS_TIMEOUT='1e300' is not valid: expected a finite number > 0 and <= 10000000",
    ),
    ({"MASTER_PORT": "29_500"}, "$MASTER_PORT='29_500' is not valid: expected an integer >= 1 and <= 65535"),
    (
        {"PDENETS_COLLECTIVE_TIMEOUT": "30min"},
        "$PDENETS_COLLECTIVE_TIMEOUT='30min' is not valid: expected a finite number > 0 and <= 10000000",
    ),
]


@pytest.mark.parametrize(
    "variables, message",
    RENDEZVOUS_ENVIRONMENTS,
    ids=[" ".join(f"{k}={v}" for k, v in e.items()) for e, _ in RENDEZVOUS_ENVIRONMENTS],
)
def test_a_bad_number_in_the_launchers_environment_names_the_variable(monkeypatch, variables, message):
    from pdenets.experiments.distributed import distributed_context

    for name, value in {
        "WORLD_SIZE": "2",
        "RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "1",
        **variables,
    }.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as caught:
        distributed_context()
    assert str(caught.value) == message


def test_the_collective_timeout_bounds_the_collectives_not_the_rendezvous(monkeypatch):
    """``$PDENETS_COLLECTIVE_TIMEOUT`` shorter than the rendezvous (0.001 s) is the joined group's timeout:
    joining is given the rendezvous' own budget, so it is never reported as a rendezvous failure."""
    import torch.distributed as dist

    from pdenets.experiments import distributed

    calls = {}
    monkeypatch.setattr(dist, "init_process_group", lambda *a, **k: calls.setdefault("init", k["timeout"]))
    monkeypatch.setattr(
        dist.distributed_c10d, "_set_pg_timeout", lambda timeout, group=None: calls.setdefault("pg", timeout)
    )
    for name, value in {
        "WORLD_SIZE": "2",
        "RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29999",
        "PDENETS_RENDEZVOUS_TIMEOUT": "40",
        "PDENETS_COLLECTIVE_TIMEOUT": "0.001",
    }.items():
        monkeypatch.setenv(name, value)
    context = distributed.distributed_context()
    assert (context.rank, context.world_size) == (0, 2)
    assert 30 < calls["init"].total_seconds() <= 40  # what is left of the rendezvous' 40 s
    assert calls["pg"].total_seconds() == pytest.approx(0.001)


@pytest.mark.parametrize("port", ["1", "65535"])
def test_the_ports_at_the_ends_of_the_range_are_accepted(monkeypatch, port):
    """``MASTER_PORT`` 1 and 65535 are ports: the rendezvous is tried there (and fails within its short
    timeout, naming the address), where 0 and 65536 are refused as numbers."""
    from pdenets.experiments.distributed import RendezvousError, distributed_context

    for name, value in {
        "WORLD_SIZE": "2",
        "RANK": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": port,
        "PDENETS_RENDEZVOUS_TIMEOUT": "0.5",
    }.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(RendezvousError, match=f"at 127.0.0.1:{port} within 0.5 s"):
        distributed_context()
    for outside in ("0", "65536"):
        monkeypatch.setenv("MASTER_PORT", outside)
        with pytest.raises(
            ValueError, match=f"MASTER_PORT='{outside}' is not valid: expected an integer >= 1 and"
        ):
            distributed_context()


# ----------------------------------------------------------------------------------------
# one process (no launcher)

LAUNCHER_VARIABLES = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture
def no_launcher(monkeypatch):
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("world_size", [None, "", "1"])
def test_without_a_launcher_the_context_is_one_main_process_on_the_device_asked(no_launcher, world_size):
    """``WORLD_SIZE`` unset, blank or 1: rank 0 of 1 whatever ``RANK`` says, and no process group joined."""
    import torch.distributed as dist

    from pdenets.experiments.distributed import DistributedContext, distributed_context

    if world_size is not None:
        no_launcher.setenv("WORLD_SIZE", world_size)
    no_launcher.setenv("RANK", "5")
    context = distributed_context("cpu")
    assert context == DistributedContext(0, 1, "cpu")
    assert context.is_main and not context.active and not dist.is_initialized()
    assert distributed_context("meta").device == "meta"


def test_the_single_process_context_is_the_identity_on_batches_sums_and_models():
    import torch

    from pdenets.experiments.distributed import DistributedContext

    context = DistributedContext()
    batch = torch.arange(7.0)  # no divisibility asked of one process
    assert context.shard(batch) is batch and context.reduce(batch) is batch
    model = torch.nn.Linear(2, 1)
    assert context.wrap(model) is model
    context.close()  # nothing to tear down
    DistributedContext(1, 2).close()  # several processes named but no group joined: nothing to tear down


@pytest.mark.parametrize("world_size", [2, 3])
def test_the_shards_of_a_global_batch_are_its_contiguous_equal_slices_in_rank_order(world_size):
    import torch

    from pdenets.experiments.distributed import DistributedContext

    batch = torch.arange(12 * 2).reshape(12, 2)
    shards = [DistributedContext(rank, world_size).shard(batch) for rank in range(world_size)]
    size = 12 // world_size
    for rank, shard in enumerate(shards):
        assert shard.tolist() == [[2 * row, 2 * row + 1] for row in range(rank * size, (rank + 1) * size)]
    assert torch.equal(torch.cat(shards), batch)  # together the shards are the batch, once each
    assert [DistributedContext(rank, world_size).is_main for rank in range(world_size)] == [True] + [
        False
    ] * (world_size - 1)


def test_a_global_batch_that_does_not_divide_over_the_processes_is_refused():
    import torch

    from pdenets.experiments.distributed import DistributedContext

    with pytest.raises(ValueError, match="a global batch of 7 does not split over 2 processes; choose"):
        DistributedContext(1, 2).shard(torch.zeros(7, 3))
    assert DistributedContext(2, 3).shard(torch.zeros(0, 3)).shape == (0, 3)  # an empty batch splits evenly


def test_a_rank_outside_the_world_is_refused_before_any_rendezvous(no_launcher):
    from pdenets.experiments.distributed import RendezvousError, distributed_context

    no_launcher.setenv("WORLD_SIZE", "2")
    no_launcher.setenv("RANK", "2")  # ranks are 0 and 1
    with pytest.raises(RendezvousError, match="RANK=2 is outside 0…1 \\(WORLD_SIZE=2\\)"):
        distributed_context()
    no_launcher.delenv("RANK")
    with pytest.raises(RendezvousError, match=r"WORLD_SIZE is set but \$RANK is not: start distributed runs"):
        distributed_context()
    no_launcher.setenv("WORLD_SIZE", "0")
    with pytest.raises(ValueError, match="WORLD_SIZE='0' is not valid: expected an integer >= 1"):
        distributed_context()


@pytest.mark.parametrize(
    "local_rank, gpus, expected",
    [(None, 2, "cuda:0"), ("1", 2, "cuda:1"), ("3", 2, "cuda:1"), ("4", 2, "cuda:0"), ("2", 0, "cuda:0")],
)
def test_a_bare_cuda_device_is_the_local_ranks_gpu_modulo_the_gpus_there_are(
    no_launcher, local_rank, gpus, expected
):
    """``cuda`` becomes ``cuda:<LOCAL_RANK mod GPUs>``, made the current device; an explicit index or another
    device is kept as given."""
    import torch

    from pdenets.experiments.distributed import process_device

    chosen = []
    no_launcher.setattr(torch.cuda, "device_count", lambda: gpus)
    no_launcher.setattr(torch.cuda, "set_device", chosen.append)
    if local_rank is not None:
        no_launcher.setenv("LOCAL_RANK", local_rank)
    assert process_device("cuda") == expected and chosen == [int(expected[-1])]
    assert [process_device(name) for name in ("cuda:3", "cpu", "meta")] == ["cuda:3", "cpu", "meta"]
    assert len(chosen) == 1  # only the bare `cuda` chose a device
    no_launcher.setenv("LOCAL_RANK", "-1")
    with pytest.raises(ValueError, match="LOCAL_RANK='-1' is not valid: expected an integer >= 0"):
        process_device("cuda")


def test_a_process_whose_rendezvous_thread_is_stuck_ends_at_exit_without_waiting_for_it():
    """torch's store can keep a thread (and its C++ threads, joined when the interpreter ends) alive after the
    rendezvous gave up: at exit the process ends at once with status 1, what it printed flushed, instead of
    waiting on them (here the stuck thread is a Python one that would not block: the status shows the
    process ended by the rule)."""
    import subprocess
    import sys
    import time

    code = (
        "import threading, time\n"
        "from pdenets.experiments import distributed\n"
        "gate = threading.Event()\n"
        "try:\n    distributed._within(0.2, gate.wait)\n"
        "except TimeoutError as error:\n    print('gave up:', error)\n"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout == "gave up: the other ranks did not answer\n" and done.returncode == 1, done
    assert time.perf_counter() - start < 30
