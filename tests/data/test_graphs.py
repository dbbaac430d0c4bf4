import pytest
import torch

from pdenets.data.graphs import DatasetNotFoundError, load_graph

PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")


def planetoid(folder, parts=PARTS):
    """The Planetoid pickles ``planetoid/<folder>/raw/ind.<name>.<part>``."""
    return tuple(f"planetoid/{folder}/raw/ind.{folder.lower()}.{part}" for part in parts)


def test_missing_data_dir_error(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=str(tmp_path)):
        load_graph("cora", tmp_path)
    with pytest.raises(DatasetNotFoundError, match="ind.citeseer"):
        load_graph("planetoid/citeseer", tmp_path)


def test_unknown_spec():
    with pytest.raises(ValueError, match="unknown graph"):
        load_graph("imagenet")


def test_graph_data_takes_a_pair_a_copy_of_a_data_or_a_file_and_names_anything_else(tmp_path):
    from torch_geometric.data import Data

    from pdenets.data.graphs import graph_data, save_graph_npz

    x, edges = torch.eye(3), torch.tensor([[0, 1], [1, 2]])
    pair = graph_data((x.numpy(), edges.numpy()))
    assert pair.num_nodes == 3 and torch.equal(pair.x, x) and torch.equal(pair.edge_index, edges)
    given = Data(x=x, edge_index=edges, num_nodes=3)
    copied = graph_data(given)
    copied.x[0, 0] = 5.0
    assert copied is not given and given.x[0, 0] == 1.0
    path = save_graph_npz(
        Data(x=x, edge_index=edges, y=torch.tensor([0, 1, -1]), num_nodes=3), tmp_path / "g.npz"
    )
    assert graph_data(path).num_nodes == 3
    with pytest.raises(TypeError, match="graph must be a path or name .* got list"):
        graph_data([x, edges])
