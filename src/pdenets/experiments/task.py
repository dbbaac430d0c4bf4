"""The task protocol: what a task declares, and the registry ``pdenets run`` dispatches on.

A task is one file of science. It declares

* ``name``, ``description`` and its ``config_class`` (a :class:`~pdenets.experiments.config.TaskConfig`
  dataclass); ``quick_config()`` — the small variant behind ``--quick``;
* :meth:`Task.jobs` — the independent runs it plans, as frozen dataclasses (job specs);
  the hash of a spec is its key in the results store, so every field that changes the
  result belongs in the spec;
* :meth:`Task.run_job` — a static method: one spec and the run's
  :class:`~pdenets.experiments.context.RunContext` (device, data folder, threads, place under ``torchrun``)
  in, one record out (a record dataclass, the task's ``record_type``, or a JSON-able dict); it runs in a
  worker process. The spec never holds the device or the data folder: the same spec runs anywhere under
  one key;
* :meth:`Task.summarize` — records in, the results out: a frozen
  :class:`~pdenets.experiments.results.TaskResults` dataclass whose ``to_dict()`` is ``results.json``;
* :meth:`Task.report` — writes tables, figures and ``report.md``/``report.html``; it starts from
  :meth:`Task.new_report` (the title and the engine's line on the runs) and ends with
  :meth:`Task.write_report` (the engine's table of every setting, then both files).

Everything else (validation, the run directory, the store, resume, the process pool or
Ray, progress bars, ``results.json``, ``runs.csv``) is :func:`~pdenets.experiments.runner.run_task`'s.
Tasks register with :func:`register_task`; reproducible paper tables with
:func:`register_reproduction`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    Callable,
    ClassVar,
    Dict,
    Generic,
    List,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
)

from .._checks import UnknownNameError, unknown_name
from .._registry import PluginWarning, Registry
from .config import TaskConfig, config_fields, config_to_dict
from .context import RunContext, run_context
from .records import RecordFields, fields_of_dataclass
from .report import Report, md_escape
from .results import TaskResults, wall_time
from .rundir import RunDirectory

__all__ = [
    "Task",
    "register_task",
    "get_task",
    "registered_tasks",
    "TASKS",
    "job_key",
    "spec_to_dict",
    "Reproduction",
    "register_reproduction",
    "REPRODUCTIONS",
    "get_reproduction",
    "registered_reproductions",
    "UnknownNameError",
    "unknown_name",
    "check_task_class",
    "check_reproduction",
    "ENGINE_OPTIONS",
    "PluginWarning",
]

T = TypeVar("T", bound=Type["Task"])
#: the configuration dataclass of a task: ``class MyTask(Task[MyConfig])`` types ``self.config``
ConfigT = TypeVar("ConfigT", bound=TaskConfig)


def spec_to_dict(spec: Any) -> Dict[str, Any]:
    """A job spec (frozen dataclass) as a plain dict, nested dataclasses included."""
    if not dataclasses.is_dataclass(spec) or isinstance(spec, type):
        raise TypeError(f"a job spec must be a dataclass instance, got {type(spec).__name__}")
    return dataclasses.asdict(spec)


def _same(value: Any) -> Any:
    return value


def _stored_form(value: Any) -> Any:
    """A spec as the plain data its key hashes: ``dataclasses.asdict``, each field under its ``stored_as``
    name, its value in its ``stored_value`` form."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            item.metadata.get("stored_as", item.name): _stored_form(
                item.metadata.get("stored_value", _same)(getattr(value, item.name))
            )
            for item in dataclasses.fields(value)
        }
    if isinstance(value, (list, tuple)):
        return [_stored_form(item) for item in value]
    if isinstance(value, dict):
        return {key: _stored_form(item) for key, item in value.items()}
    return value


