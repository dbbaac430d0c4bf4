"""Transductive few-shot classification: the Diff-ResNet ablation (§5.3, Table 2, Figs. 6–10) on offline data.

Studies (``--studies``, all by default):

* ``ablation`` — methods (the paper's five: nearest prototype, LaplacianShot (the paper's "diffusion"),
  convection, external and internal convection-diffusion; and the peers BD-CSPN, PT-MAP, TIM,
  α-TIM, PADDLE) × ways × shots × datasets, mean accuracy and 95 % confidence interval over
  ``tasks`` episodes (Table 2's layout), one table per shape of the query sets: ``queries`` per
  class, spread ``balanced`` or by ``dirichlet:A`` proportions, with ``open_set`` classes absent
  from the support, solved ``together`` or ``one-at-a-time`` (:class:`~pdenets.data.fewshot.QueryShape`);
* ``sensitivity`` — internal convection-diffusion, first dataset, 5-way 1-shot: ``n_top``
  (σ = ⌊n_top/2⌋-th neighbour, Fig. 7), total strength ``rγ`` at γ = 0.5 (Fig. 8), the number
  of steps ``r`` at fixed ``rγ = 5`` (γ = min(1, 5/r), Fig. 9);
* ``timing`` — time per task against the number of diffusion layers at ``rγ = 2`` (Fig. 10);
* ``picture`` — one task's features before and after diffusion, in a 2-D PCA (Fig. 6);
* ``official-runs`` — Omniglot only: the 20 one-shot runs of Lake et al. (2015), error rate.

Data: ``omniglot`` (Conv-4 features, built once and cached), ``clinc150`` (MiniLM features) or the path of
any features file (:mod:`pdenets.data.fewshot`); :func:`pdenets.tasks.fewshot.protocol.dataset_features` says
how.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch

from ...data.fewshot import QueryShape, mean_and_interval
from ...experiments.context import RunContext
from ...experiments.report import md_escape
from ...experiments.summary import group_records
from ...experiments.task import Task, register_task
from ...features.datasets import FEWSHOT_DATASETS
from ...models.backbones import BackboneTraining
from ...models.fewshot import (
    PREPROCESSING,
    InternalSettings,
    Preprocessing,
    adaptive_neighbours,
    classify,
    method_from_name,
    stored_method_name,
)
from . import report as fewshot_report
from .config import STUDIES, FewShotConfig
from .protocol import (
    clear_wins,
    diffuse_on_task_graph,
    episode_features,
    episode_scores,
    episode_sources,
    features_file,
    official_runs_source,
    official_runs_tensors,
    principal_components,
    query_set_facts,
    task_points,
    task_seeds,
)
from .results import (
    AblationTable,
    EpisodeRecord,
    EpisodeSummary,
    FewShotResults,
    OfficialRunsErrors,
    OfficialRunsRecord,
    OpenSetRecord,
    PictureRecord,
    QueryShapeFacts,
    SweepPoint,
    TimingPoint,
)

__all__ = ["FewShotConfig", "FewShotTask", "EpisodeJob", "PREPROCESSING", "STUDIES"]


@dataclass(frozen=True, kw_only=True)
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
    method: str = field(metadata={"stored_value": stored_method_name})
    settings: Any
    preprocessing: Preprocessing
    variable: Optional[float]
    distribution: str = "balanced"
    open_set: int = 0
    query_mode: str = "together"
    features: str = field(default="", metadata={"key": False})
    chunk_size: int = field(default=100, metadata={"key": False})
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}


@dataclass(frozen=True, kw_only=True)
class PictureJob:
    """The picture study's features, before and after diffusion, at one number of shots."""

    dataset: str
    fingerprint: str
    shots: int
    seed: int
    settings: Any
    preprocessing: Preprocessing
    features: str = field(default="", metadata={"key": False})


@dataclass(frozen=True, kw_only=True)
class OfficialRunsJob:
    """One method on the official runs of Lake et al."""

    fingerprint: str
    method: str = field(metadata={"stored_value": stored_method_name})
    settings: Any
    preprocessing: Preprocessing
    features: str = field(default="", metadata={"key": False})


