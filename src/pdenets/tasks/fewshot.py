"""Transductive few-shot classification: the Diff-ResNet ablation (§5.3, Table 2, Figs. 6–10) on offline data.

Studies (``--studies``, all by default):

* ``ablation`` — methods (the paper's five: nearest prototype, LaplacianShot "diffusion",
  convection, external and internal convection-diffusion; and the peers BD-CSPN, PT-MAP, TIM)
  × ways × shots × datasets, mean accuracy and 95 % confidence interval over ``tasks``
  episodes (Table 2's layout);
* ``sensitivity`` — internal convection-diffusion, first dataset, 5-way 1-shot: ``n_top``
  (σ = ⌊n_top/2⌋-th neighbour, Fig. 7), total strength ``rγ`` at γ = 0.5 (Fig. 8), the number
  of steps ``r`` at fixed ``rγ = 5`` (γ = min(1, 5/r), Fig. 9);
* ``timing`` — time per task against the number of diffusion layers at ``rγ = 2`` (Fig. 10);
* ``picture`` — one task's features before and after diffusion, in a 2-D PCA (Fig. 6);
* ``official-runs`` — Omniglot only: the 20 one-shot runs of Lake et al. (2015), error rate.

Data: ``omniglot`` (Conv-4 features, built once and cached), ``clinc150`` (MiniLM features) or the path of
any features file (:mod:`pdenets.data.fewshot`); :func:`pdenets.features.fewshot.dataset_features` says how.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Dict, List, Optional

import numpy as np

from ..data.fewshot import mean_and_interval
from ..experiments.config import ConfigError, TaskConfig, check_fields, setting
from ..experiments.summary import group_records
from ..experiments.task import Task, register_task
from ..features.fewshot import clear_wins, diffuse_on_task_graph, episode_features, episode_scores, episode_sources, \
    features_file, official_runs_source, official_runs_tensors, principal_components, task_points, task_seeds
from ..models.backbones import BackboneTraining
from ..models.fewshot import METHODS, PREPROCESSING, Preprocessing, ablation_method, classify, method_from_name
from ..reports import fewshot as fewshot_report

__all__ = ["FewShotConfig", "FewShotTask", "EpisodeJob", "PREPROCESSING", "STUDIES"]

STUDIES = ("ablation", "sensitivity", "timing", "picture", "official-runs")

#: the most tasks a table cell may ask for (planning is linear in it)
MAX_TASKS_PER_CELL = 10_000_000


@dataclass
class FewShotConfig(TaskConfig):
    """Configuration of ``pdenets run few-shot``."""

    datasets: List[str] = setting(["omniglot"], "omniglot, clinc150 or the path of a features file (.npz/.pkl/.pt)")
    methods: List[str] = setting(list(METHODS), "methods: " + ", ".join(METHODS))
    ways: List[int] = setting([5], "classes per task")
    shots: List[int] = setting([1, 5], "labelled samples per class")
    queries: int = setting(15, "queries per class")
    tasks: int = setting(1000, "tasks per table cell")
    tasks_per_job: int = setting(250, "tasks in one stored job")
    studies: List[str] = setting(list(STUDIES), "studies: " + ", ".join(STUDIES))
    preprocessing: str = setting("normalize", "raw, normalize (L2), centre (base mean + L2) or tricks (centre, "
                                              "cross-domain shift, rectified prototypes)")
    defaults: str = setting("library", "method defaults: library (episode-adaptive graph, prototype-initialized "
                                       "heads, reference LaplacianShot) or paper (the Diff-ResNet ablation's)")
    method_settings: Dict[str, Dict[str, Any]] = setting(
        {}, "per-method settings over the defaults, e.g. --set method_settings.internal.num_steps=5 "
            "(fields of each method's settings class)")
    sensitivity_tasks: int = setting(1000, "tasks per point of the sensitivity sweeps")
    n_top_values: List[int] = setting([4, 6, 8, 10, 12, 16, 20], "n_top values of the sweep (paper units)")
    strengths: List[float] = setting([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.5, 10.0], "total strengths r*gamma (gamma 0.5)")
    step_counts: List[int] = setting([1, 2, 3, 4, 5, 10, 15, 20], "r at fixed r*gamma = fixed_strength")
    fixed_strength: float = setting(5.0, "r*gamma of the steps sweep")
    timing_layers: List[int] = setting([0, 1, 2, 3, 5, 10], "diffusion layers of the timing study")
    timing_tasks: int = setting(200, "tasks per point of the timing study")
    timing_strength: float = setting(2.0, "r*gamma of the timing study (gamma = 1 for r = 1)")
    backbone_epochs: int = setting(30, "Omniglot backbone training epochs")
    backbone_seed: int = setting(0, "Omniglot backbone seed")
    features_dir: Optional[str] = setting(None, "cache of built features (default $PDENETS_FEATURES or "
                                                "~/.cache/pdenets/features)")
    chunk_size: int = setting(100, "tasks trained together (memory ~ chunk x M^2)")

    def method(self, name: str, **changes):
        """The method ``name`` with this config's defaults and settings (``changes`` on top)."""
        values = {**self.method_settings.get(name, {}), **changes}
        return ablation_method(name, **values) if self.defaults == "paper" else method_from_name(name, **values)

    def validate(self) -> None:
        super().validate()
        check_fields(self, non_empty=("datasets", "methods", "ways", "shots", "studies"),
                     choices={"methods": METHODS, "studies": STUDIES, "preprocessing": list(PREPROCESSING),
                              "defaults": ("library", "paper")},
                     counts=("ways", "shots", "queries", "tasks", "tasks_per_job", "sensitivity_tasks", "n_top_values",
                             "step_counts", "timing_tasks", "backbone_epochs", "chunk_size"),
                     non_negative_counts=("timing_layers", "backbone_seed"),
                     positive=("fixed_strength", "timing_strength"), non_negative=("strengths",))
        if any(value < 3 for value in self.n_top_values):
            raise ConfigError("n_top_values must be >= 3 (paper units: n_top - 1 entries are kept, at least 2)")
        if any(ways < 2 for ways in self.ways):
            raise ConfigError("ways must be >= 2: a 1-way task has nothing to classify")
        for name in ("tasks", "sensitivity_tasks", "timing_tasks"):
            if getattr(self, name) > MAX_TASKS_PER_CELL:
                raise ConfigError(f"{name}={getattr(self, name)} is more than {MAX_TASKS_PER_CELL:,} tasks per cell "
                                  "(the 95 % interval is already ~0.03 points at 1,000,000)")
        for name in self.method_settings:
            if name not in METHODS:
                raise ConfigError(f"method_settings.{name}: unknown method; methods: {', '.join(METHODS)}")
            try:
                self.method(name)
            except (TypeError, ValueError) as error:
                raise ConfigError(f"method_settings.{name}: {error}") from None