def job_key(task: str, spec: Any) -> str:
    """The store key of a job: a hash of the task name, the spec's type and every spec field.

    Fields declared with ``metadata={"key": False}`` are left out (things that cannot change
    the result, such as where the data lives); with ``metadata={"key": "unless-default"}`` a field
    enters the key only when it differs from its default (a setting added later that changes the
    numbers only when used: the runs stored before it keep their keys); a field renamed since runs
    were stored declares its old name, ``metadata={"stored_as": "hidden"}``, at any depth of the
    spec, and the stored runs keep their keys; a field whose *values* were renamed maps them back with
    ``metadata={"stored_value": function}`` (a renamed method: its name as the runs were stored); a field
    that has left the spec but that the stored keys hashed is declared with its value in the spec class's
    ``stored_constants`` (``{"device": "cpu"}``: the device moved to the run's context, and the keys of the
    runs stored on the CPU stay).

    The spec is serialized as sorted JSON (values JSON cannot hold are written with
    ``str``) and hashed with SHA-256; the key is the first 24 hex digits, the same in every
    process and Python session.

    Args:
        task: the task's registered name.
        spec: the job spec, a dataclass instance (frozen by convention).

    Returns:
        A 24-character hexadecimal key.

    Raises:
        TypeError: ``spec`` is not a dataclass instance.
        ValueError: a spec field holds NaN or inf.

    Examples:
        >>> @dataclass(frozen=True)
        ... class Spec:
        ...     seed: int
        ...     lr: float
        >>> job_key("demo", Spec(0, 0.1)) == job_key("demo", Spec(0, 0.1)) != job_key("demo", Spec(0, 0.2))
        True
        >>> len(job_key("demo", Spec(0, 0.1)))
        24
    """
    if not dataclasses.is_dataclass(spec) or isinstance(spec, type):
        raise TypeError(f"a job spec must be a dataclass instance, got {type(spec).__name__}")
    values = _stored_form(spec)
    values.update(getattr(type(spec), "stored_constants", {}))
    for item in dataclasses.fields(spec):
        rule = item.metadata.get("key", True)
        if rule is False or (rule == "unless-default" and getattr(spec, item.name) == item.default):
            values.pop(item.metadata.get("stored_as", item.name))
    text = json.dumps(
        {"task": task, "kind": type(spec).__name__, "spec": values},
        sort_keys=True,
        allow_nan=False,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class Task(ABC, Generic[ConfigT]):
    """Base class of every task (see the module docstring). Instances hold ``self.config``.

    The class is generic in its configuration: ``class HeatTask(Task[HeatConfig])`` makes ``self.config`` a
    ``HeatConfig`` for a type checker (set ``config_class = HeatConfig`` too: it is what the engine builds).

    A subclass sets ``name`` (and usually ``description`` and ``config_class``), implements
    :meth:`jobs`, :meth:`run_job`, :meth:`summarize` and :meth:`report`, and registers with
    :func:`register_task`; :func:`~pdenets.experiments.runner.run_task` does the rest.

    Args:
        config: the task's configuration, an instance of its ``config_class``.

    Attributes:
        name: the registered name (``pdenets run <name>``).
        description: one line for ``pdenets tasks`` and ``--help``.
        config_class: the :class:`~pdenets.experiments.config.TaskConfig` subclass it takes.
        shortcuts: extra command-line names for config fields.
        columns: store columns for queries, ``name -> SQL type``.
        unit: what the progress bar counts.

    Raises:
        TypeError: ``config`` is not an instance of ``config_class``.

    Examples:
        >>> class Demo(Task):
        ...     name = "demo"
        ...     def jobs(self):
        ...         return []
        ...     @staticmethod
        ...     def run_job(spec, context):
        ...         return {}
        ...     def summarize(self, records):
        ...         return {}
        ...     def report(self, results, records, run_dir):
        ...         pass
        >>> Demo(TaskConfig(seed=3)).config.seed
        3
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    config_class: ClassVar[Type[Any]] = TaskConfig
    #: extra command-line names for config fields: ``{"dataset": "datasets"}`` gives ``--dataset``.
    shortcuts: ClassVar[Mapping[str, str]] = {}
    #: store columns for queries (``{"accuracy": "REAL"}``), filled from spec/record fields.
    columns: ClassVar[Mapping[str, str]] = {}
    #: what the progress bar counts
    unit: ClassVar[str] = "runs"
    #: the dataclass ``run_job`` returns: the stored record's schema, checked by ``--report-only`` (a task of
    #: several kinds of job names each job's with :meth:`record_type_of`)
    record_type: ClassVar[Optional[type]] = None

    def __init__(self, config: ConfigT):
        if not isinstance(config, self.config_class):
            raise TypeError(
                f"task {self.name!r} needs a {self.config_class.__name__}, got {type(config).__name__}"
            )
        self.config: ConfigT = config
        #: whether the run shows progress bars (``--no-progress``: not): :meth:`prepare`'s own work reads it
        self.progress = True

    def record_fields(self, spec: Any, record: Mapping[str, Any]) -> RecordFields:
        """The fields of the stored ``record`` of the job ``spec`` that :meth:`summarize` and :meth:`report`
        read, with their kinds (:mod:`pdenets.experiments.records`); ``record`` is given for a record that
        says itself what it holds (a ``diverged`` flag, a ``part``). A stored record without one of them, or
        holding another kind, is left out of the summary and named in the report (default: the fields of the
        task's record dataclass for the job, :meth:`record_type_of`, read by
        :func:`~pdenets.experiments.records.fields_of_dataclass`; without one, none declared, nothing
        checked)."""
        kind = self.record_type_of(spec, record)
        return fields_of_dataclass(kind) if kind is not None else {}

    def record_type_of(self, spec: Any, record: Mapping[str, Any]) -> Optional[type]:
        """The record dataclass ``run_job`` returns for the job ``spec`` (``record``: the stored one, for a
        record that says itself what it holds, a ``diverged`` flag); default: ``record_type``."""
        return self.record_type

    @classmethod
    def quick_config(cls) -> Any:
        """The small variant behind ``--quick`` (default: the full configuration)."""
        return cls.config_class()

    def validate(self) -> None:
        """Refuse a configuration before anything is written (default: ``config.validate()``)."""
        self.config.validate()

    def prepare(self) -> None:
        """Load or check what every job needs (data files) so that problems show before any run (with a
        progress bar where it takes long and :attr:`progress` is set)."""

    @abstractmethod
    def jobs(self) -> Sequence[Any]:
        """The independent runs, as frozen dataclasses (job specs)."""

    @staticmethod
    @abstractmethod
    def run_job(spec: Any, context: RunContext) -> Any:
        """Run one job in ``context`` (its device, data folder, threads); returns its record: an instance of
        the task's ``record_type`` or a dict of JSON-able values (no field named like a spec field). A
        ``run_job(spec)`` of one parameter is called without the context."""

    @abstractmethod
    def summarize(self, records: List[Dict[str, Any]]) -> Any:
        """The results from the stored records (spec and record fields, flattened).

        A :class:`~pdenets.experiments.results.TaskResults` subclass (frozen, typed; its ``to_dict()`` is
        ``results.json``), or a plain JSON-able dict.
        """

    @abstractmethod
    def report(self, results: Any, records: List[Dict[str, Any]], run_dir) -> None:
        """Write figures and the human report into ``run_dir``; ``results`` is what :meth:`summarize`
        returned, with the engine's run facts (``results.run``, or its keys in a plain dict)."""

    def local_context(self) -> RunContext:
        """The context of the work a task does itself, outside its jobs (a report's predictions, on rank 0
        alone under ``torchrun``): this process, on the configuration's device."""
        return run_context(self.config)

    def progress_note(self, record: Dict[str, Any]) -> str:
        """A few words on a finished run for the progress bar (default: none)."""
        return ""

    def new_report(self, results: Union[TaskResults, Mapping[str, Any]], title: str) -> Report:
        """A report that opens with the engine's standard header: ``title``, then one line on the runs.

        The line names the command, the runs stored of those planned and the wall time (from
        the ``runs_stored``, ``runs_planned`` and ``wall_seconds`` entries the runner adds to the
        results), and points to the settings table that :meth:`write_report` appends: a task's
        own text describes its science, not its configuration.

        Args:
            results: the task's results as the runner passes them to :meth:`report` (typed, or a plain dict).
            title: the report's title.

        Returns:
            A :class:`~pdenets.experiments.report.Report` to add the task's sections to.

        Examples:
            >>> task = get_task("synthetic")(get_task("synthetic").quick_config())
            >>> report = task.new_report({"runs_stored": 3, "runs_planned": 4, "wall_seconds": 12.0}, "Demo")
            >>> print(report.markdown().splitlines()[2])  # doctest: +ELLIPSIS
            `pdenets run synthetic`: 3 of 4 runs stored (1 missing); wall time 12.0 s. ...
        """
        report = Report(title)
        clock = results.run.clock if isinstance(results, TaskResults) and results.run is not None else None
        if isinstance(results, TaskResults):
            results = results.to_dict()
        stored, planned = results.get("runs_stored"), results.get("runs_planned")
        runs = f"{stored} of {planned} {self.unit} stored" if stored is not None else "runs"
        if stored is not None and planned is not None and stored < planned:
            runs += f" ({planned - stored} missing)"
        wall = results.get("wall_seconds")
        settings = " Every setting of the run is listed under *Settings* at the end (and in `config.yaml`)."
        if results.get("report_only"):
            report.paragraph(
                f"`pdenets run {self.name}`: {runs}; report rebuilt from the stored runs (`--report-only`)."
                + settings
            )
        elif clock is not None:  # the time when the report is written, the run's one wall time
            report.paragraph(
                lambda: f"`pdenets run {self.name}`: {runs}; wall time {wall_time(clock.state())}." + settings
            )
        else:
            timing = f"; wall time {wall_time(wall)}." if wall is not None else "."
            report.paragraph(f"`pdenets run {self.name}`: {runs}{timing}" + settings)
        left_out = results.get("runs_left_out") or []
        if left_out:
            shown = "; ".join(f"`{entry['key']}`: {md_escape(entry['problem'])}" for entry in left_out[:10])
            more = f"; and {len(left_out) - 10} more" if len(left_out) > 10 else ""
            report.paragraph(
                f"**{len(left_out)} stored {'run is' if len(left_out) == 1 else 'runs are'} left out of "
                f"every table and figure below**: {shown}{more}. A record that lacks a field this version "
                "reads, holds another kind there, or a number that is not finite or out of its range (a "
                "run stored by another version, or edited) is rerun by deleting its row (`DELETE FROM runs "
                "WHERE key = '…'` in `results.sqlite`) and running the same command again."
            )
        return report

    def write_report(self, report: Report, run_dir: Union[str, Path, RunDirectory]) -> List[Path]:
        """Append the *Settings* table (every field of the configuration, its value and meaning) and write the
        report.

        Args:
            report: the report started with :meth:`new_report`.
            run_dir: the run folder (a path or a :class:`~pdenets.experiments.rundir.RunDirectory`).

        Returns:
            The paths of ``report.md`` and ``report.html``.

        Examples:
            >>> import tempfile
            >>> task = get_task("synthetic")(get_task("synthetic").quick_config())
            >>> paths = task.write_report(task.new_report({}, "Demo"), tempfile.mkdtemp())
            >>> "| seed | 0 |" in paths[0].read_text()
            True
        """
        values = config_to_dict(self.config)
        unused = self.settings_left_out()
        rows = [
            [item.name, md_escape(_setting_text(values.get(item.name))), item.metadata.get("help", "")]
            for item in dataclasses.fields(self.config)
            if item.name not in unused
        ]
        report.heading("Settings")
        caption = (
            f"The configuration of this run of `{self.name}` (`config.yaml`); "
            f"`pdenets run {self.name} --help` lists the defaults."
        )
        if unused:
            caption += (
                " Left out, as they do nothing here: "
                + "; ".join(f"{', '.join(names)} ({why})" for why, names in _grouped(unused).items())
                + "."
            )
        report.table(["setting", "value", "meaning"], rows, align="lll", caption=caption)
        return report.write(run_dir)

    def settings_left_out(self) -> Dict[str, str]:
        """Settings that do nothing for this run's data and studies, ``name → why``: the report's *Settings*
        table leaves them out, naming them (``config.yaml`` keeps every setting). Default: none."""
        return {}


def _grouped(reasons: Mapping[str, str]) -> Dict[str, List[str]]:
    """``name → why`` as ``why → names``, in the order first given."""
    grouped: Dict[str, List[str]] = {}
    for name, why in reasons.items():
        grouped.setdefault(why, []).append(name)
    return grouped


def _setting_text(value: Any) -> str:
    """A configuration value as a table cell: lists joined by commas, ``None`` as a dash."""
    if value is None:
        return "—"
    if isinstance(value, (list, tuple)):
        return ", ".join(_setting_text(item) for item in value) or "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{key}={_setting_text(item)}" for key, item in value.items()) or "(none)"
    return str(value)


