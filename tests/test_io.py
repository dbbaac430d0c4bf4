"""Atomic writes and bounded reads: a file is replaced in one rename, and a file is read only where it is a
regular file, no further than its limit, with a pipe, a device or a file that grows refused in one line."""

import os
import threading

import pytest

from pdenets._io import UnreadableFileError, atomic_write_text, file_sha256, read_bounded


def test_a_regular_file_is_read_whole_up_to_its_limit_and_refused_one_byte_beyond(tmp_path):
    path = atomic_write_text(tmp_path / "a.json", "x" * 10)
    assert read_bounded(path, 10) == b"x" * 10  # the boundary: exactly the limit
    with pytest.raises(UnreadableFileError, match=r"a.json: 10 bytes, more than 9 \(the most it may hold\)"):
        read_bounded(path, 9)
    assert len(file_sha256(path)) == 64


def test_a_huge_sparse_file_is_refused_from_its_size_without_being_read(tmp_path):
    path = tmp_path / "model.json"
    with open(path, "wb") as stream:
        stream.truncate(100 * 2**30)  # 100 GiB, no block written
    with pytest.raises(UnreadableFileError, match="107,374,182,400 bytes, more than 64"):
        read_bounded(path, 64, "a manifest")


def test_devices_folders_and_links_to_them_are_refused_before_any_read(tmp_path):
    link = tmp_path / "model.json"
    link.symlink_to("/dev/zero")
    for path, kind in ((link, "a character device"), (tmp_path, "a folder")):
        with pytest.raises(UnreadableFileError, match=f"not a regular file \\({kind}\\)"):
            read_bounded(path, 100)
    with pytest.raises(FileNotFoundError, match="absent: missing"):
        read_bounded(tmp_path / "absent", 100)


def test_a_named_pipe_is_refused_at_once_even_with_no_writer(tmp_path):
    pipe = tmp_path / "model.json"
    os.mkfifo(pipe)
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(_refusal(pipe)), daemon=True)
    reader.start()
    reader.join(timeout=20)
    assert outcome == ["not a regular file (a named pipe)"]


def _refusal(path):
    try:
        read_bounded(path, 100)
    except UnreadableFileError as error:
        return str(error).split(": ", 1)[1]
    return "read"
