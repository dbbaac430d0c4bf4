"""Semi-supervised node classification: the Diff-ResNet protocol (Wang et al., §5.2 and Appendix E.2).

Protocol (Shchur et al. 2018, as the paper's code runs it; the pieces are in
:func:`pdenets.data.transforms.prepared_graph`): the graph undirected, its largest connected component, no
self-loops, binary row-normalized bag-of-words features; ``num_splits`` random splits (20 labelled nodes per
class for training, 30 per class for validation, the rest for testing) × ``num_inits`` initializations, seeded
as the paper's code seeds them; Adam (lr 0.01, weight decay 5e-4), after every epoch the validation loss and
accuracy; training stops when neither has improved for ``patience`` epochs and the best state (last
improvement of either) is restored; test accuracy of that state.

Models (from the model registry): Diff-ResNet (graph variant ``x + ReLU(FC1 x)``, ``r`` diffusion steps with
dropout, classifier; ``W = D̃^{-1/2}(A + I)D̃^{-1/2}``, ``L = diag(W1) − W``), No-Diff-ResNet (``r = 0``,
hence no dropout), and the PyG baselines GCN, GraphSAGE-mean/-maxpool, GAT.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import torch
import torch.distributed as dist

from ..._cache import process_cache
from ...analysis.calibration import CalibrationSummary, summarize_calibration
from ...data.split_file import ItemSplit, read_split_file
from ...data.splits import Split
from ...data.transforms import (
    PreparedGraph,
    graph_facts,
    graph_label,
    is_user_graph,
    named_feature_transform,
    prepared_graph,
)
from ...experiments.config import ConfigError
from ...experiments.context import RunContext
from ...experiments.report import md_escape
from ...experiments.rundir import file_name_for
from ...experiments.summary import PaperValue, Stats, group_records
from ...experiments.task import Task, register_reproduction, register_task
from ...models.node_training import DiffusionSettings, MessagePassingSettings, split_and_init_seed
from ...models.partitioned import agreed_partition, fit_partitioned_node_classifier, local_nodes, rows_of_part
from ...models.registry import model_entry
from ...models.training import evaluation_mode
from ...operators.partitioned import PartitionedDiffusion
from .config import MODEL_NAMES, TABLE6, BaselineSettings, DiffusionHyperparameters, NodeClassificationConfig
from .job import NodeJob
from .model import (
    NodeModel,
    _diffusion_settings,
    build_network,
    calibration_of_sets,
    default_hyperparameters,
    diffusion_steps,
    fit_nodes,
)
from .predictions import NodePredictions, write_node_predictions
from .report import add_predictions_section, add_sections
from .results import AccuracyCell, GraphFacts, NodeClassificationResults, NodeRecord

__all__ = [
    "NodeClassificationConfig",
    "NodeClassificationTask",
    "NodeJob",
    "DiffusionHyperparameters",
    "BaselineSettings",
    "TABLE6",
    "PAPER_TABLE1",
    "MODEL_NAMES",
    "prepared_graph",
    "train_node_classifier",
    "diffusion_steps",
]


_TABLE1 = "Diff-ResNet paper, Table 1 (100 splits x 20 initializations)"
#: Table 1: mean and std (%) over 100 splits × 20 initializations.
PAPER_TABLE1: Dict[str, Dict[str, PaperValue]] = {
    model: {dataset: PaperValue(mean, std, _TABLE1) for dataset, (mean, std) in values.items()}
    for model, values in {
        "gcn": {"cora": (81.5, 1.3), "citeseer": (71.9, 1.9), "pubmed": (77.8, 2.9)},
        "sage-mean": {"cora": (79.2, 7.7), "citeseer": (71.6, 1.9), "pubmed": (77.4, 2.2)},
        "sage-maxpool": {"cora": (76.6, 1.9), "citeseer": (67.5, 2.3), "pubmed": (76.1, 2.3)},
        "gat": {"cora": (81.8, 1.3), "citeseer": (71.4, 1.9), "pubmed": (78.7, 2.3)},
        "no-diff-resnet": {"cora": (58.9, 1.9), "citeseer": (61.9, 2.1), "pubmed": (70.1, 2.1)},
        "diff-resnet": {"cora": (82.1, 1.1), "citeseer": (74.6, 1.8), "pubmed": (80.1, 2.0)},
    }.items()
}


def split_of(spec: NodeJob, labels: torch.Tensor, data_dir: Optional[str] = None) -> Tuple[Split, int]:
    """The split and the torch seed of ``spec``'s initialization (the paper code's seeding); with a split
    file, the file's split (:func:`user_split`) and the ``init``-th seed of a stream seeded by ``seed``
    (nothing is drawn from the labels); ``data_dir``: where the graph's files lie (the run's context)."""
    if spec.split_file is None:
        return split_and_init_seed(
            labels, spec.seed, spec.split, spec.init, spec.train_per_class, spec.val_per_class
        )
    given = user_split(spec.graph, data_dir, spec.missing_features, spec.feature_transform, spec.split_file)
    if given.digest != spec.split_digest:
        raise ConfigError(f"{spec.split_file} changed since the runs were planned; run again")
    seed = int(np.random.RandomState(spec.seed).randint(0, 1_000_000, spec.init + 1)[spec.init])
    return Split(given.train, given.val, given.test), seed


@process_cache(maxsize=8)
def user_split(
    graph_spec: str, data_dir: Optional[str], missing: str, transform: str, path: str
) -> ItemSplit:
    """The split file ``path`` read against the prepared graph's nodes (once per process)."""
    graph = prepared_graph(graph_spec, data_dir, missing, transform)
    return read_split_file(
        path,
        graph.node_ids(),
        graph.y.tolist(),
        outside=graph.outside_ids(),
        required=("train", "val", "test"),  # the runs are scored on the test nodes
    )


