"""Three Adam steps of a Diff-ResNet on a saved partition, one process per part (run under torchrun).

    python -m torch.distributed.run --nproc_per_node=2 --standalone partitioned_step.py PARTITION OUT SETTINGS

Each process loads only its part, trains on its rows and writes ``OUT/rank-k.pt``: the loss of every step,
the (all-reduced) gradients of the first step, its rows' evaluation logits, and its product ``A X`` and
transposed product ``Aᵀ X`` of the part's features.
"""

import json
import os
import sys

import torch
import torch.distributed as dist

from pdenets.models.partitioned import (
    all_reduce_gradients,
    global_count,
    partitioned_cross_entropy,
    partitioned_diff_resnet,
)
from pdenets.operators import load_part


def main() -> None:
    folder, out, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if settings.pop("compiled", False):  # every product through the compiled kernel, however small
        import pdenets.operators.sparse as sparse

        sparse.SCIPY_MIN_OUTPUT = 0
    torch.set_num_threads(1)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if dist.is_initialized() else 0
    part = load_part(folder, rank)
    train = torch.nonzero(part.labels >= 0).ravel()[::3]  # every third node of the part is labelled
    total = global_count(train.numel())
    torch.manual_seed(settings.pop("seed"))
    model = partitioned_diff_resnet(part, int(settings.pop("num_classes")), **settings)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses, gradients = [], None
    for _ in range(3):
        model.train()
        optimizer.zero_grad()
        loss = partitioned_cross_entropy(model(part.features), part.labels, train, total)
        loss.backward()
        all_reduce_gradients(model)
        if gradients is None:
            gradients = {name: parameter.grad.clone() for name, parameter in model.named_parameters()}
        optimizer.step()
        losses.append(float(loss))
    model.eval()
    with torch.no_grad():
        logits = model(part.features)
        operator = model.diffusion.operator_for(part.features)
        forward, transposed = operator.product(part.features), operator.product(part.features, transpose=True)
    torch.save(
        {
            "losses": losses,
            "gradients": gradients,
            "logits": logits,
            "forward": forward,
            "transposed": transposed,
            "halo": operator.halo_size,
            "first": part.first,
        },
        os.path.join(out, f"rank-{rank}.pt"),
    )
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
