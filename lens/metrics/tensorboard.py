"""TensorBoard summaries from a training loop (``flax.metrics.tensorboard``).

:class:`SummaryWriter` writes scalars, images, audio, histograms, text, raw
tensors and hyperparameters into ``tfevents`` files under ``log_dir``, through
TensorFlow's ``tf.summary``, so the files are the ones TensorBoard and Flax's own
writer produce. Like Flax's module it needs TensorFlow: importing it without
TensorFlow raises ``ModuleNotFoundError`` saying what to install (or what to use
instead: ``clu.metric_writers`` or ``tensorboardX`` write the same files).

Example::

    from lens.metrics import tensorboard

    writer = tensorboard.SummaryWriter("/tmp/logs")
    writer.scalar("train/loss", loss, step=epoch)
    writer.hparams({"learning_rate": 0.1, "model": {"depth": 4}})
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

try:
    import tensorflow as tf  # pyright: ignore[reportMissingImports, reportMissingModuleSource]
    from tensorboard.plugins.hparams import (  # pyright: ignore[reportMissingImports]
        api as hparams_api,
    )
except ModuleNotFoundError as missing:
    raise ModuleNotFoundError(
        f"lens.metrics.tensorboard writes TensorBoard summaries with TensorFlow, "
        f"and {missing.name!r} is not installed.\nInstall it (pip install "
        f"tensorflow-cpu), or write the same files without TensorFlow with "
        f"clu.metric_writers or tensorboardX.",
        name=missing.name,
    ) from missing

from lens import io

__all__ = ["SummaryWriter"]

# The value types TensorBoard's hparams plugin takes; anything else is written
# as its str().
_HPARAM_TYPES = (bool, int, float, str, np.bool_, np.integer, np.floating, np.character)


def _flat_hparams(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"model": {"depth": 4}}`` as ``{"model.depth": 4}``, with values of other
    types (a tuple, None, a ConfigDict's lists) as their text."""
    flat: dict[str, Any] = {}
    for name, value in tree.items():
        key = f"{prefix}.{name}" if prefix else name
        if isinstance(value, dict):
            flat.update(_flat_hparams(value, key))
        else:
            flat[key] = value if isinstance(value, _HPARAM_TYPES) else str(value)
    return flat


def _as_nhwc(image: Any) -> np.ndarray:
    """An image or a batch of them as ``[k, h, w, 3]`` (or 4 channels):
    ``[h, w]`` and ``[h, w, 1]`` are one grey image, ``[k, h, w]`` is k of
    them; grey images are repeated into three channels."""
    image = np.asarray(image)
    if image.ndim == 2:
        image = image[None, :, :, None]
    elif image.ndim == 3:
        # [h, w, c] when the last axis is a channel count, else [k, h, w]
        image = image[None] if image.shape[-1] in (1, 3) else image[..., None]
    if image.shape[-1] == 1:
        image = np.repeat(image, 3, axis=-1)
    return image


class SummaryWriter:
    """Saves data in event and summary protos for tensorboard.

    Args:
      log_dir: the folder of the ``tfevents`` files (made, with its parents, when
        missing; any path ``tf.io.gfile`` writes, ``gs://`` included).
      auto_flush: flush the file after every summary written (the default);
        ``False`` leaves it to :meth:`flush` and :meth:`close`.
    """

    def __init__(self, log_dir: str | os.PathLike[str], auto_flush: bool = True):
        log_dir = os.fspath(log_dir)
        if not io.isdir(log_dir):
            io.makedirs(log_dir)
        self._event_writer = tf.summary.create_file_writer(log_dir)
        self._auto_flush = auto_flush
        self._closed = False

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """The writer as tf.summary's default, as ``as_default()``; that flushes
        when it ends, so without auto_flush its flush is a no-op meanwhile."""
        writer = self._open_writer()
        with contextlib.ExitStack() as stack:
            if not self._auto_flush:
                writer.flush = lambda: None  # an instance attribute, removed below
                stack.callback(vars(writer).pop, "flush", None)
            stack.enter_context(writer.as_default())
            yield

    def _open_writer(self) -> Any:
        if self._closed:  # flax's writer has no _event_writer then: AttributeError
            raise AttributeError(
                "This SummaryWriter is closed: close() was called, and it writes "
                "nothing more.\nMake a new SummaryWriter(log_dir) to write more "
                "summaries (it adds a new events file to the folder)."
            )
        return self._event_writer

    def close(self) -> None:
        """Flushes and closes the file; the writer writes nothing more."""
        if not self._closed:
            self._event_writer.close()
            self._closed = True

    def flush(self) -> None:
        """Writes what is buffered to the file."""
        self._open_writer().flush()

    def scalar(self, tag: str, value: Any, step: int) -> None:
        """Saves a number: a Python or NumPy number, or a 0-d (JAX) array."""
        value = float(np.asarray(value))
        with self._writing():
            tf.summary.scalar(name=tag, data=value, step=step)

    def image(self, tag: str, image: Any, step: int, max_outputs: int = 3) -> None:
        """Saves images: ``[h, w]``, ``[h, w, 1]``, ``[h, w, 3]``, or a batch
        ``[k, h, w]``, ``[k, h, w, 1]``, ``[k, h, w, 3]``; uint8 pixels, or floats
        in [0, 1). At most ``max_outputs`` of a batch are written."""
        data = tf.convert_to_tensor(_as_nhwc(image))
        with self._writing():
            tf.summary.image(name=tag, data=data, step=step, max_outputs=max_outputs)

    def audio(
        self,
        tag: str,
        audiodata: Any,
        step: int,
        sample_rate: int = 44100,
        max_outputs: int = 3,
    ) -> None:
        """Saves clips ``[clips, frames, channels]`` as WAV, clipped to [-1, 1]."""
        data = tf.convert_to_tensor(np.clip(np.asarray(audiodata), -1, 1), tf.float32)
        with self._writing():
            tf.summary.audio(
                name=tag,
                data=data,
                sample_rate=sample_rate,
                step=step,
                max_outputs=max_outputs,
                encoding="wav",
            )

    def histogram(
        self, tag: str, values: Any, step: int, bins: int | None = None
    ) -> None:
        """Saves a histogram of all the values (flattened) in ``bins`` buckets
        (TensorFlow's default when None)."""
        values = np.reshape(np.asarray(values), -1)
        with self._writing():
            tf.summary.histogram(name=tag, data=values, step=step, buckets=bins)

    def text(self, tag: str, textdata: str | bytes, step: int) -> None:
        """Saves a text (TensorBoard renders its Markdown)."""
        if not isinstance(textdata, (str, bytes)):
            raise ValueError(
                "`textdata` should be of the type `str` or `bytes`.\n"
                f"SummaryWriter.text({tag!r}, ...) got a {type(textdata).__name__}; "
                "write numbers with scalar() or histogram(), or pass str(value)."
            )
        with self._writing():
            tf.summary.text(name=tag, data=tf.constant(textdata), step=step)

    def write(self, tag: str, tensor: Any, step: int, metadata: Any = None) -> None:
        """Saves any tensor, with a ``SummaryMetadata`` (proto or serialized
        bytes) for a custom TensorBoard plugin."""
        with self._writing():
            tf.summary.write(tag=tag, tensor=tensor, step=step, metadata=metadata)

    def hparams(self, hparams: Mapping[str, Any]) -> None:
        """Saves hyperparameters; nested mappings (a ConfigDict's ``to_dict()``)
        become dotted names."""
        with self._writing():
            hparams_api.hparams(hparams=_flat_hparams(hparams))