#: the run options of ``pdenets run`` / ``pdenets reproduce`` (as attribute names): no config field or
#: shortcut may take their names
ENGINE_OPTIONS = frozenset(
    {
        "out",
        "overwrite",
        "quick",
        "config",
        "set",
        "report_only",
        "print_config",
        "no_progress",
        "debug",
        "help",
    }
)


def check_task_class(cls: type) -> None:
    """Refuse a task class the command line could not be built from, in one line naming the task.

    Checked: ``cls`` subclasses :class:`Task`; its ``config_class`` is a dataclass subclassing
    :class:`~pdenets.experiments.config.TaskConfig` that builds with its defaults; ``shortcuts`` maps
    names to existing fields; no option (field, shortcut, ``--no-`` form of a switch) takes a run option's
    name (:data:`ENGINE_OPTIONS`) or another option's.

    Args:
        cls: the task class.

    Raises:
        TypeError: the first problem found.

    Examples:
        >>> class Broken(Task):
        ...     name = "broken"
        ...     shortcuts = {"size": "sizes"}
        >>> check_task_class(Broken)
        Traceback (most recent call last):
        ...
        TypeError: task 'broken' declares shortcuts for unknown fields ['sizes']
    """
    label = f"task {getattr(cls, 'name', getattr(cls, '__name__', cls))!r}"
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise TypeError(f"{label} is not a subclass of pdenets.experiments.Task")
    config_class = cls.config_class
    if not (
        isinstance(config_class, type)
        and dataclasses.is_dataclass(config_class)
        and issubclass(config_class, TaskConfig)
    ):
        raise TypeError(
            f"{label}: config_class {getattr(config_class, '__name__', config_class)!r} must be a "
            "@dataclass that subclasses pdenets.experiments.TaskConfig"
        )
    try:
        fields = config_fields(config_class)
    except Exception as error:  # noqa: BLE001 - any failure means the command line cannot show the defaults
        raise TypeError(
            f"{label}: {config_class.__name__}() cannot be built from its defaults: "
            f"{type(error).__name__}: {error}"
        ) from None
    shortcuts = cls.shortcuts
    if not isinstance(shortcuts, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in shortcuts.items()
    ):
        raise TypeError(
            f"{label}: shortcuts must map option names to field names (strings), got {shortcuts!r}"
        )
    known = {info.name for info in fields}
    unknown = sorted(set(shortcuts.values()) - known)
    if unknown:
        raise TypeError(f"{label} declares shortcuts for unknown fields {unknown}")
    owners: Dict[str, str] = {}
    for info in fields:
        if info.kind == "nested":
            continue
        names = {info.name} | {alias for alias, target in shortcuts.items() if target == info.name}
        options = {n.replace("-", "_") for n in names}
        if info.kind == "bool":
            options |= {f"no_{n}" for n in options}
        for option in sorted(options):
            if option in ENGINE_OPTIONS:
                raise TypeError(
                    f"{label}: the option --{option.replace('_', '-')} of field {info.name!r} collides "
                    "with a run option"
                )
            if owners.setdefault(option, info.name) != info.name:
                raise TypeError(
                    f"{label}: the option --{option.replace('_', '-')} is given to both field "
                    f"{owners[option]!r} and field {info.name!r}"
                )


