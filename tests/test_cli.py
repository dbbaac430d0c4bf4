"""The command line: generated options, one-line errors with exit status 2, nothing written on a bad
config."""

import subprocess
import sys

import pytest
import toytask  # noqa: F401  (registers the toy task)
import yaml

from pdenets.cli import build_parser, main
from pdenets.experiments.config import config_fields
from pdenets.experiments.task import registered_tasks


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", sorted(registered_tasks()))
def test_help_lists_every_field_with_its_help_and_default(name, capsys):
    task = registered_tasks()[name]
    with pytest.raises(SystemExit) as exited:
        main(["run", name, "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for info in config_fields(task.config_class):
        if info.kind == "nested":
            assert f"{info.name}:" in text, info.name
        else:
            assert "--" + info.name.replace("_", "-") in text, info.name
        assert " ".join(info.help.split()) in text, info.name
    for alias in task.shortcuts:
        assert f"--{alias}" in text
    assert "--out DIR" in text and "--overwrite" in text and "--report-only" in text


def test_help_shows_defaults_and_nested_fields(capsys):
    with pytest.raises(SystemExit):
        main(["run", "synthetic", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--epochs EPOCHS full-batch training epochs (integer; default: 100)" in text
    assert "--datasets A,B,..., --dataset A,B,..." in text
    assert "--include-self, --no-include-self" in text
    assert "hyperparameters: per set: n_top, sigma, step_size, num_steps, lr (Table 4)" in text
    assert "moon: {lr: 1.0, n_top: 25, num_steps: 60, sigma: 0.5, step_size: 1.0}" in text


ERRORS = [
    (["run", "toy", "--device", "cuda"], "device 'cuda' asked for, but CUDA is not available"),
    (["run", "toy", "--device", "gpu"], "device 'gpu' is not a torch device"),
    (["run", "toy", "--config", "{tmp}/missing.yaml"], "config file {tmp}/missing.yaml does not exist"),
    (
        ["run", "toy", "--config", "{tmp}/broken.yaml"],
        "{tmp}/broken.yaml: not valid YAML, line 2 column 1: expected ',' or ']'",
    ),
    (["run", "toy", "--config", "{tmp}/tagged.yaml"], "YAML tags such as"),
    (["run", "toy", "--count", "many"], "count expects an integer, got 'many'"),
    (["run", "toy", "--count", "true"], "count expects an integer, got True"),
    (["run", "toy", "--set", "cont=3"], "unknown config key 'cont' (did you mean 'count'?)"),
    (["run", "toy", "--set", "count"], "must look like key=value"),
    (["run", "toy", "--cont", "3"], "unrecognized arguments: --cont 3"),
    (["run", "toyy"], "invalid choice: 'toyy'"),
    (["reproduce", "table9"], "invalid choice: 'table9'"),
    (["run", "toy", "--workers", "-1"], "workers must be >= 0, got -1"),
    (["run", "toy", "--out", "{tmp}/file.txt"], "is a file, not a folder"),
    (["run", "toy", "--out", "{tmp}/occupied"], "is not empty and holds no pdenets run (found: notes.txt)"),
    (["run", "toy", "--report-only"], "--report-only builds the report of an existing run"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (
        ["run", "node-classification", "--dataset", "{tmp}/broken.npz"],
        "{tmp}/broken.npz: not a readable .npz archive (truncated or corrupt",
    ),
    (
        ["run", "node-classification", "--dataset", "{tmp}/empty.npz"],
        "{tmp}/empty.npz: the file is empty (0 bytes)",
    ),
    (
        ["run", "node-classification", "--dataset", "planetoid/cora", "--data-dir", "{tmp}/hostile"],
        "ind.cora.x: refusing to load os.system",
    ),
    (["run", "node-classification", "--train-per-class", "0"], "train_per_class must be >= 1, got 0"),
    (["run", "node-classification", "--val-per-class", "0"], "val_per_class must be >= 1, got 0"),
    (
        ["run", "node-classification", "--set", "diffusion.cora.dropout=1.0"],
        "diffusion.cora.dropout must be in [0, 1), got 1.0",
    ),
    (
        ["run", "node-classification", "--set", "baselines.gcn.hidden_features=0"],
        "baselines.gcn.hidden_features must be >= 1",
    ),
    (
        ["run", "node-classification", "--missing-features", "zeros"],
        "missing_features must be one of ['identity', 'degree'], got 'zeros'",
    ),
    (
        ["run", "synthetic", "--set", "hyperparameters.moon.sigma=0"],
        "hyperparameters.moon.sigma must be > 0, got 0.0",
    ),
    (["run", "synthetic", "--seed", "-1"], "seed must lie in [0, 2^32), got -1"),
    (["run", "synthetic", "--epochs", "0"], "epochs must be >= 1, got 0"),
]


@pytest.mark.parametrize("argv, message", ERRORS, ids=[" ".join(a) for a, _ in ERRORS])
def test_user_errors_are_one_line_and_status_2_and_write_nothing(
    tmp_path, monkeypatch, capsys, argv, message
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.yaml").write_text("count: [1, 2\n")
    (tmp_path / "tagged.yaml").write_text("count: !!python/object/apply:os.system ['true']\n")
    (tmp_path / "file.txt").write_text("mine")
    (tmp_path / "occupied").mkdir()
    (tmp_path / "occupied" / "notes.txt").write_text("mine")
    (tmp_path / "broken.npz").write_bytes(b"PK\x03\x04 truncated")
    (tmp_path / "empty.npz").write_bytes(b"")
    hostile = tmp_path / "hostile" / "planetoid" / "Cora" / "raw"
    hostile.mkdir(parents=True)
    for part in ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"):
        (hostile / f"ind.cora.{part}").write_bytes(b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R.")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--no-progress"] * (
        argv[0] == "run" and len(argv) > 1
    )
    code, out, err = run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pdenets: error: "), err
    assert message.replace("{tmp}", str(tmp_path)) in lines[0]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written
    assert out == ""


EXACT_ERRORS = [
    # option names are whole words: a prefix of a longer option is not that option
    (["run", "few-shot", "--n-top", "100000"], "unrecognized arguments: --n-top 100000"),
    (["run", "synthetic", "--epoch", "1"], "unrecognized arguments: --epoch 1"),
    (["run", "toy", "--quic"], "unrecognized arguments: --quic"),
    (
        ["features", "train-backbone", "--out", "{tmp}/backbone", "--epoch", "1"],
        "unrecognized arguments: --epoch 1",
    ),
    # values are YAML 1.2: 1_0 and 1:30 (YAML 1.1's 10 and 90) are no numbers, yes is no boolean
    (["run", "synthetic", "--seed", "1_0"], "seed expects an integer, got '1_0'"),
    (["run", "synthetic", "--seed", "1:30"], "seed expects an integer, got '1:30'"),
    (["run", "synthetic", "--set", "include_self=yes"], "include_self expects true or false, got 'yes'"),
    (["run", "synthetic", "--xor-seeds", "1,0_1"], "xor_seeds[1] expects an integer, got '0_1'"),
    # an --out that is a symlink to nothing
    (
        ["run", "toy", "--out", "{tmp}/dangling"],
        "--out {tmp}/dangling is a symlink to {tmp}/nowhere, which does not "
        "exist; create the target or choose another --out",
    ),
    (
        ["run", "toy", "--out", "{tmp}/dangling/run"],
        "--out {tmp}/dangling/run: {tmp}/dangling is a symlink to "
        "{tmp}/nowhere, which does not exist; create the target or choose "
        "another --out",
    ),
    (
        ["run", "toy", "--out", "{tmp}/loop"],
        "--out {tmp}/loop is a symlink to {tmp}/loop, which loops (the links lead "
        "back to themselves); create the target or choose another --out",
    ),
]


@pytest.mark.parametrize("argv, message", EXACT_ERRORS, ids=[" ".join(a) for a, _ in EXACT_ERRORS])
def test_refusals_are_exactly_one_line_and_write_nothing(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--no-progress"] * (argv[0] == "run")
    code, out, err = run(capsys, *argv)
    assert (code, out, err) == (2, "", f"pdenets: error: {message.replace('{tmp}', str(tmp_path))}\n")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_leading_zero_is_decimal(capsys):
    code, out, _ = run(capsys, "run", "synthetic", "--seed", "010", "--xor-seeds", "07,08", "--print-config")
    printed = yaml.safe_load(out)
    assert code == 0 and (printed["seed"], printed["xor_seeds"]) == (10, [7, 8])  # YAML 1.1: 8 and an error


def test_benchmark_parsers_take_whole_option_names_only():
    """Every benchmark's ArgumentParser refuses abbreviations (``--epoch`` for ``--epochs``)."""
    import ast
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    maintained_with_the_few_shot_code = {"fewshot_peers.py"}
    calls = 0
    for path in sorted(folder.glob("*.py")):
        if path.name in maintained_with_the_few_shot_code:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "argparse.ArgumentParser":
                calls += 1
                keywords = {k.arg: ast.unparse(k.value) for k in node.keywords}
                assert keywords.get("allow_abbrev") == "False", f"{path.name}:{node.lineno}"
    assert calls >= 10


def test_debug_shows_the_traceback(capsys):
    code, _, err = run(capsys, "run", "toy", "--set", "count=x", "--debug")
    assert code == 2 and "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1] == "pdenets: error: count expects an integer, got 'x'"


def test_a_failing_job_is_status_1_and_names_the_job(tmp_path, capsys):
    code, _, err = run(
        capsys,
        "run",
        "toy",
        "--fail-at",
        "1",
        "--workers",
        "1",
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
    )
    assert code == 1
    assert "pdenets: error: toy job (index=1, scale=1.0, sleep=0.0, fail=True" in err
    assert "RuntimeError: job 1 exploded (--debug shows the traceback)" in err


def test_options_lists_and_switches_reach_the_config(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("count: 3\nscale: 0.5\n")
    code, out, _ = run(
        capsys, "run", "toy", "--config", str(config), "--n", "4", "--set", "scale=2", "--print-config"
    )
    printed = yaml.safe_load(out)
    assert code == 0 and (printed["count"], printed["scale"]) == (4, 2.0)
    code, out, _ = run(
        capsys,
        "run",
        "synthetic",
        "--seeds",
        "5",
        "--xor-seeds",
        "1,2",
        "--no-include-self",
        "--print-config",
    )
    printed = yaml.safe_load(out)
    assert (printed["seeds"], printed["xor_seeds"], printed["include_self"]) == ([5], [1, 2], False)


def test_quick_and_a_finished_run(tmp_path, capsys):
    out = tmp_path / "run"
    code, stdout, _ = run(
        capsys, "run", "toy", "--quick", "--workers", "1", "--out", str(out), "--no-progress"
    )
    assert code == 0 and "2 new run(s), 2 of 2 stored" in stdout and str(out / "report.html") in stdout
    document = yaml.safe_load((out / "config.yaml").read_text())
    assert document["quick"] is True and document["config"]["count"] == 2
    assert document["command"].startswith("pdenets run toy --quick")


def test_default_run_folders_do_not_collide(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        assert run(capsys, "run", "toy", "--quick", "--workers", "1", "--no-progress")[0] == 0
    folders = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(folders) == 2 and folders[0].startswith("toy-")


def test_tasks_and_models_listings(capsys):
    code, out, _ = run(capsys, "tasks")
    assert code == 0 and "synthetic" in out and "node-classification" in out and "reproduce table1" in out
    code, out, _ = run(capsys, "models")
    assert code == 0 and all(
        name in out for name in ("diff-resnet", "no-diff-resnet", "gcn", "gat", "sage-mean")
    )


def test_parser_builds_every_registered_task():
    parser = build_parser()
    assert parser.prog == "pdenets"


def test_console_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "pdenets.cli", "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout.startswith("pdenets ")


HEAVY_IMPORTS = ("matplotlib", "torch_geometric", "sklearn", "scipy", "omegaconf", "PIL")


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["tasks"],
        ["run", "few-shot", "--help"],
        ["run", "node-classification", "--help"],
        ["reproduce", "table1", "--help"],
    ],
)
def test_commands_that_only_print_import_no_plotting_graph_or_learning_library(argv):
    # `pdenets --help` once took four times `import torch`: building the parser imported every
    # task's figures, graphs and estimators (benchmarks/startup.py measures the start-up)
    script = (
        "import sys\nfrom pdenets.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted(name for name in {HEAVY_IMPORTS!r} if name in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]", (argv, result.stdout.splitlines()[-1])


def test_a_lazy_module_imports_on_first_use_and_then_behaves_as_the_module():
    script = (
        "import sys\nfrom pdenets.experiments.plots import plt\nfrom pdenets.data.graphs import sp\n"
        "before = ['matplotlib' in sys.modules, 'scipy' in sys.modules]\n"
        "figure = plt.figure(); matrix = sp.csr_matrix((2, 3))\n"
        "import matplotlib\n"
        "print(before, matplotlib.get_backend(), type(figure).__name__, matrix.shape, repr(sp))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "[False,",
        "False]",
        "Agg",
        "Figure",
        "(2,",
        "3)",
        "<lazy",
        "module",
        "'scipy.sparse'",
        "(imported)>",
    ]


def test_precedence_quick_then_config_files_in_order_then_flags_then_set(tmp_path, capsys):
    """Overlapping keys at every layer: --quick's base < first --config < second --config < a field flag
    < --set (later --set wins)."""
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("count: 3\nscale: 0.5\nsleep: 0.25\n")
    second.write_text("count: 5\nscale: 0.75\n")

    def printed(*extra):
        code, out, err = run(capsys, "run", "toy", "--quick", *extra, "--print-config")
        assert code == 0, err
        return yaml.safe_load(out)

    assert printed()["count"] == 2
    assert printed("--config", str(first))["count"] == 3
    both = printed("--config", str(first), "--config", str(second))
    assert (both["count"], both["scale"], both["sleep"]) == (5, 0.75, 0.25)
    reverse = printed("--config", str(second), "--config", str(first))
    assert (reverse["count"], reverse["scale"]) == (3, 0.5)
    flagged = printed("--config", str(first), "--config", str(second), "--n", "8")
    assert (flagged["count"], flagged["scale"]) == (8, 0.75)
    last = printed(
        "--config", str(first), "--n", "8", "--set", "count=9", "--set", "count=10", "--scale", "2"
    )
    assert (last["count"], last["scale"]) == (10, 2.0)


def test_a_failed_collective_is_one_line_naming_its_timeout_variable(tmp_path, monkeypatch, capsys):
    """A peer that stops mid-run (or a collective past its timeout) surfaces as torch's DistError: one line,
    status 1, naming ``$PDENETS_COLLECTIVE_TIMEOUT``; ``--debug`` adds the traceback."""
    import torch.distributed as dist

    import pdenets.cli as cli

    def broken(*args, **kwargs):
        raise dist.DistBackendError("[../gloo/transport/tcp/pair.cc:534] Connection closed by peer\nmore")

    monkeypatch.setattr(cli, "run_task", broken)
    assert main(["run", "toy", "--out", str(tmp_path / "run")]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error
    assert error.startswith("pdenets: error: a collective among the torchrun processes failed")
    assert "$PDENETS_COLLECTIVE_TIMEOUT" in error and "Connection closed by peer" in error
    assert main(["run", "toy", "--out", str(tmp_path / "run"), "--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err