@dataclass(frozen=True)
class EpisodeJob:
    """Tasks ``first_task … last_task − 1`` of one (study, dataset, ways, shots, settings)."""

    study: str
    dataset: str
    fingerprint: str
    ways: int
    shots: int
    queries: int
    first_task: int
    last_task: int
    seed: int
    method: str
    settings: Any
    preprocessing: Preprocessing
    variable: Optional[float]
    device: str
    features: str = field(default="", metadata={"key": False})
    chunk_size: int = field(default=100, metadata={"key": False})


@dataclass(frozen=True)
class PictureJob:
    dataset: str
    fingerprint: str
    shots: int
    seed: int
    settings: Any
    preprocessing: Preprocessing
    features: str = field(default="", metadata={"key": False})


@dataclass(frozen=True)
class OfficialRunsJob:
    fingerprint: str
    method: str
    settings: Any
    preprocessing: Preprocessing
    features: str = field(default="", metadata={"key": False})


def _run_episodes(spec: EpisodeJob) -> Dict[str, Any]:
    features = features_file(spec.features)
    tasks = range(spec.first_task, spec.last_task)
    episodes, support, query = episode_features(features, spec.ways, spec.shots, spec.queries, spec.seed, tasks)
    start = time.perf_counter()
    probabilities = classify(support.to(spec.device), episodes.support_labels.to(spec.device), query.to(spec.device),
                             spec.ways, method_from_name(spec.method, spec.settings), spec.preprocessing,
                             base_mean=features.mean_of_base(), seeds=task_seeds(spec.seed, tasks),
                             chunk_size=spec.chunk_size)
    seconds = time.perf_counter() - start
    accuracies, log_likelihoods = episode_scores(probabilities, episodes.query_labels)
    return {"accuracies": accuracies, "log_likelihoods": log_likelihoods, "seconds": seconds,
            "seconds_per_task": seconds / len(tasks)}