def check_reproduction(entry: "Reproduction") -> None:
    """Refuse a paper table the command line could not offer: an unknown task, or configurations that are not
    the task's.

    Args:
        entry: the table (its task must be registered first).

    Raises:
        UnknownNameError: ``entry.task`` names no registered task.
        TypeError: ``full``/``quick`` are not callables, or ``full()`` is not a configuration of the task.
    """
    if entry.task not in TASKS:
        raise UnknownNameError(f"table {entry.name!r}: {TASKS.unknown(entry.task)}")
    for name in ("full", "quick"):
        if not callable(getattr(entry, name)):
            raise TypeError(f"table {entry.name!r}: {name} must be a callable that returns the configuration")
    config_class = TASKS[entry.task].config_class
    config = entry.full()
    if not isinstance(config, config_class):
        raise TypeError(
            f"table {entry.name!r}: full() returned a {type(config).__name__}, not a "
            f"{config_class.__name__} of task {entry.task!r}"
        )


def _same_task(old: Type[Task], new: Type[Task]) -> bool:
    """A task registered again from the same module and class (e.g. after a module reload) replaces itself."""
    return (old.__module__, old.__qualname__) == (new.__module__, new.__qualname__)


#: the task registry, name → task class: the built-in tasks (the package root names their package, see
#: :func:`pdenets._registry.declare_home`) and the ``pdenets.tasks`` entry points of other packages
TASKS: Registry[Type[Task]] = Registry(
    "tasks", kind="task", describe=lambda cls: cls.description, same=_same_task
)


