"""One runner for every task: validate, plan, run what is not stored yet, summarize, report.

:func:`run_task` does, in this order:

1. ``task.validate()`` and ``task.prepare()`` — bad configs and missing data fail here,
   before anything is written to disk;
2. ``task.jobs()`` → one store key per job spec (:func:`~pdenets.experiments.task.job_key`);
3. opens (checks, creates, locks) the run directory and writes ``config.yaml``;
4. runs the jobs whose key is not in ``results.sqlite`` yet — inline, in a process pool or
   on Ray — storing each record the moment it arrives (a rerun resumes);
5. ``task.summarize(records)`` → the task's typed results
   (:class:`~pdenets.experiments.results.TaskResults`) with the engine's
   :class:`~pdenets.experiments.results.RunFacts` → ``results.json`` (their
   :meth:`~pdenets.experiments.results.TaskResults.to_dict`), ``runs.csv``; then ``task.report(...)``, which
   may add what it drew (``results.figures``); ``results.json`` is written again after it.

Launched by ``torchrun`` (``torchrun --nproc-per-node K pdenets run ...``), every process plans the same jobs;
rank 0 does the steps above and sends the others its list of pending jobs; all run them one at a time,
together (a job is then a collective: node classification splits its graph over the processes, image
classification wraps its network in DDP); only rank 0 writes.

A job that raises :class:`~pdenets.NonFiniteError` (a diverged training run) is stored with
status ``diverged`` instead of stopping the whole protocol.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import time
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type, Union

import torch.distributed as dist
import yaml
from tqdm.auto import tqdm

from .._checks import NonFiniteError
from .config import ConfigError, TaskConfig, config_to_dict
from .context import RunContext, run_context
from .distributed import distributed_context
from .parallel import JobError, check_ray_address, execute
from .records import record_dict, record_problem
from .results import RunClock, RunFacts, TaskResults, left_out_to_list
from .rundir import RunDirectory, default_run_path, to_plain
from .store import STORE_FILENAME, UNREADABLE, ResultsStore, StoredRun
from .task import Task, get_task, job_key, spec_to_dict

__all__ = ["run_task", "RunOutcome", "RunInterrupted", "JobFailedError", "plan_jobs"]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a run; every finished run is stored.

    A ``KeyboardInterrupt`` raised by :func:`run_task`; its message reads ``"<stored> of
    <planned> runs stored in <path>"``. Rerunning into the same folder resumes the run.

    Args:
        path: the run directory.
        stored: runs stored in it so far.
        planned: runs the task planned.
    """

    def __init__(self, path: Path, stored: int, planned: int):
        super().__init__(f"{stored} of {planned} runs stored in {path}")
        self.path, self.stored, self.planned = path, stored, planned


