"""The settings of ``pdenets run fewshot``: the configuration dataclass and what it names (the task, its
report and its checks read them)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import product
from typing import Any, Dict, List, Optional

from ...data.fewshot import QueryShape
from ...experiments.config import ConfigError, RenamedSettingWarning, TaskConfig, check_fields, setting
from ...models.fewshot import (
    METHODS,
    PREPROCESSING,
    FewShotMethod,
    ablation_method,
    canonical_method_name,
    method_from_name,
    registered_methods,
)

__all__ = ["FewShotConfig", "MAX_TASKS_PER_CELL", "QUERY_MODES", "STUDIES"]


STUDIES = ("ablation", "sensitivity", "timing", "picture", "official-runs")


QUERY_MODES = ("together", "one-at-a-time")


#: the most tasks a table cell may ask for (planning is linear in it)
MAX_TASKS_PER_CELL = 10_000_000


def _current_name(name: Any, setting_name: str) -> Any:
    """A method's current name; a former one is read with a :class:`RenamedSettingWarning` (one
    ``pdenets: warning:`` line on the command line)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        current = canonical_method_name(name)
    if current != name:
        warnings.warn(
            f"{setting_name}: the few-shot method {name!r} is now called {current!r}; {name!r} will be "
            "removed (see CHANGELOG.md)",
            RenamedSettingWarning,
            stacklevel=4,
        )
    return current


@dataclass
class FewShotConfig(TaskConfig):
    """Configuration of ``pdenets run few-shot``."""

    datasets: List[str] = setting(
        ["omniglot"], "omniglot, clinc150 or the path of a features file (.npz/.pkl/.pt)"
    )
    methods: List[str] = setting(list(METHODS), "methods (any registered method): " + ", ".join(METHODS))
    ways: List[int] = setting([5], "classes per task")
    shots: List[int] = setting([1, 5], "labelled samples per class")
    queries: List[int] = setting(
        [15], "queries per class (their mean under Dirichlet proportions); each value a table of its own"
    )
    query_distributions: List[str] = setting(
        ["balanced"],
        "how the queries spread over the classes: balanced or dirichlet:A (Veilleux et al. 2021: A = 2)",
    )
    open_set: List[int] = setting(
        [0], "classes absent from the support that add queries per class each (open set)"
    )
    query_modes: List[str] = setting(
        ["together"], "together (the query set is solved at once) or one-at-a-time (every query its own task)"
    )
    tasks: int = setting(1000, "tasks per table cell")
    tasks_per_job: int = setting(250, "tasks in one stored job")
    studies: List[str] = setting(list(STUDIES), "studies: " + ", ".join(STUDIES))
    preprocessing: str = setting(
        "normalize",
        "raw, normalize (L2), centre (base mean + L2) or tricks (centre, "
        "cross-domain shift, rectified prototypes)",
    )
    defaults: str = setting(
        "library",
        "method defaults: library (episode-adaptive graph, prototype-initialized "
        "heads, reference LaplacianShot) or paper (the Diff-ResNet ablation's)",
    )
    method_settings: Dict[str, Dict[str, Any]] = setting(
        {},
        "per-method settings over the defaults, e.g. --set method_settings.internal.num_steps=5 "
        "(fields of each method's settings class)",
    )
    sensitivity_tasks: int = setting(1000, "tasks per point of the sensitivity sweeps")
    n_top_values: List[int] = setting(
        [4, 6, 8, 10, 12, 16, 20], "n_top values of the sweep (the point itself counted)"
    )
    strengths: List[float] = setting(
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.5, 10.0], "total strengths r*gamma (gamma 0.5)"
    )
    step_counts: List[int] = setting([1, 2, 3, 4, 5, 10, 15, 20], "r at fixed r*gamma = fixed_strength")
    fixed_strength: float = setting(5.0, "r*gamma of the steps sweep")
    timing_layers: List[int] = setting([0, 1, 2, 3, 5, 10], "diffusion layers of the timing study")
    timing_tasks: int = setting(200, "tasks per point of the timing study")
    timing_strength: float = setting(2.0, "r*gamma of the timing study (gamma = 1 for r = 1)")
    backbone_epochs: int = setting(30, "Omniglot backbone training epochs")
    backbone_seed: int = setting(0, "Omniglot backbone seed")
    features_dir: Optional[str] = setting(
        None, "cache of built features (default $PDENETS_FEATURES or ~/.cache/pdenets/features)"
    )
    chunk_size: int = setting(100, "tasks trained together (memory ~ chunk x M^2)")

    def method(self, name: str, **changes: Any) -> FewShotMethod:
        """The method ``name`` with this config's defaults and settings (``changes`` on top)."""
        values = {**self.method_settings.get(name, {}), **changes}
        return (
            ablation_method(name, **values) if self.defaults == "paper" else method_from_name(name, **values)
        )

    def shapes(self) -> List[Any]:
        """Every query-set shape of the ablation: ``(queries, QueryShape, mode)``."""
        return [
            (queries, QueryShape.parse(spread, open_set), mode)
            for queries, spread, open_set, mode in product(
                self.queries, self.query_distributions, self.open_set, self.query_modes
            )
        ]

    def validate(self) -> None:
        super().validate()
        methods = registered_methods()  # read now: a method registered after import is accepted
        # a method's former name (a config.yaml of an older run) is read as its current one, with a warning
        self.methods = [_current_name(name, "methods") for name in self.methods]
        self.method_settings = {
            _current_name(name, "method_settings"): values for name, values in self.method_settings.items()
        }
        check_fields(
            self,
            non_empty=(
                "datasets",
                "methods",
                "ways",
                "shots",
                "studies",
                "queries",
                "query_distributions",
                "open_set",
                "query_modes",
            ),
            choices={
                "methods": methods,
                "studies": STUDIES,
                "preprocessing": list(PREPROCESSING),
                "defaults": ("library", "paper"),
                "query_modes": QUERY_MODES,
            },
            counts=(
                "ways",
                "shots",
                "queries",
                "tasks",
                "tasks_per_job",
                "sensitivity_tasks",
                "n_top_values",
                "step_counts",
                "timing_tasks",
                "backbone_epochs",
                "chunk_size",
            ),
            non_negative_counts=("timing_layers", "backbone_seed", "open_set"),
            positive=("fixed_strength", "timing_strength"),
            non_negative=("strengths",),
        )
        if any(value < 3 for value in self.n_top_values):
            raise ConfigError(
                "n_top_values must be >= 3 (the point itself counted: n_top - 1 entries are kept, at least 2)"
            )
        if any(ways < 2 for ways in self.ways):
            raise ConfigError("ways must be >= 2: a 1-way task has nothing to classify")
        for name in ("tasks", "sensitivity_tasks", "timing_tasks"):
            if getattr(self, name) > MAX_TASKS_PER_CELL:
                raise ConfigError(
                    f"{name}={getattr(self, name)} is more than {MAX_TASKS_PER_CELL:,} tasks per cell "
                    "(the 95 % interval is already ~0.03 points at 1,000,000)"
                )
        for spread in self.query_distributions:
            try:
                QueryShape.parse(spread)
            except ValueError as error:
                raise ConfigError(f"query_distributions: {error}") from None
        for name in self.method_settings:
            if name not in methods:
                raise ConfigError(f"method_settings.{name}: unknown method; methods: {', '.join(methods)}")
            try:
                self.method(name)
            except (TypeError, ValueError) as error:
                raise ConfigError(f"method_settings.{name}: {error}") from None
