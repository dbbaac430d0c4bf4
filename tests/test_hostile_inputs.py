"""Tiny hostile files and nonsense settings, run as a user runs them, under an address-space limit.

Each case is a small file (or a setting) that once made us allocate without bound, read a value
wrongly, or fail with a message from deep inside a library. They run in one child process whose
address space is capped at 2 GiB (``RLIMIT_AS``) with a 256 MiB memory budget: an allocation driven
by the file fails the run as a ``MemoryError`` instead of a one-line refusal. Every case must end with
exit status 2 and one line ``pdenets: error: …`` naming the problem, write no run folder, and the whole
set must finish within its time limit.
"""

import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from pickle_payloads import Reduced, multiarray

resource = pytest.importorskip("resource")

ADDRESS_SPACE = 2 * 1024**3


def _files(folder):
    """(argv, phrase the one-line error must hold) of every CLI case; the files are written to ``folder``."""
    import codecs

    def path(name):
        return str(folder / name)

    np.savez(path("huge_class.npz"), features=np.zeros((2, 3), np.float32), labels=np.array([0, 10**12]))
    np.savez(path("inf_label.npz"), features=np.zeros((2, 3), np.float32), labels=np.array([0.0, np.inf]))
    np.savez(path("fraction_label.npz"), features=np.zeros((2, 3), np.float32), labels=np.array([0.0, 0.5]))
    with open(path("expanding.pkl"), "wb") as stream:  # every level of hex doubles the bytes
        payload = b"ab" * 8
        for _ in range(3):
            payload = Reduced(codecs.encode, (payload, "hex"))
        pickle.dump({0: payload}, stream, protocol=2)
    with open(path("huge_shape.pkl"), "wb") as stream:  # 800 GB declared by 8 bytes
        pickle.dump(
            {
                0: Reduced(
                    multiarray("_reconstruct"),
                    (np.ndarray, (0,), b"b"),
                    (1, (10**11,), np.dtype("f8"), False, b"\x00" * 8),
                )
            },
            stream,
            protocol=2,
        )
    series = [[1.0, 2.0], [2.0, 3.0], [3.0, 4.0]] * 20
    for name, edges in (
        ("float_ids.json", [[0.4, 1.9]]),
        ("bool_ids.json", [[True, False]]),
        ("negative_ids.json", [[0, -1]]),
        ("outside_ids.json", [[0, 2]]),
    ):
        (folder / name).write_text(json.dumps({"FX": series, "edges": edges}))
    (folder / "short.json").write_text(json.dumps({"FX": series, "edges": [[0, 1]]}))  # a valid 60-day series
    (folder / "duplicate_keys.json").write_text('{"FX": [[1, 2], [2, 3]], "FX": [[1, 2]], "edges": [[0, 1]]}')
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "empty_id.csv").write_text("id,a,b,label\nq,1,2,0\n,2,3,1\nr,3,4,1\n")
    (folder / "huge_field.csv").write_text("a,b,label\n1,2,0\n" + "1" * 300_000 + ",3,1\n")
    (folder / "empty_run").mkdir()
    block = np.zeros(16384)  # 128 KiB, stored once and named under 20,000 class ids: 2.5 GiB once stacked
    with open(path("shared.pkl"), "wb") as stream:
        pickle.dump({key: block for key in range(20_000)}, stream, protocol=2)
    import torch

    tensor = torch.from_numpy(block)  # one tensor: stored once
    torch.save({key: tensor for key in range(20_000)}, path("shared.pt"))
    nested = []
    for _ in range(60):  # 2^60 paths through 61 lists, in 429 bytes
        nested = [nested, nested]
    with open(path("nested.pkl"), "wb") as stream:
        pickle.dump({"features": nested, "labels": nested}, stream, protocol=2)
    np.savez(
        path("no_nodes.npz"),
        adj_data=np.ones(0),
        adj_indices=np.zeros(0, int),
        adj_indptr=np.array([0]),
        adj_shape=np.array([0, 0]),
        labels=np.zeros(0, int),
    )
    np.savez(
        path("object_labels.npz"),
        adj_data=np.ones(2),
        adj_indices=np.array([1, 0]),
        adj_indptr=np.array([0, 1, 2]),
        adj_shape=np.array([2, 2]),
        labels=np.array(["a", 1], dtype=object),
    )
    np.savez(
        path("tiny.npz"),
        adj_data=np.ones(4),
        adj_indices=np.array([1, 0, 2, 1]),
        adj_indptr=np.array([0, 1, 3, 4]),
        adj_shape=np.array([3, 3]),
        attr_data=np.ones(3),
        attr_indices=np.array([0, 1, 0]),
        attr_indptr=np.array([0, 1, 2, 3]),
        attr_shape=np.array([3, 2]),
        labels=np.array([0, 1, 0]),
    )
    (folder / "huge_id.json").write_text(json.dumps({"FX": series, "edges": [[0, 10**29]]}))
    (folder / "two_weights.json").write_text(
        json.dumps({"FX": series, "edges": [[0, 1]], "edge_weight": [1.0], "weights": [2.0]})
    )
    (folder / "weight_w").mkdir()
    (folder / "weight_w" / "series.csv").write_text("day,a,b\n" + "".join(f"{t},{t},1\n" for t in range(60)))
    (folder / "weight_w" / "edges.csv").write_text("source,target,w\na,b,100\n")
    (folder / "underscore.csv").write_text("a,b,label\n1_0,2,0\n2,3,1\n3,4,0\n")
    os.symlink("/dev/zero", folder / "device.json")
    fewshot, forecast, tabular = (
        ["run", "few-shot", "--quick"],
        ["run", "coin-forecast", "--quick"],
        ["run", "coin-tabular", "--quick"],
    )
    nodes = ["run", "node-classification", "--quick"]
    return [
        (fewshot + ["--dataset", path("huge_class.npz")], "class id 1000000000000"),
        (fewshot + ["--dataset", path("inf_label.npz")], "non-finite value (inf)"),
        (fewshot + ["--dataset", path("fraction_label.npz")], "integer class ids, got the value 0.5"),
        (fewshot + ["--dataset", path("expanding.pkl")], "refusing _codecs.encode with encoding 'hex'"),
        (fewshot + ["--dataset", path("huge_shape.pkl")], "more than the memory budget"),
        (fewshot + ["--ways", "1"], "a 1-way task has nothing to classify"),
        (fewshot + ["--tasks", str(10**12)], "tasks per cell"),
        (forecast + ["--dataset", path("float_ids.json")], "node ids must be integers, found 0.4"),
        (forecast + ["--dataset", path("bool_ids.json")], "node ids must be integers"),
        (forecast + ["--dataset", path("negative_ids.json")], "an edge names node -1"),
        (forecast + ["--dataset", path("outside_ids.json")], "names node 2 but the series has 2 nodes"),
        (forecast + ["--dataset", path("duplicate_keys.json")], "duplicate key 'FX'"),
        (forecast + ["--dataset", path("deep.json")], "nested too deeply"),
        (
            forecast + ["--dataset", path("short.json"), "--horizons", str(10**9)],
            "horizons=1000000000 reaches beyond the series",
        ),
        (tabular + ["--dataset", path("empty_id.csv")], "the id column 'id' is empty"),
        (tabular + ["--dataset", path("huge_field.csv")], "line 3, column 'a'"),
        (["run", "synthetic", "--report-only", "--out", path("empty_run")], "no stored runs"),
        (
            fewshot + ["--dataset", path("shared.pkl")],
            "with every shared reference counted as a copy, would need 2.4 GiB",
        ),
        (
            fewshot + ["--dataset", path("shared.pt")],
            "with every shared reference counted as a copy, would need 2.4 GiB",
        ),
        (fewshot + ["--dataset", path("nested.pkl")], "with every shared reference counted as a copy"),
        (nodes + ["--datasets", path("no_nodes.npz")], "the adjacency matrix is 0 x 0"),
        (nodes + ["--datasets", path("object_labels.npz")], "labels is an object array"),
        (forecast + ["--dataset", path("huge_id.json")], "an edge names node 100000000000000000000000000000"),
        (
            forecast + ["--dataset", path("two_weights.json")],
            "'edge_weight' and 'weights' both give the same thing",
        ),
        (forecast + ["--dataset", path("weight_w")], "unknown column 'w' (did you mean 'weight'?)"),
        (forecast + ["--dataset", path("device.json")], "not a regular file (a character device"),
        (tabular + ["--dataset", path("underscore.csv")], "line 2, column 'a': '1_0' is not a number"),
        (
            nodes
            + ["--datasets", path("tiny.npz"), "--diffuse-in", "hidden", "--diffusion-width", "1000000000"],
            "pdenets: error: --diffusion-width 1,000,000,000: Diff-ResNet's block (1,000,000,000 x "
            "1,000,000,000 "
            "weights) on tiny needs 3.638e+6 TiB, more than the memory budget 256.0 MiB "
            "($PDENETS_MEMORY_BUDGET); choose a smaller diffusion_width",
        ),
    ]


