"""The loaders' error family: which built-in exceptions catch each error, and its ``path: problem`` form."""

import pickle
import warnings
from pathlib import Path

import pytest

import pdenets.data
import pdenets.data.graphs
from pdenets.data.errors import DatasetError, DatasetNotFoundError, DataWarning, dataset_error
from pdenets.data.vision import load_mnist


def test_a_missing_file_is_caught_as_a_dataset_error_and_as_a_missing_file(tmp_path):
    caught = []
    for family in (DatasetNotFoundError, DatasetError, FileNotFoundError, OSError, ValueError):
        try:
            load_mnist("test", tmp_path)
        except family as error:
            caught.append(type(error))
    assert caught == [DatasetNotFoundError] * 5
    assert not issubclass(DatasetError, OSError)  # an unusable file is no operating-system error


def test_a_broken_file_is_a_value_error_that_an_oserror_handler_lets_through(tmp_path):
    folder = tmp_path / "mnist" / "MNIST" / "raw"
    folder.mkdir(parents=True)
    for kind in ("images-idx3", "labels-idx1"):
        (folder / f"t10k-{kind}-ubyte.gz").write_bytes(b"not gzip")
    with pytest.raises(DatasetError) as caught:
        load_mnist("test", tmp_path)  # gzip's own BadGzipFile is an OSError: it must not leak
    assert type(caught.value) is DatasetError and not isinstance(caught.value, OSError)
    assert str(caught.value).startswith(f"{folder / 't10k-images-idx3-ubyte.gz'}: not a readable gzip file")


def test_dataset_error_puts_the_path_before_the_problem():
    error = dataset_error(Path("/data") / "g.npz", "the file is empty")
    assert type(error) is DatasetError and str(error) == "/data/g.npz: the file is empty"
    assert str(dataset_error("relative/x.csv", "line 3: 'a' is not a number")) == (
        "relative/x.csv: line 3: 'a' is not a number"
    )
    missing = DatasetNotFoundError("missing file cora.npz")
    assert str(missing) == "missing file cora.npz" and missing.args == ("missing file cora.npz",)
    assert pickle.loads(pickle.dumps(missing)).args == missing.args  # crosses process boundaries intact


def test_data_warning_is_a_user_warning_that_filters_can_single_out():
    assert issubclass(DataWarning, UserWarning) and not issubclass(DataWarning, DeprecationWarning)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", DataWarning)
        warnings.warn("a caveat", DataWarning)
        warnings.warn("something else", UserWarning)
    assert [(w.category, str(w.message)) for w in seen] == [(DataWarning, "a caveat")]


def test_every_public_module_exports_the_same_classes():
    assert pdenets.data.DatasetError is DatasetError is pdenets.data.graphs.DatasetError
    assert (
        pdenets.data.DatasetNotFoundError is DatasetNotFoundError is pdenets.data.graphs.DatasetNotFoundError
    )
    assert pdenets.data.DataWarning is DataWarning
    assert issubclass(pdenets.data.UnsafePickleError, pickle.UnpicklingError)
