"""Few-shot experiments on features files: the files by dataset name, episodes drawn from them, what is
measured.

* **Files**: ``omniglot`` and ``clinc150`` name the offline data, built once and cached
  (:mod:`.embeddings`); any other name is the path of a features file (:mod:`pdenets.data.fewshot`).
  A file's fingerprint (a hash of its bytes) goes into the store keys, so a rebuilt file never
  reuses stale results (:func:`dataset_features`, :func:`episode_sources`, :func:`file_fingerprint`).
* **Episodes**: :class:`~pdenets.data.fewshot.EpisodeSampler`'s tasks with the features of their
  samples; task ``t`` of seed ``s`` is the same whatever the tasks drawn with it, and so is the seed
  of what is trained on it (:func:`episode_features`, :func:`task_points`, :func:`task_seeds`); the
  official Omniglot one-shot runs (:func:`official_runs_source`, :func:`official_runs_tensors`).
* **Measures**: accuracy and log-likelihood per task (:func:`episode_scores`), one task's features
  diffused on its graph and their principal components (:func:`diffuse_on_task_graph`,
  :func:`principal_components`), and whether one method's mean beats another's by more than the
  two confidence intervals (:func:`clear_wins`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..._cache import process_cache
from ...data.fewshot import Episodes, EpisodeSampler, FeatureSet, QueryShape, load_features
from ...data.graphs import read_npz_arrays
from ...experiments.config import ConfigError
from ...features.datasets import FEWSHOT_DATASETS
from ...features.embeddings import official_runs_features
from ...models.backbones import BackboneTraining
from ...models.fewshot import Preprocessing, preprocess
from ...models.fewshot.heads import HeadSettings, task_graphs
from ...operators.diffusion import BatchedDiffusion
from .results import ClearWin, EpisodeSummary

__all__ = [
    "dataset_features",
    "episode_sources",
    "official_runs_source",
    "file_fingerprint",
    "features_file",
    "episode_features",
    "task_points",
    "task_seeds",
    "official_runs_tensors",
    "episode_scores",
    "EpisodeScores",
    "query_set_facts",
    "QuerySetFacts",
    "classes_without_a_query",
    "diffuse_on_task_graph",
    "principal_components",
    "clear_wins",
]


def dataset_features(
    dataset: str,
    data_dir=None,
    training: BackboneTraining = BackboneTraining(),
    *,
    directory: Optional[Union[str, Path]] = None,
    progress: bool = False,
) -> Tuple[str, Path, FeatureSet]:
    """The features of a dataset name: a registered few-shot dataset (built once, then read from the cache),
    or a file.

    A name of :data:`~pdenets.features.datasets.FEWSHOT_DATASETS` (``omniglot``: a Conv-4 backbone trained
    on the base alphabets embeds the novel ones, and the base ones for the centering mean; ``clinc150``:
    utterances embedded by the packaged MiniLM, needs ``pdenets[text]``); anything else is read by
    :func:`~pdenets.data.fewshot.load_features`.

    Args:
        dataset: a registered dataset's name (either case) or the path of a features file
            (``.npz``/``.pkl``/``.pt``).
        data_dir: where the raw data lies (default: ``$PDENETS_DATA``).
        training: how the Omniglot backbone is trained.
        directory: the features cache (default: ``$PDENETS_FEATURES`` or ``~/.cache/pdenets/features``).
        progress: print what is being built.

    Returns:
        ``(label, path, features)``: the label names the dataset in tables (the lower-case name, or the
        file's stem), ``path`` is the features file and ``features`` its contents.
    """
    label = dataset.lower()
    if label in FEWSHOT_DATASETS:
        path, features = FEWSHOT_DATASETS[label].features(data_dir, training, directory, progress)
    else:
        path, features = Path(dataset), load_features(dataset)
        label = path.stem
    return label, path, features


def episode_sources(
    datasets: Sequence[str],
    data_dir=None,
    training: BackboneTraining = BackboneTraining(),
    *,
    directory: Optional[Union[str, Path]] = None,
    ways: Sequence[int] = (5,),
    centred: bool = False,
    progress: bool = False,
) -> Dict[str, Tuple[str, str, FeatureSet]]:
    """Every dataset's features (built or read, see :func:`dataset_features`), checked for the episodes asked
    of it.

    Args:
        datasets: dataset names or features files.
        data_dir: where the raw data lies (default: ``$PDENETS_DATA``).
        training: how the Omniglot backbone is trained.
        directory: the features cache (default: ``$PDENETS_FEATURES`` or ``~/.cache/pdenets/features``).
        ways: the classes per task the episodes will have.
        centred: whether the features will be centred on the base classes' mean.
        progress: print what is being built.

    Returns:
        Label → ``(path, fingerprint, features)``, in the order of ``datasets``.

    Raises:
        ConfigError: a file has fewer novel classes than a task's ways, or nothing to centre with.
    """
    sources = {}
    for dataset in datasets:
        label, path, features = dataset_features(
            dataset, data_dir, training, directory=directory, progress=progress
        )
        if centred and features.mean_of_base() is None:
            raise ConfigError(
                f"{path} has no base classes nor base_mean to centre with; use --preprocessing "
                "normalize or raw"
            )
        for count in ways:
            if count > len(features.novel_classes):
                raise ConfigError(
                    f"{count}-way tasks but {path} has {len(features.novel_classes)} novel classes"
                )
        sources[label] = (str(path), file_fingerprint(path), features)
    return sources


def official_runs_source(
    data_dir=None,
    training: BackboneTraining = BackboneTraining(),
    *,
    directory: Optional[Union[str, Path]] = None,
    progress: bool = False,
) -> Tuple[str, str]:
    """The embedded official Omniglot one-shot runs (built or read, see
    :func:`~pdenets.features.official_runs_features`).

    Args:
        data_dir: where the raw data lies (default: ``$PDENETS_DATA``).
        training: how the backbone is trained (on every background character).
        directory: the features cache (default: ``$PDENETS_FEATURES`` or ``~/.cache/pdenets/features``).
        progress: print what is being built.

    Returns:
        ``(path, fingerprint)`` of the runs' features file.
    """
    path, _ = official_runs_features(data_dir, training, directory=directory, progress=progress)
    return str(path), file_fingerprint(path)


def file_fingerprint(path: Union[str, Path]) -> str:
    """The first 16 hexadecimal digits of the SHA-256 of a file's bytes.

    Args:
        path: the file.

    Returns:
        The fingerprint, e.g. ``"e3b0c44298fc1c14"`` for an empty file.

    Examples:
        >>> import tempfile
        >>> file_fingerprint(tempfile.NamedTemporaryFile(delete=False).name)
        'e3b0c44298fc1c14'
    """
    digest = hashlib.sha256()
    with Path(path).open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


@process_cache(maxsize=4)
def features_file(path: str) -> FeatureSet:
    """A features file read once per process (the last four files read are kept).

    Args:
        path: the features file.

    Returns:
        Its :class:`~pdenets.data.fewshot.FeatureSet`.
    """
    return load_features(path)


def episode_features(
    features: FeatureSet,
    ways: int,
    shots: int,
    queries: int,
    seed: int,
    tasks: Sequence[int],
    shape: QueryShape = QueryShape(),
) -> Tuple[Episodes, torch.Tensor, torch.Tensor]:
    """Tasks drawn from the novel classes of ``features``, with the features of their samples.

    Args:
        features: the features file's contents.
        ways: classes per task.
        shots: labelled samples per class.
        queries: queries per class (the mean per class for Dirichlet proportions).
        seed: the master seed of the episodes.
        tasks: the task ids.
        shape: how the queries are spread (default: balanced).

    Returns:
        ``(episodes, support, query)``: the :class:`~pdenets.data.fewshot.Episodes` and the features of
        their support ``(T, ways·shots, M)`` and query ``(T, ways·queries, M)`` samples.
    """
    sampler = EpisodeSampler(
        features.labels,
        features.novel_classes,
        ways=ways,
        shots=shots,
        queries=queries,
        seed=seed,
        shape=shape,
    )
    episodes = sampler.sample(tasks)
    return episodes, features.features[episodes.support], features.features[episodes.query]


def task_points(
    features: FeatureSet,
    ways: int,
    shots: int,
    queries: int,
    seed: int,
    preprocessing: Preprocessing,
    task: int = 0,
) -> Tuple[torch.Tensor, torch.Tensor, int]:
    """One task's preprocessed features, support then queries, with their episode labels.

    Args:
        features: the features file's contents.
        ways: classes per task.
        shots: labelled samples per class.
        queries: queries per class.
        seed: the master seed of the episodes.
        preprocessing: how the features are preprocessed (centred with the base mean when it asks).
        task: the task id.

    Returns:
        ``(points, labels, support)``: ``(N, M)`` features, ``(N,)`` labels ``0 … ways − 1`` and the number
        of support samples (the first rows).
    """
    episodes, support, query = episode_features(features, ways, shots, queries, seed, range(task, task + 1))
    support, query = preprocess(support, query, preprocessing, features.mean_of_base())
    labels = torch.cat([episodes.support_labels[0], episodes.query_labels[0]])
    return torch.cat([support, query], 1)[0], labels, support.shape[1]


def task_seeds(seed: int, tasks: Sequence[int]) -> List[int]:
    """One seed per task for what is trained on it, a function of ``(seed, task)`` only.

    Args:
        seed: the master seed.
        tasks: the task ids.

    Returns:
        One integer seed per task.

    Examples:
        >>> task_seeds(0, range(3))[1:] == task_seeds(0, range(1, 3))
        True
    """
    return [int(np.random.SeedSequence([seed, t]).generate_state(1)[0]) for t in tasks]


def official_runs_tensors(
    path: Union[str, Path],
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The embedded official one-shot runs that :func:`~pdenets.features.official_runs_features` writes.

    Args:
        path: the runs' features file.

    Returns:
        ``(training, labels, test, answers, base_mean)``: ``training`` and ``test`` ``(R, C, D)`` (one
        sample per class of each run), ``labels`` ``(R, C)`` the class of each training sample (its index),
        ``answers`` ``(R, C)`` the class of each test sample and ``base_mean`` ``(D,)``.
    """
    arrays = read_npz_arrays(path)
    training, test, answers, base_mean = (
        torch.from_numpy(arrays[name]) for name in ("training", "test", "answers", "base_mean")
    )
    labels = torch.arange(training.shape[1]).expand(training.shape[0], -1)
    return training, labels, test, answers, base_mean


@dataclass(frozen=True)
class EpisodeScores:
    """What a job measures of its tasks, one float per task.

    ``accuracies`` and ``log_likelihoods`` (of the true class, mean over a task's queries) count the
    queries of the support's classes only. With open-set queries (label :data:`OPEN_SET_LABEL`),
    ``open_auroc`` is the area under the ROC curve of the top probability as a score that a query
    belongs to a support class (0.5: it tells nothing; 1: every open-set query is less sure than
    every other), and ``open_rejected``/``known_rejected`` the shares of open-set and of known
    queries whose top probability stays below 1/2 (the queries a user would refuse at that threshold).
    """

    accuracies: List[float]
    log_likelihoods: List[float]
    open_auroc: Optional[List[float]] = None
    open_rejected: Optional[List[float]] = None
    known_rejected: Optional[List[float]] = None


@dataclass(frozen=True)
class QuerySetFacts:
    """How the query sets actually drawn are spread: counts of query sets (tasks as solved).

    Args:
        query_sets: the query sets solved (tasks; every query one with ``one-at-a-time``).
        unbalanced: query sets whose support classes got unequal numbers of queries, or that hold
            open-set queries: those that break a balance assumption.
        empty_class: query sets in which some support class got no query.
    """

    query_sets: int
    unbalanced: int
    empty_class: int


def query_set_facts(query_labels: torch.Tensor, ways: int) -> QuerySetFacts:
    """:class:`QuerySetFacts` of query sets ``(T, Q)`` of labels (``OPEN_SET_LABEL`` for open-set queries).

    Examples:
        >>> query_set_facts(torch.tensor([[0, 1, 2, 0, 1, 2], [0, 0, 1, 1, 1, 1], [0, 0, 1, 1, -1, 2]]), 3)
        QuerySetFacts(query_sets=3, unbalanced=2, empty_class=1)
    """
    counts = _query_counts(query_labels, ways)
    open_set = (query_labels < 0).any(1)
    unequal = counts.max(1).values != counts.min(1).values
    return QuerySetFacts(
        query_sets=int(query_labels.shape[0]),
        unbalanced=int((unequal | open_set).sum()),
        empty_class=int((counts.min(1).values == 0).sum()),
    )


def classes_without_a_query(query_labels: torch.Tensor, ways: int) -> torch.Tensor:
    """``(T,)`` booleans: the query sets ``(T, Q)`` in which some support class got no query (the tasks that
    :attr:`QuerySetFacts.empty_class` counts).

    Examples:
        >>> classes_without_a_query(torch.tensor([[0, 1, 2, 0], [0, 0, 1, -1]]), 3).tolist()
        [False, True]
    """
    return _query_counts(query_labels, ways).min(1).values == 0


def _query_counts(query_labels: torch.Tensor, ways: int) -> torch.Tensor:
    """``(T, C)`` queries of each support class per query set (open-set labels count for none)."""
    if query_labels.dim() != 2:
        raise ValueError(f"query labels must be (tasks, queries), got shape {tuple(query_labels.shape)}")
    return (query_labels.unsqueeze(2) == torch.arange(ways, device=query_labels.device)).sum(1)


def _auroc(known: torch.Tensor, unknown: torch.Tensor) -> float:
    """P(score of a known query > score of an open-set one), ties counted one half (Mann–Whitney)."""
    greater = (known[:, None] > unknown[None, :]).double().mean()
    ties = (known[:, None] == unknown[None, :]).double().mean()
    return float(greater + ties / 2)


def episode_scores(probabilities: torch.Tensor, query_labels: torch.Tensor) -> EpisodeScores:
    """Accuracy and mean log-likelihood of the true class per task, and how open-set queries were told apart.

    Args:
        probabilities: ``(T, Q, C)`` class probabilities of every query of every task.
        query_labels: ``(T, Q)`` the true classes (:data:`~pdenets.data.fewshot.OPEN_SET_LABEL` for a query of
            a class absent from the support).

    Returns:
        :class:`EpisodeScores` (probabilities clamped at 1e-300 before the logarithm).

    Examples:
        >>> scores = episode_scores(torch.tensor([[[0.9, 0.1], [0.6, 0.4]]]), torch.tensor([[0, 1]]))
        >>> scores.accuracies, [round(v, 6) for v in scores.log_likelihoods]
        ([0.5], [-0.510826])
    """
    probabilities = probabilities.cpu().double()
    known = query_labels >= 0
    counts = known.sum(1).clamp_min(1).double()
    labels = query_labels.clamp_min(0)
    correct = ((probabilities.argmax(2) == labels) & known).double().sum(1) / counts
    true_class = probabilities.gather(2, labels.unsqueeze(2)).squeeze(2).clamp_min(1e-300).log()
    log_likelihoods = (true_class * known).sum(1) / counts
    if bool(known.all()):
        return EpisodeScores(correct.tolist(), log_likelihoods.tolist())
    top = probabilities.max(2).values
    auroc = [_auroc(top[t][known[t]], top[t][~known[t]]) for t in range(top.shape[0])]
    refused = top < 0.5
    open_rejected = ((refused & ~known).double().sum(1) / (~known).sum(1).clamp_min(1)).tolist()
    known_rejected = ((refused & known).double().sum(1) / counts).tolist()
    return EpisodeScores(correct.tolist(), log_likelihoods.tolist(), auroc, open_rejected, known_rejected)


def diffuse_on_task_graph(
    points: torch.Tensor, n_top: int, sigma_neighbor: int, step_size: float, steps: int
) -> torch.Tensor:
    """``(I − γL)^r X``: a task's points after ``r`` explicit diffusion steps on its Gaussian kNN graph.

    Args:
        points: ``(N, M)`` the task's support and query features.
        n_top: the entries kept per row of the graph.
        sigma_neighbor: the neighbour whose distance is the Gaussian bandwidth.
        step_size: ``γ``.
        steps: ``r``.

    Returns:
        ``(N, M)`` the diffused points.
    """
    weights = task_graphs(points.unsqueeze(0), HeadSettings(n_top=n_top, sigma_neighbor=sigma_neighbor))
    return BatchedDiffusion(weights, step_size).apply(points.unsqueeze(0), steps)[0]


def principal_components(points: torch.Tensor, components: int = 2) -> torch.Tensor:
    """Points projected onto their first principal components (computed in float64).

    Args:
        points: ``(N, M)`` points.
        components: how many components to keep.

    Returns:
        ``(N, components)`` float32 coordinates.

    Examples:
        >>> points = torch.tensor([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0]])
        >>> principal_components(points, 1).abs().flatten().tolist()
        [2.0, 0.0, 2.0]
    """
    centred = points - points.mean(0)
    _, _, directions = torch.linalg.svd(centred.double(), full_matrices=False)
    return (centred.double() @ directions[:components].T).float()


def clear_wins(
    entries: Mapping[str, EpisodeSummary], method: str, others: Sequence[str]
) -> Dict[str, ClearWin]:
    """How far ``method``'s mean lies above each of ``others``, and whether clearly so.

    Args:
        entries: method → its :class:`~pdenets.tasks.fewshot.results.EpisodeSummary` (a table cell; ``ci95``
            the half-width of the 95 % confidence interval).
        method: the method compared.
        others: the methods it is compared with (those missing from ``entries`` are skipped).

    Returns:
        Other method → :class:`~pdenets.tasks.fewshot.results.ClearWin`: the mean gap, and whether it exceeds
        the sum of both half-widths.

    Examples:
        >>> a, b = EpisodeSummary(70.0, 1.0, 100, 0.1, 100.0), EpisodeSummary(65.0, 1.5, 100, 0.1, 100.0)
        >>> cell = {"a": a, "b": b}
        >>> clear_wins(cell, "a", ["b", "c"])
        {'b': ClearWin(difference=5.0, clearly=True)}
    """
    ours = entries[method]
    wins = {}
    for other in others:
        if other in entries:
            gap = ours.mean - entries[other].mean
            wins[other] = ClearWin(difference=gap, clearly=gap > ours.ci95 + entries[other].ci95)
    return wins