def train_node_classifier(
    spec: NodeJob, context: RunContext = RunContext(), *, whole: bool = False, calibrate: bool = False
) -> NodeModel:
    """Train one run in ``context`` (its device and data folder); returns the fitted model (best state
    restored), with the fit history and the record.

    ``seconds`` runs from building the model to the test accuracy; loading the graph (once per process) is not
    counted. ``whole``: in this process alone, the whole graph, also under torchrun (the contiguous split
    over the processes computes the same numbers). ``calibrate``: the model keeps the temperature fitted on
    the validation nodes (:func:`~.model.fit_nodes`).
    """
    graph = prepared_graph(spec.graph, context.data_dir, spec.missing_features, spec.feature_transform)
    split, init_seed = split_of(spec, graph.y, context.data_dir)
    start = time.perf_counter()
    if not whole and _split_over_processes(spec):
        return _train_partitioned(spec, context.data_dir, graph, split, init_seed, start)
    fitted = fit_nodes(
        graph, split, spec.settings, init_seed=init_seed, device=context.device, calibrate=calibrate
    )
    fitted.record["seconds"] = time.perf_counter() - start
    return fitted


def _split_over_processes(spec: NodeJob) -> bool:
    """Launched by torchrun, a Diff-ResNet with diffusion splits its graph; the other models run whole on
    each."""
    steps = diffusion_steps(spec)
    return steps > 0 and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


@process_cache(maxsize=4)
def _partition(graph_spec: str, data_dir: Optional[str], features: Tuple[str, str], how: str, processes: int):
    """The agreed partition of a graph (``features``: its ``missing_features`` and ``feature_transform``, the
    arguments of :func:`prepared_graph`), once per process."""
    return agreed_partition(prepared_graph(graph_spec, data_dir, *features).weights, how)


