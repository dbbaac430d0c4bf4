"""Three epochs of a small Hamiltonian network with a nonlocal block; prints the epoch losses as JSON.

Run alone or under ``python -m torch.distributed.run --nproc_per_node=2``: the losses must agree.
"""

import gc
import json

import torch

from pdenets.experiments.distributed import distributed_context
from pdenets.models.hamiltonian import HamiltonianNet
from pdenets.models.training import train_epoch

torch.set_num_threads(1)
context = distributed_context()
torch.manual_seed(0)
model = HamiltonianNet(
    3,
    4,
    units=(1, 1),
    widths=(8, 16),
    image_size=16,
    batch_norm=False,
    nonlocal_operator="diffusion-dot",
    nonlocal_options={"subsample": 2},
).double()
trained = context.wrap(model)
generator = torch.Generator().manual_seed(1)
images = torch.randn(64, 3, 16, 16, generator=generator, dtype=torch.float64)
labels = torch.randint(0, 4, (64,), generator=generator)
optimizer = torch.optim.SGD(trained.parameters(), lr=0.05, momentum=0.9)
order = torch.Generator().manual_seed(2)
losses = [
    train_epoch(
        trained,
        optimizer,
        images,
        labels,
        batch_size=16,
        generator=order,
        shard=context.shard,
        reduce=context.reduce,
    )["loss"]
    for _ in range(3)
]
if context.is_main:
    print(json.dumps(losses), flush=True)
# release the DDP reducer (it holds the gloo process group) before the group is destroyed, so that no
# gloo object is left for interpreter shutdown to destroy: that teardown can abort the process
del trained, optimizer
gc.collect()
context.close()
