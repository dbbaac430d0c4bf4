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

Data: ``omniglot`` (a Conv-4 backbone trained on the base alphabets embeds the novel ones;
built once and cached), ``clinc150`` (utterances embedded by the packaged MiniLM; needs
``pdenets[text]``) or the path of any features file (:mod:`pdenets.data.fewshot`).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

from ..features import cached_features, official_runs_features, omniglot_features
from ..data.fewshot import EpisodeSampler, FeatureSet, load_features, mean_and_interval
from ..experiments.cache import process_cache
from ..experiments.config import ConfigError, TaskConfig, check_fields, setting
from ..experiments.plots import CLASS_COLORS, errorbar_lines, plt, scatter_classes
from ..experiments.report import Report
from ..experiments.summary import PaperValue, format_mean_std, group_records
from ..experiments.task import Task, register_task
from ..models.backbones import BackboneTraining
from ..models.fewshot import METHODS, PREPROCESSING, Preprocessing, ablation_method, classify, method_from_name, \
    preprocess
from ..models.fewshot.heads import HeadSettings, task_graphs

__all__ = ["FewShotConfig", "FewShotTask", "EpisodeJob", "PREPROCESSING", "STUDIES"]

STUDIES = ("ablation", "sensitivity", "timing", "picture", "official-runs")
METHOD_NAMES = {"prototype": "Nearest prototype", "diffusion": "Diffusion (LaplacianShot)",
                "convection": "Convection", "external": "External convection-diffusion",
                "internal": "Internal convection-diffusion (Diff-ResNet)", "bd-cspn": "BD-CSPN",
                "pt-map": "PT-MAP", "tim": "TIM-GD"}
PAPER_METHODS = ("prototype", "diffusion", "convection", "external", "internal")
_SOURCE = "Diff-ResNet paper, Table 2 (miniImageNet, ResNet-18, 5-way, 1,000 tasks)"
#: Table 2, miniImageNet with a ResNet-18 backbone: the paper's numbers for context (other data, other backbone).
PAPER_TABLE2 = {("prototype", 1): PaperValue(57.09, None, _SOURCE), ("prototype", 5): PaperValue(79.30, None, _SOURCE),
                ("diffusion", 1): PaperValue(57.81, None, _SOURCE), ("diffusion", 5): PaperValue(79.54, None, _SOURCE),
                ("convection", 1): PaperValue(53.04, None, _SOURCE), ("convection", 5): PaperValue(79.58, None, _SOURCE),
                ("external", 1): PaperValue(55.30, None, _SOURCE), ("external", 5): PaperValue(79.55, None, _SOURCE),
                ("internal", 1): PaperValue(68.47, None, _SOURCE), ("internal", 5): PaperValue(80.02, None, _SOURCE)}
_LAKE = "Lake et al., Science 2015 (20 one-shot runs)"
#: Published error rates (%) on the 20 official Omniglot one-shot runs.
PUBLISHED_RUN_ERRORS = {"Modified Hausdorff distance": PaperValue(38.8, None, _LAKE),
                        "Siamese ConvNet (Koch et al. 2015)": PaperValue(8.0, None, "Koch et al., ICML DL workshop 2015"),
                        "People": PaperValue(4.5, None, _LAKE),
                        "Bayesian program learning": PaperValue(3.3, None, _LAKE)}


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
        for name, values in self.method_settings.items():
            if name not in METHODS:
                raise ConfigError(f"method_settings.{name}: unknown method; methods: {', '.join(METHODS)}")
            try:
                self.method(name)
            except (TypeError, ValueError) as error:
                raise ConfigError(f"method_settings.{name}: {error}") from None


# ----------------------------------------------------------------------------------------
# jobs


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


@process_cache(maxsize=4)
def _features(path: str) -> FeatureSet:
    return load_features(path)


def _task_seeds(seed: int, tasks: range) -> List[int]:
    return [int(np.random.SeedSequence([seed, t]).generate_state(1)[0]) for t in tasks]