def register_task(cls: T) -> T:
    """Class decorator: make a task available to ``pdenets run <name>``.

    Registers ``cls`` under its ``name`` in the task registry. Registering the same class
    again (e.g. after a module reload) replaces the entry; another class under a taken name
    is refused.

    Args:
        cls: the :class:`Task` subclass.

    Returns:
        ``cls`` itself, so the function works as a decorator.

    Raises:
        TypeError: ``cls`` has no non-empty string ``name``, or fails :func:`check_task_class`.
        ValueError: another task is already registered under that name.

    Examples:
        >>> @register_task
        ... class Demo(Task):
        ...     name = "demo-registered"
        ...     def jobs(self):
        ...         return []
        ...     @staticmethod
        ...     def run_job(spec, context):
        ...         return {}
        ...     def summarize(self, records):
        ...         return {}
        ...     def report(self, results, records, run_dir):
        ...         pass
        >>> get_task("demo-registered") is Demo
        True
        >>> del TASKS["demo-registered"]  # leave the registry as it was
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} needs a class attribute 'name'")
    check_task_class(cls)
    TASKS.register(name, cls)
    return cls


def get_task(name: str) -> Type[Task]:
    """The task class registered under ``name`` (the built-in tasks are imported first).

    Args:
        name: the task's registered name.

    Returns:
        The :class:`Task` subclass.

    Raises:
        UnknownNameError: no task has that name (a ``KeyError``; the message suggests a close
            name and lists the valid ones).

    Examples:
        >>> get_task("synthetic").name
        'synthetic'
        >>> try:
        ...     get_task("synthetc")
        ... except KeyError as error:  # an UnknownNameError
        ...     print(error)  # doctest: +ELLIPSIS
        unknown task 'synthetc' (did you mean 'synthetic'?); valid: ...
    """
    return TASKS[name]


@dataclass(frozen=True)
class Reproduction:
    """A paper table: the task, and the configurations of the full and the ``--quick`` run.

    Args:
        name: the table's name (``pdenets reproduce <name>``).
        task: the registered name of the task that computes it.
        full: builds the configuration of the full reproduction.
        quick: builds the configuration of the ``--quick`` variant.
        description: one line describing the table.
    """

    name: str
    task: str
    full: Callable[[], TaskConfig]
    quick: Callable[[], TaskConfig]
    description: str


#: the paper tables, name → :class:`Reproduction`, registered by the task modules (so the tasks load first)
REPRODUCTIONS: Registry[Reproduction] = Registry(
    "tables",
    kind="table",
    describe=lambda entry: entry.description,
    # the same table registered again (a module reloaded) replaces itself; another one under its name is
    # refused
    same=lambda old, new: (
        (old.task, getattr(old.full, "__qualname__", None))
        == (new.task, getattr(new.full, "__qualname__", None))
    ),
    loads_with=(TASKS,),
)


def register_reproduction(
    name: str, task: str, *, full: Callable[[], TaskConfig], quick: Callable[[], TaskConfig], description: str
) -> Reproduction:
    """Make a paper table available to ``pdenets reproduce <name>``.

    The same table registered again (a module reloaded) replaces itself; another table under a taken name is
    refused. ``task`` must be registered already, and
    ``full()`` must return a configuration of it (:func:`check_reproduction`).

    Args:
        name: the table's name.
        task: the registered name of the task that computes it.
        full: a callable returning the configuration of the full reproduction.
        quick: a callable returning the configuration of the ``--quick`` variant.
        description: one line describing the table.

    Returns:
        The registered :class:`Reproduction`.

    Raises:
        UnknownNameError: ``task`` names no registered task.
        TypeError: ``full``/``quick`` are not callables, or ``full()`` is not a configuration of the task.
        ValueError: another table is registered under ``name``.

    Examples:
        >>> synthetic = get_task("synthetic")
        >>> entry = register_reproduction("demo-table", "synthetic", full=synthetic.config_class,
        ...                               quick=synthetic.quick_config, description="a demo table")
        >>> get_reproduction("demo-table") is entry, entry.quick().seed
        (True, 0)
        >>> del REPRODUCTIONS["demo-table"]  # leave the registry as it was
    """
    entry = Reproduction(name, task, full, quick, description)
    check_reproduction(entry)
    caller = sys._getframe(1).f_globals.get("__name__")  # the module that registers the table: its source
    return REPRODUCTIONS.register(name, entry, module=caller)


def get_reproduction(name: str) -> Reproduction:
    """The paper table registered under ``name`` (the built-in tasks are imported first).

    Args:
        name: the table's name, e.g. ``"table1"``.

    Returns:
        The :class:`Reproduction`: task name and full / ``--quick`` configurations.

    Raises:
        UnknownNameError: no table has that name (a ``KeyError``; the message suggests a
            close name and lists the valid ones).

    Examples:
        >>> get_reproduction("table1").task
        'node-classification'
    """
    return REPRODUCTIONS[name]


#: The entry-point group through which a package registers its tasks: importing the module an entry point
#: names must register them (``@register_task``): a user's package adds
#: ``[project.entry-points."pdenets.tasks"] mine = "my_package.tasks"`` to its ``pyproject.toml`` and its
#: tasks appear in ``pdenets tasks`` and ``pdenets run``; a broken one is a
#: :class:`~pdenets._registry.PluginWarning` and leaves the others be.
TASK_ENTRY_POINTS = TASKS.group


def registered_tasks() -> Dict[str, Type[Task]]:
    """A copy of the task registry, name → task class, the built-in tasks included.

    Returns:
        A new dict; changing it does not change the registry.

    Examples:
        >>> "synthetic" in registered_tasks()
        True
    """
    return dict(TASKS)


def registered_reproductions() -> Dict[str, Reproduction]:
    """A copy of the paper-table registry, name → :class:`Reproduction`, the built-in ones included.

    Returns:
        A new dict; changing it does not change the registry.

    Examples:
        >>> "table1" in registered_reproductions()
        True
    """
    return dict(REPRODUCTIONS)