def _run_episodes(spec: EpisodeJob, device: torch.device) -> EpisodeRecord:
    features = features_file(spec.features)
    tasks = range(spec.first_task, spec.last_task)
    shape = QueryShape.parse(spec.distribution, spec.open_set)
    episodes, support, query = episode_features(
        features, spec.ways, spec.shots, spec.queries, spec.seed, tasks, shape
    )
    labels, seeds, count = episodes.support_labels, task_seeds(spec.seed, tasks), query.shape[1]
    solved_labels = episodes.query_labels  # the query sets as solved: their spread decides the † mark
    if spec.query_mode == "one-at-a-time":  # every query its own task, with its task's support and seed
        support, labels = support.repeat_interleave(count, 0), labels.repeat_interleave(count, 0)
        query, seeds = query.reshape(-1, 1, query.shape[2]), [seed for seed in seeds for _ in range(count)]
        solved_labels = solved_labels.reshape(-1, 1)
    facts = query_set_facts(solved_labels, spec.ways)
    start = time.perf_counter()
    probabilities = classify(
        support.to(device),
        labels.to(device),
        query.to(device),
        spec.ways,
        method_from_name(spec.method, spec.settings),
        spec.preprocessing,
        base_mean=features.mean_of_base(),
        seeds=seeds,
        chunk_size=spec.chunk_size,
    )
    seconds = time.perf_counter() - start
    scores = episode_scores(probabilities.reshape(len(tasks), count, spec.ways), episodes.query_labels)
    record: Dict[str, Any] = {
        "accuracies": scores.accuracies,
        "log_likelihoods": scores.log_likelihoods,
        "seconds": seconds,
        "seconds_per_task": seconds / len(tasks),
        "query_sets": facts.query_sets,
        "unbalanced_query_sets": facts.unbalanced,
        "empty_class_query_sets": facts.empty_class,
    }
    if scores.open_auroc is not None:
        record.update(
            open_auroc=scores.open_auroc,
            open_rejected=scores.open_rejected,
            known_rejected=scores.known_rejected,
        )
        return OpenSetRecord(**record)
    return EpisodeRecord(**record)


#: the picture's task: 5-way, 15 queries per class
PICTURE_WAYS, PICTURE_QUERIES = 5, 15


def _run_picture(spec: PictureJob) -> PictureRecord:
    points, labels, support = task_points(
        features_file(spec.features), PICTURE_WAYS, spec.shots, PICTURE_QUERIES, spec.seed, spec.preprocessing
    )
    settings = spec.settings
    # the adaptive rule on the task's balanced classes (shots + queries points each)
    n_top = settings.n_top or adaptive_neighbours(spec.shots + PICTURE_QUERIES)
    steps = settings.num_steps if settings.num_steps is not None else (10 if spec.shots == 1 else 5)
    diffused = diffuse_on_task_graph(
        points, n_top, min(settings.sigma_neighbor, n_top), settings.step_size, steps
    )
    return PictureRecord(
        before=principal_components(points).tolist(),
        after=principal_components(diffused).tolist(),
        labels=labels.tolist(),
        support=support,
    )


def _run_official(spec: OfficialRunsJob) -> OfficialRunsRecord:
    training, labels, test, answers, base_mean = official_runs_tensors(spec.features)
    probabilities = classify(
        training,
        labels,
        test,
        training.shape[1],
        method_from_name(spec.method, spec.settings),
        spec.preprocessing,
        base_mean=base_mean,
        seeds=list(range(training.shape[0])),
    )
    errors = (probabilities.argmax(2) != answers).double().mean(1)
    return OfficialRunsRecord(errors=errors.tolist(), error_rate=float(errors.mean()))


