"""The task protocol: what a task declares, and the registry ``pdenets run`` dispatches on.

A task is one file of science. It declares

* ``name``, ``description`` and its ``config_class`` (a :class:`~pdenets.experiments.config.TaskConfig`
  dataclass); ``quick_config()`` — the small variant behind ``--quick``;
* :meth:`Task.jobs` — the independent runs it plans, as frozen dataclasses (job specs);
  the hash of a spec is its key in the results store, so every field that changes the
  result belongs in the spec;
* :meth:`Task.run_job` — a static method: one spec in, one record (a JSON-able dict) out;
  it runs in a worker process;
* :meth:`Task.summarize` — records in, the results (``results.json``) out;
* :meth:`Task.report` — writes tables, figures and ``report.md``/``report.html``.

Everything else (validation, the run directory, the store, resume, the process pool or
Ray, progress bars, ``results.json``, ``runs.csv``) is :func:`~pdenets.experiments.runner.run_task`'s.
Tasks register with :func:`register_task`; reproducible paper tables with
:func:`register_reproduction`.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Sequence, Type, TypeVar

from .config import TaskConfig

__all__ = ["Task", "register_task", "get_task", "registered_tasks", "TASKS", "job_key", "spec_to_dict",
           "Reproduction", "register_reproduction", "REPRODUCTIONS", "get_reproduction", "registered_reproductions",
           "UnknownNameError", "unknown_name"]

T = TypeVar("T", bound=Type["Task"])


class UnknownNameError(KeyError):
    """A task, model or table name that is not registered (the message lists the valid ones)."""

    def __str__(self) -> str:  # KeyError quotes its argument; show the message as written
        return str(self.args[0])


def unknown_name(kind: str, name: str, valid: Sequence[str]) -> UnknownNameError:
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return UnknownNameError(f"unknown {kind} {name!r}{hint}; valid: {', '.join(sorted(valid))}")


def spec_to_dict(spec: Any) -> Dict[str, Any]:
    """A job spec (frozen dataclass) as a plain dict, nested dataclasses included."""
    if not dataclasses.is_dataclass(spec) or isinstance(spec, type):
        raise TypeError(f"a job spec must be a dataclass instance, got {type(spec).__name__}")
    return dataclasses.asdict(spec)


def job_key(task: str, spec: Any) -> str:
    """The store key of a job: a hash of the task name, the spec's type and every spec field.

    Fields declared with ``metadata={"key": False}`` are left out (things that cannot change
    the result, such as where the data lives).

    Example:
        >>> @dataclass(frozen=True)
        ... class Spec:
        ...     seed: int
        ...     lr: float
        >>> job_key("demo", Spec(0, 0.1)) == job_key("demo", Spec(0, 0.1)) != job_key("demo", Spec(0, 0.2))
        True
    """
    values = spec_to_dict(spec)
    for item in dataclasses.fields(spec):
        if item.metadata.get("key", True) is False:
            values.pop(item.name)
    text = json.dumps({"task": task, "kind": type(spec).__name__, "spec": values}, sort_keys=True, allow_nan=False,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class Task(ABC):
    """Base class of every task (see the module docstring). Instances hold ``self.config``."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    config_class: ClassVar[Type[TaskConfig]] = TaskConfig
    #: extra command-line names for config fields: ``{"dataset": "datasets"}`` gives ``--dataset``.
    shortcuts: ClassVar[Mapping[str, str]] = {}
    #: store columns for queries (``{"accuracy": "REAL"}``), filled from spec/record fields.
    columns: ClassVar[Mapping[str, str]] = {}
    #: what the progress bar counts
    unit: ClassVar[str] = "runs"

    def __init__(self, config: TaskConfig):
        if not isinstance(config, self.config_class):
            raise TypeError(f"task {self.name!r} needs a {self.config_class.__name__}, got {type(config).__name__}")
        self.config = config

    @classmethod
    def quick_config(cls) -> TaskConfig:
        """The small variant behind ``--quick`` (default: the full configuration)."""
        return cls.config_class()

    def validate(self) -> None:
        """Refuse a configuration before anything is written (default: ``config.validate()``)."""
        self.config.validate()

    def prepare(self) -> None:
        """Load or check what every job needs (data files) so that problems show before any run."""

    @abstractmethod
    def jobs(self) -> Sequence[Any]:
        """The independent runs, as frozen dataclasses (job specs)."""

    @staticmethod
    @abstractmethod
    def run_job(spec: Any) -> Dict[str, Any]:
        """Run one job; returns its record (JSON-able values; no field named like a spec field)."""

    @abstractmethod
    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        """Results (``results.json``) from the stored records (spec and record fields, flattened)."""

    @abstractmethod
    def report(self, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
        """Write figures and the human report into ``run_dir``."""

    def progress_note(self, record: Dict[str, Any]) -> str:
        """A few words on a finished run for the progress bar (default: none)."""
        return ""


TASKS: Dict[str, Type[Task]] = {}


def register_task(cls: T) -> T:
    """Class decorator: make a task available to ``pdenets run <name>``."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} needs a class attribute 'name'")
    previous = TASKS.get(name)
    if previous is not None and (previous.__module__, previous.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"a task named {name!r} is already registered ({TASKS[name].__module__})")
    TASKS[name] = cls
    return cls


def get_task(name: str) -> Type[Task]:
    _load_builtin_tasks()
    if name not in TASKS:
        raise unknown_name("task", name, list(TASKS))
    return TASKS[name]


@dataclass(frozen=True)
class Reproduction:
    """A paper table: the task, and the configurations of the full and the ``--quick`` run."""

    name: str
    task: str
    full: Callable[[], TaskConfig]
    quick: Callable[[], TaskConfig]
    description: str


REPRODUCTIONS: Dict[str, Reproduction] = {}


def register_reproduction(name: str, task: str, *, full: Callable[[], TaskConfig], quick: Callable[[], TaskConfig],
                          description: str) -> Reproduction:
    entry = Reproduction(name, task, full, quick, description)
    REPRODUCTIONS[name] = entry
    return entry


def get_reproduction(name: str) -> Reproduction:
    _load_builtin_tasks()
    if name not in REPRODUCTIONS:
        raise unknown_name("table", name, list(REPRODUCTIONS))
    return REPRODUCTIONS[name]


def _load_builtin_tasks() -> None:
    from .. import tasks  # noqa: F401  (importing the package registers the built-in tasks)


def registered_tasks() -> Dict[str, Type[Task]]:
    _load_builtin_tasks()
    return dict(TASKS)


def registered_reproductions() -> Dict[str, Reproduction]:
    _load_builtin_tasks()
    return dict(REPRODUCTIONS)