def _train_partitioned(
    spec: NodeJob, data_dir: Optional[str], graph: PreparedGraph, split: Split, init_seed: int, start: float
) -> NodeModel:
    """This process's rows of the graph, the same model and protocol; every loss and accuracy over all
    rows."""
    rank = dist.get_rank()
    features = (spec.missing_features, spec.feature_transform)
    partition = _partition(spec.graph, data_dir, features, spec.partition, dist.get_world_size())
    hp = _diffusion_settings(spec)  # only a model with diffusion splits its graph (_split_over_processes)
    operator = PartitionedDiffusion(
        rows_of_part(graph.weights, partition, rank),
        partition.rows(rank)[0],
        float(hp.step_size),
        check_stability=hp.check_stability,
    )
    torch.manual_seed(init_seed)
    model = build_network(spec, graph, operator)
    nodes = partition.nodes(rank)
    sets = [local_nodes(part, partition, rank) for part in (split.train, split.val, split.test)]
    result, record = fit_partitioned_node_classifier(
        model,
        graph.x[nodes].to_sparse_csr(),
        graph.y[nodes],
        *sets,
        lr=float(hp.lr),
        weight_decay=float(hp.weight_decay),
        max_epochs=spec.max_epochs,
        patience=spec.patience,
    )
    record.update(_partitioned_calibration(model, graph.x[nodes].to_sparse_csr(), graph.y[nodes], *sets))
    record["seconds"] = time.perf_counter() - start
    names = tuple(graph.class_names) or tuple(str(c) for c in range(graph.num_classes))
    return NodeModel(spec.settings, model, names, graph.num_features, result=result, record=record)