def _run_picture(spec: PictureJob) -> Dict[str, Any]:
    points, labels, support = task_points(features_file(spec.features), 5, spec.shots, 15, spec.seed,
                                          spec.preprocessing)
    settings = spec.settings
    n_top = settings.n_top or 7  # 5-way, 15 queries: the adaptive rule keeps 7 entries
    steps = settings.num_steps if settings.num_steps is not None else (10 if spec.shots == 1 else 5)
    diffused = diffuse_on_task_graph(points, n_top, min(settings.sigma_neighbor, n_top), settings.step_size, steps)
    return {"before": principal_components(points).tolist(), "after": principal_components(diffused).tolist(),
            "labels": labels.tolist(), "support": support}


def _run_official(spec: OfficialRunsJob) -> Dict[str, Any]:
    training, labels, test, answers, base_mean = official_runs_tensors(spec.features)
    probabilities = classify(training, labels, test, training.shape[1], method_from_name(spec.method, spec.settings),
                             spec.preprocessing, base_mean=base_mean, seeds=list(range(training.shape[0])))
    errors = (probabilities.argmax(2) != answers).double().mean(1)
    return {"errors": errors.tolist(), "error_rate": float(errors.mean())}


@register_task
class FewShotTask(Task):
    name = "few-shot"
    description = "few-shot classification: the Diff-ResNet ablation (Table 2) and peers, any episode shape, sweeps"
    config_class = FewShotConfig
    shortcuts = {"dataset": "datasets", "method": "methods", "way": "ways", "shot": "shots"}
    columns = {"study": "TEXT", "dataset": "TEXT", "ways": "INTEGER", "shots": "INTEGER", "first_task": "INTEGER"}
    unit = "jobs"

    @classmethod
    def quick_config(cls) -> FewShotConfig:
        """50 tasks per cell, two-point sweeps, a backbone trained for 3 epochs (about two minutes on 2 cores for
        Omniglot; CLINC150's 384-d features make the trained heads ~15x dearer per task)."""
        return FewShotConfig(tasks=50, tasks_per_job=50, sensitivity_tasks=20, n_top_values=[4, 8],
                             strengths=[0.0, 5.0], step_counts=[1, 10], timing_layers=[0, 10], timing_tasks=20,
                             backbone_epochs=3)

    def prepare(self) -> None:
        """Build or read every features file (a missing or broken file fails before any run)."""
        config = self.config
        training = BackboneTraining(epochs=config.backbone_epochs, seed=config.backbone_seed)
        self.sources = episode_sources(config.datasets, config.data_dir, training, directory=config.features_dir,
                                       ways=config.ways, centred=config.preprocessing in ("centre", "tricks"),
                                       progress=True)
        self.official = None
        if "official-runs" in config.studies and "omniglot" in self.sources:
            self.official = official_runs_source(config.data_dir, training, directory=config.features_dir,
                                                 progress=True)

    def job_method(self, name: str, **changes):
        """``(name, settings, preprocessing)`` of a job: the config's method and preprocessing, ``rectify`` kept only
        where the method reads prototypes (equal predictions, equal store keys)."""
        method = self.config.method(name, **changes)
        return name, method.settings, PREPROCESSING[self.config.preprocessing].for_method(method)

    def jobs(self) -> List[Any]:
        config = self.config
        jobs: List[Any] = []

        def episodes(study, label, ways, shots, method, tasks, variable=None):
            path, fingerprint, _ = self.sources[label]
            for first in range(0, tasks, config.tasks_per_job):
                jobs.append(EpisodeJob(study, label, fingerprint, ways, shots, config.queries, first,
                                       min(tasks, first + config.tasks_per_job), config.seed, *method, variable,
                                       config.device, path, config.chunk_size))

        if "ablation" in config.studies:
            for label, ways, shots, method in product(self.sources, config.ways, config.shots, config.methods):
                episodes("ablation", label, ways, shots, self.job_method(method), config.tasks)
        first = next(iter(self.sources))
        if "sensitivity" in config.studies:  # (sweep, value, changes); n_top in paper units: n_top − 1 entries kept
            step_size = config.method("internal").settings.step_size
            sweeps = ([("n_top", n_top, {"n_top": n_top - 1, "sigma_neighbor": max(2, n_top // 2)})
                       for n_top in config.n_top_values]
                      + [("strength", strength, {"num_steps": int(round(strength / step_size))})
                         for strength in config.strengths]
                      + [("steps", steps, {"num_steps": steps, "step_size": min(1.0, config.fixed_strength / steps)})
                         for steps in config.step_counts])
            for sweep, value, changes in sweeps:
                episodes(sweep, first, 5, 1, self.job_method("internal", **changes), config.sensitivity_tasks, value)
        if "timing" in config.studies:
            for layers in config.timing_layers:
                gamma = 1.0 if layers == 1 else (config.timing_strength / layers if layers else 0.5)
                settings = self.job_method("internal", num_steps=layers, step_size=min(gamma, 1.0))
                episodes("timing", first, 5, 1, settings, config.timing_tasks, layers)
        if "picture" in config.studies:
            path, fingerprint, _ = self.sources[first]
            for shots in config.shots:
                _, settings, preprocessing = self.job_method("internal")
                jobs.append(PictureJob(first, fingerprint, shots, config.seed, settings, preprocessing, path))
        if self.official is not None:
            for method in config.methods:
                jobs.append(OfficialRunsJob(self.official[1], *self.job_method(method), self.official[0]))
        return jobs

    @staticmethod
    def run_job(spec) -> Dict[str, Any]:
        runners = {EpisodeJob: _run_episodes, PictureJob: _run_picture, OfficialRunsJob: _run_official}
        return runners[type(spec)](spec)

    def progress_note(self, record: Dict[str, Any]) -> str:
        return f"acc={100 * float(np.mean(record['accuracies'])):.1f}%" if "accuracies" in record else ""

    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        results: Dict[str, Any] = {"ablation": {}, "sensitivity": {}, "timing": [], "official_runs": {}}
        episode_records = [r for r in records if "accuracies" in r]
        for (study, dataset, ways, shots, method, variable), members in group_records(
                episode_records, by=("study", "dataset", "ways", "shots", "method", "variable")).items():
            accuracies = [a for m in members for a in m["accuracies"]]
            mean, interval = mean_and_interval(accuracies)
            entry = {"mean": 100 * mean, "ci95": 100 * interval, "tasks": len(accuracies),
                     "seconds_per_task": float(np.mean([m["seconds_per_task"] for m in members]))}
            if study == "ablation":
                results["ablation"].setdefault(dataset, {}).setdefault(f"{ways}-way {shots}-shot", {})[method] = entry
            elif study == "timing":
                results["timing"].append({"layers": int(variable), **entry})
            else:
                results["sensitivity"].setdefault(study, []).append({"value": variable, **entry})
        for runs in (r for r in records if "error_rate" in r):
            results["official_runs"][runs["method"]] = {"error_rate": 100 * runs["error_rate"],
                                                        "per_run": [100 * e for e in runs["errors"]]}
        pictures = [r for r in records if "before" in r]
        if pictures:
            results["picture_shots"] = [p["shots"] for p in pictures]
        results["claim"] = {  # the paper's 1-shot claim: internal beats convection, external, prototype (CIs apart?)
            f"{dataset} {cell}": clear_wins(methods, "internal", ("convection", "external", "prototype"))
            for dataset, cells in results["ablation"].items() for cell, methods in cells.items()
            if "1-shot" in cell and "internal" in methods}
        return results

    def report(self, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
        report = self.new_report(results, "pdenets — transductive few-shot classification (Diff-ResNet §5.3)")
        fewshot_report.add_sections(report, self.config, results, records, run_dir)
        self.write_report(report, run_dir)
