import pytest
import torch
from datafiles import requires_data

from pdenets.data.graphs import DatasetNotFoundError, load_planetoid
from pdenets.data.paths import resolve_data_dir

DATA = resolve_data_dir()
PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")


def planetoid(folder, parts=PARTS):
    """The Planetoid pickles ``planetoid/<folder>/raw/ind.<name>.<part>``."""
    return tuple(f"planetoid/{folder}/raw/ind.{folder.lower()}.{part}" for part in parts)


@requires_data(*planetoid("Cora"))
def test_planetoid_cora_statistics():
    data = load_planetoid("cora")
    assert data.num_nodes == 2708 and data.x.shape == (2708, 1433)
    pairs = {tuple(e) for e in data.edge_index.T.tolist() if e[0] != e[1]}
    undirected = {tuple(sorted(p)) for p in pairs}
    assert len(undirected) == 5278
    assert torch.bincount(data.y).tolist() == [351, 217, 418, 818, 426, 298, 180]
    assert torch.all(data.x.sum(1) > 0)


@requires_data(*planetoid("CiteSeer"))
def test_planetoid_citeseer_gap_is_filled_and_unlabelled():
    data = load_planetoid("citeseer")
    assert data.num_nodes == 3327
    missing = data.y == -1
    assert int(missing.sum()) == 15
    assert torch.all(data.x[missing].sum(1) == 0)


@requires_data(*planetoid("PubMed", [part for part in PARTS if part != "allx"]))  # the data has no allx
def test_pubmed_without_allx_names_the_file_and_the_source():
    with pytest.raises(DatasetNotFoundError) as info:
        load_planetoid("pubmed")
    message = str(info.value)
    assert "ind.pubmed.allx" in message and str(DATA) in message and "github.com" in message
    assert "never downloads" in message
