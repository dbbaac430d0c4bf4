r"""Explicit diffusion of a graph whose rows are split over ``torch.distributed`` processes.

The diffusion step ``X ← A X``, ``A = I − γL``, ``L = Λ − W`` (:class:`~pdenets.operators.DiffusionOperator`),
computed by ``K`` processes: process ``k`` holds the rows ``P_k = first_k : first_k + n_k`` of ``W`` (a
contiguous range of a numbering made by :func:`~pdenets.operators.partition_graph`) and the features of those
nodes. A step needs, besides its own rows of ``X``, the rows of the *halo* ``H_k``: the nodes outside ``P_k``
that its rows of ``W`` point at. So every step is

$$
    X_{H_k} \leftarrow \text{rows sent by their owners}, \qquad
    Y_{P_k} = A_{P_k, P_k} X_{P_k} + A_{P_k, H_k} X_{H_k},
$$

and its transpose (the backward pass, ``∂ℓ/∂X = Aᵀ ∂ℓ/∂Y``) runs the exchange the other way:

$$
    G_{P_k \cup H_k} = A_{P_k, P_k \cup H_k}^\top\, \frac{\partial \ell}{\partial Y_{P_k}}, \qquad
    \frac{\partial \ell}{\partial X_{P_k}} = G_{P_k} + \sum_{j \ne k} (\text{the rows of } G_{H_j}
    \text{ that } j \text{ sends back to } k).
$$

Only halo rows travel: ``|H_k| × C`` numbers per step each way. A step writes its ``(n_k, C)`` result
(into a spare array of an earlier step, where the caller gives one) and adds the halo's products to the
few *boundary* rows that have halo entries; the transposed step writes ``G_{H_k}`` into an array of its
own, so neither copies ``[X_{P_k}; X_{H_k}]`` into one ``(n_k + |H_k|, C)`` array.

The degrees ``Λ`` are sums of a process's own rows, so building ``A`` needs no communication; the
stability bound ``γ ≤ 1 / max_i Σ_{j≠i} w_ij`` is one ``all_reduce``, and beyond it (symmetric ``W``)
``γ ≤ 2 / λ_max(L)``, the bound one process applies too, is found by a Lanczos recurrence over the
processes (one exchange and one ``all_reduce`` per step). Process
``k``'s dropout masks are rows ``first_k, …`` of the single process's masks
(:func:`~pdenets.nn.adjoint_diffusion.apply_dropout_mask_` with ``row_offset``), so a partitioned Diff-ResNet
computes the single-process loss and gradients (tests/operators/test_partitioned.py).

One process alone: the halo is empty and this is the plain operator.

Examples:
    >>> import torch
    >>> rows = torch.tensor([[0., 1.], [1., 0.]]).to_sparse_csr()
    >>> op = PartitionedDiffusion(rows, first=0, step_size=0.25)
    >>> op.product(torch.tensor([[1.], [-1.]]))
    tensor([[ 0.5000],
            [-0.5000]])
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple, Union

import numpy as np
import torch
import torch.distributed as dist

from .._checks import check_dense, check_floating, check_num_nodes, check_positive, check_positive_int
from .graph import check_weight_values, real_floating_weights
from .laplacian import UnstableStepSizeError
from .sparse import SparseMatrix, csr_from_scipy

__all__ = ["PartitionedDiffusion"]


def _group_facts(group) -> tuple:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(group), dist.get_world_size(group), True
    return 0, 1, False


class PartitionedDiffusion:
    r"""This process's rows of the diffusion operator ``A = I − γL`` of a graph split over processes.

    Args:
        rows: this process's rows of ``W``, a ``(n_k, N)`` sparse CSR (or COO) tensor whose column ids are
            the numbering of the whole graph (:func:`~pdenets.operators.load_part` gives it).
        first: the id of this process's first node: its rows are ``first : first + n_k``. The ranges of
            the processes, in rank order, must tile ``0 : N``.
        step_size: ``γ > 0``.
        check_stability: refuse ``γ`` beyond the stability bound one process would apply (default:
            ``True``): the Gershgorin bound ``1 / max_i Σ_{j≠i} w_ij`` over all processes, and beyond it, for
            a symmetric ``W``, ``2 / λ_max(L)`` with ``λ_max`` found by Lanczos over the processes.
        group: the process group (default: ``None``, the default group; without an initialized group the
            operator is the whole graph's, in one process).

    Attributes:
        num_nodes: ``n_k``, the rows this process holds (the features it diffuses are ``(n_k, *)``).
        row_offset: ``first``.
        halo_size: ``|H_k|``, the rows received per step.
        total_nodes: ``N``.
        own_block: ``A_{P_k,P_k}`` ``(n_k, n_k)`` (a :class:`~pdenets.operators.SparseMatrix`); the entries
            of ``A_{P_k,H_k}`` are kept for the few boundary rows that have any.

    Raises:
        ValueError: ranges that do not tile the graph, negative weights, non-finite weights.
        UnstableStepSizeError: ``check_stability`` and ``γ`` beyond the bound.

    Examples:
        >>> import torch
        >>> rows = torch.tensor([[0., 1.], [1., 0.]]).to_sparse_csr()
        >>> op = PartitionedDiffusion(rows, first=0, step_size=0.25)   # one process: the whole graph
        >>> op.halo_size, op.product(torch.tensor([[1.], [-1.]]), transpose=True).tolist()
        (0, [[0.5], [-0.5]])
    """

    dense = False
    requires_grad = False
    laplacian = "combinatorial"

    def __init__(
        self,
        rows: torch.Tensor,
        first: int,
        step_size: float,
        *,
        check_stability: bool = True,
        group: Optional[Any] = None,
    ):
        import scipy.sparse as sp

        self.step_size = check_positive(step_size, "step_size")
        self.group = group
        self.rank, self.world_size, self.distributed = _group_facts(group)
        if not isinstance(rows, torch.Tensor) or rows.layout not in (torch.sparse_csr, torch.sparse_coo):
            raise TypeError("rows must be this process's rows of W as a torch sparse CSR or COO tensor")
        rows = rows.detach().cpu()
        if rows.layout == torch.sparse_coo:
            rows = rows.coalesce().to_sparse_csr()
        count, total = (int(size) for size in rows.shape)
        self.num_nodes = check_positive_int(count, "rows of this process", minimum=1)
        self.total_nodes = check_num_nodes(total, f"rows of shape {tuple(rows.shape)}")
        self.row_offset = check_positive_int(first, "first", minimum=0)
        values = real_floating_weights(rows.values())
        check_weight_values(values)
        graph = sp.csr_matrix(
            (values.numpy(), rows.col_indices().numpy(), rows.crow_indices().numpy()), shape=(count, total)
        )
        self._check_tiling()
        own = slice(self.row_offset, self.row_offset + count)
        degrees = np.asarray(graph.sum(1), dtype=graph.dtype).ravel()
        self_weights = np.asarray(graph[:, own].diagonal(), dtype=graph.dtype)
        largest = self._max(float((degrees - self_weights).max()))
        #: the Gershgorin bound ``1 / max_i Σ_{j≠i} w_ij`` over all processes
        self.gershgorin_bound = float("inf") if largest <= 0 else 1.0 / largest
        #: the bound that admitted ``γ``: Gershgorin's, or beyond it (symmetric ``W``) ``2 / λ_max(L)``, the
        #: spectral bound one process accepts too (:func:`~pdenets.operators.check_step_size`)
        self.bound = self.gershgorin_bound
        diagonal = sp.csr_matrix(
            (1 - self.step_size * degrees, (np.arange(count), np.arange(count) + own.start)),
            shape=(count, total),
            dtype=graph.dtype,
        )
        matrix = (graph * graph.dtype.type(self.step_size) + diagonal).tocsr()
        matrix.sort_indices()
        columns = matrix.indices.astype(np.int64)
        mine = (columns >= own.start) & (columns < own.stop)
        self.halo = np.unique(columns[~mine])  # sorted: the rows of each owner are one segment
        self.halo_size = int(self.halo.size)
        self._split(matrix)
        self._plan_exchange()
        if check_stability and self.step_size > self.gershgorin_bound * (1 + 1e-6):
            laplacian = sp.diags(degrees.astype(np.float64), own.start, shape=(count, total), format="csr")
            self._check_spectral_bound(self._local((laplacian - graph.astype(np.float64)).tocsr()))

    # -- set-up ---------------------------------------------------------------------------------------------
    def _split(self, matrix: Any) -> None:
        """Store ``A``'s rows as the own block ``A_{P_k,P_k}`` ``(n_k, n_k)`` and the halo block
        ``A_{B_k,H_k}`` ``(|B_k|, |H_k|)`` of the *boundary* rows ``B_k`` (those with a halo entry), with
        ``A_{P_k,H_k}ᵀ`` ``(|H_k|, n_k)`` for the transposed step.

        So a step writes its ``(n_k, C)`` result in place of a spare array and adds the halo's few rows,
        instead of reading ``[X_{P_k}; X_{H_k}]`` copied into one ``(n_k + |H_k|, C)`` array; the transposed
        step writes ``G_{H_k}`` apart, instead of into an ``(n_k + |H_k|, C)`` array. The own block of a
        symmetric ``W`` is its own transpose and stored once."""
        local, count = self._renumbered(matrix), self.num_nodes
        own, halo = local[:, :count].tocsr(), local[:, count:].tocsr()
        own.sort_indices()
        self.own_block = SparseMatrix(csr_from_scipy(own))
        # the transpose built now, while the process holds no features (the own block itself if symmetric)
        self.own_block.T  # noqa: B018
        boundary = np.flatnonzero(np.diff(halo.indptr))
        self._boundary = torch.from_numpy(boundary.astype(np.int64))
        self._halo_rows = SparseMatrix(csr_from_scipy(halo[boundary].tocsr()))
        self._halo_columns = SparseMatrix(csr_from_scipy(halo.T.tocsr()))

    @property
    def nnz(self) -> int:
        """The stored entries of this process's rows of ``A``."""
        return self.own_block.nnz + self._halo_rows.nnz

    def _renumbered(self, rows: Any) -> Any:
        """Rows ``(n_k, N)`` (scipy CSR, columns in the whole graph's numbering) as ``(n_k, n_k + |H_k|)``
        (scipy CSR): this process's columns first, then the halo's in :attr:`halo` order."""
        import scipy.sparse as sp

        rows.sort_indices()
        own_start, count = self.row_offset, self.num_nodes
        columns = rows.indices.astype(np.int64)
        mine = (columns >= own_start) & (columns < own_start + count)
        local = np.where(mine, columns - own_start, count + np.searchsorted(self.halo, columns))
        return sp.csr_matrix((rows.data, local, rows.indptr), shape=(count, count + self.halo_size))

    def _local(self, rows: Any) -> SparseMatrix:
        """:meth:`_renumbered` as a :class:`~pdenets.operators.SparseMatrix`."""
        return SparseMatrix(csr_from_scipy(self._renumbered(rows)))

    def _sum(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` (float64) summed over the processes."""
        if self.distributed:
            dist.all_reduce(values, group=self.group)
        return values

    def _check_spectral_bound(self, laplacian: SparseMatrix, max_iterations: int = 2000) -> None:
        r"""Admit ``γ`` beyond Gershgorin's bound up to ``2 / λ_max(L)``, as one process does, or refuse it
        naming both bounds.

        ``W`` must be symmetric (checked on a random vector: ``‖Lx − Lᵀx‖`` against ``‖Lx‖``).
        ``λ_max(L)`` comes from the Lanczos recurrence run over the processes: each holds its rows of the
        Lanczos vectors, ``L v`` is one halo exchange, and the recurrence's two inner products are one
        ``all_reduce``, so every process builds the same tridiagonal matrix and finds the same ``λ_max``.
        Its largest Ritz value approaches ``λ_max`` from below; the recurrence stops when it has not moved by
        more than ``10⁻¹²`` (relative) over ten steps, and the value is raised by ``10⁻⁸`` as the single
        process's Lanczos is.
        """
        from scipy.linalg import eigvalsh_tridiagonal

        def apply(vector: torch.Tensor, transpose: bool = False) -> torch.Tensor:
            if transpose:
                extended = laplacian.T.product(vector)
                return self.return_halo(extended[: self.num_nodes].contiguous(), extended[self.num_nodes :])
            return laplacian.product(torch.cat([vector, self.exchange(vector)]))

        generator = np.random.default_rng((0, self.row_offset))
        start = torch.from_numpy(generator.standard_normal((self.num_nodes, 1)))
        forward = apply(start)
        difference, size = self._sum(
            torch.stack([(forward - apply(start, transpose=True)).square().sum(), forward.square().sum()])
        ).tolist()
        symmetric = difference <= 1e-18 * max(size, 1e-300)
        spectral, largest = None, 0.0
        if symmetric:
            vector = start / self._sum(start.square().sum()).sqrt()
            previous = torch.zeros_like(vector)
            alphas: List[float] = []
            betas: List[float] = []
            history: List[float] = []
            for step in range(min(max_iterations, self.total_nodes)):
                image = apply(vector) - (betas[-1] * previous if betas else 0.0)
                alpha = float(self._sum((image * vector).sum()))
                image = image - alpha * vector
                beta = float(self._sum(image.square().sum()).sqrt())
                alphas.append(alpha)
                if step % 10 == 9 or beta <= 1e-14 or step + 1 == min(max_iterations, self.total_nodes):
                    ritz = float(eigvalsh_tridiagonal(np.array(alphas), np.array(betas))[-1])
                    history.append(ritz)
                    if beta <= 1e-14 or (
                        len(history) > 1 and abs(history[-1] - history[-2]) <= 1e-12 * abs(history[-1])
                    ):
                        break
                betas.append(beta)
                previous, vector = vector, image / beta
            largest = history[-1] * (1 + 1e-8)
            spectral = float("inf") if largest <= 0 else 2.0 / largest
            if self.step_size <= spectral * (1 + 1e-6):
                self.bound = spectral
                return
        detail = (
            f"2/lambda_max(L) = {spectral:.6g} (lambda_max = {largest:.6g}, by Lanczos over the "
            f"{self.world_size} processes)"
            if spectral is not None
            else "1/max_i sum_(j!=i) w_ij (W is not symmetric, so no larger spectral bound applies)"
        )
        limit = spectral if spectral is not None else self.gershgorin_bound
        raise UnstableStepSizeError(
            f"step_size={self.step_size:g} exceeds the stability bound {detail} of explicit diffusion on "
            "the partitioned graph (Gershgorin's bound 1/max_i sum_(j!=i) w_ij = "
            f"{self.gershgorin_bound:.6g}; "
            "Diff-ResNet paper, Prop. 2): features would grow without bound. Use step_size <= "
            f"{limit:.6g} with more steps for the same total strength (e.g. --set "
            "diffusion.<graph>.step_size=...), or pass check_stability=False if you know what you are doing."
        )

    def _gather_ints(self, values: List[int]) -> torch.Tensor:
        """``(K, len(values))``: every process's ``values`` (int64)."""
        mine = torch.tensor(values, dtype=torch.int64)
        if not self.distributed:
            return mine[None]
        everyone = [torch.empty_like(mine) for _ in range(self.world_size)]
        dist.all_gather(everyone, mine, group=self.group)
        return torch.stack(everyone)

    def _max(self, value: float) -> float:
        if not self.distributed:
            return value
        tensor = torch.tensor([value], dtype=torch.float64)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX, group=self.group)
        return float(tensor)

    def _check_tiling(self) -> None:
        ranges = self._gather_ints([self.row_offset, self.num_nodes, self.total_nodes])
        if bool((ranges[:, 2] != self.total_nodes).any()):
            raise ValueError(f"the processes disagree on the number of nodes: {ranges[:, 2].tolist()}")
        ends = ranges[:, 0] + ranges[:, 1]
        starts = torch.cat([torch.zeros(1, dtype=torch.int64), ends[:-1]])
        if not torch.equal(ranges[:, 0], starts) or int(ends[-1]) != self.total_nodes:
            raise ValueError(
                "the processes' rows must tile the graph in rank order (process k holds "
                f"first_k : first_k + n_k, first_0 = 0, ending at N = {self.total_nodes}); got starts "
                f"{ranges[:, 0].tolist()} and sizes {ranges[:, 1].tolist()}"
            )
        self.offsets = torch.cat([starts, ends[-1:]])

    def _plan_exchange(self) -> None:
        """Which halo rows come from which process, and which of this process's rows go to which."""
        owners = np.searchsorted(self.offsets.numpy(), self.halo, side="right") - 1
        bounds = np.searchsorted(owners, np.arange(self.world_size + 1))
        self._receive = [slice(int(bounds[peer]), int(bounds[peer + 1])) for peer in range(self.world_size)]
        wanted = self._gather_ints([int(bounds[peer + 1] - bounds[peer]) for peer in range(self.world_size)])
        self._send: List[Optional[torch.Tensor]] = [None] * self.world_size
        operations = []
        for peer in range(self.world_size):
            if peer == self.rank:
                continue
            count = int(wanted[peer, self.rank])
            if count:
                buffer = self._send[peer] = torch.empty(count, dtype=torch.int64)
                operations.append(dist.P2POp(dist.irecv, buffer, peer, self.group))
            piece = self._receive[peer]
            if piece.stop > piece.start:
                operations.append(
                    dist.P2POp(dist.isend, torch.from_numpy(self.halo[piece].copy()), peer, self.group)
                )
        self._wait(operations)
        for peer, ids in enumerate(self._send):
            if ids is not None:
                self._send[peer] = ids - self.row_offset

    @staticmethod
    def _wait(operations) -> None:
        if operations:
            for request in dist.batch_isend_irecv(operations):
                request.wait()

    # -- steps ----------------------------------------------------------------------------------------------
    def exchange(self, features: torch.Tensor) -> torch.Tensor:
        """The halo rows ``X_{H_k}`` ``(|H_k|, C)`` from their owners, given this process's ``X_{P_k}``."""
        halo = features.new_empty((self.halo_size, features.shape[1]))
        operations = []
        for peer in range(self.world_size):
            if peer == self.rank:
                continue
            if self._send[peer] is not None:
                rows = features[self._send_index(peer, features.device)]
                operations.append(dist.P2POp(dist.isend, rows.contiguous(), peer, self.group))
            piece = self._receive[peer]
            if piece.stop > piece.start:
                operations.append(dist.P2POp(dist.irecv, halo[piece], peer, self.group))
        self._wait(operations)
        return halo

    def return_halo(self, gradient: torch.Tensor, halo_gradient: torch.Tensor) -> torch.Tensor:
        """The transposed exchange: send ``G_{H_k}`` to the owners, add what others send into ``gradient``."""
        received, operations = {}, []
        for peer in range(self.world_size):
            if peer == self.rank:
                continue
            piece = self._receive[peer]
            if piece.stop > piece.start:
                operations.append(dist.P2POp(dist.isend, halo_gradient[piece].contiguous(), peer, self.group))
            sent = self._send[peer]
            if sent is not None:
                received[peer] = gradient.new_empty((sent.numel(), gradient.shape[1]))
                operations.append(dist.P2POp(dist.irecv, received[peer], peer, self.group))
        self._wait(operations)
        for peer, rows in received.items():
            gradient.index_add_(0, self._send_index(peer, gradient.device), rows)
        return gradient

    def _send_index(self, peer: int, device: torch.device) -> torch.Tensor:
        """The local rows sent to ``peer``, on ``device`` (kept there after the first use)."""
        index = self._send[peer]
        assert index is not None  # only a peer that takes rows of this process is sent any
        if index.device != device:
            index = self._send[peer] = index.to(device)
        return index

    #: a process's rows are stored in the partition's order (its file already grouped them for locality)
    order = None

    def to_stored(self, features: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``features`` themselves: the rows are stored in their own order."""
        return features

    to_nodes = to_stored

    def stored_product(
        self, features: torch.Tensor, transpose: bool = False, out: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """:meth:`product` (the stored order is the rows' own)."""
        return self.product(features, transpose, out)

    def masked_stored_product(
        self, features: torch.Tensor, transpose: bool, mask, out: Optional[torch.Tensor] = None
    ) -> None:
        """``None``: the caller multiplies, then masks (a product here exchanges halos first)."""
        return None

    def product(
        self, features: torch.Tensor, transpose: bool = False, out: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """One step ``A X`` (or ``Aᵀ G``) on this process's rows ``(n_k, C)``, outside autograd; ``out``: a
        spare tensor of the result's shape that ``A X`` may be written into
        (:meth:`~pdenets.operators.SparseMatrix.product`)."""
        features = features.contiguous()
        if not transpose:
            result = self.own_block.product(features, out)
            if self.world_size > 1:
                halo = self.exchange(features)
                if self.halo_size:
                    boundary = self._index(features.device)
                    result.index_add_(0, boundary, self._halo_rows.product(halo))
            return result
        result = self.own_block.T.product(features, out)
        if self.world_size > 1:
            result = self.return_halo(result, self._halo_columns.product(features))
        return result

    def _index(self, device: torch.device) -> torch.Tensor:
        """The boundary rows' ids on ``device`` (kept there after the first use)."""
        if self._boundary.device != device:
            self._boundary = self._boundary.to(device)
        return self._boundary

    def agree_seeds(self, seeds: List[Optional[int]]) -> List[Optional[int]]:
        """Process 0's dropout seeds on every process (the masks of one step must be one mask)."""
        if not self.distributed or not seeds or seeds[0] is None:
            return seeds
        tensor = torch.tensor(seeds, dtype=torch.int64)
        dist.broadcast(
            tensor,
            src=int(dist.get_global_rank(self.group, 0)) if self.group is not None else 0,
            group=self.group,
        )
        return [int(seed) for seed in tensor.tolist()]

    def apply(
        self,
        features: torch.Tensor,
        num_steps: int = 1,
        *,
        step_scale: Optional[Union[float, torch.Tensor]] = None,
        before_step: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
        after_step: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    ) -> torch.Tensor:
        """``r`` steps on this process's rows ``(n_k, *)``, differentiable (each step's backward is its
        transpose); ``step_scale`` ``ρ`` makes each the relaxed step ``X + ρ (A X − X)``, as
        :meth:`~pdenets.operators.DiffusionOperator.apply`.

        Every process must call it with the same ``num_steps`` (each step is an exchange).
        """
        check_floating(features, "features")
        check_dense(features, "features", "PartitionedDiffusion.apply")
        if features.dim() < 1 or features.shape[0] != self.num_nodes:
            raise ValueError(
                f"features have {features.shape[0] if features.dim() else 0} rows but this process "
                f"holds {self.num_nodes} nodes"
            )
        shape = features.shape
        flat = features.reshape(shape[0], -1)
        for _ in range(check_positive_int(num_steps, "num_steps", minimum=0)):
            if before_step is not None:
                flat = before_step(flat)
            stepped = _PartitionedStep.apply(flat, self)
            flat = stepped if step_scale is None else flat + step_scale * (stepped - flat)
            if after_step is not None:
                flat = after_step(flat)
        return flat.reshape(shape)

    def __repr__(self) -> str:
        return (
            f"PartitionedDiffusion(rank {self.rank} of {self.world_size}, rows {self.row_offset}:"
            f"{self.row_offset + self.num_nodes} of N={self.total_nodes}, halo={self.halo_size}, "
            f"step_size={self.step_size:g}, nnz={self.nnz})"
        )


class _PartitionedStep(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, features: torch.Tensor, operator: PartitionedDiffusion) -> torch.Tensor:
        ctx.operator = operator
        return operator.product(features)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> Tuple[torch.Tensor, None]:
        return ctx.operator.product(grad_output, transpose=True), None
