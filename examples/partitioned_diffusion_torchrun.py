"""One graph split over two processes with torchrun: partitioned diffusion gives the single process's numbers.

A graph too large for one machine is split into parts (``partition_graph``: METIS where ``pymetis`` is
installed, else contiguous ranges of the node order) and saved one file per part (``save_partition``); each
process reads only its own part (``load_part``) and diffuses its rows with ``PartitionedDiffusion``, which
exchanges just the halo — the nodes of other parts that its rows point at — at every step. Run as a plain
script, this example writes the parts and starts itself twice under ``torchrun`` (``python -m
torch.distributed.run --nproc-per-node 2 --standalone``); it then compares the gathered result with one
process's ``DiffusionOperator`` and draws the graph coloured by process, the halo nodes ringed.
"""

import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

STEPS, STEP_SIZE = 10, 0.2


def worker(folder: Path) -> None:
    """One process of the torchrun job: its part's rows, diffused; rank 0 gathers every part's result."""
    import torch.distributed as dist

    from pdenets.operators import PartitionedDiffusion, load_part

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    part = load_part(folder, rank)
    operator = PartitionedDiffusion(part.weights, part.first, step_size=STEP_SIZE)
    out = operator.apply(part.features, STEPS)
    print(
        f"rank {rank}: rows {part.first}..{part.first + operator.num_nodes - 1}, "
        f"halo {operator.halo_size} nodes"
    )
    pieces = [None] * dist.get_world_size()
    dist.all_gather_object(pieces, (part.first, out, operator.halo_size))
    if rank == 0:
        torch.save(pieces, folder / "gathered.pt")
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    import matplotlib.pyplot as plt

    from pdenets.operators import DiffusionOperator, partition_graph, save_partition

    # a mesh-like graph: 400 points on a 20 x 20 grid, each joined to its grid neighbours
    side = 20
    index = torch.arange(side * side).reshape(side, side)
    pairs = torch.cat(
        [
            torch.stack([index[:, :-1].flatten(), index[:, 1:].flatten()]),
            torch.stack([index[:-1].flatten(), index[1:].flatten()]),
        ],
        1,
    )
    pairs = torch.cat([pairs, pairs.flip(0)], 1)
    n = side * side
    weights = torch.sparse_coo_tensor(pairs, torch.ones(pairs.shape[1]), (n, n)).coalesce()
    features = torch.randn(n, 3, generator=torch.Generator().manual_seed(0))
    try:
        import pymetis  # noqa: F401

        method = "metis"
    except ImportError:
        method = "contiguous"
    partition = partition_graph(weights, 2, method=method)
    folder = Path(tempfile.mkdtemp()) / "parts"
    save_partition(folder, partition, weights, features=features)  # in the given numbering
    print(f"{n} nodes in 2 parts ({method}), {100 * partition.cut_fraction:.1f} % of the edges between them")
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--standalone",
        __file__,
        str(folder),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    print(done.stdout.strip())
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    pieces = torch.load(folder / "gathered.pt", weights_only=False)
    together = torch.cat([out for _, out, _ in sorted(pieces, key=lambda piece: piece[0])])
    single = DiffusionOperator(weights, STEP_SIZE).apply(features, STEPS)[partition.order]
    difference = float((together - single).abs().max())
    print(f"max |two processes - one process| = {difference:.2e}")

    position = torch.stack([index.flatten() % side, index.flatten() // side], 1).float()
    part_of = torch.empty(n, dtype=torch.long)
    for k in range(2):
        part_of[partition.order[partition.offsets[k] : partition.offsets[k + 1]]] = k
    cut = part_of[pairs[0]] != part_of[pairs[1]]
    halo = torch.unique(pairs[1][cut])
    fig, ax = plt.subplots(figsize=(4.6, 4.4), layout="constrained")
    ax.scatter(position[:, 0], position[:, 1], c=part_of, cmap="coolwarm", s=28)
    ax.scatter(position[halo, 0], position[halo, 1], facecolors="none", edgecolors="black", s=70, lw=0.8)
    ax.set_title(f"process of each node ({method}); ringed: halo\nmax difference {difference:.1e}")
    ax.set_aspect("equal")
    ax.axis("off")
    fig.savefig("partitioned_diffusion_torchrun.png", dpi=110)
    assert math.isfinite(difference) and difference < 1e-5


if __name__ == "__main__":
    if "RANK" in os.environ:
        worker(Path(sys.argv[1]))
    else:
        main()