def _partitioned_calibration(
    model: torch.nn.Module,
    features: torch.Tensor,
    labels: torch.Tensor,
    train: torch.Tensor,
    val: torch.Tensor,
    test: torch.Tensor,
) -> Dict[str, Any]:
    """:func:`~.model.calibration_of_sets` of every process's validation and test nodes (their logits
    gathered: a few per class) and answers (a count per class), the same on each process."""
    with evaluation_mode(model), torch.no_grad():
        logits = model(features).cpu()
    labels = labels.cpu()
    outside = torch.ones(len(labels), dtype=torch.bool, device=labels.device)
    outside[train.cpu()] = False
    answers = torch.bincount(logits[outside].argmax(1), minlength=logits.shape[1])
    mine = (logits[val.cpu()], labels[val.cpu()], logits[test.cpu()], labels[test.cpu()], answers)
    everyone: List[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    val_logits, val_labels, test_logits, test_labels, counts = (list(part) for part in zip(*everyone))
    return calibration_of_sets(
        torch.cat(val_logits),
        torch.cat(val_labels),
        torch.cat(test_logits),
        torch.cat(test_labels),
        torch.stack(counts).sum(0),
    )


@register_task
class NodeClassificationTask(Task[NodeClassificationConfig]):
    name = "node-classification"
    description = "semi-supervised node classification: random-split protocol, Diff-ResNet and PyG baselines"
    config_class = NodeClassificationConfig
    shortcuts = {
        "dataset": "datasets",
        "model": "models",
        "splits": "num_splits",
        "inits": "num_inits",
        "split": "split_file",
    }
    columns = {
        "experiment": "TEXT",
        "dataset": "TEXT",
        "model": "TEXT",
        "depth": "INTEGER",
        "split": "INTEGER",
        "init": "INTEGER",
        "accuracy": "REAL",
        "val_accuracy": "REAL",
        "epochs": "INTEGER",
    }
    record_type = NodeRecord

    @classmethod
    def quick_config(cls) -> NodeClassificationConfig:
        """2 splits × 1 initialization, at most 60 epochs, no depth study."""
        return NodeClassificationConfig(num_splits=2, num_inits=1, max_epochs=60, patience=20)

    def prepare(self) -> None:
        """Load every graph first (a missing file fails before any run), check that Diff-ResNet's arrays fit
        the memory budget and that the random splits can be drawn, and record each graph's facts."""
        config = self.config
        self.facts: Dict[str, GraphFacts] = {}
        for graph_spec in dict.fromkeys(
            list(config.datasets) + (list(config.depth_datasets) if config.depths else [])
        ):
            features = (config.missing_features, config.feature_transform)
            graph = prepared_graph(graph_spec, config.data_dir, *features)
            self._check_width_fits(graph, graph_label(graph_spec))
            if config.split_file is None:
                self._check_split_fits(graph, graph_label(graph_spec))
            self.facts[graph_label(graph_spec)] = GraphFacts(
                **graph_facts(graph), feature_transform=graph.feature_transform
            )

    def _check_split_fits(self, graph: PreparedGraph, label: str) -> None:
        """Refuse, before any job starts, random splits that ``graph`` cannot give: every class needs
        ``train_per_class + val_per_class`` labelled nodes, and one node must be left to test."""
        config = self.config
        needed = config.train_per_class + config.val_per_class
        labels = graph.y[graph.y >= 0]
        counts = torch.bincount(labels, minlength=graph.num_classes).tolist()
        names = graph.class_names or tuple(str(c) for c in range(graph.num_classes))
        short = [(names[c], count) for c, count in enumerate(counts) if count < needed]
        if short:
            name, count = min(short, key=lambda pair: pair[1])
            others = (
                f" (and {len(short) - 1} other class{'es' if len(short) > 2 else ''})"
                if len(short) > 1
                else ""
            )
            raise ConfigError(
                f"{label}: class {name!r} has {count} labelled node{'s' if count != 1 else ''}{others}; the "
                f"random split needs {needed} of each class ({config.train_per_class} training + "
                f"{config.val_per_class} validation): lower --train-per-class / --val-per-class or give your "
                "own split (--split FILE)"
            )
        if len(labels) <= needed * graph.num_classes:
            raise ConfigError(
                f"{label}: its {len(labels)} labelled nodes leave none to test after "
                f"{config.train_per_class} training + {config.val_per_class} validation nodes per class: "
                "lower --train-per-class / --val-per-class or give your own split (--split FILE)"
            )

    def _feature_transform(self, graph_spec: str) -> str:
        """How ``graph_spec``'s features enter the models: the configured ``feature_transform``, or ``auto``
        resolved: bag-of-words for a named citation graph (no file read: the jobs of the paper's graphs are
        planned without the data folder), else from the graph's features (read once per process)."""
        config = self.config
        if config.feature_transform != "auto":
            return config.feature_transform
        named = named_feature_transform(graph_spec)  # planned without reading the data folder
        if named is not None:
            return named
        facts = getattr(self, "facts", {}).get(graph_label(graph_spec))
        if facts is not None:
            return facts.feature_transform
        graph = prepared_graph(graph_spec, config.data_dir, config.missing_features, config.feature_transform)
        return graph.feature_transform

    def _split_digest(self, graph_spec: str) -> str:
        """The digest of the user's split of ``graph_spec`` (``""`` without a split file)."""
        config = self.config
        if config.split_file is None:
            return ""
        transform = self._feature_transform(graph_spec)
        return user_split(
            graph_spec, config.data_dir, config.missing_features, transform, config.split_file
        ).digest

    def _check_width_fits(self, graph: PreparedGraph, label: str) -> None:
        """Refuse a ``diffusion_width`` whose Diff-ResNet arrays (input map, block weights, hidden features)
        exceed the memory budget on ``graph``, before anything is written."""
        from ...data.limits import MEMORY_BUDGET_ENV_VAR, format_bytes, memory_budget

        config = self.config
        diffusion_models = [
            m
            for m in list(config.models) + list(config.depth_models)
            if model_entry(m).graph_input == "constructor"
        ]
        if config.diffuse_in != "hidden" or not diffusion_models:
            return
        width, item = config.diffusion_width, torch.finfo(torch.get_default_dtype()).bits // 8
        arrays = {
            f"input map ({graph.num_features} x {width:,} weights)": graph.num_features * width,
            f"block ({width:,} x {width:,} weights)": width * width,
            f"hidden features ({graph.num_nodes:,} x {width:,})": graph.num_nodes * width,
        }
        name, entries = max(arrays.items(), key=lambda pair: pair[1])
        budget = memory_budget()
        if entries * item > budget:
            raise ConfigError(
                f"--diffusion-width {width:,}: Diff-ResNet's {name} on {label} needs "
                f"{format_bytes(entries * item)}, more than the memory budget {format_bytes(budget)} "
                f"(${MEMORY_BUDGET_ENV_VAR}); choose a smaller diffusion_width"
            )

    def hyperparameters(
        self, model: str, graph_spec: str
    ) -> Union[DiffusionSettings, MessagePassingSettings]:
        """The settings of ``model`` on ``graph_spec`` under this configuration
        (:func:`~.model.default_hyperparameters`)."""
        return default_hyperparameters(model, graph_spec, self.config)

    def jobs(self) -> List[NodeJob]:
        config = self.config
        # (experiment, graph, model, depth (None: the protocol's), splits, initializations)
        splits = 1 if config.split_file else config.num_splits  # the user's split is one split
        studies: List[Tuple[str, str, str, Optional[int], int, int]] = [
            ("protocol", graph, model, None, splits, config.num_inits)
            for graph in config.datasets
            for model in config.models
        ]
        studies += [
            (
                "depth",
                graph,
                model,
                depth,
                1 if config.split_file else config.depth_splits,
                config.depth_inits,
            )
            for graph in (config.depth_datasets if config.depths else [])
            for model in config.depth_models
            for depth in config.depths
        ]
        return [
            NodeJob(
                experiment=experiment,
                graph=graph,
                dataset=graph_label(graph),
                model=model,
                depth=depth,
                split=split,
                init=init,
                seed=config.seed,
                train_per_class=config.train_per_class,
                val_per_class=config.val_per_class,
                max_epochs=config.max_epochs,
                patience=config.patience,
                hyperparameters=self.hyperparameters(model, graph),
                missing_features=config.missing_features,
                partition=config.partition,
                feature_transform=self._feature_transform(graph),
                split_file=config.split_file,
                split_digest=self._split_digest(graph),
            )
            for experiment, graph, model, depth, splits, inits in studies
            for split in range(splits)
            for init in range(inits)
        ]

    @staticmethod
    def run_job(spec: NodeJob, context: RunContext) -> NodeRecord:
        return NodeRecord(**train_node_classifier(spec, context).record)

    def progress_note(self, record: Dict[str, Any]) -> str:
        return f"acc={100 * record['accuracy']:.1f}%"

    def summarize(self, records: List[Dict[str, Any]]) -> NodeClassificationResults:
        table: Dict[str, Dict[str, AccuracyCell]] = {}
        depth_study: Dict[str, Dict[str, Dict[str, AccuracyCell]]] = {}
        calibrated: Dict[str, Dict[str, CalibrationSummary]] = {}
        for (experiment, dataset, model, depth), members in group_records(
            records, by=("experiment", "dataset", "model", "depth")
        ).items():
            stats = Stats.of((m.get("accuracy") for m in members), scale=100)
            paper = PAPER_TABLE1.get(model, {}).get(dataset) if experiment == "protocol" else None
            cell = AccuracyCell(
                mean=stats.mean,
                std=stats.std,
                runs=stats.count,  # the runs averaged (every record's accuracy is checked finite)
                seconds_per_run=Stats.of(m["seconds"] for m in members).mean,
                epochs_mean=Stats.of(m["epochs"] for m in members).mean,
                paper_mean=paper.mean if paper is not None else None,
                paper_std=paper.std if paper is not None else None,
            )
            if experiment == "protocol":
                table.setdefault(dataset, {})[model] = cell
                calibration = summarize_calibration(members)
                if calibration is not None:
                    calibrated.setdefault(dataset, {})[model] = calibration
            else:
                depth_study.setdefault(dataset, {}).setdefault(model, {})[str(depth)] = cell
        return NodeClassificationResults(
            table=table, depth=depth_study, graphs=dict(self.facts), calibration=calibrated
        )

    def report(self, results: NodeClassificationResults, records: List[Dict[str, Any]], run_dir) -> None:
        report = self.new_report(
            results,
            "pdenets — semi-supervised node classification: "
            + ", ".join(
                md_escape(label) for label in dict.fromkeys(graph_label(d) for d in self.config.datasets)
            ),
        )
        add_sections(report, self.config, results, records, run_dir, paper=PAPER_TABLE1)
        add_predictions_section(report, self._write_predictions(records, run_dir))
        self.write_report(report, run_dir)

    def _write_predictions(self, records: List[Dict[str, Any]], run_dir) -> List[NodePredictions]:
        """Each model's first run trained again on each graph of the user's files (``predictions``), and its
        predictions of every node written (:mod:`.predictions`)."""
        config, context = self.config, self.local_context()
        graphs = [
            spec
            for spec in dict.fromkeys(config.datasets)
            if config.predictions == "always" or (config.predictions == "auto" and is_user_graph(spec))
        ]
        if not graphs:
            return []
        firsts = {
            (job.graph, job.model): job
            for job in self.jobs()
            if job.experiment == "protocol" and job.split == 0 and job.init == 0
        }
        written = []
        for graph_spec in graphs:
            label = graph_label(graph_spec)
            for model_name in config.models:
                spec = firsts[(graph_spec, model_name)]
                # rank 0 alone under torchrun
                fitted = train_node_classifier(spec, context, whole=True, calibrate=config.calibrate)
                graph = prepared_graph(
                    spec.graph, context.data_dir, spec.missing_features, spec.feature_transform
                )
                name = "predictions"
                name += f"-{file_name_for(label)}" if len(graphs) > 1 else ""
                name += f"-{model_name}" if len(config.models) > 1 else ""
                path = run_dir.file(name + ".csv")
                about_file = write_node_predictions(
                    path, fitted, graph, split_of(spec, graph.y, context.data_dir)[0]
                )
                run_dir.register(path)
                fitted.about = {
                    "seed": spec.seed,
                    "split": spec.split,
                    "init": spec.init,
                    "train_per_class": spec.train_per_class,
                    "val_per_class": spec.val_per_class,
                    "graph": label,
                }
                saved = run_dir.register(fitted.save(run_dir.file(f"model-{model_name}")))
                stored = next(
                    (
                        r.get("accuracy")
                        for r in records
                        if r.get("experiment") == "protocol"
                        and r.get("dataset") == label
                        and r.get("model") == model_name
                        and r.get("split") == 0
                        and r.get("init") == 0
                    ),
                    None,
                )
                written.append(
                    NodePredictions(
                        graph=label,
                        model=model_name,
                        file=path.name,
                        outside=tuple(graph.outside_ids()),
                        stored_accuracy=stored,
                        model_folder=saved.name,
                        **about_file,
                    )
                )
        return written


def table1_config() -> NodeClassificationConfig:
    """Table 1 on the graphs available offline (Cora, CiteSeer), plus the depth study."""
    return NodeClassificationConfig(
        datasets=["cora", "citeseer"], models=list(MODEL_NAMES), depths=[2, 4, 8, 16, 32]
    )


def table1_quick_config() -> NodeClassificationConfig:
    return NodeClassificationConfig(
        datasets=["cora", "citeseer"],
        models=list(MODEL_NAMES),
        num_splits=1,
        num_inits=1,
        max_epochs=30,
        patience=10,
        depths=[2, 8],
        depth_splits=1,
    )


register_reproduction(
    "table1",
    "node-classification",
    full=table1_config,
    quick=table1_quick_config,
    description="Diff-ResNet Table 1 (Cora, CiteSeer; 6 models; 100 splits x 20 inits) and Fig. 5",
)
