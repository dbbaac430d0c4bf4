"""The data directory's resolution, the name a dataset goes by, and the paths ``regular_file`` refuses."""

import os
import socket
from pathlib import Path

import pytest

from pdenets.data.errors import DatasetError, DatasetNotFoundError
from pdenets.data.paths import DATA_ENV_VAR, dataset_label, regular_file, resolve_data_dir


def test_an_explicit_directory_wins_and_an_empty_one_falls_through(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(DATA_ENV_VAR, "~/from-env")
    assert resolve_data_dir("~/explicit") == tmp_path / "home" / "explicit"
    assert resolve_data_dir("") == resolve_data_dir(None) == tmp_path / "home" / "from-env"
    monkeypatch.setenv(DATA_ENV_VAR, "")  # set but empty: the default, not the working directory
    assert resolve_data_dir() == tmp_path / "home" / ".cache" / "pdenets"
    assert not (tmp_path / "home").exists()  # nothing is created


def test_dataset_label_is_the_registered_name_or_the_file_stem():
    registered = ("chickenpox", "england_covid")
    assert dataset_label("chickenpox", registered) == "chickenpox"
    assert dataset_label("Chickenpox", registered) == "Chickenpox"  # names are matched exactly
    assert dataset_label("runs/data/chickenpox.json", registered) == "chickenpox"
    assert dataset_label("series.tar.json", {}) == "series.tar"  # only the last suffix goes
    assert dataset_label("a/folder", []) == "folder"


def test_a_regular_file_and_a_link_to_one_are_returned_as_given(tmp_path):
    target = tmp_path / "graph.npz"
    target.write_bytes(b"x")
    link = tmp_path / "link.npz"
    link.symlink_to(target)
    assert regular_file(str(target)) == target and isinstance(regular_file(str(target)), Path)
    assert regular_file(link) == link  # the link's own path, not its target


def test_missing_uses_the_callers_error_and_a_dangling_link_names_its_target(tmp_path):
    missing = DatasetNotFoundError("missing dataset file x; pdenets never downloads data")
    with pytest.raises(DatasetNotFoundError) as caught:
        regular_file(tmp_path / "x", missing)
    assert caught.value is missing
    with pytest.raises(DatasetNotFoundError, match="^missing file .*/y$"):
        regular_file(tmp_path / "y")
    dangling = tmp_path / "gone"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(DatasetNotFoundError) as caught:
        regular_file(dangling, missing)  # not the caller's message: the link exists, its target does not
    assert str(caught.value) == f"{dangling}: a symbolic link to {tmp_path / 'nowhere'}, which does not exist"


def test_folders_pipes_and_sockets_are_named_and_never_opened(tmp_path):
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    pipe = tmp_path / "pipe.csv"
    os.mkfifo(pipe)  # opening it for reading would block forever
    link = tmp_path / "link.csv"
    link.symlink_to(folder)
    expected = {
        folder: "(a folder)",
        pipe: "(a named pipe)",
        link: f"(a folder, reached through a symbolic link to {folder})",
    }
    for path, kind in expected.items():
        with pytest.raises(DatasetError) as caught:
            regular_file(path)
        assert not isinstance(caught.value, DatasetNotFoundError)
        assert str(caught.value) == f"{path}: not a regular file {kind}; give the path of a data file"
    short = Path(f"/tmp/pdenets-{os.getpid()}.sock")  # a socket's path must be short
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(short))
        try:
            with pytest.raises(DatasetError, match=r"not a regular file \(a socket\)"):
                regular_file(short)
        finally:
            short.unlink()


def test_a_path_below_a_file_cannot_be_examined(tmp_path):
    (tmp_path / "file").write_text("x")
    below = tmp_path / "file" / "data.csv"
    with pytest.raises(DatasetError) as caught:
        regular_file(below)
    assert not isinstance(caught.value, DatasetNotFoundError)
    assert str(caught.value) == f"{below}: cannot be examined (Not a directory)"
