"""lens.io does what flax.io does on local paths (flax.io's DEFAULT backend)."""

import os

import pytest

from lens import errors, io

fio = pytest.importorskip("flax.io")


@pytest.fixture(params=["lens", "flax"])
def both(request, tmp_path):
    """Each test runs once on lens.io and once on flax.io, in a fresh folder."""
    return (io if request.param == "lens" else fio), tmp_path


def _tree(root):
    return sorted(
        os.path.relpath(os.path.join(d, f), root)
        for d, dirs, files in os.walk(root)
        for f in files + dirs
    )


def test_write_read_list_and_size(both):
    mod, tmp = both
    path = str(tmp / "a.txt")
    with mod.GFile(path, "w") as f:
        f.write("hello")
    with mod.GFile(path, "rb") as f:
        assert f.read() == b"hello"
    assert mod.exists(path) and not mod.isdir(path)
    assert mod.listdir(str(tmp)) == ["a.txt"]
    assert mod.getsize(path) == 5


def test_makedirs_glob_and_rmtree(both):
    mod, tmp = both
    mod.makedirs(str(tmp / "x" / "y"))
    mod.makedirs(str(tmp / "x" / "y"))  # exists already: no error
    (tmp / "x" / "f.txt").write_text("1")
    assert mod.isdir(str(tmp / "x" / "y"))
    assert sorted(mod.glob(str(tmp / "x" / "*"))) == [
        str(tmp / "x" / "f.txt"),
        str(tmp / "x" / "y"),
    ]
    # a pattern for folders gives them without the trailing slash
    assert mod.glob(str(tmp / "x" / "*") + "/") == [str(tmp / "x" / "y")]
    mod.rmtree(str(tmp / "x"))
    assert not mod.exists(str(tmp / "x"))


def test_copy_rename_and_remove_refuse_to_overwrite_unless_asked(both):
    mod, tmp = both
    a, b = str(tmp / "a"), str(tmp / "b")
    (tmp / "a").write_text("A")
    mod.copy(a, b)
    assert (tmp / "b").read_text() == "A"
    with pytest.raises(Exception, match="Trying overwrite an existing file") as info:
        mod.copy(a, b)
    assert type(info.value).__name__ == "AlreadyExistsError"
    (tmp / "a").write_text("A2")
    mod.copy(a, b, overwrite=True)
    assert (tmp / "b").read_text() == "A2"
    with pytest.raises(Exception, match="Trying overwrite an existing file"):
        mod.rename(a, b)
    mod.rename(a, b, overwrite=True)
    assert _tree(tmp) == ["b"] and (tmp / "b").read_text() == "A2"
    mod.remove(b)
    assert _tree(tmp) == []


def test_lens_errors_are_also_the_builtin_ones(tmp_path):
    (tmp_path / "a").write_text("A")
    with pytest.raises(FileExistsError):
        io.copy(str(tmp_path / "a"), str(tmp_path / "a"))
    with pytest.raises(errors.AlreadyExistsError):
        io.rename(str(tmp_path / "a"), str(tmp_path / "a"))
    with pytest.raises(io.NotFoundError):
        io.remove(str(tmp_path / "missing"))


def test_modes():
    assert io.io_mode is io.BackendMode.DEFAULT and io.gfile is None
    assert [m.name for m in io.BackendMode] == [m.name for m in fio.BackendMode]
    with io.override_mode(io.BackendMode.DEFAULT):
        assert io.io_mode is io.BackendMode.DEFAULT
    io.set_mode(io.BackendMode.DEFAULT)
    # lens has no TensorFlow backend: asking for it says so, and changes nothing
    with pytest.raises(ValueError, match="no TensorFlow backend"):
        io.set_mode(io.BackendMode.TF)
    with pytest.raises(ValueError, match="no TensorFlow backend"):
        with io.override_mode(io.BackendMode.TF):
            pass
    assert io.io_mode is io.BackendMode.DEFAULT
