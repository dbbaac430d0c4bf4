"""The stability bound of a partitioned diffusion, one process per part (run under torchrun).

    python -m torch.distributed.run --nproc_per_node=2 --standalone partitioned_bound.py PARTITION OUT STEPS

Each process builds its :class:`~pdenets.operators.PartitionedDiffusion` from its part for every step size of
the JSON list ``STEPS`` and writes ``OUT/rank-k.json``: per step size, the bound that admitted it with both
bounds, or the error's message; and its own rows' Gershgorin bound (what it would say alone).
"""

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from pdenets.operators import PartitionedDiffusion, UnstableStepSizeError, load_part


def main() -> None:
    folder, out, steps = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
    torch.set_num_threads(1)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if dist.is_initialized() else 0
    part = load_part(folder, rank)
    answers = {}
    for step_size in steps:
        try:
            operator = PartitionedDiffusion(part.weights, part.first, step_size)
            answers[str(step_size)] = {"bound": operator.bound, "gershgorin": operator.gershgorin_bound}
        except UnstableStepSizeError as error:
            answers[str(step_size)] = {"error": str(error)}
    rows = part.weights.to_dense()
    own = rows[:, part.first : part.first + rows.shape[0]]
    alone = 1.0 / float((rows.sum(1) - torch.diagonal(own)).max())
    (out / f"rank-{rank}.json").write_text(json.dumps({"answers": answers, "alone": alone}))
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