DRIVER = textwrap.dedent("""
    import contextlib, io, json, resource, sys
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from pdenets.cli import main
    results = []
    for argv in json.loads(sys.stdin.read()):
        errors, output = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(output):
                code = main(argv + ["--no-progress"] if argv[-1] != "--no-progress" else argv)
        except BaseException as error:  # noqa: BLE001 - reported, not raised: the test names the case
            code = f"raised {type(error).__name__}: {error}"
        results.append({"argv": argv, "code": code, "stderr": errors.getvalue()})
    print(json.dumps(results))
""")


def test_hostile_files_and_settings_fail_in_one_line_under_an_address_space_limit(tmp_path):
    folder = tmp_path / "inputs"
    folder.mkdir()
    cases = _files(folder)
    environment = {**os.environ, "PDENETS_MEMORY_BUDGET": "256M", "MPLBACKEND": "Agg"}
    argvs = [
        argv + ["--out", str(tmp_path / f"run{index}")] if "--out" not in argv else argv
        for index, (argv, _) in enumerate(cases)
    ]
    finished = subprocess.run(
        [sys.executable, "-c", DRIVER, str(ADDRESS_SPACE)],
        input=json.dumps(argvs),
        capture_output=True,
        text=True,
        env=environment,
        timeout=240,
        cwd=tmp_path,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    results = json.loads(finished.stdout.splitlines()[-1])
    problems = []
    for (argv, phrase), result, index in zip(cases, results, range(len(cases))):
        lines = result["stderr"].strip().splitlines()
        shown = " ".join(argv[1:])
        if result["code"] != 2:
            problems.append(f"{shown}: exit {result['code']!r}, stderr {result['stderr'][-300:]!r}")
        elif len(lines) != 1 or not lines[0].startswith("pdenets: error: ") or phrase not in lines[0]:
            problems.append(f"{shown}: expected one line naming {phrase!r}, got {lines!r}")
        if "--out" not in argv and (tmp_path / f"run{index}").exists():
            problems.append(f"{shown}: wrote a run folder")
    if os.environ.get("PDENETS_SHOW_HOSTILE"):
        print("\n".join(r["stderr"].strip() for r in results))
    assert not problems, "\n".join(problems)
    assert not any((folder / "empty_run").iterdir()), "--report-only wrote into an empty folder"
