"""Noise, FGSM and the variation rate (eq. 49) against hand computations; unit ablation's limits."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from pdenets.analysis import (
    fgsm,
    gaussian_noise,
    important_units,
    robustness_curve,
    unit_ablation,
    variation_rates,
)


class Scale(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return self.factor * x


def _linear(seed=0, d=5, classes=3):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, classes)).double()


def test_fgsm_is_the_sign_of_the_cross_entropy_gradient_of_a_linear_model(device):
    model = _linear().to(device)
    x, y = torch.randn(7, 5, dtype=torch.float64).to(device), torch.randint(0, 3, (7,)).to(device)
    weight, bias = model[0].weight.detach(), model[0].bias.detach()
    probabilities = torch.softmax(x @ weight.T + bias, dim=1)
    gradient = (probabilities - F.one_hot(y, 3).double()) @ weight  # ∂L/∂x per point (sum reduction)
    torch.testing.assert_close(fgsm(model, x, y, 0.3, batch_size=3), x + 0.3 * gradient.sign())
    assert torch.equal(fgsm(model, x, y, 0.0), x)
    # the loss grows, the model is untouched: no parameter gradient, modes and flags restored
    model.train()
    adversarial = fgsm(model, x, y, 0.3)
    assert F.cross_entropy(model(adversarial), y) > F.cross_entropy(model(x), y)
    assert model.training and all(p.requires_grad and p.grad is None for p in model.parameters())


def test_gaussian_noise_has_the_asked_scale_and_is_seeded(device):
    x = torch.zeros(200_000, 1, dtype=torch.float64, device=device)
    noisy = gaussian_noise(x, 0.5, generator=torch.Generator().manual_seed(0))
    assert abs(float(noisy.std()) - 0.5) < 3e-3 and abs(float(noisy.mean())) < 3e-3
    again = gaussian_noise(x, 0.5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(noisy, again) and torch.equal(gaussian_noise(x, 0.0), x)


def test_variation_rate_equals_equation_49_along_the_tracks(device):
    model = nn.Sequential(Scale(2.0), Scale(-3.0), nn.Linear(4, 2)).double().to(device)
    clean = torch.randn(9, 4, dtype=torch.float64).to(device)
    noisy = clean + 0.1 * torch.randn(9, 4, dtype=torch.float64).to(device)
    rates = variation_rates(model, clean, noisy, blocks=["0", "1"], batch_size=4)
    # every representation is a multiple of x, so V(l) = mean ‖x − x'‖ / ‖x‖ at l = 0, 1, 2
    expected = float(((clean - noisy).norm(dim=1) / clean.norm(dim=1)).mean())
    assert rates == pytest.approx([expected] * 3, rel=1e-6)
    # zero representations: 0 when the noisy one is 0 too, inf otherwise (never NaN)
    zero = torch.zeros(2, 4, dtype=torch.float64, device=device)
    assert variation_rates(model, zero, zero, blocks=["0"]) == [0.0, 0.0]
    assert variation_rates(model, zero, zero + 1, blocks=["0"]) == [float("inf"), float("inf")]
    with pytest.raises(ValueError, match="differ in shape"):
        variation_rates(model, clean, noisy[:3], blocks=["0"])


def test_robustness_curve_starts_at_the_clean_accuracy_and_rejects_bad_input(device):
    # device: needs robustness._accuracy to compare predictions and targets on one device (it moves the
    # predictions to the CPU and leaves the targets where they are given)
    model = nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 3)).double().to(device)
    x, y = torch.randn(40, 5, dtype=torch.float64).to(device), torch.randint(0, 3, (40,)).to(device)
    clean = int((model(x).argmax(1) == y).sum()) / 40
    for attack in ("gaussian", "fgsm"):
        curve = robustness_curve(model, x, y, [0.0, 0.2, 2.0], attack=attack, blocks=["1"])
        assert curve["accuracy"][0] == clean and curve["variation"][0] == [0.0, 0.0]
        assert curve["variation"][2][1] > curve["variation"][1][1] > 0
    fgsm_curve = robustness_curve(model, x, y, [0.0, 0.5], attack="fgsm", blocks=["1"])
    assert fgsm_curve["accuracy"][1] < clean  # a linear-ish model loses accuracy under the attack
    with pytest.raises(ValueError, match="attack must be"):
        robustness_curve(model, x, y, [0.1], attack="pgd", blocks=["1"])
    with pytest.raises(ValueError, match="levels must be finite and >= 0"):
        robustness_curve(model, x, y, [-0.1], blocks=["1"])
    with pytest.raises(ValueError, match="NaN"):
        robustness_curve(model, x * float("nan"), y, [0.1], blocks=["1"])
    with pytest.raises(ValueError, match="targets must be"):
        robustness_curve(model, x, y[:3], [0.1], blocks=["1"])


def test_important_units_are_the_largest_class_means(device):
    values = torch.tensor([[1.0, 5.0, 0.0], [3.0, 1.0, 0.0], [0.0, 0.0, 9.0], [0.0, 2.0, 7.0]], device=device)
    labels = torch.tensor([0, 0, 1, 1], device=device)
    # class 0 means (2, 3, 0), class 1 means (0, 1, 8), class 2 (absent): overall means (1, 2, 4)
    assert important_units(values, labels, 3, 2).tolist() == [[1, 0], [2, 1], [2, 1]]
    with pytest.raises(ValueError, match="count must lie in 0..3"):
        important_units(values, labels, 3, 4)


def test_ablating_every_unit_skips_the_block_and_a_zero_residual_block_is_immune(device):
    # device: needs unit_ablation(class_source="label") to bring the labels to the CPU before indexing the
    # important units with them (ablation.py: state["units"][state["classes"]])
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.Linear(8, 4)).double().to(device)
    x, y = torch.randn(60, 6, dtype=torch.float64).to(device), torch.randint(0, 4, (60,)).to(device)
    curve = unit_ablation(net, "2", x, y, x, y, [0, 3, 8])
    skipped = nn.Sequential(net[0], net[1], net[3])
    assert curve["accuracy"][0] == int((net(x).argmax(1) == y).sum()) / 60
    assert curve["accuracy"][2] == int((skipped(x).argmax(1) == y).sum()) / 60
    assert curve["width"] == 8 and curve["counts"] == [0, 3, 8] and curve["block"] == "2"

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.branch = nn.Linear(8, 8)
            nn.init.zeros_(self.branch.weight)
            nn.init.zeros_(self.branch.bias)

        def forward(self, h):
            return h + self.branch(h)

    residual = nn.Sequential(nn.Linear(6, 8), Residual(), nn.Linear(8, 4)).double().to(device)
    flat = unit_ablation(residual, "1", x, y, x, y, [0, 2, 5, 8], class_source="label")["accuracy"]
    assert flat == [flat[0]] * 4
    with pytest.raises(ValueError, match="counts must lie in 0..8"):
        unit_ablation(net, "2", x, y, x, y, [9])
    with pytest.raises(ValueError, match="changes the shape"):
        unit_ablation(net, "0", x, y, x, y, [1])
    with pytest.raises(ValueError, match="class_source"):
        unit_ablation(net, "2", x, y, x, y, [1], class_source="oracle")
