"""Geodesic analysis of any network: the tracks of the data through a small torchvision-style ResNet.

``record_tracks`` hooks the blocks of any ``nn.Module`` (chosen by name, type or predicate) and keeps every
point's position after each block: its track. The line-shape score ``LSS`` is 1 on a straight track (the
geodesic of the data's transport), the optimal-transport score ``OTS`` the share of points the network sends
where the optimal assignment of inputs to outputs does. Here a ResNet of ``BasicBlock``s, written as
torchvision writes them, is trained for a few epochs on scikit-learn's 8×8 digits; the figure draws 2-D
random projections of the tracks of its first stage, before and after training.
"""

import matplotlib.pyplot as plt
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.nn import functional as F

from pdenets.analysis import line_shape_score, optimal_transport_score, project_tracks, record_tracks


class BasicBlock(nn.Module):  # torchvision.models.resnet.BasicBlock, without its downsampling
    def __init__(self, width: int):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width)

    def forward(self, x):
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class SmallResNet(nn.Module):
    def __init__(self, width: int = 16, blocks: int = 4, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU()
        )
        self.layer1 = nn.Sequential(*[BasicBlock(width) for _ in range(blocks)])
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        return self.fc(self.layer1(self.stem(x)).mean((2, 3)))


digits = load_digits()
x = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)
y = torch.tensor(digits.target)
torch.manual_seed(0)
model = SmallResNet()
probe = x[:300]


def scores(stage):
    lss = float(line_shape_score(stage.tracks).mean())
    ots = optimal_transport_score(stage.tracks[:, 0], stage.tracks[:, -1])
    return lss, ots


model.eval()
before = record_tracks(model, probe, blocks=BasicBlock)[0]
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
for epoch in range(5):
    model.train()
    for start in range(0, len(y), 128):
        optimizer.zero_grad()
        F.cross_entropy(model(x[start : start + 128]), y[start : start + 128]).backward()
        optimizer.step()
model.eval()
with torch.no_grad():
    accuracy = float((model(x).argmax(1) == y).float().mean())
after = record_tracks(model, probe, blocks=BasicBlock)[0]
for name, stage in (("before training", before), ("after training", after)):
    lss, ots = scores(stage)
    print(f"{name}: LSS {lss:.3f}, OTS {ots:.3f} ({stage.tracks.shape[1] - 1} blocks)")
print(f"training accuracy {accuracy:.3f}")

fig, axes = plt.subplots(1, 2, figsize=(8, 3.6), layout="constrained")
for ax, (name, stage) in zip(axes, (("before training", before), ("after training", after))):
    flat = project_tracks(stage.tracks[:, :, :].flatten(2), 2, seed=0).numpy()
    for i in range(60):
        ax.plot(flat[i, :, 0], flat[i, :, 1], color=plt.cm.tab10(int(y[i])), lw=0.8, alpha=0.8)
        ax.scatter(flat[i, -1, 0], flat[i, -1, 1], color=plt.cm.tab10(int(y[i])), s=8)
    lss, ots = scores(stage)
    ax.set_title(f"{name}: LSS {lss:.2f}, OTS {ots:.2f}")
    ax.set_xticks([])
    ax.set_yticks([])
fig.suptitle("tracks of 60 digits through the first stage (random 2-D projection)")
fig.savefig("geodesic_analysis_of_a_resnet.png", dpi=110)
