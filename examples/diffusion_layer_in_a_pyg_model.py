"""The diffusion layer inside a PyTorch Geometric model.

A two-layer GCN built from PyG's ``GCNConv`` gets pdenets' parameter-free ``DiffusionLayer`` between its
layers: ``r`` explicit steps ``X ← X − γ L X`` on the same graph, taken as PyG's ``(edge_index,
edge_weight)``. The step size is chosen from the graph's stability bound (``stability_bound``), so the
layer can never blow the features up. Trained on a planted-partition graph with few labels, the figure
compares the plain GCN with the GCN whose hidden features are diffused.
"""

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric.nn import GCNConv

from pdenets.nn import DiffusionLayer
from pdenets.operators import gcn_normalize, stability_bound

torch.manual_seed(0)
classes, per_class = 3, 200
labels = torch.arange(classes).repeat_interleave(per_class)
n = labels.numel()
same = labels[:, None] == labels[None, :]
adjacency = torch.rand(n, n) < torch.where(same, torch.tensor(0.02), torch.tensor(0.005))
edge_index = torch.triu(adjacency, 1).nonzero().T
edge_index = torch.cat([edge_index, edge_index.flip(0)], 1)
x = torch.randn(n, 16) + 0.4 * F.one_hot(labels, 16).float()  # weak class signal in the features
train = torch.cat([torch.nonzero(labels == c).squeeze(1)[:5] for c in range(classes)])
test = torch.ones(n, dtype=torch.bool)
test[train] = False

weights = gcn_normalize((edge_index, None), n)  # the graph pdenets diffuses on (sparse, normalized)
gamma = 0.5 * stability_bound(weights, method="spectral")
print(f"{n} nodes, {edge_index.shape[1] // 2} edges; step size γ = {gamma:.3f} (half the stability bound)")


class GCNWithDiffusion(nn.Module):
    def __init__(self, steps: int):
        super().__init__()
        self.first, self.second = GCNConv(16, 32), GCNConv(32, classes)
        self.diffusion = DiffusionLayer(step_size=gamma, num_steps=steps, weights=weights) if steps else None

    def forward(self, x, edge_index):
        hidden = F.relu(self.first(x, edge_index))
        if self.diffusion is not None:
            hidden = self.diffusion(hidden)
        return self.second(F.dropout(hidden, 0.5, self.training), edge_index)


results = {}
for steps in (0, 10):
    torch.manual_seed(1)
    model = GCNWithDiffusion(steps)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    curve = []
    for epoch in range(100):
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(x, edge_index)[train], labels[train]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            curve.append(float((model(x, edge_index).argmax(1) == labels)[test].float().mean()))
    results[steps] = curve
    print(f"r = {steps:2d}: test accuracy after 100 epochs {curve[-1]:.3f}")

fig, ax = plt.subplots(figsize=(5, 3.2), layout="constrained")
for steps, curve in results.items():
    ax.plot(curve, label="GCN" if steps == 0 else f"GCN + {steps} diffusion steps")
ax.set_xlabel("epoch")
ax.set_ylabel("test accuracy")
ax.set_title(f"{classes} communities, 5 labels each")
ax.legend()
ax.grid(alpha=0.3)
fig.savefig("diffusion_layer_in_a_pyg_model.png", dpi=110)
