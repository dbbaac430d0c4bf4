"""Pure functions on tensors: graph weights, Laplacians, stability bounds, diffusion.

Sparse by default; nothing here builds an N×N matrix from sparse input.
"""

from .diffusion import (
    LAPLACIANS,
    BatchedDiffusion,
    DiffusionOperator,
    SliceDiffusion,
    diffuse,
    heat_semigroup,
)
from .graph import (
    GraphLike,
    add_self_loops,
    as_weight_matrix,
    gcn_normalize,
    remove_self_loops,
    row_normalize,
    row_sums,
    symmetric_normalize,
    symmetrize,
)
from .knn import Neighbors, NeighbourIndex, faiss_available, knn_search, pairwise_sq_distances
from .laplacian import UnstableStepSizeError, check_step_size, graph_laplacian, stability_bound
from .locality import NODE_ORDERS, locality_order
from .partition import (
    GraphPartition,
    PartFile,
    PartitionError,
    load_part,
    load_partition,
    partition_graph,
    save_partition,
)
from .partitioned import PartitionedDiffusion
from .propagation import appnp_propagate, gcn_diffusion_operator, gcn_propagate, sgc_propagate
from .slice_graphs import SliceGraphs, chebyshev_propagation_matrix, gcn_propagation_matrix
from .sparse import SparseMatrix
from .weights import KnnGaussianWeights, batched_knn_gaussian_weights, gaussian_kernel, knn_gaussian_weights

__all__ = [
    "DiffusionOperator",
    "BatchedDiffusion",
    "SliceDiffusion",
    "diffuse",
    "heat_semigroup",
    "LAPLACIANS",
    "gcn_diffusion_operator",
    "gcn_propagate",
    "sgc_propagate",
    "appnp_propagate",
    "SparseMatrix",
    "PartitionedDiffusion",
    "NODE_ORDERS",
    "locality_order",
    "GraphPartition",
    "PartFile",
    "partition_graph",
    "save_partition",
    "load_part",
    "load_partition",
    "PartitionError",
    "SliceGraphs",
    "gcn_propagation_matrix",
    "chebyshev_propagation_matrix",
    "GraphLike",
    "add_self_loops",
    "as_weight_matrix",
    "gcn_normalize",
    "remove_self_loops",
    "row_normalize",
    "row_sums",
    "symmetric_normalize",
    "symmetrize",
    "Neighbors",
    "NeighbourIndex",
    "faiss_available",
    "knn_search",
    "pairwise_sq_distances",
    "UnstableStepSizeError",
    "check_step_size",
    "graph_laplacian",
    "stability_bound",
    "KnnGaussianWeights",
    "gaussian_kernel",
    "knn_gaussian_weights",
    "batched_knn_gaussian_weights",
]
