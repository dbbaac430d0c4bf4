"""Run directories: every ``pdenets run`` writes ``config.yaml``, ``results.json``, reports and plots.

Layout of a run directory::

    DIR/config.yaml      the resolved configuration (what actually ran)
    DIR/results.json     the figures the report shows, as plain keys and numbers
    DIR/*.csv            per-run / per-epoch records
    DIR/report.md        human report (Markdown) ...
    DIR/report.html      ... and the same as HTML, both referencing DIR/*.png
"""

from __future__ import annotations

import csv
import json
import math
import platform
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Union

import yaml

__all__ = ["RunDirectory", "to_plain"]


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
    if hasattr(value, "tolist"):
        return to_plain(value.tolist())
    return str(value)


class RunDirectory:
    """A directory that receives one run's config, results, tables, plots and reports."""

    def __init__(self, path: Union[str, Path]):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def file(self, name: str) -> Path:
        return self.path / name

    def write_config(self, task: str, config: Mapping[str, Any]) -> Path:
        document = {
            "task": task,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "config": to_plain(config),
        }
        target = self.file("config.yaml")
        target.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        return target

    def write_results(self, results: Mapping[str, Any]) -> Path:
        target = self.file("results.json")
        target.write_text(json.dumps(to_plain(results), indent=2, allow_nan=False) + "\n", encoding="utf-8")
        return target

    def read_results(self) -> Dict[str, Any]:
        return json.loads(self.file("results.json").read_text(encoding="utf-8"))

    def write_csv(self, name: str, rows: Iterable[Mapping[str, Any]]) -> Path:
        rows = [to_plain(dict(r)) for r in rows]
        target = self.file(name)
        fields = list(dict.fromkeys(k for r in rows for k in r))
        with target.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        return target