class JobFailedError(RuntimeError):
    """A job raised an exception (other than divergence); the runs finished before it are stored.

    Raised by :func:`run_task`; the message names the job and the original error. A job
    that raises :class:`~pdenets.NonFiniteError` is not a failure: it is stored as
    ``diverged``.
    """


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`run_task` did: where, the results, how many runs are planned, stored and new.

    Args:
        path: the run directory.
        results: the task's results, as written to ``results.json``.
        planned: runs the task planned.
        stored: planned runs found in the store at the end.
        new: runs executed by this call (``0`` with ``report_only``).
        seconds: the run's wall time, as its report states it (from ``started``).
        summary: the task's results as :meth:`~pdenets.experiments.task.Task.summarize` returned them (a
            :class:`~pdenets.experiments.results.TaskResults` for the built-in tasks), with the run facts.
        left_out: the stored runs left out of the results, ``(key, problem)`` (:func:`readable_runs`).
    """

    path: Path
    results: Dict[str, Any]
    planned: int
    stored: int
    new: int
    seconds: float
    summary: Any = None
    left_out: Tuple[Tuple[str, str], ...] = ()


def takes_context(run_job: Callable[..., Any]) -> bool:
    """Whether a task's ``run_job`` takes the run's context, ``run_job(spec, context)``; a task written
    before the context existed takes the spec alone, ``run_job(spec)``, and is called so."""
    try:
        parameters = inspect.signature(run_job).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    variadic = any(p.kind == p.VAR_POSITIONAL for p in parameters)
    return variadic or len(positional) >= 2


def _call_job(
    run_job: Callable[..., Any], context: Optional[RunContext], spec: Any
) -> Tuple[str, Dict[str, Any], float]:
    """Worker side: run one job in ``context`` (``None``: a ``run_job(spec)`` of one argument), turn
    divergence into a record, make the record JSON-able (a record dataclass becomes its fields)."""
    start = time.perf_counter()
    try:
        record, status = (run_job(spec) if context is None else run_job(spec, context)), "ok"
    except NonFiniteError as error:
        record, status = {"error": str(error)}, "diverged"
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        record = record_dict(record)
    if not isinstance(record, dict):
        raise TypeError(f"run_job must return a dict or a record dataclass, got {type(record).__name__}")
    return status, to_plain(record), time.perf_counter() - start


#: the most jobs one run may plan (each is a row of the store)
MAX_PLANNED_JOBS = 1_000_000


def plan_jobs(task: Task) -> List[Tuple[str, Any]]:
    """``(key, spec)`` for every job of ``task``; refuses two jobs with the same key, or more than
    :data:`MAX_PLANNED_JOBS` (a setting that multiplies the runs beyond any machine is refused before
    hashing)."""
    specs = task.jobs()
    if hasattr(specs, "__len__") and len(specs) > MAX_PLANNED_JOBS:
        raise ConfigError(
            f"task {task.name!r} plans {len(specs):,} runs, more than {MAX_PLANNED_JOBS:,}: reduce the "
            "settings that multiply them (seeds, sizes, repeats)"
        )
    planned = [(job_key(task.name, spec), spec) for spec in specs]
    seen: Dict[str, Any] = {}
    for key, spec in planned:
        if key in seen:
            raise ValueError(f"task {task.name!r} planned the same job twice: {spec}")
        seen[key] = spec
    return planned


def job_function(task: Task, context: RunContext) -> Callable[[Any], Tuple[str, Dict[str, Any], float]]:
    """What a worker calls on one spec: the task's ``run_job`` in ``context`` (picklable, for a process pool
    or Ray)."""
    run_job = type(task).run_job
    return partial(_call_job, run_job, context if takes_context(run_job) else None)


def _describe(spec: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in spec_to_dict(spec).items() if not isinstance(v, (dict, list)))


def _scalar_columns(record: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in record.items() if v is None or isinstance(v, (str, int, float, bool))}


def _as_task(task: Union[str, Type[Task], Task], config: Optional[TaskConfig]) -> Task:
    if isinstance(task, Task):
        return task
    cls = get_task(task) if isinstance(task, str) else task
    return cls(config if config is not None else cls.config_class())


def run_task(
    task: Union[str, Type[Task], Task],
    config: Optional[TaskConfig] = None,
    *,
    out: Optional[Union[str, Path]] = None,
    overwrite: bool = False,
    progress: bool = True,
    report_only: bool = False,
    runs_root: Union[str, Path] = "runs",
    run_name: Optional[str] = None,
    extra_config: Optional[Dict[str, Any]] = None,
    started: Optional[float] = None,
) -> RunOutcome:
    """Run ``task`` with ``config`` into the run directory ``out`` (default ``runs/<task>-<time>``).

    The steps, in order (see the module docstring): validate and prepare the task, plan the
    jobs and their store keys, open and lock the run directory and write ``config.yaml``,
    run the jobs not yet in ``results.sqlite`` (inline, in a process pool or on Ray),
    summarize into ``results.json`` and ``runs.csv``, and write the task's report.

    Args:
        task: a registered name, a task class or an instance (then ``config`` is ignored).
        config: the task's configuration (default: ``None``, its dataclass defaults).
        out: the run directory; a run of the same task there is resumed (default: ``None``,
            a new folder ``runs_root/<run_name>-<date>-<time>``).
        overwrite: use ``out`` even if it holds other files or another task's run; the
            previous run's own files are removed (default: ``False``).
        progress: show a progress bar (default: ``True``).
        report_only: run nothing; summarize and report the stored runs of the existing
            folder ``out`` (default: ``False``).
        runs_root: the folder of default run directories ``runs_root/<run_name>-<date>-<time>``
            (default: ``"runs"``).
        run_name: the name of the default run directory (default: ``None``, the task name).
        extra_config: more keys for ``config.yaml``, e.g. ``{"quick": True}`` (default:
            ``None``).
        started: ``time.perf_counter()`` when the user's command began, so that the run's one wall time
            (the report's, ``results.json``'s and :attr:`RunOutcome.seconds`) counts reading the data too
            (default: ``None``, now).

    Returns:
        The run directory, the results and the counts of planned, stored and new runs.

    Raises:
        ConfigError / ValueError: bad configuration (nothing written).
        RunDirectoryError, StoreError: ``out`` cannot be used (nothing of the user's touched).
        RunInterrupted: Ctrl-C; finished runs are stored.
        JobFailedError: a job raised; finished runs are stored.

    Examples:
        >>> config = get_task("synthetic").quick_config()
        >>> outcome = run_task("synthetic", config, out="runs/demo")  # doctest: +SKIP
        >>> outcome.path.name, outcome.new == outcome.planned  # doctest: +SKIP
        ('demo', True)
    """
    clock = RunClock(time.perf_counter() if started is None else started)
    task = _as_task(task, config)
    task.validate()
    task.progress = progress
    task.prepare()
    planned = plan_jobs(task)
    if report_only:
        if out is None or not Path(out).is_dir():
            raise ValueError("--report-only builds the report of an existing run: give its folder with --out")
        if not (Path(out) / STORE_FILENAME).is_file():
            raise ValueError(
                f"--report-only: {out} holds no stored runs ({STORE_FILENAME}); run the task there first"
            )
        _refuse_a_smaller_report(task, planned, Path(out))
    if task.config.ray_address and not report_only:
        check_ray_address(task.config.ray_address)  # before the run folder: nothing written for a bad address
    path = Path(out) if out is not None else default_run_path(run_name or task.name, runs_root)
    context = run_context(
        task.config, distributed_context(task.config.device) if launched_by_torchrun() else None
    )
    if (
        context.distributed.active and not context.distributed.is_main
    ):  # a torchrun process beside rank 0: run its share, write nothing
        return _follow_rank_zero(task, planned, clock, context)
    with RunDirectory.open(path, task=task.name, overwrite=overwrite) as run_dir:
        run_dir.write_config(task.name, config_to_dict(task.config), **(extra_config or {}))
        with ResultsStore(run_dir.file(STORE_FILENAME), task=task.name, columns=task.columns) as store:
            if context.distributed.active:  # the other processes run the same pending jobs, in the same order
                pending = [] if report_only else [key for key, _ in planned if key not in store.keys()]
                dist.broadcast_object_list([pending, str(path)], src=0)
            new = 0 if report_only else _run_pending(task, planned, store, path, progress, context)
            stored = store.rows([key for key, _ in planned])
        readable, left_out = readable_runs(task, planned, stored)
        records = [run.flat() for run in readable]
        try:
            summary = task.summarize(records)
            # with report_only the wall time is the report's, not the runs'
            facts = RunFacts(
                len(planned), len(stored), clock.elapsed(), report_only, tuple(left_out), clock=clock
            )
            summary = _with_facts(summary, facts)
            run_dir.write_results(_plain(summary))
            run_dir.write_csv("runs.csv", [_scalar_columns(r) for r in records])
            task.report(summary, records, run_dir)
            # the wall time the report stated (it may add what it drew, e.g. figure names)
            summary = _with_facts(summary, dataclasses.replace(facts, wall_seconds=clock.total()))
            results = _plain(summary)
            run_dir.write_results(results)
        except KeyboardInterrupt:
            raise RunInterrupted(path, len(records), len(planned)) from None
    context.distributed.close()  # under torchrun: the processes leave together, once rank 0 wrote everything
    return RunOutcome(path, results, len(planned), len(stored), new, clock.total(), summary, tuple(left_out))


def _refuse_a_smaller_report(task: Task, planned: Sequence[Tuple[str, Any]], folder: Path) -> None:
    """``--report-only`` with settings whose runs leave some of the folder's stored runs out would replace
    its report with a smaller one: refused before anything is written, naming the settings that differ
    from the run's ``config.yaml``."""
    with ResultsStore(folder / STORE_FILENAME, task=task.name, columns=task.columns) as store:
        stored = store.keys()
    covered = len(stored & {key for key, _ in planned})
    if covered == len(stored):
        return
    given = to_plain(config_to_dict(task.config))
    try:
        document = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
        saved = document.get("config", {}) if isinstance(document, dict) else {}
    except (OSError, yaml.YAMLError):
        saved = None
    if isinstance(saved, dict):
        differ = [name for name in given if name in saved and saved[name] != given[name]]
        shown = "; ".join(f"{name}: {saved[name]!r} stored, {given[name]!r} given" for name in differ[:6])
        settings = (
            f" (the settings that differ from its config.yaml: {shown}"
            + (f"; and {len(differ) - 6} more" if len(differ) > 6 else "")
            + ")"
            if differ
            else " (no setting differs from its config.yaml: this version of pdenets plans the runs of these "
            "settings under other keys, as CHANGELOG.md says of the settings whose meaning changed)"
        )
    else:
        settings = " (its config.yaml cannot be read)"
    raise ValueError(
        f"--report-only: these settings plan {covered} of the {len(stored)} runs stored in "
        f"{folder}{settings}; "
        "its report would leave the others out, so it is kept as it is. Give the run's own settings "
        f"(--config {folder / 'config.yaml'}, and --quick if it was a quick run)"
    )


def readable_runs(
    task: Task, planned: Sequence[Tuple[str, Any]], stored: Sequence[StoredRun]
) -> Tuple[List[StoredRun], List[Tuple[str, str]]]:
    """The stored runs whose record holds every field the task reads (:meth:`Task.record_fields` of its
    spec), and ``(key, problem)`` for each of the others (left out of the summary, named in the report). A
    run stopped by a non-finite number (status ``diverged``) holds only its error: where the task declares
    fields, it is left out the same way, the problem being its error."""
    specs = dict(planned)
    readable, left_out = [], []
    for run in stored:
        problem = None
        if run.status == UNREADABLE:
            problem = run.record["error"]
        elif run.key in specs:
            fields = task.record_fields(specs[run.key], run.record)
            problem = record_problem(run.record, fields)
            if problem is not None and run.status != "ok":
                problem = f"{run.status}: {run.record.get('error', 'no error recorded')}"
        if problem is None:
            readable.append(run)
        else:
            left_out.append((run.key, problem))
    return readable, left_out


def _with_facts(summary: Any, facts: RunFacts) -> Any:
    """A task's summary with the engine's run facts: typed results get ``run``; a plain dict (a task that
    returns one) gets the keys ``runs_planned``, ``runs_stored``, ``wall_seconds`` (and ``report_only``)."""
    if isinstance(summary, TaskResults):
        return dataclasses.replace(summary, run=facts)
    plain = dict(summary)
    plain.update(
        runs_planned=facts.runs_planned, runs_stored=facts.runs_stored, wall_seconds=facts.wall_seconds
    )
    if facts.report_only:
        plain["report_only"] = True
    if facts.left_out:
        plain["runs_left_out"] = left_out_to_list(facts.left_out)
    return plain


def _plain(summary: Any) -> Dict[str, Any]:
    """The ``results.json`` form of a task's summary, typed or a plain dict."""
    return summary.to_dict() if isinstance(summary, TaskResults) else summary


def launched_by_torchrun() -> bool:
    """Whether this process is one of several started by ``torchrun`` (``$WORLD_SIZE`` above 1)."""
    return os.environ.get("WORLD_SIZE", "1").strip() not in ("", "1")


def _follow_rank_zero(
    task: Task, planned: Sequence[Tuple[str, Any]], clock: RunClock, context: RunContext
) -> RunOutcome:
    """A process other than rank 0 under ``torchrun``: run the jobs rank 0 runs (each is a collective: a graph
    split over the processes, or a DDP model), in its order; rank 0 stores the records and writes the
    report."""
    message: List[Any] = [None, None]
    dist.broadcast_object_list(message, src=0)
    pending, path = message
    specs = dict(planned)
    job = job_function(task, context)
    for key in pending:
        job(specs[key])
    context.distributed.close()  # waits for rank 0's results and report; then both close their connections
    return RunOutcome(Path(path), {}, len(planned), 0, len(pending), clock.elapsed())


def _run_pending(
    task: Task,
    planned: Sequence[Tuple[str, Any]],
    store: ResultsStore,
    path: Path,
    progress: bool,
    context: RunContext,
) -> int:
    inline = context.distributed.active
    done = store.keys()
    pending = [(key, spec) for key, spec in planned if key not in done]
    if not pending:
        return 0
    specs = dict(pending)
    config = task.config
    bar = tqdm(
        total=len(planned),
        initial=len(planned) - len(pending),
        desc=task.name,
        unit=task.unit.rstrip("s"),
        disable=not progress,
        smoothing=0.05,
        dynamic_ncols=True,
    )
    new = 0
    results = execute(
        pending,
        job_function(task, context),
        workers=1 if inline else config.workers,
        threads=config.threads,
        ray_address=None if inline else config.ray_address,
    )
    try:
        with closing(results):
            for key, (status, record, seconds) in results:
                spec = spec_to_dict(specs[key])
                clash = sorted(set(spec) & set(record))
                if clash:
                    raise TypeError(f"task {task.name!r}: run_job's record repeats the spec field(s) {clash}")
                store.add(key, spec, record, status=status, seconds=seconds)
                new += 1
                bar.update(1)
                note = task.progress_note(record) if status == "ok" else "diverged"
                if note:
                    bar.set_postfix_str(note, refresh=False)
    except KeyboardInterrupt:
        wanted = {key for key, _ in planned}
        raise RunInterrupted(path, len(wanted & store.keys()), len(planned)) from None
    except JobError as error:
        cause = error.__cause__
        raise JobFailedError(
            f"{task.name} job ({_describe(specs[error.identifier])}) failed: {type(cause).__name__}: {cause}"
        ) from cause
    finally:
        bar.close()
    return new
