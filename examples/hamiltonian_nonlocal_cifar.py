"""A Hamiltonian network with a nonlocal diffusion block, trained on a CIFAR-10 subset.

The Hamiltonian CNN of the PIDE paper (Verlet blocks, exactly invertible) gets one nonlocal block per unit:
``B_i = X_i + h K[(1/N) Σ_j ω_ij (X_j − X_i)]`` over all pixel positions, with ``ω_ij = λ θ(X_i)ᵀφ(X_j)``
(computed in O(N) memory, never as an N × N matrix). Both networks are built at a small width and trained
for three epochs on the first 1,000 CIFAR-10 training images with the paper's augmentation; the figure shows
the training loss and the accuracy on the 1,000 official test images.

Reads ``cifar10/convnetjs_png`` from the data folder (``$PDENETS_DATA``).
"""

import matplotlib.pyplot as plt
import torch

from pdenets.data.vision import load_cifar10, mean_image, pad_crop_flip
from pdenets.models.image_networks import ImageArchitecture, build_image_model
from pdenets.models.training import evaluate_classifier, train_epoch

REQUIRES = (
    "cifar10/convnetjs_png/cifar10_labels.json",
    "cifar10/convnetjs_png/cifar10_batch_0.png",
    "cifar10/convnetjs_png/cifar10_batch_50.png",
)

train = load_cifar10("train", limit=1000)
test = load_cifar10("official")
mean = mean_image(train.images)
architecture = ImageArchitecture(
    units=(2, 2, 2), widths=(16, 32, 32), step_size=0.06, lam=0.1, s=0.5, subsample=2, stages=2
)
curves, accuracies = {}, {}
for name in ("hamiltonian-74", "hamiltonian-74-diffusion"):
    torch.manual_seed(0)
    model = build_image_model(name, architecture, channels=3, classes=10, size=32, segmentation=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(0)
    curves[name] = []
    for epoch in range(3):
        metrics = train_epoch(
            model,
            optimizer,
            train.images - mean,
            train.labels,
            batch_size=50,
            generator=generator,
            augment=pad_crop_flip,
            penalty=lambda: 2e-4 * model.l2_penalty(),
        )
        curves[name].append(metrics["loss"])
    accuracies[name] = evaluate_classifier(model, test.images - mean, test.labels)["accuracy"]
    parameters = sum(p.numel() for p in model.parameters())
    print(
        f"{name}: {parameters:,} parameters, training loss per epoch "
        f"{[round(loss, 3) for loss in curves[name]]}, test accuracy {accuracies[name]:.3f}"
    )

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.2), layout="constrained")
for name, curve in curves.items():
    left.plot(range(1, len(curve) + 1), curve, marker="o", label=name)
left.set_xlabel("epoch")
left.set_xticks(range(1, 4))
left.set_ylabel("training loss")
left.legend(fontsize=8)
right.bar(["Hamiltonian", "+ nonlocal diffusion"], list(accuracies.values()), color=["grey", "tab:blue"])
right.set_ylabel("accuracy, 1,000 official test images")
fig.suptitle("CIFAR-10, first 1,000 training images, 3 epochs, small width")
fig.savefig("hamiltonian_nonlocal_cifar.png", dpi=110)
