"""gj.common.checkpoint.atomic_write: the file is replaced whole or not at all, with no temporary
left behind (one process, no MPI)."""

import os

import pytest

from gj.common.checkpoint import atomic_write, atomic_write_with


def test_atomic_write_replaces_the_file_whole(tmp_path):
    path = tmp_path / "sub" / "ckpt.bin"
    atomic_write(path, lambda f: f.write(b"first"))
    atomic_write(path, lambda f: f.write(b"second"))
    assert path.read_bytes() == b"second"
    assert os.listdir(path.parent) == ["ckpt.bin"]


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path):
    path = tmp_path / "ckpt.bin"
    atomic_write(path, lambda f: f.write(b"good"))

    def half_then_fail(f):
        f.write(b"half of a new one")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        atomic_write(path, half_then_fail)
    assert path.read_bytes() == b"good"
    assert os.listdir(tmp_path) == ["ckpt.bin"]


def test_atomic_write_with_keeps_the_suffix_a_saver_picks_its_format_by(tmp_path):
    seen = []

    def save(tmp):
        seen.append(tmp)
        with open(tmp, "w") as f:
            f.write("weights")

    atomic_write_with(tmp_path / "model.weights.h5", save)
    assert seen[0].endswith(".weights.h5") and os.path.dirname(seen[0]) == str(tmp_path)
    assert (tmp_path / "model.weights.h5").read_text() == "weights"
    assert os.listdir(tmp_path) == ["model.weights.h5"]
