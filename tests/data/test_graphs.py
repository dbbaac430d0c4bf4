import numpy as np
import pytest
import torch

from pdenets.data.graphs import DatasetNotFoundError, load_graph, load_npz, load_planetoid
from pdenets.data.paths import resolve_data_dir

from ..graph_fixtures import write_sbm_npz

DATA = resolve_data_dir()
needs_planetoid = pytest.mark.skipif(not (DATA / "planetoid" / "Cora").is_dir(),
                                     reason="Planetoid files not in $PDENETS_DATA")
needs_npz = pytest.mark.skipif(not (DATA / "npz" / "cora.npz").is_file(), reason="npz files not in $PDENETS_DATA")


@needs_planetoid
def test_planetoid_cora_statistics():
    data = load_planetoid("cora")
    assert data.num_nodes == 2708 and data.x.shape == (2708, 1433)
    pairs = {tuple(e) for e in data.edge_index.T.tolist() if e[0] != e[1]}
    undirected = {tuple(sorted(p)) for p in pairs}
    assert len(undirected) == 5278
    assert torch.bincount(data.y).tolist() == [351, 217, 418, 818, 426, 298, 180]
    assert torch.all(data.x.sum(1) > 0)


@needs_planetoid
def test_planetoid_citeseer_gap_is_filled_and_unlabelled():
    data = load_planetoid("citeseer")
    assert data.num_nodes == 3327
    missing = data.y == -1
    assert int(missing.sum()) == 15
    assert torch.all(data.x[missing].sum(1) == 0)


@needs_planetoid
def test_pubmed_without_allx_names_the_file_and_the_source():
    with pytest.raises(DatasetNotFoundError) as info:
        load_planetoid("pubmed")
    message = str(info.value)
    assert "ind.pubmed.allx" in message and str(DATA) in message and "github.com" in message
    assert "never downloads" in message


def test_missing_data_dir_error(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=str(tmp_path)):
        load_graph("cora", tmp_path)
    with pytest.raises(DatasetNotFoundError, match="ind.citeseer"):
        load_graph("planetoid/citeseer", tmp_path)


@needs_npz
def test_npz_cora_matches_documented_statistics():
    data = load_graph("cora")
    assert data.num_nodes == 2708 and data.edge_index.shape[1] == 5429
    assert torch.bincount(data.y).tolist() == [298, 418, 818, 426, 217, 180, 351]


def test_user_npz_graph(tmp_path):
    path = write_sbm_npz(tmp_path / "mine.npz")
    data = load_graph(str(path))
    assert data.num_nodes == 180 and data.x.shape == (180, 24) and data.name == "mine"


def test_malformed_npz(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, labels=np.zeros(3))
    with pytest.raises(ValueError, match="lacks"):
        load_npz(path)


def test_unknown_spec():
    with pytest.raises(ValueError, match="unknown graph"):
        load_graph("imagenet")
