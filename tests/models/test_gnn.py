import pytest
import torch

from pdenets.models.gnn import GAT, GCN, GraphSAGE


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
