"""The 18-parameter synthetic networks: Table 4, both variants' forward by hand in float64, shared weights."""

import dataclasses

import numpy as np
import pytest
import torch

from pdenets.models.synthetic_diffresnet import (
    PAPER_SCRIPT_REFERENCE,
    TABLE4,
    VARIANTS,
    SyntheticHyperparameters,
    synthetic_network,
)


def test_table4_and_the_scripts_reference_are_the_papers():
    assert {name: dataclasses.astuple(hp) for name, hp in TABLE4.items()} == {
        "moon": (25, 0.5, 1.0, 60, 1.0),
        "circle": (50, 0.5, 1.0, 200, 1.0),
        "spiral": (25, 0.5, 1.0, 900, 0.8),
    }
    assert SyntheticHyperparameters() == TABLE4["moon"]  # the defaults are the moon set's
    assert {name: entry["seed"] for name, entry in PAPER_SCRIPT_REFERENCE.items()} == {
        "moon": 40,
        "circle": 42,
        "spiral": 42,
    }
    assert all(e["resnet"] < e["diff-resnet"] == 1000 for e in PAPER_SCRIPT_REFERENCE.values())
    assert VARIANTS == ("resnet", "diff-resnet")


def _ring(nodes):
    weights = np.zeros((nodes, nodes))
    for i in range(nodes):
        weights[i, (i + 1) % nodes] = weights[(i + 1) % nodes, i] = 0.5
    return weights


def test_both_variants_are_the_same_18_parameters_and_only_diff_resnet_diffuses(device):
    hp = SyntheticHyperparameters(n_top=5, sigma=0.5, step_size=0.4, num_steps=3, lr=1.0)
    torch.manual_seed(0)
    resnet = synthetic_network("resnet", hp).double()
    torch.manual_seed(0)
    diff = synthetic_network("diff-resnet", hp).double()
    assert (resnet.num_steps, diff.num_steps, diff.step_size) == (0, 3, 0.4)
    for net in (resnet, diff):
        # FC1, FC2: 2 × 2 + 2 each; FC3: 2 × 2 + 2
        assert sum(p.numel() for p in net.parameters()) == 18
    assert all(torch.equal(a, b) for a, b in zip(resnet.state_dict().values(), diff.state_dict().values()))
    x = torch.from_numpy(np.random.default_rng(0).normal(size=(6, 2)))
    weights = _ring(6)
    (w1, b1), (w2, b2) = [
        (layer.weight.detach().numpy(), layer.bias.detach().numpy())
        for layer in (diff.blocks[0].fc1, diff.blocks[0].fc2)
    ]
    w3, b3 = diff.classifier.weight.detach().numpy(), diff.classifier.bias.detach().numpy()
    h = x.numpy() + np.maximum(x.numpy() @ w1.T + b1, 0) @ w2.T + b2
    step = np.eye(6) - 0.4 * (np.diag(weights.sum(1)) - weights)
    diffused = np.linalg.matrix_power(step, 3) @ h
    resnet, diff, x, graph = (
        resnet.to(device),
        diff.to(device),
        x.to(device),
        torch.from_numpy(weights).to(device),
    )
    np.testing.assert_allclose(resnet(x).detach().cpu().numpy(), h @ w3.T + b3, rtol=1e-12)
    np.testing.assert_allclose(diff(x, graph).detach().cpu().numpy(), diffused @ w3.T + b3, rtol=1e-12)
    out = diff(x, graph)
    out.square().sum().backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in diff.parameters())


def test_the_paper_sets_build_with_their_diffusion_and_zero_branch_weights_give_the_identity_block():
    for name, hp in TABLE4.items():
        net = synthetic_network("diff-resnet", hp)
        assert (net.num_steps, net.step_size) == (hp.num_steps, hp.step_size), name
        assert synthetic_network("resnet", hp).num_steps == 0
    net = synthetic_network("resnet", TABLE4["moon"]).double()
    with torch.no_grad():
        net.blocks[0].fc2.weight.zero_()
        net.blocks[0].fc2.bias.zero_()
    x = torch.randn(5, 2, dtype=torch.float64)
    torch.testing.assert_close(net(x), net.classifier(x))  # x + 0: the residual block is the identity


def test_an_unknown_variant_is_named_with_the_valid_ones():
    from pdenets._checks import UnknownNameError

    with pytest.raises(UnknownNameError, match="'plain'.*diff-resnet"):
        synthetic_network("plain", TABLE4["moon"])
