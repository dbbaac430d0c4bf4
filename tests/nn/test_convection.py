import pytest
import torch
from torch.nn import functional as F

from pdenets.nn import ConvectionBlock


def test_mlp_variant_formula(device):
    block = ConvectionBlock(3, hidden_features=5).double().to(device)
    x = torch.randn(10, 3, dtype=torch.float64).to(device)
    expected = x + block.fc2(F.relu(block.fc1(x)))
    assert torch.allclose(block(x), expected)
    assert sum(p.numel() for p in ConvectionBlock(2).parameters()) == 12


def test_graph_variant_formula_has_no_second_layer(device):
    block = ConvectionBlock(4, variant="graph").double().to(device)
    x = torch.randn(6, 4, dtype=torch.float64).to(device)
    assert torch.allclose(block(x), x + F.relu(block.fc1(x)))
    assert block.fc2 is None


def test_zero_weights_give_identity(device):
    block = ConvectionBlock(3).to(device)
    for parameter in block.parameters():
        torch.nn.init.zeros_(parameter)
    x = torch.randn(4, 3).to(device)
    assert torch.equal(block(x), x)
    block.reset_parameters()
    assert any(p.abs().sum() > 0 for p in block.parameters())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"features": 3, "variant": "conv"}, "variant"),
        ({"features": 3, "variant": "graph", "hidden_features": 4}, "hidden_features == features"),
        ({"features": 0}, "features must be an integer >= 1"),
    ],
)
def test_bad_construction(kwargs, message, device):  # sizes and options: refused before any tensor exists
    with pytest.raises(ValueError, match=message):
        ConvectionBlock(**kwargs)


def test_wrong_feature_size(device):
    with pytest.raises(ValueError, match="expects 3 features"):
        ConvectionBlock(3).to(device)(torch.randn(2, 4).to(device))


@pytest.mark.parametrize("variant", ["mlp", "graph"])
def test_sparse_input_equals_dense_input(variant, device):
    block = ConvectionBlock(20, variant=variant).double().to(device)
    dense = (torch.rand(15, 20, dtype=torch.float64) * (torch.rand(15, 20) < 0.1)).to(device)
    out_dense = block(dense)
    grads_dense = torch.autograd.grad(out_dense.square().sum(), list(block.parameters()))
    for sparse in (dense.to_sparse(), dense.to_sparse_csr()):
        out_sparse = block(sparse)
        assert torch.allclose(out_sparse, out_dense)
        grads_sparse = torch.autograd.grad(out_sparse.square().sum(), list(block.parameters()))
        assert all(torch.allclose(a, b) for a, b in zip(grads_dense, grads_sparse))


@pytest.mark.parametrize("bias", [True, False])
def test_sparse_graph_variant_keeps_only_a_mask(bias, device):
    """x + ReLU(FC1 x) on a sparse x saves a mask for backward (one bit an entry on the CPU: 12 columns in 2
    bytes; a boolean elsewhere), no float activations, and its gradients equal autograd's through the dense
    expression (float64)."""
    block = ConvectionBlock(12, variant="graph", bias=bias).double().to(device)
    dense = (
        torch.rand(30, 12, dtype=torch.float64) * (torch.rand(30, 12) < 0.3)
        - 0.1 * (torch.rand(30, 12) < 0.1)
    ).to(device)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = block(dense.to_sparse_csr())
    masks = [t for t in saved if t.layout == torch.strided]
    if device.type == "cpu":
        assert [(t.dtype, tuple(t.shape)) for t in masks] == [(torch.uint8, (30, 2))]
    else:
        assert masks and all(t.dtype == torch.bool for t in masks)
    reference = block(dense)
    torch.testing.assert_close(out, reference, rtol=0, atol=1e-15)
    upstream = torch.randn(out.shape, dtype=out.dtype).to(device)
    grads = torch.autograd.grad(out, list(block.parameters()), upstream)
    expected = torch.autograd.grad(reference, list(block.parameters()), upstream)
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("chunk_rows", [1, 3, 8, 1 << 16])
@pytest.mark.parametrize("columns", [5, 8, 13])
def test_a_packed_mask_unpacked_in_row_chunks_gives_the_whole_masks_product(chunk_rows, columns, monkeypatch):
    import numpy as np

    from pdenets.nn import convection

    monkeypatch.setattr(convection, "UNPACK_CHUNK_ROWS", chunk_rows)
    generator = torch.Generator().manual_seed(columns)
    gradient = torch.randn(10, columns, generator=generator, dtype=torch.float64)
    mask = torch.rand(10, columns, generator=generator) > 0.5
    packed = torch.from_numpy(np.packbits(mask.numpy(), axis=1))
    expected = gradient * mask.to(gradient.dtype)
    assert torch.equal(convection._where_active(gradient, packed, columns), expected)
    assert torch.equal(convection._where_active(gradient, mask, None), expected)
    assert torch.equal(convection._where_active(gradient.t().contiguous().t(), packed, columns), expected)