def _episode_summary(members: Sequence[Mapping[str, Any]]) -> EpisodeSummary:
    """The tasks of a group of episode records: accuracy (%) with its 95 % half-width, time, open-set
    scores."""
    accuracies = [a for m in members for a in m["accuracies"]]
    mean, interval = mean_and_interval(accuracies)
    seconds = float(np.mean([m["seconds_per_task"] for m in members]))
    open_set = "open_auroc" in members[0]

    def open_set_mean(name: str) -> Optional[float]:
        return float(np.mean([v for m in members for v in m[name]])) if open_set else None

    query_sets = sum(m["query_sets"] for m in members)
    return EpisodeSummary(
        mean=100 * mean,
        ci95=100 * interval,
        tasks=len(accuracies),
        seconds_per_task=seconds,
        seconds_per_1000_tasks=1000 * seconds,
        unbalanced_share=sum(m["unbalanced_query_sets"] for m in members) / max(query_sets, 1),
        empty_class_share=sum(m["empty_class_query_sets"] for m in members) / max(query_sets, 1),
        open_auroc=open_set_mean("open_auroc"),
        open_rejected=open_set_mean("open_rejected"),
        known_rejected=open_set_mean("known_rejected"),
    )


@register_task
class FewShotTask(Task[FewShotConfig]):
    name = "few-shot"
    description = (
        "few-shot classification: the Diff-ResNet ablation (Table 2) and peers, any episode shape, sweeps"
    )
    config_class = FewShotConfig
    shortcuts = {"dataset": "datasets", "method": "methods", "way": "ways", "shot": "shots"}
    columns = {
        "study": "TEXT",
        "dataset": "TEXT",
        "ways": "INTEGER",
        "shots": "INTEGER",
        "first_task": "INTEGER",
    }
    unit = "jobs"

    def record_type_of(self, spec: Any, record: Mapping[str, Any]) -> type:
        if isinstance(spec, OfficialRunsJob):
            return OfficialRunsRecord
        if isinstance(spec, PictureJob):
            return PictureRecord
        return OpenSetRecord if spec.open_set else EpisodeRecord

    @classmethod
    def quick_config(cls) -> FewShotConfig:
        """50 tasks per cell, two-point sweeps, a backbone trained for 3 epochs (about two minutes on 2 cores
        for Omniglot; CLINC150's 384-d features make the trained heads ~15x dearer per task)."""
        return FewShotConfig(
            tasks=50,
            tasks_per_job=50,
            sensitivity_tasks=20,
            n_top_values=[4, 8],
            strengths=[0.0, 5.0],
            step_counts=[1, 10],
            timing_layers=[0, 10],
            timing_tasks=20,
            backbone_epochs=3,
        )

    def prepare(self) -> None:
        """Build or read every features file (a missing or broken file fails before any run)."""
        config = self.config
        training = BackboneTraining(epochs=config.backbone_epochs, seed=config.backbone_seed)
        self.sources = episode_sources(
            config.datasets,
            config.data_dir,
            training,
            directory=config.features_dir,
            ways=config.ways,
            centred=config.preprocessing in ("centre", "tricks"),
            progress=self.progress,
        )
        self.official = None
        if "official-runs" in config.studies and "omniglot" in self.sources:
            self.official = official_runs_source(
                config.data_dir, training, directory=config.features_dir, progress=self.progress
            )

    def job_method(self, name: str, **changes: Any) -> Tuple[str, Any, Preprocessing]:
        """``(name, settings, preprocessing)`` of a job: the config's method and preprocessing, ``rectify``
        kept only where the method reads prototypes (equal predictions, equal store keys)."""
        method = self.config.method(name, **changes)
        return name, method.settings, PREPROCESSING[self.config.preprocessing].for_method(method)

    def jobs(self) -> List[Any]:
        config = self.config
        jobs: List[Any] = []

        def episodes(
            study: str,
            label: str,
            ways: int,
            shots: int,
            method: Tuple[str, Any, Preprocessing],
            tasks: int,
            variable: Optional[float] = None,
            shape: Optional[Tuple[int, QueryShape, str]] = None,
        ) -> None:
            path, fingerprint, _ = self.sources[label]
            name, settings, preprocessing = method
            queries, spread, mode = shape or (config.queries[0], QueryShape(), "together")
            for first in range(0, tasks, config.tasks_per_job):
                jobs.append(
                    EpisodeJob(
                        study=study,
                        dataset=label,
                        fingerprint=fingerprint,
                        ways=ways,
                        shots=shots,
                        queries=queries,
                        first_task=first,
                        last_task=min(tasks, first + config.tasks_per_job),
                        seed=config.seed,
                        method=name,
                        settings=settings,
                        preprocessing=preprocessing,
                        variable=variable,
                        distribution=spread.distribution,
                        open_set=spread.open_set,
                        query_mode=mode,
                        features=path,
                        chunk_size=config.chunk_size,
                    )
                )

        if "ablation" in config.studies:
            for label, ways, shots, method, shape in product(
                self.sources, config.ways, config.shots, config.methods, config.shapes()
            ):
                episodes("ablation", label, ways, shots, self.job_method(method), config.tasks, shape=shape)
        first = next(iter(self.sources))
        if (
            "sensitivity" in config.studies
        ):  # (sweep, value, changes); n_top in paper units: n_top − 1 entries kept
            internal = config.method("internal").settings
            assert isinstance(internal, InternalSettings)  # the settings_class of the "internal" method
            step_size = internal.step_size
            sweeps = (
                [
                    ("n_top", n_top, {"n_top": n_top - 1, "sigma_neighbor": max(2, n_top // 2)})
                    for n_top in config.n_top_values
                ]
                + [
                    ("strength", strength, {"num_steps": int(round(strength / step_size))})
                    for strength in config.strengths
                ]
                + [
                    (
                        "steps",
                        steps,
                        {"num_steps": steps, "step_size": min(1.0, config.fixed_strength / steps)},
                    )
                    for steps in config.step_counts
                ]
            )
            for sweep, value, changes in sweeps:
                episodes(
                    sweep,
                    first,
                    5,
                    1,
                    self.job_method("internal", **changes),
                    config.sensitivity_tasks,
                    value,
                )
        if "timing" in config.studies:
            for layers in config.timing_layers:
                gamma = 1.0 if layers == 1 else (config.timing_strength / layers if layers else 0.5)
                settings = self.job_method("internal", num_steps=layers, step_size=min(gamma, 1.0))
                episodes("timing", first, 5, 1, settings, config.timing_tasks, layers)
        if "picture" in config.studies:
            path, fingerprint, _ = self.sources[first]
            for shots in config.shots:
                _, settings, preprocessing = self.job_method("internal")
                jobs.append(
                    PictureJob(
                        dataset=first,
                        fingerprint=fingerprint,
                        shots=shots,
                        seed=config.seed,
                        settings=settings,
                        preprocessing=preprocessing,
                        features=path,
                    )
                )
        if self.official is not None:
            for method in config.methods:
                name, settings, preprocessing = self.job_method(method)
                jobs.append(
                    OfficialRunsJob(
                        fingerprint=self.official[1],
                        method=name,
                        settings=settings,
                        preprocessing=preprocessing,
                        features=self.official[0],
                    )
                )
        return jobs

    @staticmethod
    def run_job(spec, context: RunContext) -> Any:
        if isinstance(spec, EpisodeJob):
            return _run_episodes(spec, context.device)
        runners: Dict[type, Callable[[Any], Any]] = {
            PictureJob: _run_picture,
            OfficialRunsJob: _run_official,
        }
        return runners[type(spec)](spec)

    def progress_note(self, record: Dict[str, Any]) -> str:
        return f"acc={100 * float(np.mean(record['accuracies'])):.1f}%" if "accuracies" in record else ""

    def summarize(self, records: List[Dict[str, Any]]) -> FewShotResults:
        """The ablation tables by query-set shape, the sweeps, the official runs and the 1-shot claim of the
        stored records (:class:`~pdenets.tasks.fewshot.results.FewShotResults`)."""
        ablation: Dict[str, Dict[str, AblationTable]] = {}
        shapes: Dict[str, QueryShapeFacts] = {}
        sensitivity: Dict[str, List[SweepPoint]] = {}
        timing: List[TimingPoint] = []
        episode_records = [r for r in records if "accuracies" in r]
        for (
            study,
            dataset,
            ways,
            shots,
            method,
            variable,
            queries,
            spread,
            open_set,
            mode,
        ), members in group_records(
            episode_records,
            by=(
                "study",
                "dataset",
                "ways",
                "shots",
                "method",
                "variable",
                "queries",
                "distribution",
                "open_set",
                "query_mode",
            ),
        ).items():
            summary = _episode_summary(members)
            if study == "ablation":
                shape = fewshot_report.shape_label(queries, spread, open_set, mode)
                shapes[shape] = QueryShapeFacts(
                    queries=queries,
                    distribution=spread,
                    open_set=open_set,
                    query_mode=mode,
                    balanced=spread == "balanced" and not open_set and mode == "together",
                )
                ablation.setdefault(shape, {}).setdefault(dataset, {}).setdefault(
                    f"{ways}-way {shots}-shot", {}
                )[method] = summary
            elif study == "timing":
                timing.append(TimingPoint(layers=int(variable), episodes=summary))
            else:
                sensitivity.setdefault(study, []).append(SweepPoint(value=variable, episodes=summary))
        official_runs = {
            runs["method"]: OfficialRunsErrors(
                error_rate=100 * runs["error_rate"], per_run=[100 * e for e in runs["errors"]]
            )
            for runs in records
            if "error_rate" in runs
        }
        pictures = [r for r in records if "before" in r]
        first_shape = next(iter(ablation), None)
        claim = {  # the paper's 1-shot claim: internal beats convection, external, prototype (CIs apart?)
            f"{dataset} {cell}" + ("" if shape == first_shape else f" ({shape})"): clear_wins(
                methods, "internal", ("convection", "external", "prototype")
            )
            for shape, tables in ablation.items()
            if shapes[shape].balanced
            for dataset, cells in tables.items()
            for cell, methods in cells.items()
            if "1-shot" in cell and "internal" in methods
        }
        return FewShotResults(
            ablation=ablation,
            shapes=shapes,
            sensitivity=sensitivity,
            timing=timing,
            official_runs=official_runs,
            picture_shots=[p["shots"] for p in pictures] if pictures else None,
            claim=claim,
        )

    def report(self, results: FewShotResults, records: List[Dict[str, Any]], run_dir) -> None:
        sources = getattr(self, "sources", {})
        report = self.new_report(
            results,
            "pdenets — transductive few-shot classification: "
            + ", ".join(md_escape(label) for label in sources),
        )
        described = {
            label: fewshot_report.describe(label, path, features)
            for label, (path, _, features) in sources.items()
        }
        fewshot_report.add_sections(report, self.config, results, records, run_dir, described)
        self.write_report(report, run_dir)

    def settings_left_out(self) -> Dict[str, str]:
        """The backbone's settings where no dataset is built from images, and the settings of the studies not
        run."""
        config = self.config
        unused: Dict[str, str] = {}
        built = [dataset for dataset in config.datasets if dataset.lower() in FEWSHOT_DATASETS]
        if not any(FEWSHOT_DATASETS[name.lower()].modality == "images" for name in built):
            for name in ("backbone_epochs", "backbone_seed"):
                unused[name] = "they train the Omniglot backbone; the features here are given"
        if not built:
            unused["features_dir"] = "the cache of built features; the features here are files"
        studies = {
            "sensitivity": (
                "sensitivity_tasks",
                "n_top_values",
                "strengths",
                "step_counts",
                "fixed_strength",
            ),
            "timing": ("timing_layers", "timing_tasks", "timing_strength"),
        }
        for study, names in studies.items():
            if study not in config.studies:
                for name in names:
                    unused[name] = f"settings of the {study} study, which did not run"
        return unused
