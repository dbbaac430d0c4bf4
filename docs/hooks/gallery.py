"""The examples gallery: every script of ``examples/`` run, and rendered with its output and its figure.

Each example is a short script a user could have written (its docstring's first line is its title, the rest
what it shows). :func:`run_example` runs one in a fresh folder (``examples/_output/<name>/``, not in git):
what it prints goes to ``stdout.txt``, its figure is the PNG it saves, and ``script.sha256`` records which
version of the script *and of the package* made them (the SHA-256 of the script's bytes and of every
``src/pdenets`` module's), so a build reuses the output of a test run (``tests/test_examples.py`` runs them
all, and CI runs the tests before it builds the site) and reruns a script whose code, or whose package,
changed. An example that reads files of the data folder lists them in ``REQUIRES``; without them it is shown
without output, saying which files it needs. A slow machine is slow, not wrong: an example may run up to
``$PDENETS_EXAMPLE_TIMEOUT`` seconds (default 1,800) before it counts as failed, and each one that runs says
so on the build's output.

The build (:func:`on_files`) adds ``gallery/index.md`` (every example, its figure and its time) and one page
per example: the command, the figure, the output and the code.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
OUTPUT = EXAMPLES / "_output"
#: seconds an example may run before it counts as failed (``$PDENETS_EXAMPLE_TIMEOUT`` overrides)
TIMEOUT_S = float(os.environ.get("PDENETS_EXAMPLE_TIMEOUT") or 1800)
_PACKAGE_DIGEST: List[str] = []


def examples() -> List[Path]:
    """The example scripts, by name."""
    return sorted(path for path in EXAMPLES.glob("*.py") if not path.name.startswith("_"))


def _docstring(path: Path) -> Tuple[str, str]:
    text = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or path.stem
    title, _, rest = text.partition("\n")
    return title.strip().rstrip("."), rest.strip()


def requires(path: Path) -> Tuple[str, ...]:
    """The data files (relative to the data folder) the example's ``REQUIRES`` names."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "REQUIRES" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def missing_data(path: Path) -> Optional[str]:
    """The first required data file that is not in the data folder, or ``None``."""
    folder = Path(os.environ.get("PDENETS_DATA") or Path.home() / ".cache" / "pdenets")
    return next((name for name in requires(path) if not (folder / name).is_file()), None)


def package_digest() -> str:
    """The SHA-256 of every module of ``src/pdenets`` (their paths and bytes, in order), once per process."""
    if not _PACKAGE_DIGEST:
        digest = hashlib.sha256()
        package = ROOT / "src" / "pdenets"
        for module in sorted(package.rglob("*.py")):
            digest.update(str(module.relative_to(package)).encode() + b"\0" + module.read_bytes() + b"\0")
        _PACKAGE_DIGEST.append(digest.hexdigest())
    return _PACKAGE_DIGEST[0]


def _sha256(path: Path) -> str:
    """The stamp of an example's output: its script's bytes and the package's digest."""
    return hashlib.sha256(path.read_bytes() + package_digest().encode()).hexdigest()


def fresh(path: Path) -> bool:
    """Whether ``examples/_output/<name>/`` holds the output of this version of the script and package."""
    stamp = OUTPUT / path.stem / "script.sha256"
    return stamp.is_file() and stamp.read_text().strip() == _sha256(path)


def run_example(path: Path, timeout: float = TIMEOUT_S) -> Dict[str, object]:
    """Run one example in ``examples/_output/<name>/``; returns its exit status, seconds, output and
    figures."""
    folder = OUTPUT / path.stem
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():  # an example may write folders (a run folder) beside its files
        shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    environment = {
        **os.environ,
        "MPLBACKEND": "Agg",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
    }
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, str(path)],
            cwd=folder,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        status, output = done.returncode, done.stdout + (done.stderr if done.returncode else "")
    except subprocess.TimeoutExpired:
        status, output = -1, f"stopped after {timeout:g} s"
    seconds = time.perf_counter() - start
    (folder / "stdout.txt").write_text(output, encoding="utf-8")
    (folder / "seconds.txt").write_text(f"{seconds:.1f}\n")
    if status == 0:
        (folder / "script.sha256").write_text(_sha256(path) + "\n")
    return {"status": status, "seconds": seconds, "output": output, "figures": sorted(folder.glob("*.png"))}


def _page(path: Path) -> Tuple[str, Optional[Path], Optional[str]]:
    """The Markdown of one example's page, its figure and its time."""
    title, description = _docstring(path)
    folder = OUTPUT / path.stem
    lines = [f"# {title}", "", description, "", "```bash", f"python examples/{path.name}", "```", ""]
    figure, seconds = None, None
    missing = missing_data(path)
    if missing is not None and not fresh(path):
        lines += [f"*Not run for this site: it reads `{missing}` of the data folder.*", ""]
    else:
        if not fresh(path):
            print(f"gallery: running examples/{path.name} (its code or the package changed)", flush=True)
            result = run_example(path)
            if result["status"] != 0:
                raise RuntimeError(f"examples/{path.name} failed:\n{str(result['output'])[-2000:]}")
        figures = sorted(folder.glob("*.png"))
        figure = figures[0] if figures else None
        seconds = (folder / "seconds.txt").read_text().strip()
        if figure is not None:
            lines += [f'<img class="gallery-figure" src="../{path.stem}.png" alt="{title}">', ""]
        output = (folder / "stdout.txt").read_text(encoding="utf-8").strip()
        lines += [f"Output (ran in {seconds} s on two CPU cores):", "", "```text", output, "```", ""]
    lines += ["## The code", "", "```python", path.read_text(encoding="utf-8").rstrip(), "```", ""]
    return "\n".join(lines), figure, seconds


def gallery() -> Tuple[Dict[str, str], Dict[str, Path]]:
    """The gallery's pages (URI → Markdown) and figures (URI → file)."""
    pages: Dict[str, str] = {}
    figures: Dict[str, Path] = {}
    rows = ["| example | what it shows | time |", "|---|---|---|"]
    for path in examples():
        markdown, figure, seconds = _page(path)
        pages[f"gallery/{path.stem}.md"] = markdown
        if figure is not None:
            figures[f"gallery/{path.stem}.png"] = figure
        title, description = _docstring(path)
        first = description.split(". ")[0].replace("\n", " ").rstrip(".") + "."
        rows.append(
            f"| [{title}]({path.stem}.md) | {first} | {seconds + ' s' if seconds else 'needs data'} |"
        )
    intro = (
        "# Examples\n\nShort scripts, each a job you might bring: your graph, your embeddings, your series, "
        "your "
        "network. Each runs offline in under a minute on two CPU cores, and the tests run every one of them, "
        "so they keep working. Run one with `python examples/<name>.py`: it prints what it found and saves "
        "its figure in the current folder.\n\n"
    )
    pages["gallery/index.md"] = intro + "\n".join(rows) + "\n"
    return pages, figures


def on_files(files, config):
    from mkdocs.structure.files import File

    pages, figures = gallery()
    for uri, markdown in pages.items():
        files.append(File.generated(config, uri, content=markdown))
    for uri, figure in figures.items():
        files.append(File.generated(config, uri, abs_src_path=str(figure)))
    return files