def _episodes(features: FeatureSet, ways: int, shots: int, queries: int, seed: int, tasks: range):
    sampler = EpisodeSampler(features.labels, features.novel_classes, ways=ways, shots=shots, queries=queries,
                             seed=seed)
    episodes = sampler.sample(tasks)
    return episodes, features.features[episodes.support], features.features[episodes.query]


def _run_episodes(spec: EpisodeJob) -> Dict[str, Any]:
    features = _features(spec.features)
    tasks = range(spec.first_task, spec.last_task)
    episodes, support, query = _episodes(features, spec.ways, spec.shots, spec.queries, spec.seed, tasks)
    device = torch.device(spec.device)
    start = time.perf_counter()
    probabilities = classify(support.to(device), episodes.support_labels.to(device), query.to(device), spec.ways,
                             method_from_name(spec.method, spec.settings), spec.preprocessing,
                             base_mean=features.mean_of_base(), seeds=_task_seeds(spec.seed, tasks),
                             chunk_size=spec.chunk_size)
    seconds = time.perf_counter() - start
    probabilities = probabilities.cpu().double()
    correct = (probabilities.argmax(2) == episodes.query_labels).double().mean(1)
    true_class = probabilities.gather(2, episodes.query_labels.unsqueeze(2)).squeeze(2)
    return {"accuracies": correct.tolist(), "log_likelihoods": true_class.clamp_min(1e-300).log().mean(1).tolist(),
            "seconds": seconds, "seconds_per_task": seconds / len(tasks)}


def _pca(points: torch.Tensor, components: int = 2) -> torch.Tensor:
    centred = points - points.mean(0)
    _, _, directions = torch.linalg.svd(centred.double(), full_matrices=False)
    return (centred.double() @ directions[:components].T).float()


def _run_picture(spec: PictureJob) -> Dict[str, Any]:
    features = _features(spec.features)
    episodes, support, query = _episodes(features, 5, spec.shots, 15, spec.seed, range(1))
    support, query = preprocess(support, query, spec.preprocessing, features.mean_of_base())
    inputs = torch.cat([support, query], 1)
    settings = spec.settings
    n_top = settings.n_top or 7  # 5-way, 15 queries: the adaptive rule keeps 7 entries
    steps = settings.num_steps if settings.num_steps is not None else (10 if spec.shots == 1 else 5)
    weights = task_graphs(inputs, HeadSettings(n_top=n_top, sigma_neighbor=min(settings.sigma_neighbor, n_top)))[0]
    laplacian = torch.diag(weights.sum(1)) - weights
    diffused = torch.linalg.matrix_power(torch.eye(len(weights)) - settings.step_size * laplacian, steps) @ inputs[0]
    labels = torch.cat([episodes.support_labels[0], episodes.query_labels[0]])
    return {"before": _pca(inputs[0]).tolist(), "after": _pca(diffused).tolist(), "labels": labels.tolist(),
            "support": support.shape[1]}


def _run_official(spec: OfficialRunsJob) -> Dict[str, Any]:
    from ..data.graphs import read_npz_arrays

    arrays = read_npz_arrays(spec.features)
    training, test = torch.from_numpy(arrays["training"]), torch.from_numpy(arrays["test"])
    answers = torch.from_numpy(arrays["answers"])
    labels = torch.arange(training.shape[1]).expand(training.shape[0], -1)
    probabilities = classify(training, labels, test, training.shape[1], method_from_name(spec.method, spec.settings),
                             spec.preprocessing,
                             base_mean=torch.from_numpy(arrays["base_mean"]), seeds=list(range(training.shape[0])))
    errors = (probabilities.argmax(2) != answers).double().mean(1)
    return {"errors": errors.tolist(), "error_rate": float(errors.mean())}


_RUNNERS = {EpisodeJob: _run_episodes, PictureJob: _run_picture, OfficialRunsJob: _run_official}


def _fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


