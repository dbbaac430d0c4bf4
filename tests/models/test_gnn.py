import pytest
import torch

from pdenets.models.gnn import GAT, GCN, GraphSAGE, sparse_dropout


@pytest.mark.parametrize(
    "make",
    [
        lambda layers: GCN(6, 3, num_layers=layers),
        lambda layers: GraphSAGE(6, 3, num_layers=layers),
        lambda layers: GraphSAGE(6, 3, aggregator="maxpool", num_layers=layers),
        lambda layers: GAT(6, 3, num_layers=layers),
    ],
)
@pytest.mark.parametrize("layers", [1, 2, 5])
def test_depth_and_shapes(make, layers, device):
    model = make(layers).to(device)
    assert len(model.convs) == layers
    edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]], device=device)
    out = model(torch.randn(4, 6).to(device), edge_index)
    assert out.shape == (4, 3)
    out.sum().backward()
    model.reset_parameters()


def test_gcn_without_dropout_equals_normalized_propagation(device):
    """One GCN layer: D̃^{-1/2}(A + I)D̃^{-1/2} X Θ + b."""
    from pdenets.operators import gcn_normalize

    model = GCN(4, 2, num_layers=1, dropout=0.0).double().eval().to(device)
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]], device=device)
    x = torch.randn(3, 4, dtype=torch.float64).to(device)
    propagation = gcn_normalize((edge_index, None), 3, dtype=torch.float64).to_dense()
    conv = model.convs[0]
    expected = propagation @ (x @ conv.lin.weight.T) + conv.bias
    assert torch.allclose(model(x, edge_index), expected)


def test_bad_options(device):
    with pytest.raises(ValueError, match="num_layers"):
        GCN(3, 2, num_layers=0)
    with pytest.raises(ValueError, match="aggregator"):
        GraphSAGE(3, 2, aggregator="sum")


def test_sparse_dropout_drops_stored_entries_alone_and_rescales_the_others():
    torch.manual_seed(0)
    dense = torch.rand(300, 400, dtype=torch.float64) * (torch.rand(300, 400) < 0.1)
    x = dense.to_sparse_csr()
    out = sparse_dropout(x, 0.25)  # 256 p whole: the keep probability is exactly 0.75
    assert out.layout == torch.sparse_csr
    assert torch.equal(out.crow_indices(), x.crow_indices())
    assert torch.equal(out.col_indices(), x.col_indices())
    kept = out.values() != 0
    assert abs(float(kept.double().mean()) - 0.75) < 0.016  # 12k entries: 0.75 ± 0.004 (one std)
    torch.testing.assert_close(out.values()[kept], x.values()[kept] / 0.75, rtol=1e-15, atol=0)
    assert sparse_dropout(x, 0.25, training=False) is x and sparse_dropout(x, 0.0) is x


@pytest.mark.parametrize(
    "make",
    [
        lambda: GCN(6, 3, num_layers=2),
        lambda: GraphSAGE(6, 3, num_layers=2),
        lambda: GraphSAGE(6, 3, aggregator="maxpool", num_layers=2),
        lambda: GAT(6, 3, num_layers=2),
    ],
)
def test_sparse_input_features_give_the_dense_answer_and_its_dropout(make):
    torch.manual_seed(1)
    model = make().double()
    x = torch.rand(5, 6, dtype=torch.float64) * (torch.rand(5, 6) < 0.5)
    edge_index = torch.tensor([[0, 1, 2, 3, 4, 1], [1, 2, 3, 4, 0, 3]])
    model.eval()
    torch.testing.assert_close(model(x.to_sparse_csr(), edge_index), model(x, edge_index))
    model.train()
    out = model(x.to_sparse_csr(), edge_index)
    out.sum().backward()
    assert out.shape == (5, 3) and all(p.grad is not None for p in model.parameters() if p.requires_grad)


@pytest.mark.parametrize("layers", [1, 3])
@pytest.mark.parametrize("make", [GCN, GraphSAGE, GAT])
def test_the_features_are_what_the_last_convolution_reads(make, layers):
    torch.manual_seed(2)
    model = make(6, 3, num_layers=layers).double().eval()
    x = torch.rand(5, 6, dtype=torch.float64) * (torch.rand(5, 6) < 0.5)
    edge_index = torch.tensor([[0, 1, 2, 3, 4, 1], [1, 2, 3, 4, 0, 3]])
    features = model.features(x.to_sparse_csr(), edge_index)
    assert features.layout == torch.strided and features.shape == (5, 6 if layers == 1 else features.shape[1])
    torch.testing.assert_close(model.convs[-1](features, edge_index), model(x, edge_index))
    if layers == 1:
        torch.testing.assert_close(features, x)
