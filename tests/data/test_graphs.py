import pytest

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
