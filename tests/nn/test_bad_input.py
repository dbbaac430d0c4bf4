"""Layers and models given bad sizes, rates and inputs: a clear error naming the argument."""

import math

import numpy as np
import pytest
import torch

from pdenets.models import DiffResNet, create_model
from pdenets.nn import ConvectionBlock, DiffusionLayer
from pdenets.nn.dropout import fast_dropout, keep_threshold

from ..conftest import cycle_weights

W = cycle_weights(6, torch.float32)

CASES = [
    (
        "DiffResNet num_classes 0",
        lambda device: DiffResNet(4, 0),
        ValueError,
        "num_classes must be an integer >= 1, got 0",
    ),
    (
        "DiffResNet in_features -1",
        lambda device: DiffResNet(-1, 2),
        ValueError,
        "in_features must be an integer >= 1",
    ),
    (
        "DiffResNet in_features 2.0",
        lambda device: DiffResNet(2.0, 2),
        TypeError,
        "in_features must be an integer",
    ),
    (
        "DiffResNet hidden 0",
        lambda device: DiffResNet(4, 2, hidden_features=0),
        ValueError,
        "hidden_features must be an integer >= 1",
    ),
    (
        "DiffResNet num_blocks 0",
        lambda device: DiffResNet(4, 2, num_blocks=0),
        ValueError,
        "num_blocks must be an integer",
    ),
    (
        "DiffResNet negative steps",
        lambda device: DiffResNet(4, 2, num_steps=-2),
        ValueError,
        "num_steps must be an integer >= 0",
    ),
    (
        "DiffResNet block kind",
        lambda device: DiffResNet(4, 2, block="conv"),
        ValueError,
        "variant must be one of",
    ),
    (
        "DiffResNet integer input",
        lambda device: DiffResNet(2, 2, num_steps=0).to(device)(
            torch.ones(4, 2, dtype=torch.long, device=device)
        ),
        TypeError,
        "input to DiffResNet must be float32 or float64",
    ),
    (
        "DiffResNet wrong width",
        lambda device: DiffResNet(2, 2, num_steps=0).to(device)(torch.randn(4, 3).to(device)),
        ValueError,
        "expected input of shape (N, 2)",
    ),
    (
        "DiffResNet NaN input",
        lambda device: DiffResNet(2, 2, num_steps=2, step_size=0.25, weights=W[:4, :4].to(device)).to(device)(
            torch.full((4, 2), math.nan, device=device)
        ),
        ValueError,
        "contains 8 NaN/inf",
    ),
    (
        "DiffResNet without a graph",
        lambda device: DiffResNet(2, 2, num_steps=3).to(device)(torch.randn(4, 2).to(device)),
        ValueError,
        "no graph",
    ),
    (
        "Convection features 0",
        lambda device: ConvectionBlock(0),
        ValueError,
        "features must be an integer >= 1",
    ),
    (
        "Convection hidden 0",
        lambda device: ConvectionBlock(3, hidden_features=0),
        ValueError,
        "hidden_features must be an integer >= 1",
    ),
    (
        "Convection numpy float size",
        lambda device: ConvectionBlock(np.float64(3)),
        TypeError,
        "features must be an integer",
    ),
    (
        "Convection graph variant width",
        lambda device: ConvectionBlock(3, variant="graph", hidden_features=4),
        ValueError,
        "needs hidden_features == features",
    ),
    (
        "Convection integer input",
        lambda device: ConvectionBlock(3).to(device)(torch.ones(2, 3, dtype=torch.int32, device=device)),
        TypeError,
        "input to ConvectionBlock must be float32 or float64",
    ),
    (
        "Convection wrong width",
        lambda device: ConvectionBlock(3).to(device)(torch.ones(2, 4, device=device)),
        ValueError,
        "expects 3 features",
    ),
    ("Diffusion step 0", lambda device: DiffusionLayer(step_size=0.0), ValueError, "step_size must be > 0"),
    (
        "Diffusion step NaN",
        lambda device: DiffusionLayer(step_size=math.nan),
        ValueError,
        "step_size must be finite",
    ),
    (
        "Diffusion dropout 1",
        lambda device: DiffusionLayer(step_size=0.1, dropout=1.0),
        ValueError,
        "dropout must be in [0, 1), got 1.0",
    ),
    (
        "Diffusion dropout -0.1",
        lambda device: DiffusionLayer(step_size=0.1, dropout=-0.1),
        ValueError,
        "dropout must be >= 0",
    ),
    (
        "Diffusion dropout position",
        lambda device: DiffusionLayer(step_size=0.1, dropout_position="middle"),
        ValueError,
        "dropout_position must be one of ('after', 'before')",
    ),
    (
        "Diffusion steps 1.5",
        lambda device: DiffusionLayer(step_size=0.1, num_steps=1.5),
        TypeError,
        "num_steps must be an integer",
    ),
    (
        "Diffusion unstable on its graph",
        lambda device: DiffusionLayer(step_size=2.0, weights=W.to(device)),
        ValueError,
        "exceeds the stability bound",
    ),
    (
        "Diffusion float16 input",
        lambda device: DiffusionLayer(step_size=0.25, weights=W.to(device).to_sparse())(
            torch.ones(6, 2, device=device).half()
        ),
        TypeError,
        "half precision is not supported",
    ),
    (
        "Diffusion int input on a sparse graph",
        lambda device: DiffusionLayer(step_size=0.25, weights=W.to(device).to_sparse())(
            torch.ones(6, 2, dtype=torch.int64, device=device)
        ),
        TypeError,
        "got torch.int64",
    ),
    (
        "dropout p = 1",
        lambda device: fast_dropout(torch.ones(3, device=device), 1.0),
        ValueError,
        "must be in [0, 1)",
    ),
    (
        "dropout p string",
        lambda device: fast_dropout(torch.ones(3, device=device), "0.5"),
        TypeError,
        "must be a real number",
    ),
    (
        "dropout below the mask resolution",
        lambda device: keep_threshold(1 - 1e-12),
        ValueError,
        "below the 2^-32 resolution",
    ),
    (
        "GCN hidden 0",
        lambda device: create_model("gcn", in_features=4, num_classes=2, hidden_features=0),
        ValueError,
        "hidden_features must be an integer >= 1",
    ),
    (
        "GCN dropout 1.5",
        lambda device: create_model("gcn", in_features=4, num_classes=2, dropout=1.5),
        ValueError,
        "dropout must be in [0, 1)",
    ),
    (
        "GAT heads 0",
        lambda device: create_model("gat", in_features=4, num_classes=2, heads=0),
        ValueError,
        "heads must be an integer >= 1",
    ),
    (
        "SAGE num_classes 0",
        lambda device: create_model("sage-mean", in_features=4, num_classes=0),
        ValueError,
        "num_classes must be an integer >= 1",
    ),
    (
        "GCN num_layers 0",
        lambda device: create_model("gcn", in_features=4, num_classes=2, num_layers=0),
        ValueError,
        "num_layers must be an integer >= 1",
    ),
    (
        "unknown model",
        lambda device: create_model("resnet-50", in_features=4, num_classes=2),
        KeyError,
        "unknown model 'resnet-50'",
    ),
]


