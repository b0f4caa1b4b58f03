"""lens.metrics.tensorboard (flax.metrics.tensorboard): what it hands tf.summary.

TensorFlow is not a dependency of lens, so these tests put a recording stand-in
for it in ``sys.modules``. That the files it writes are the ones Flax's writer
writes (the same tags, steps, plugins and tensors, read back with TensorFlow) is
checked by Flax's example models, whose training tests write summaries through
it: ``make flax-examples`` (docs/flax-examples.md).
"""

from __future__ import annotations

import importlib
import sys
import types

import numpy as np
import pytest

MODULE = "lens.metrics.tensorboard"


class _Recorder:
    """tf.summary and tf.summary.create_file_writer's writer, recording calls."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []
        self.flushes = 0
        self.closed = False
        self.default = None

    def create_file_writer(self, log_dir):
        self.calls.append(("create_file_writer", {"log_dir": log_dir}))
        return _Writer(self)

    def __getattr__(self, name):  # scalar, image, audio, histogram, text, write
        def record(**kwargs):
            assert self.default is not None, f"tf.summary.{name} with no default writer"
            self.calls.append((name, kwargs))

        return record


class _Writer:
    def __init__(self, recorder):
        self._recorder = recorder

    def flush(self):
        self._recorder.flushes += 1

    def close(self):
        self._recorder.closed = True

    def as_default(self):
        writer, recorder = self, self._recorder

        class _Context:
            def __enter__(self):
                recorder.default = writer

            def __exit__(self, *exc):
                writer.flush()  # as TensorFlow's as_default() does when it ends
                recorder.default = None

        return _Context()


@pytest.fixture
def tb(monkeypatch):
    recorder = _Recorder()
    tf = types.ModuleType("tensorflow")
    tf.summary = recorder  # type: ignore[attr-defined]
    tf.float32 = np.float32  # type: ignore[attr-defined]
    tf.convert_to_tensor = lambda x, dtype=None: np.asarray(x, dtype)  # type: ignore[attr-defined]
    tf.constant = lambda x: x  # type: ignore[attr-defined]
    api = types.ModuleType("tensorboard.plugins.hparams.api")
    api.hparams = lambda hparams: recorder.calls.append(("hparams", hparams))  # type: ignore[attr-defined]
    modules = {
        "tensorflow": tf,
        "tensorboard": types.ModuleType("tensorboard"),
        "tensorboard.plugins": types.ModuleType("tensorboard.plugins"),
        "tensorboard.plugins.hparams": types.ModuleType("tensorboard.plugins.hparams"),
        "tensorboard.plugins.hparams.api": api,
    }
    modules["tensorboard.plugins.hparams"].api = api  # type: ignore[attr-defined]
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    module = importlib.import_module(MODULE)
    yield module, recorder
    sys.modules.pop(MODULE, None)


def test_without_tensorflow_the_import_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow", None)
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    with pytest.raises(ModuleNotFoundError, match="pip install tensorflow-cpu") as info:
        importlib.import_module(MODULE)
    assert info.value.name == "tensorflow"
    assert "clu.metric_writers" in str(info.value)
    sys.modules.pop(MODULE, None)


def test_the_log_dir_is_made_with_its_parents(tb, tmp_path):
    tensorboard, recorder = tb
    tensorboard.SummaryWriter(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir()
    assert recorder.calls == [
        ("create_file_writer", {"log_dir": str(tmp_path / "a" / "b")})
    ]


def test_images_are_written_as_batches_of_three_channels(tb, tmp_path):
    tensorboard, recorder = tb
    writer = tensorboard.SummaryWriter(tmp_path)
    shapes = {
        (4, 5): (1, 4, 5, 3),  # one grey image
        (4, 5, 1): (1, 4, 5, 3),
        (4, 5, 3): (1, 4, 5, 3),
        (2, 4, 5): (2, 4, 5, 3),  # two grey images
        (2, 4, 5, 1): (2, 4, 5, 3),
        (2, 4, 5, 3): (2, 4, 5, 3),
    }
    for given in shapes:
        writer.image("img", np.zeros(given, np.uint8), step=1, max_outputs=2)
    written = [kw for name, kw in recorder.calls if name == "image"]
    assert [kw["data"].shape for kw in written] == list(shapes.values())
    assert all(kw["max_outputs"] == 2 and kw["step"] == 1 for kw in written)


def test_scalars_audio_histograms_text_and_tensors(tb, tmp_path):
    tensorboard, recorder = tb
    writer = tensorboard.SummaryWriter(tmp_path)
    writer.scalar("loss", np.array(0.25, np.float32), step=3)
    writer.audio("a", np.array([[[-2.0], [0.5], [3.0]]]), step=1)
    writer.histogram("h", np.arange(6.0).reshape(2, 3), step=2, bins=4)
    writer.text("t", "**bold**", step=1)
    writer.write("raw", np.ones(2), step=5, metadata=b"m")
    calls = dict(recorder.calls[1:])
    assert calls["scalar"] == {"name": "loss", "data": 0.25, "step": 3}
    assert isinstance(calls["scalar"]["data"], float)
    np.testing.assert_array_equal(calls["audio"]["data"], [[[-1.0], [0.5], [1.0]]])
    assert (
        calls["audio"]["encoding"] == "wav" and calls["audio"]["sample_rate"] == 44100
    )
    assert (
        calls["histogram"]["data"].shape == (6,) and calls["histogram"]["buckets"] == 4
    )
    assert calls["text"] == {"name": "t", "data": "**bold**", "step": 1}
    assert calls["write"]["tag"] == "raw" and calls["write"]["metadata"] == b"m"


def test_text_of_another_type_is_flaxs_value_error(tb, tmp_path):
    tensorboard, recorder = tb
    writer = tensorboard.SummaryWriter(tmp_path)
    with pytest.raises(
        ValueError, match="^`textdata` should be of the type `str` or `bytes`"
    ):
        writer.text("t", 3, step=1)
    assert [name for name, _ in recorder.calls] == ["create_file_writer"]


def test_hparams_are_flattened_with_other_types_as_text(tb, tmp_path):
    tensorboard, recorder = tb
    tensorboard.SummaryWriter(tmp_path).hparams(
        {"lr": 0.1, "model": {"depth": 4, "sizes": (1, 2)}, "name": "mlp", "none": None}
    )
    assert recorder.calls[-1] == (
        "hparams",
        {
            "lr": 0.1,
            "model.depth": 4,
            "model.sizes": "(1, 2)",
            "name": "mlp",
            "none": "None",
        },
    )


def test_auto_flush_off_leaves_flushing_to_flush_and_close(tb, tmp_path):
    tensorboard, recorder = tb
    writer = tensorboard.SummaryWriter(tmp_path, auto_flush=False)
    writer.scalar("a", 1.0, step=1)
    writer.scalar("a", 2.0, step=2)
    assert recorder.flushes == 0
    writer.flush()
    assert recorder.flushes == 1
    auto = tensorboard.SummaryWriter(tmp_path)
    auto.scalar("a", 1.0, step=1)
    assert recorder.flushes == 2


def test_a_closed_writer_writes_nothing_more(tb, tmp_path):
    tensorboard, recorder = tb
    writer = tensorboard.SummaryWriter(tmp_path)
    writer.close()
    writer.close()  # a second close is a no-op, as in flax
    assert recorder.closed
    with pytest.raises(AttributeError, match="SummaryWriter is closed"):
        writer.scalar("a", 1.0, step=1)
    with pytest.raises(AttributeError, match="SummaryWriter is closed"):
        writer.flush()
    assert [name for name, _ in recorder.calls] == ["create_file_writer"]