# ----------------------------------------------------------------------------------------
# the task


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

    # -- data -----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Build or read every features file (a missing or broken file fails before any run)."""
        config = self.config
        training = BackboneTraining(epochs=config.backbone_epochs, seed=config.backbone_seed)
        self.sources: Dict[str, Tuple[str, str, FeatureSet]] = {}
        for dataset in config.datasets:
            label = dataset.lower()
            if label == "omniglot":
                path, features = omniglot_features(config.data_dir, training, directory=config.features_dir,
                                                   progress=True)
            elif label == "clinc150":
                from ..data.text import clinc150_features

                path, features = cached_features("clinc150-minilm", lambda: clinc150_features(config.data_dir),
                                                 config.features_dir, progress=True)
            else:
                path, features = Path(dataset), load_features(dataset)
                label = path.stem
            if config.preprocessing in ("centre", "tricks") and features.mean_of_base() is None:
                raise ConfigError(f"{path} has no base classes nor base_mean to centre with; use --preprocessing "
                                  "normalize or raw")
            for ways in config.ways:
                if ways > len(features.novel_classes):
                    raise ConfigError(f"{ways}-way tasks but {path} has {len(features.novel_classes)} novel classes")
            self.sources[label] = (str(path), _fingerprint(path), features)
        self.official = None
        if "official-runs" in config.studies and "omniglot" in self.sources:
            path, _ = official_runs_features(config.data_dir, training, directory=config.features_dir, progress=True)
            self.official = (str(path), _fingerprint(path))

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
            for label in self.sources:
                for ways in config.ways:
                    for shots in config.shots:
                        for method in config.methods:
                            episodes("ablation", label, ways, shots, self.job_method(method), config.tasks)
        first = next(iter(self.sources))
        if "sensitivity" in config.studies:
            for value in config.n_top_values:  # paper units: value - 1 entries kept, sigma = floor(value/2)-th
                settings = self.job_method("internal", n_top=value - 1, sigma_neighbor=max(2, value // 2))
                episodes("n_top", first, 5, 1, settings, config.sensitivity_tasks, value)
            for strength in config.strengths:
                steps = int(round(strength / config.method("internal").settings.step_size))
                settings = self.job_method("internal", num_steps=steps)
                episodes("strength", first, 5, 1, settings, config.sensitivity_tasks, strength)
            for steps in config.step_counts:
                gamma = min(1.0, config.fixed_strength / steps)
                settings = self.job_method("internal", num_steps=steps, step_size=gamma)
                episodes("steps", first, 5, 1, settings, config.sensitivity_tasks, steps)
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
        return _RUNNERS[type(spec)](spec)

    def progress_note(self, record: Dict[str, Any]) -> str:
        if "accuracies" in record:
            return f"acc={100 * float(np.mean(record['accuracies'])):.1f}%"
        return ""

    # -- results --------------------------------------------------------------------------

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
        results["claim"] = _claim(results["ablation"])
        return results

    def report(self, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
        _write_report(self, results, records, run_dir)


def _claim(ablation: Dict[str, Any]) -> Dict[str, Any]:
    """The paper's 1-shot claim per table: internal beats convection, external and prototype (95 % CIs apart?)."""
    verdicts = {}
    for dataset, cells in ablation.items():
        for cell, methods in cells.items():
            if "1-shot" not in cell or "internal" not in methods:
                continue
            internal = methods["internal"]
            beats = {}
            for other in ("convection", "external", "prototype"):
                if other in methods:
                    gap = internal["mean"] - methods[other]["mean"]
                    beats[other] = {"difference": gap,
                                    "clearly": gap > internal["ci95"] + methods[other]["ci95"]}
            verdicts[f"{dataset} {cell}"] = beats
    return verdicts


# ----------------------------------------------------------------------------------------
# report


def _write_report(task: FewShotTask, results, records, run_dir) -> None:
    config = task.config
    figures = results.setdefault("figures", {})
    report = Report("pdenets — transductive few-shot classification (Diff-ResNet §5.3)")
    report.paragraph(
        f"{results['runs_stored']} of {results['runs_planned']} jobs stored; wall time {results['wall_seconds']:.0f} s. "
        f"Preprocessing `{config.preprocessing}`; `{config.defaults}` method defaults. Accuracies in %, mean ± 95 % "
        "confidence interval (1.96 σ/√n) over tasks. Settings per method:")
    report.bullets([f"**{METHOD_NAMES.get(name, name)}**: {_describe(config.method(name).settings)}"
                    for name in config.methods])
    if results["ablation"]:
        _ablation_section(report, results, config)
    if results["official_runs"]:
        _official_section(report, results)
    if results["sensitivity"]:
        figures["sensitivity"] = _sensitivity_figure(results["sensitivity"], run_dir)
        report.heading("Sensitivity (Figs. 7–9): internal convection-diffusion, 5-way 1-shot")
        rows = [[study, format_mean_std(point["value"], digits=2), f"{point['mean']:.2f} ± {point['ci95']:.2f}",
                 point["tasks"]] for study, points in results["sensitivity"].items() for point in points]
        report.table(["sweep", "value", "accuracy (%)", "tasks"], rows,
                     caption="n_top in paper units (n_top − 1 entries kept, sigma = ⌊n_top/2⌋-th entry); strength = "
                             "r·γ at γ = 0.5; steps = r at r·γ = 5 (γ = min(1, 5/r)).")
        report.figure(figures["sensitivity"], "Accuracy against n_top, total strength rγ and the number of steps r "
                                              "at fixed rγ (error bars: 95 % CI).")
    if results["timing"]:
        figures["timing"] = _timing_figure(results["timing"], run_dir)
        report.heading("Time per task against diffusion layers (Fig. 10)")
        rows = [[p["layers"], f"{1000 * p['seconds_per_task']:.2f}", f"{p['mean']:.2f} ± {p['ci95']:.2f}"]
                for p in sorted(results["timing"], key=lambda p: p["layers"])]
        report.table(["diffusion layers r", "ms per task (batched)", "accuracy (%)"], rows,
                     caption="rγ = 2 (γ = 1 for r = 1); tasks trained together in batches; measured inside a worker "
                             "process, so other jobs may share the machine.")
        report.figure(figures["timing"], "Time per task and accuracy against the number of diffusion layers.")
    pictures = [r for r in records if "before" in r]
    if pictures:
        figures["picture"] = _picture_figure(pictures, run_dir)
        report.heading("One task before and after diffusion (Fig. 6)")
        report.figure(figures["picture"], "2-D PCA of one 5-way task's features before and after r diffusion steps "
                                          "on its graph (stars: support, dots: queries; colours: classes).")
    report.write(run_dir)


def _describe(settings) -> str:
    from dataclasses import fields

    values = [f"{item.name} {getattr(settings, item.name)}" for item in fields(settings)]
    return ", ".join(values).replace("None", "auto") or "none"


def _ablation_section(report: Report, results, config: FewShotConfig) -> None:
    report.heading("Ablation (Table 2 layout)")
    for dataset, cells in results["ablation"].items():
        columns = list(cells)
        rows = []
        for method in config.methods:
            row = [METHOD_NAMES.get(method, method)]
            for cell in columns:
                entry = cells[cell].get(method)
                text = f"{entry['mean']:.2f} ± {entry['ci95']:.2f}" if entry else "—"
                if entry and entry["tasks"] != config.tasks:  # a partial run says how many tasks it has so far
                    text += f" ({entry['tasks']} tasks)"
                row.append(text)
            rows.append(row)
        report.table([dataset] + columns, rows, caption=f"{config.tasks} tasks per cell unless marked, "
                                                        f"{config.queries} queries per class; — : not run yet.")
    report.paragraph(
        "For context, the paper's Table 2 on miniImageNet with a ResNet-18 (raw features, 5-way): "
        + "; ".join(f"{METHOD_NAMES[m]} {PAPER_TABLE2[(m, 1)].format(2)} (1-shot) / {PAPER_TABLE2[(m, 5)].format(2)} "
                    f"(5-shot)" for m in PAPER_METHODS) + ". Other data and backbone: compare orderings, not values.")
    verdicts = results["claim"]
    if verdicts:
        lines = []
        for table, beats in verdicts.items():
            parts = [f"{other} {v['difference']:+.2f} points ({'clearly' if v['clearly'] else 'not clearly'})"
                     for other, v in beats.items()]
            lines.append(f"{table}: internal vs " + ", ".join(parts))
        report.paragraph("The paper's 1-shot claim — internal convection-diffusion clearly beats convection, external "
                         "and nearest prototype ('clearly': the gap exceeds the sum of the two 95 % half-widths):")
        report.bullets(lines)


def _official_section(report: Report, results) -> None:
    report.heading("Omniglot: the 20 official one-shot runs (Lake et al. 2015)")
    rows = [[f"pdenets: {METHOD_NAMES.get(m, m)}", f"{e['error_rate']:.1f}"] for m, e in results["official_runs"].items()]
    rows += [[f"published: {name}", value.format(1)] for name, value in PUBLISHED_RUN_ERRORS.items()]
    report.table(["method", "error rate (%)"], rows,
                 caption="20-way 1-shot from the evaluation alphabets, never seen in training; the backbone was "
                         "trained on every background character of the two small zips (242).")


def _sensitivity_figure(sensitivity, run_dir) -> str:
    titles = {"n_top": "n_top (paper units)", "strength": "total strength rγ (γ = 0.5)", "steps": "steps r (rγ = 5)"}
    studies = [s for s in ("n_top", "strength", "steps") if s in sensitivity]
    fig, axes = plt.subplots(1, len(studies), figsize=(4.2 * len(studies), 3.3), squeeze=False, layout="constrained")
    for ax, study in zip(axes[0], studies):
        points = sorted(sensitivity[study], key=lambda p: p["value"])
        errorbar_lines(ax, {"internal": ([p["value"] for p in points], [p["mean"] for p in points],
                                         [p["ci95"] for p in points])}, xlabel=titles[study], ylabel="accuracy (%)",
                       title=titles[study])
    return run_dir.save_figure(fig, "sensitivity.png")


def _timing_figure(timing, run_dir) -> str:
    points = sorted(timing, key=lambda p: p["layers"])
    fig, ax = plt.subplots(figsize=(5, 3.4), layout="constrained")
    layers = [p["layers"] for p in points]
    ax.plot(layers, [1000 * p["seconds_per_task"] for p in points], "o-", color="#d62728", label="ms per task")
    ax.set_xlabel("diffusion layers r")
    ax.set_ylabel("ms per task", color="#d62728")
    twin = ax.twinx()
    twin.errorbar(layers, [p["mean"] for p in points], yerr=[p["ci95"] for p in points], fmt="s--", color="#1f77b4",
                  capsize=3)
    twin.set_ylabel("accuracy (%)", color="#1f77b4")
    ax.grid(alpha=0.3)
    return run_dir.save_figure(fig, "timing.png")


def _picture_figure(pictures, run_dir) -> str:
    fig, axes = plt.subplots(len(pictures), 2, figsize=(7, 3.4 * len(pictures)), squeeze=False, layout="constrained")
    for row, picture in zip(axes, pictures):
        labels = np.asarray(picture["labels"])
        support = picture["support"]
        for ax, key, title in ((row[0], "before", "before diffusion"), (row[1], "after", "after diffusion")):
            points = np.asarray(picture[key])
            scatter_classes(ax, points[support:], labels[support:], title=f"{picture['shots']}-shot, {title}",
                            size=10)
            ax.scatter(points[:support, 0], points[:support, 1], marker="*", s=160, edgecolors="k",
                       c=CLASS_COLORS[labels[:support] % len(CLASS_COLORS)], linewidths=0.6)
    return run_dir.save_figure(fig, "picture.png")
