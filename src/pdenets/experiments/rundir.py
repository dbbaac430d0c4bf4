"""Run directories: where a run writes its config, store, results, tables, plots and reports.

Layout of a run directory::

    DIR/config.yaml      the resolved configuration of the latest invocation
    DIR/results.sqlite   every finished run (the store; a rerun resumes from it)
    DIR/results.json     the figures the report shows, as plain keys and numbers
    DIR/*.csv            per-run / per-epoch records
    DIR/*.png            figures
    DIR/report.md        human report (Markdown) ...
    DIR/report.html      ... and the same as HTML
    DIR/.pdenets-run     marker: which task owns the folder, and what it wrote
    DIR/.pdenets-lock    held (``flock``) while a run writes the folder

Rules that keep a user's files safe:

* a folder that holds anything other than a pdenets run of the same task is refused,
  naming what was found, unless ``overwrite=True`` (then the previous run's own files are
  removed and nothing else is touched);
* a folder holding a run of the same task is resumed;
* while a run writes a folder it holds an exclusive lock on it; a second run into the same
  folder is refused with a message naming the process that holds it (the lock dies with
  its process, even on ``kill -9``);
* every file is written atomically (a temporary file in the folder, then a rename), so an
  interrupted write never leaves a half-written ``results.json`` or report.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Dict, Iterable, List, Mapping, Optional, Union

import yaml

from .._io import atomic_write, atomic_write_text, new_temporary_file  # noqa: F401  (re-exported)
from .._output import csv_text

try:  # POSIX advisory locks; elsewhere the lock is best effort (exclusive creation only)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]  # the module or None where the platform has none

__all__ = [
    "RunDirectory",
    "RunDirectoryError",
    "to_plain",
    "atomic_write_text",
    "atomic_write",
    "default_run_path",
    "resolve_inside",
    "file_name_for",
    "MARKER",
    "LOCK",
]

MARKER = ".pdenets-run"
LOCK = ".pdenets-lock"
_STORE_FILES = ("results.sqlite", "results.sqlite-wal", "results.sqlite-shm")


class RunDirectoryError(ValueError):
    """A run directory that cannot be used: a file, read-only, foreign, or in use.

    A ``ValueError`` whose message names the folder, what was found and what to do
    (another ``--out``, ``--overwrite``, or wait for the run that holds the lock).
    """


def to_plain(value: Any) -> Any:
    """Convert numbers, tensors, tuples and dataclass-like values to JSON/YAML-safe types.

    Non-finite floats become ``None`` (JSON has no NaN).
    """
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        return to_plain({name: getattr(value, name) for name in value.__dataclass_fields__})
    if hasattr(value, "tolist"):
        return to_plain(value.tolist())
    return str(value)


#: what a file name built from a label may hold: anything else becomes ``_``
_FILE_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_name_for(label: str, suffix: str = "") -> str:
    """A file name for a user's label (a dataset, a model): letters, digits, ``.``, ``_`` and ``-`` kept,
    anything else ``_``, at most 80 characters; where the label had to change, 8 hex digits of its hash keep
    two labels apart.

    Examples:
        >>> file_name_for("england_covid", "-horizons.png")
        'england_covid-horizons.png'
        >>> file_name_for("../<b>:x", ".png")
        'b_x-9d60639a.png'
    """
    safe = _FILE_NAME_UNSAFE.sub("_", label).strip("._") or "data"
    if safe != label or len(safe) > 80:
        safe = f"{safe[:80]}-{hashlib.sha256(label.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    return safe + suffix


def resolve_inside(folder: Union[str, Path], name: Union[str, Path]) -> Path:
    """The path of the file ``name`` inside ``folder``, refused if it leads anywhere else.

    ``name`` is relative to ``folder`` (an absolute one must lie inside it); ``..`` parts and symbolic links
    are followed before the test, so ``../x`` or a link to ``/etc`` do not get out.

    Args:
        folder: the folder (a run folder, a report's folder).
        name: a file name, possibly with sub-folders.

    Returns:
        The resolved absolute path.

    Raises:
        RunDirectoryError: the path leads outside ``folder`` (a ``ValueError``).

    Examples:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> resolve_inside(folder, "plots/a.png") == folder.resolve() / "plots" / "a.png"
        True
        >>> resolve_inside(folder, "../a.png")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pdenets.experiments.rundir.RunDirectoryError: '../a.png' leads outside the folder ...
    """
    base = Path(folder).resolve()
    target = (base / name).resolve()
    if target != base and base not in target.parents:
        raise RunDirectoryError(
            f"{str(name)!r} leads outside the folder {folder} (to {target}); give the name of a file inside "
            "it"
        )
    return target


def _refuse_broken_symlink(path: Path, option: str) -> None:
    """Refuse ``path`` when it, or a folder above it, is a symbolic link to nothing (dangling or looping).

    ``mkdir`` would only say "File exists" for such a path.
    """
    for candidate in [path, *path.parents]:
        if not candidate.is_symlink():
            continue
        try:
            candidate.resolve(strict=True)
            continue
        except FileNotFoundError:
            problem = "which does not exist"
        except (RuntimeError, OSError):  # RuntimeError: Python < 3.13 on a loop; OSError ELOOP after
            problem = "which loops (the links lead back to themselves)"
        where = f"{option} {path}" + (f": {candidate}" if candidate != path else "")
        raise RunDirectoryError(
            f"{where} is a symlink to {os.readlink(candidate)}, {problem}; create the target "
            f"or choose another {option}"
        )


def default_run_path(name: str, root: Union[str, Path] = "runs") -> Path:
    """A new folder ``root/<name>-<date>-<time>`` (``-2``, ``-3``, ... if taken), created now."""
    root = Path(root)
    _refuse_broken_symlink(root, "runs folder")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RunDirectoryError(f"cannot create {root}: {error.strerror}") from None
    for attempt in range(1, 10_000):
        candidate = root / (f"{name}-{stamp}" + (f"-{attempt}" if attempt > 1 else ""))
        try:
            candidate.mkdir()  # atomic: two runs started in the same second get different folders
            return candidate
        except FileExistsError:
            continue
        except OSError as error:
            raise RunDirectoryError(f"cannot create {candidate}: {error.strerror}") from None
    raise RunDirectoryError(f"no free run folder name under {root}")  # pragma: no cover


def _listing(names: List[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


class RunDirectory:
    """A folder that receives one task's config, store, results, tables, plots and reports.

    Use :meth:`open` (checks, locks) in a ``with`` block; the lock is released on exit.
    A bare ``RunDirectory(path)`` (no checks, no lock) serves tests and report helpers.

    Every file is written atomically (a temporary file beside it, then a rename) and
    recorded in the ``.pdenets-run`` marker of an opened directory, so that ``--overwrite``
    later removes only the run's own files.

    Args:
        path: the folder; it is created (with its parents) if missing.

    Examples:
        >>> import tempfile
        >>> directory = RunDirectory(tempfile.mkdtemp())
        >>> directory.write_results({"accuracy": 0.9}).name
        'results.json'
        >>> directory.read_results()
        {'accuracy': 0.9}
    """

    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock_handle: Optional[IO[str]] = None
        self._written: List[str] = []
        self.task: Optional[str] = None
        self.resumed = False

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Union[str, Path], *, task: str, overwrite: bool = False) -> "RunDirectory":
        """Check, create and lock ``path`` for a run of ``task`` (see the module rules)."""
        path = Path(path)
        _refuse_broken_symlink(path, "--out")
        if path.exists() and not path.is_dir():
            raise RunDirectoryError(f"--out {path} is a file, not a folder; choose a folder name")
        previous = cls._inspect(path, task, overwrite) if path.exists() else None
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunDirectoryError(f"cannot create the run folder {path}: {error.strerror}") from None
        if not os.access(path, os.W_OK | os.X_OK):
            raise RunDirectoryError(f"--out {path} is not writable; choose another folder")
        directory = cls(path)
        directory.task = task
        directory._acquire_lock()
        try:
            if overwrite and previous is not None:
                directory._remove_previous(previous)
            elif previous is not None and previous.get("task") == task:
                directory.resumed = True
                directory._written = list(previous.get("files", []))
            directory._write_marker()
        except BaseException:
            directory.release()
            raise
        return directory

    @staticmethod
    def _inspect(path: Path, task: str, overwrite: bool) -> Optional[Dict[str, Any]]:
        """The previous run's marker (``None`` for an empty folder); refuses foreign folders."""
        try:
            names = sorted(p.name for p in path.iterdir() if p.name not in (LOCK,))
        except OSError as error:
            raise RunDirectoryError(f"cannot list --out {path}: {error.strerror}") from None
        marker = path / MARKER
        previous = None
        if marker.is_file():
            try:
                previous = json.loads(marker.read_text(encoding="utf-8"))
                if not isinstance(previous, dict) or "task" not in previous:
                    raise ValueError
            except (ValueError, OSError, UnicodeDecodeError):
                raise RunDirectoryError(
                    f"{marker} is damaged; this folder cannot be resumed. Choose another --out "
                    "or pass --overwrite to start afresh in it"
                ) from None
        if overwrite:
            return previous
        others = [n for n in names if n != MARKER]
        if previous is None and others:
            raise RunDirectoryError(
                f"--out {path} is not empty and holds no pdenets run (found: {_listing(others)}); choose a "
                "new or empty folder, or pass --overwrite to write into it (files of the same names are "
                "replaced)"
            )
        if previous is not None and previous["task"] != task:
            raise RunDirectoryError(
                f"--out {path} holds a pdenets run of task {previous['task']!r}, not {task!r}; choose "
                "another folder, or pass --overwrite to replace that run"
            )
        return previous

    def _acquire_lock(self) -> None:
        lock_path = self.path / LOCK
        handle = open(lock_path, "a+", encoding="utf-8")
        if fcntl is not None:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                handle.close()
                raise RunDirectoryError(
                    f"{self.path} is in use by another pdenets run ({holder}); wait for it to "
                    "finish or choose another --out"
                ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(
            f"pid {os.getpid()} on {platform.node()}, task {self.task}, since "
            f"{datetime.now().strftime('%Y-%m-%d %H:%M:%S')}"
        )
        handle.flush()
        self._lock_handle = handle

    def release(self) -> None:
        """Release the lock (the folder can then be resumed by another run)."""
        if self._lock_handle is not None:
            if fcntl is not None:
                fcntl.flock(self._lock_handle.fileno(), fcntl.LOCK_UN)
            self._lock_handle.close()
            self._lock_handle = None

    def __enter__(self) -> "RunDirectory":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def _remove_previous(self, previous: Mapping[str, Any]) -> None:
        for name in set(previous.get("files", [])) | set(_STORE_FILES):
            target = self.path / name
            if target.is_file() and target.parent == self.path:
                target.unlink()

    def _write_marker(self) -> None:
        document = {"task": self.task, "pdenets": _version(), "files": sorted(set(self._written))}
        atomic_write_text(self.path / MARKER, json.dumps(document, indent=1) + "\n")

    def register(self, path: Union[str, Path]) -> Path:
        """Record a file written into the folder by other code (it is then part of the run's files)."""
        return self._wrote(Path(path))

    def _wrote(self, path: Path) -> Path:
        if path.parent == self.path and path.name not in self._written:
            self._written.append(path.name)
            if self.task is not None:
                self._write_marker()
        return path

    # -- writing ------------------------------------------------------------------------

    def file(self, name: Union[str, Path]) -> Path:
        """The path of the file ``name`` in the folder; a name leading outside it is refused
        (:func:`resolve_inside`)."""
        resolve_inside(self.path, name)
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        return self._wrote(atomic_write_text(self.file(name), text))

    def write_config(self, task: str, config: Mapping[str, Any], **extra: Any) -> Path:
        document = {
            "task": task,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "pdenets": _version(),
            "python": platform.python_version(),
            **{k: to_plain(v) for k, v in extra.items()},
            "config": to_plain(config),
        }
        return self.write_text("config.yaml", yaml.safe_dump(document, sort_keys=False))

    def write_results(self, results: Mapping[str, Any]) -> Path:
        return self.write_text(
            "results.json", json.dumps(to_plain(results), indent=2, allow_nan=False) + "\n"
        )

    def read_results(self) -> Dict[str, Any]:
        return json.loads(self.file("results.json").read_text(encoding="utf-8"))

    def write_csv(self, name: str, rows: Iterable[Mapping[str, Any]]) -> Path:
        """A table for the user (``runs.csv``): one column per key of any row, empty where a row has none;
        cells a spreadsheet would evaluate neutralized (:mod:`pdenets._output`)."""
        rows = [to_plain(dict(r)) for r in rows]
        fields = list(dict.fromkeys(k for r in rows for k in r))
        cells = ([_cell(r.get(k)) for k in fields] for r in rows)
        return self.write_text(name, csv_text(fields, cells))

    def save_figure(self, figure, name: str, *, dpi: int = 110) -> str:
        """Save a matplotlib figure as ``name`` (atomically), close it, return the file name.

        Its texts are drawn as written (:func:`~pdenets.experiments.plots.keep_text_literal`): a ``$`` in a
        user's name is a dollar sign, while a log axis's powers of ten are typeset."""
        import matplotlib.pyplot as plt

        from .plots import keep_text_literal

        target = self.file(name)
        try:
            keep_text_literal(figure)
            with atomic_write(target, "wb") as stream:
                figure.savefig(
                    stream, dpi=dpi, bbox_inches="tight", format=target.suffix.lstrip(".") or "png"
                )
        finally:
            plt.close(figure)
        self._wrote(target)
        return name


def _cell(value: Any) -> Any:
    """A value as ``csv`` writes it (``None``: empty)."""
    return "" if value is None else value


def _version() -> str:
    from .. import __version__

    return __version__
