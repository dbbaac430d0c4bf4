"""Graph preprocessing steps, each a small function ``Data -> Data`` usable on its own.

The Diff-ResNet protocol (Wang, Dou, Bao, Shi, *Diffusion Mechanism in Residual Neural Network: Theory and
Applications*, Appendix E.2) composes them in :func:`preprocess_citation_graph`: undirected, no self-loops,
unit edge weights, largest connected component, binary bag-of-words, row-normalized features. Bag-of-words is
what the citation graphs hold. A graph whose features are real numbers is transformed by what they look like
(:func:`feature_transform_for`): sparse non-negative weights (TF-IDF) are divided by each row's sum, which
keeps their zeros; other sparse values are scaled per feature without centring, which keeps their zeros too;
dense values (embeddings, measurements) are standardized per feature. Binarizing real values would lose their
weights; centring sparse ones would fill in their zeros and turn every sparse product into a dense one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from .._cache import process_cache
from .._lazy import LazyModule
from .graphs import PLANETOID_NAMES, _pyg_data, load_graph

#: scipy.sparse, imported when a graph is read (not when pdenets starts)
sp = LazyModule("scipy.sparse")

if TYPE_CHECKING:  # torch_geometric is imported where a graph is built, not when pdenets starts
    import scipy.sparse
    from torch_geometric.data import Data


__all__ = [
    "to_undirected",
    "remove_self_loops",
    "largest_connected_component",
    "binarize_features",
    "row_normalize_features",
    "scale_features",
    "preprocess_citation_graph",
    "FEATURE_TRANSFORMS",
    "feature_transform_for",
    "feature_density",
    "SPARSE_INPUT_DENSITY",
    "standardize_features",
    "named_feature_transform",
    "adjacency_matrix",
    "PreparedGraph",
    "prepared_graph",
    "prepare_graph",
    "graph_label",
    "is_user_graph",
    "graph_facts",
]


def _copy(data: Data, **changes) -> Data:
    values = {key: data[key] for key in data.keys()}
    values.update(changes)
    return _pyg_data(**values)


def adjacency_matrix(data: Data) -> scipy.sparse.csr_matrix:
    """Unit-weight scipy CSR adjacency (duplicates summed)."""
    row, col = data.edge_index.cpu().numpy()
    return sp.csr_matrix((np.ones(row.shape[0], dtype=np.float32), (row, col)), shape=(data.num_nodes,) * 2)


def _edges(matrix: scipy.sparse.spmatrix) -> torch.Tensor:
    coo = sp.coo_matrix(matrix)
    order = np.lexsort((coo.col, coo.row))
    return torch.from_numpy(np.vstack([coo.row[order], coo.col[order]]).astype(np.int64))


def to_undirected(data: Data) -> Data:
    """Add the reverse of every edge; duplicate edges collapse to one (unit weights)."""
    adjacency = adjacency_matrix(data)
    adjacency = ((adjacency + adjacency.T) > 0).astype(np.float32)
    return _copy(data, edge_index=_edges(adjacency))


def remove_self_loops(data: Data) -> Data:
    keep = data.edge_index[0] != data.edge_index[1]
    return _copy(data, edge_index=data.edge_index[:, keep])


def largest_connected_component(data: Data) -> Data:
    """Keep the nodes of the largest (weakly) connected component, relabelled in their original order.

    ``original_index`` records each kept node's id in the input graph.
    """
    from scipy.sparse.csgraph import connected_components

    count, component = connected_components(adjacency_matrix(data), directed=True, connection="weak")
    sizes = np.bincount(component)
    keep = np.flatnonzero(component == sizes.argmax())
    mapping = -np.ones(data.num_nodes, dtype=np.int64)
    mapping[keep] = np.arange(keep.size)
    row, col = data.edge_index.cpu().numpy()
    inside = (mapping[row] >= 0) & (mapping[col] >= 0)
    edge_index = torch.from_numpy(np.vstack([mapping[row[inside]], mapping[col[inside]]]))
    keep_t = torch.from_numpy(keep)
    original = data["original_index"][keep_t] if "original_index" in data else keep_t
    return _copy(
        data,
        x=data.x[keep_t],
        y=data.y[keep_t],
        edge_index=edge_index,
        num_nodes=int(keep.size),
        original_index=original,
    )


def binarize_features(data: Data) -> Data:
    """Bag-of-words presence: every non-zero feature becomes 1."""
    return _copy(data, x=(data.x != 0).to(data.x.dtype))


def row_normalize_features(data: Data) -> Data:
    """Each feature row divided by the sum of its absolute values (all-zero rows stay zero): for non-negative
    features, each row sums to one. Zeros stay zeros."""
    sums = data.x.abs().sum(1, keepdim=True)
    return _copy(data, x=torch.where(sums > 0, data.x / sums.clamp_min(1e-30), data.x))


def scale_features(data: Data) -> Data:
    """Each feature divided by its standard deviation over the nodes, not centred (a constant feature is left
    as it is): zeros stay zeros, so sparse features stay sparse (scikit-learn's ``StandardScaler`` with
    ``with_mean=False``)."""
    x = data.x
    std = x.std(0, unbiased=False, keepdim=True)
    return _copy(data, x=x / torch.where(std > 0, std, torch.ones_like(std)))


def standardize_features(data: Data) -> Data:
    """Each feature shifted to mean 0 and scaled to standard deviation 1 over the nodes (a constant feature
    becomes 0)."""
    x = data.x
    std = x.std(0, unbiased=False, keepdim=True)
    return _copy(data, x=(x - x.mean(0, keepdim=True)) / torch.where(std > 0, std, torch.ones_like(std)))


#: the share of non-zero entries at or below which a graph's features are sparse: they enter the models as a
#: sparse matrix (a sparse product then costs less than a dense one; ``benchmarks/feature_kinds.py`` measures
#: both), and ``auto`` transforms them so that their zeros stay zeros
SPARSE_INPUT_DENSITY = 0.1

#: how the node features enter the models: ``auto`` picks ``bag-of-words`` for features that are
#: non-negative whole numbers (word counts or presence), ``row-normalize`` for other sparse non-negative
#: features (TF-IDF), ``scale`` for other sparse features and ``standardize`` for dense ones
FEATURE_TRANSFORMS = {
    "auto": "bag-of-words for counts or 0/1 features, row-normalize for sparse non-negative weights "
    "(TF-IDF), scale for other sparse features, else standardize",
    "bag-of-words": "binary presence, each row divided by its sum (the citation protocol)",
    "row-normalize": "each row divided by the sum of its absolute values (zeros stay zeros)",
    "scale": "each feature divided by its standard deviation, not centred (zeros stay zeros)",
    "standardize": "each feature to mean 0, standard deviation 1 over the nodes (fills in zeros)",
    "none": "the file's features as they are",
}


def feature_density(x: torch.Tensor) -> float:
    """The share of entries of ``x`` that are not zero (0 for an empty tensor).

    Examples:
        >>> import torch
        >>> feature_density(torch.tensor([[0.0, 2.0], [0.0, 0.0]]))
        0.25
    """
    if x.numel() == 0:
        return 0.0
    nonzero = x._nnz() if x.layout != torch.strided else int(torch.count_nonzero(x))
    return nonzero / x.numel()


def feature_transform_for(x: torch.Tensor, transform: str = "auto") -> str:
    """The transform :func:`preprocess_citation_graph` applies to the features ``x``: ``transform`` itself,
    or for ``"auto"``:

    - ``"bag-of-words"`` where every feature is a non-negative whole number (word counts or presence);
    - else, where at most :data:`SPARSE_INPUT_DENSITY` of the entries are non-zero (sparse features, which
      the models take as a sparse matrix), ``"row-normalize"`` for non-negative features (TF-IDF weights)
      and ``"scale"`` for others: both keep the zeros;
    - else ``"standardize"`` (dense features: embeddings, measurements, ReLU activations).

    Boolean and integer tensors follow the same rules as their values.

    Examples:
        >>> import torch
        >>> feature_transform_for(torch.tensor([[0.0, 2.0], [1.0, 0.0]]))
        'bag-of-words'
        >>> feature_transform_for(torch.tensor([[0.5, -1.0], [1.0, 0.2]]))
        'standardize'
        >>> sparse = torch.zeros(2, 10)
        >>> sparse[0, 3], sparse[1, 7] = 0.3, 0.7
        >>> feature_transform_for(sparse), feature_transform_for(-sparse)
        ('row-normalize', 'scale')
        >>> feature_transform_for(torch.tensor([[0.5, -1.0]]), "none")
        'none'
    """
    if transform not in FEATURE_TRANSFORMS:
        choices = ", ".join(FEATURE_TRANSFORMS)
        raise ValueError(f"unknown feature transform {transform!r}; choose one of {choices}")
    if transform != "auto":
        return transform
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    non_negative = bool((x >= 0).all())
    if non_negative and bool((x == x.round()).all()):
        return "bag-of-words"
    if feature_density(x) <= SPARSE_INPUT_DENSITY:
        return "row-normalize" if non_negative else "scale"
    return "standardize"


def named_feature_transform(spec: str) -> Optional[str]:
    """``"bag-of-words"`` for the named citation graphs (``cora``, ``citeseer``, ``pubmed``, by name or as
    ``planetoid/<name>``), whose protocol binarizes their features whatever they store (PubMed's are TF-IDF);
    ``None`` for any other graph, whose ``auto`` transform is read from its features.

    Examples:
        >>> named_feature_transform("Cora"), named_feature_transform("planetoid/PubMed")
        ('bag-of-words', 'bag-of-words')
        >>> named_feature_transform("graphs/mine.npz") is None
        True
    """
    name = spec.lower()
    name = name[len("planetoid/") :] if name.startswith("planetoid/") else name
    return "bag-of-words" if name in PLANETOID_NAMES else None


def preprocess_citation_graph(data: Data, features: str = "bag-of-words") -> Data:
    """The protocol's preprocessing: undirected, no self-loops, largest component, and the features
    transformed by ``features`` (:data:`FEATURE_TRANSFORMS`; the citation protocol's binary + row-normalized
    bag-of-words by default).

    The graph keeps unit weights and no self-loops; the GCN-style self-loops and symmetric
    normalization belong to the models (:func:`pdenets.operators.gcn_normalize`).
    """
    transform = feature_transform_for(data.x, features)
    data = remove_self_loops(to_undirected(data))
    data = largest_connected_component(data)
    if not data.x.is_floating_point():
        data = _copy(data, x=data.x.to(torch.get_default_dtype()))
    if transform == "bag-of-words":
        return row_normalize_features(binarize_features(data))
    steps = {
        "row-normalize": row_normalize_features,
        "scale": scale_features,
        "standardize": standardize_features,
    }
    return steps[transform](data) if transform in steps else data


@dataclass(frozen=True)
class PreparedGraph:
    """A preprocessed graph: features (dense and CSR), labels, edges and the diffusion weights.

    Made by :func:`prepared_graph`.

    Args:
        x: ``(N, F)`` transformed features (dense).
        x_input: ``x`` as the models take it: a sparse CSR tensor where at most
            :data:`SPARSE_INPUT_DENSITY` of its entries are non-zero (bag-of-words, TF-IDF), else ``x`` itself
            (a sparse product over dense features costs more than a dense one).
        y: ``(N,)`` class ids.
        edge_index: ``(2, 2E)`` undirected edge list without self-loops.
        weights: ``(N, N)`` sparse diffusion weights ``D̃^{-1/2}(A + I)D̃^{-1/2}``.
        num_nodes: ``N``, the nodes of the largest connected component.
        num_edges: ``E``, the undirected edges.
        num_features: ``F``.
        num_classes: the largest class id plus one.
        feature_transform: how the features were transformed (:data:`FEATURE_TRANSFORMS`, ``auto``
            resolved).
        class_names: the name of each class id (the file's words where it names its classes, else the ids).
        source_nodes: the nodes of the graph as read, before the largest component was kept.
        original_index: ``(N,)`` each kept node's position in the graph as read.
        source_node_names: the node names of the graph as read (an edge list's), ``None`` where its nodes
            are numbered; see :meth:`node_ids`.
    """

    x: torch.Tensor
    x_input: torch.Tensor
    y: torch.Tensor
    edge_index: torch.Tensor
    weights: torch.Tensor
    num_nodes: int
    num_edges: int
    num_features: int
    num_classes: int
    feature_transform: str = "bag-of-words"
    class_names: Tuple[str, ...] = ()
    source_nodes: int = 0
    original_index: Optional[torch.Tensor] = None
    source_node_names: Optional[Sequence[Any]] = None

    def _id(self, position: int) -> str:
        names = self.source_node_names
        return str(names[position]) if names is not None else str(position)

    def node_ids(self) -> List[str]:
        """The user's id of every node, in node order: its name in the file, else its number there."""
        positions = self.original_index.tolist() if self.original_index is not None else range(self.num_nodes)
        return [self._id(position) for position in positions]

    def outside_ids(self) -> List[str]:
        """The ids of the file's nodes outside the largest component (the protocol leaves them out)."""
        if self.original_index is None or self.source_nodes <= self.num_nodes:
            return []
        kept = torch.zeros(self.source_nodes, dtype=torch.bool)
        kept[self.original_index] = True
        return [self._id(position) for position in torch.nonzero(~kept).flatten().tolist()]

    @property
    def x_sparse(self) -> torch.Tensor:
        """``x`` as a sparse CSR tensor, whatever its density."""
        return self.x_input if self.x_input.layout == torch.sparse_csr else self.x.to_sparse_csr()


def is_user_graph(spec: str) -> bool:
    """Whether ``spec`` names a graph read from the user's own file or folder (not a named dataset).

    Examples:
        >>> is_user_graph("cora"), is_user_graph("planetoid/PubMed")
        (False, False)
    """
    return named_feature_transform(spec) is None and Path(spec).exists()


def graph_label(spec: str) -> str:
    """The name of a graph in tables and results: a file's stem, else the specification in lower case.

    Args:
        spec: a graph specification of :func:`pdenets.data.load_graph`.

    Returns:
        The label, e.g. ``"cora"`` for ``"Cora"``, ``"mine"`` for ``"graphs/mine.npz"`` and for an edge list
        ``"graphs/mine.txt"``.

    Examples:
        >>> graph_label("CiteSeer"), graph_label("graphs/mine.npz")
        ('citeseer', 'mine')
    """
    return Path(spec).stem if spec.lower().endswith(".npz") or Path(spec).is_file() else spec.lower()


@process_cache(maxsize=8)
def prepared_graph(
    spec: str, data_dir: Optional[str], missing_features: str = "identity", features: str = "auto"
) -> PreparedGraph:
    """Load and preprocess a graph once per process; ``W = D̃^{-1/2}(A + I)D̃^{-1/2}``.

    Args:
        spec: a graph specification of :func:`pdenets.data.load_graph` (a name, ``planetoid/<name>``, a
            ``.npz`` path or a folder).
        data_dir: the data directory of named graphs (``None``: the default one).
        missing_features: the features of a graph file without any: ``"identity"`` or ``"degree"``
            (default: ``"identity"``).
        features: how the features enter the models (:data:`FEATURE_TRANSFORMS`; default ``"auto"``:
            bag-of-words for the named citation graphs and for counts, else standardized).

    Returns:
        The :class:`PreparedGraph`, shared by every later call with the same arguments in this process.

    Examples:
        >>> import tempfile, torch
        >>> from torch_geometric.data import Data
        >>> from pdenets.data import save_graph_npz
        >>> path = save_graph_npz(Data(x=torch.eye(4), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
        ...                            y=torch.tensor([0, 1, 0, 1])), tempfile.mkdtemp() + "/path.npz")
        >>> graph = prepared_graph(str(path), None)
        >>> graph.num_nodes, graph.num_edges, graph.num_features, graph.num_classes
        (4, 3, 4, 2)
        >>> tuple(graph.weights.shape)
        (4, 4)
    """
    data = load_graph(spec, data_dir, missing_features=missing_features)
    named = named_feature_transform(spec) if features == "auto" else None
    return prepare_graph(data, named or features)


def _checked_in_memory(data: Data) -> Data:
    """``data``, its edges as ``int64``; refused where its edges are not ``(2, E)`` numbers of its nodes or
    its features hold NaN or infinity (a file's readers check theirs as they read)."""
    nodes = int(data.num_nodes)
    edge_index = torch.as_tensor(data.edge_index)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or edge_index.dtype not in (torch.int64, torch.int32):
        raise ValueError(
            f"edge_index must be (2, E) integers, got {tuple(edge_index.shape)} {edge_index.dtype}"
        )
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= nodes):
        raise ValueError(f"edge_index names nodes outside 0…{nodes - 1}")
    x = data.x
    values = x.values() if x.is_sparse else x
    if x.is_floating_point() and not bool(torch.isfinite(values).all()):
        raise ValueError("the node features hold NaN or infinite values")
    return data if edge_index.dtype == torch.int64 else _copy(data, edge_index=edge_index.long())


def prepare_graph(data: Data, features: str = "auto") -> PreparedGraph:
    """The protocol's preprocessing of a graph held in memory (:func:`prepared_graph` reads one from a file):
    undirected, without self-loops, its largest component, its features transformed by ``features``
    (:data:`FEATURE_TRANSFORMS`), and the diffusion weights ``D̃^{-1/2}(A + I)D̃^{-1/2}``.

    Args:
        data: a PyG ``Data`` with ``x`` ``(N, F)``, ``edge_index`` ``(2, E)`` and ``y`` ``(N,)`` (``-1``: no
            label); optionally ``node_names`` and ``class_names``.
        features: a transform of :data:`FEATURE_TRANSFORMS` (default ``"auto"``: read from the features).

    Returns:
        The :class:`PreparedGraph`.
    """
    from ..operators.graph import gcn_normalize

    data = _checked_in_memory(data)
    source_nodes = int(data.num_nodes)
    names = data["node_names"] if "node_names" in data else None
    transform = feature_transform_for(data.x, features)
    data = preprocess_citation_graph(data, transform)
    num_classes = max(int(data.y.max()) + 1, 1)
    given = data["class_names"] if "class_names" in data else None
    class_names = tuple(str(given[c]) if given and c < len(given) else str(c) for c in range(num_classes))
    return PreparedGraph(
        x=data.x,
        x_input=data.x.to_sparse_csr() if feature_density(data.x) <= SPARSE_INPUT_DENSITY else data.x,
        y=data.y,
        edge_index=data.edge_index,
        weights=gcn_normalize((data.edge_index, None), data.num_nodes),
        num_nodes=int(data.num_nodes),
        num_edges=int(data.edge_index.shape[1] // 2),
        num_features=int(data.x.shape[1]),
        num_classes=num_classes,
        feature_transform=transform,
        class_names=class_names,
        source_nodes=source_nodes,
        original_index=data["original_index"] if "original_index" in data else None,
        source_node_names=names,
    )


def graph_facts(graph: PreparedGraph) -> Dict[str, Any]:
    """Sizes of a prepared graph and the largest stable step sizes of explicit diffusion with its weights.

    Args:
        graph: the graph, from :func:`prepared_graph`.

    Returns:
        ``nodes``, ``edges``, ``features``, ``classes``, and ``gershgorin_bound`` and ``spectral_bound``
        (:func:`pdenets.operators.laplacian.stability_bound` of ``graph.weights``).
    """
    from ..operators.laplacian import stability_bound

    return {
        "nodes": graph.num_nodes,
        "edges": graph.num_edges,
        "features": graph.num_features,
        "classes": graph.num_classes,
        "gershgorin_bound": stability_bound(graph.weights),
        "spectral_bound": stability_bound(graph.weights, method="spectral"),
    }
