"""Every registered model builds from its defaults, runs forward and backward (timm-style sweep)."""

import pytest
import torch

from pdenets.models import create_model, list_models, model_entry
from pdenets.models.registry import register_model

from ..conftest import cycle_weights

EDGES = torch.tensor([[0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0]])


def _inputs(name):
    family = model_entry(name).family
    if family == "diffusion":
        return (torch.randn(6, 5),)
    if family == "image":
        return (torch.randn(6, 3, 16, 16),)
    if family == "backbone":
        return (torch.randn(6, 5, 16, 16),)
    if family == "coin":
        return (torch.randn(6, 5),)
    if family == "transport":
        return (torch.randn(6, 3, 8, 8),) if "cnn" in name else (torch.randn(6, 5),)
    if family == "forecast":  # 2 forecast origins of 6 regions, 5 lags; a graph per origin
        return torch.randn(2, 6, 5), [(EDGES, None), (EDGES, torch.rand(6))]
    return torch.randn(6, 5), EDGES


def _kwargs(name):
    family = model_entry(name).family
    if family == "diffusion":
        return {"in_features": 5, "block": "graph", "num_steps": 2, "step_size": 0.25,
                "weights": cycle_weights(6, torch.float32)}
    if family == "image":  # small versions of the image networks
        if name.startswith("hamiltonian"):
            return {"units": (2, 1), "widths": (8, 16), "image_size": 16}
        return {"depth": 8 if name.startswith("resnet") else 11}
    if family == "backbone":
        return {"in_channels": 5, "image_size": 16}
    if family == "coin":
        return {"in_features": 5, "graph": cycle_weights(6, torch.float32)}
    if family == "transport":  # small versions of the pairs
        if "cnn" in name:
            return {"in_features": 3, "widths": (4, 8) if name.endswith("k4") else (4,), "blocks": 2, "image_size": 8}
        return {"in_features": 5, "width": 7, "num_blocks": 2}
    return {"in_features": 5}


@pytest.mark.parametrize("name", list_models())
def test_every_registered_model_builds_runs_and_trains(name):
    torch.manual_seed(0)
    model = create_model(name, num_classes=3, **_kwargs(name))
    out = model(*_inputs(name))
    expected = (2, 6, 3) if model_entry(name).family == "forecast" else (6, 3)
    assert out.shape == expected and torch.isfinite(out).all()
    out.square().sum().backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    assert sum(p.numel() for p in model.parameters()) > 0


@pytest.mark.parametrize("name", list_models())
def test_registry_defaults_are_applied_and_overridable(name):
    entry = model_entry(name)
    default = create_model(name, num_classes=3, **_kwargs(name))
    for key, value in entry.defaults.items():
        if isinstance(value, bool):
            continue
        if key in ("num_steps", "step_size"):  # parameter-free diffusion: the output changes, not the count
            changed = create_model(name, num_classes=3, **{key: value / 2 if key == "step_size" else value + 1},
                                   **_kwargs(name))
            assert getattr(changed, key) != getattr(default, key), key
            continue
        if key == "dropout":
            assert create_model(name, num_classes=3, dropout=0.1, **_kwargs(name)).dropout == 0.1
            continue
        model = create_model(name, num_classes=3, **{key: value * 2}, **_kwargs(name))
        assert sum(p.numel() for p in model.parameters()) != sum(p.numel() for p in default.parameters()), key


def test_families_and_training_defaults():
    assert list_models("diffusion") == ["diff-resnet", "no-diff-resnet"]
    assert {"hamiltonian-74", "hamiltonian-74-fractional", "resnet-44", "preresnet-20"} <= set(list_models("image"))
    assert list_models("message-passing") == ["gat", "gcn", "sage-maxpool", "sage-mean"]
    assert model_entry("gat").training == {"lr": 0.005, "weight_decay": 5e-4}
    assert model_entry("gcn").defaults == {"hidden": 16, "dropout": 0.5}


def test_typos_list_the_valid_names_and_duplicates_are_refused():
    with pytest.raises(KeyError, match="unknown model 'gnc' \\(did you mean 'gcn'\\?\\); valid: coin-forecast, coin-mlp, conv4, diff-resnet"):
        create_model("gnc", in_features=2, num_classes=2)
    with pytest.raises(ValueError, match="already registered"):
        register_model("gcn", family="message-passing")(lambda in_features, num_classes: None)