@pytest.mark.parametrize("what, call, error, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_to_layers_and_models(what, call, error, message, device):
    with pytest.raises(error) as caught:
        call(device)
    assert message in str(caught.value), str(caught.value)


def test_numpy_integers_are_sizes_too(device):
    net = DiffResNet(np.int64(2), np.int32(3), num_steps=np.int64(0)).to(device)
    assert net(torch.randn(4, 2).to(device)).shape == (4, 3)
    assert ConvectionBlock(np.int16(5)).to(device).features == 5


@pytest.mark.cpu_only("fast_dropout's NumPy masks and keep_threshold's rates (other devices: F.dropout)")
@pytest.mark.parametrize("p", [0.1, 0.25, 0.35, 0.5, 0.9, 0.999, 0.999999])
def test_dropout_rescaling_is_exact_in_expectation_and_tight_in_practice(p):
    """E[dropout(x)] = x exactly (scale = 1 / the keep probability actually used); the empirical keep rate
    lies within 5 standard errors of 1 - p at every rate, extreme ones included (0.999999 used to divide by
    0)."""
    _, threshold, keep = keep_threshold(p)
    assert abs(keep - (1 - p)) <= (1 - p) * 4e-3
    torch.manual_seed(0)
    entries = 4_000_000
    out = fast_dropout(torch.ones(entries), p)
    kept = out != 0
    assert torch.all(out[kept] == torch.tensor(1 / keep, dtype=torch.float32))
    rate = float(kept.double().mean())
    standard_error = math.sqrt(keep * (1 - keep) / entries)
    assert abs(rate - keep) <= 5 * standard_error + 1 / entries


EXACT = [
    (
        "DiffusionLayer sparse features",
        lambda device: DiffusionLayer(step_size=0.1, weights=W.to(device))(
            torch.eye(6, device=device).to_sparse()
        ),
        TypeError,
        "input to DiffusionLayer is a sparse tensor (torch.sparse_coo): DiffusionLayer needs dense features: "
        "pass x.to_dense()",
    ),
    (
        "DiffusionLayer CSR features without steps",
        lambda device: DiffusionLayer(step_size=0.1, num_steps=0)(
            torch.eye(6, device=device).to_sparse_csr()
        ),
        TypeError,
        "input to DiffusionLayer is a sparse tensor (torch.sparse_csr): "
        "DiffusionLayer needs dense features: pass x.to_dense()",
    ),
    (
        "DiffResNet float64 input, float32 model",
        lambda device: DiffResNet(5, 3, num_steps=2, step_size=0.25, weights=W.to(device)).to(device)(
            torch.randn(6, 5, dtype=torch.float64).to(device)
        ),
        TypeError,
        "input to DiffResNet is torch.float64 but the model's parameters are torch.float32: call "
        "model.double() or pass "
        "x.float()",
    ),
    (
        "DiffResNet float32 input, float64 model",
        lambda device: DiffResNet(5, 3, num_steps=0).double().to(device)(torch.randn(6, 5).to(device)),
        TypeError,
        "input to DiffResNet is torch.float32 but the model's parameters are torch.float64: call "
        "model.float() or pass x.double()",
    ),
]


@pytest.mark.parametrize("what, call, error, message", EXACT, ids=[c[0] for c in EXACT])
def test_bad_input_to_layers_and_models_gets_exactly_one_line(what, call, error, message, device):
    with pytest.raises(error) as caught:
        call(device)
    assert str(caught.value) == message


def test_a_model_in_float64_takes_float64_input(device):
    model = DiffResNet(5, 3, num_steps=2, step_size=0.25, weights=W.double().to(device)).double().to(device)
    assert model(torch.randn(6, 5, dtype=torch.float64).to(device)).dtype == torch.float64
