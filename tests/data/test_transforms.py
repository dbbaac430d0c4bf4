import torch
from torch_geometric.data import Data

from pdenets.data.transforms import (
    binarize_features,
    largest_connected_component,
    preprocess_citation_graph,
    remove_self_loops,
    row_normalize_features,
    to_undirected,
)


def _toy():
    # component {0,1,2} (with a self-loop and a duplicate), component {3,4}
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 2, 2, 2, 0, 4]])
    x = torch.tensor([[2.0, 0.0], [1.0, 1.0], [0.0, 3.0], [1.0, 0.0], [0.0, 0.0]])
    return Data(x=x, edge_index=edge_index, y=torch.tensor([0, 1, 0, 1, 1]), num_nodes=5)


def test_undirected_and_self_loops():
    data = remove_self_loops(to_undirected(_toy()))
    pairs = {tuple(e) for e in data.edge_index.T.tolist()}
    assert pairs == {(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0), (3, 4), (4, 3)}


def test_largest_component_relabels_and_keeps_features():
    data = largest_connected_component(to_undirected(_toy()))
    assert data.num_nodes == 3
    assert data.original_index.tolist() == [0, 1, 2]
    assert torch.equal(data.x, _toy().x[:3])
    assert int(data.edge_index.max()) == 2


def test_feature_transforms():
    data = row_normalize_features(binarize_features(_toy()))
    assert torch.allclose(data.x[:4].sum(1), torch.ones(4))
    assert torch.all(data.x[4] == 0)  # empty row stays zero
    assert set(data.x.unique().tolist()) <= {0.0, 0.5, 1.0}


def test_preprocess_composition():
    data = preprocess_citation_graph(_toy())
    assert data.num_nodes == 3
    assert not bool((data.edge_index[0] == data.edge_index[1]).any())
    adjacency = torch.zeros(3, 3)
    adjacency[data.edge_index[0], data.edge_index[1]] = 1
    assert torch.equal(adjacency, adjacency.T)


def test_largest_component_is_chosen_when_node_0_lies_in_a_smaller_one():
    # components {0, 1} and {2, 3, 4, 5}: the largest does not contain node 0
    edge_index = torch.tensor([[0, 2, 3, 4], [1, 3, 4, 5]])
    x = torch.arange(12, dtype=torch.float32).reshape(6, 2)
    data = Data(x=x, edge_index=edge_index, y=torch.tensor([0, 0, 1, 1, 0, 1]), num_nodes=6)
    kept = largest_connected_component(to_undirected(data))
    assert kept.num_nodes == 4 and kept.original_index.tolist() == [2, 3, 4, 5]
    assert torch.equal(kept.x, x[2:]) and kept.y.tolist() == [1, 1, 0, 1]
    assert {tuple(e) for e in kept.edge_index.T.tolist()} == {(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)}
