"""The models of issue 44's rows, and pure JAX doing the same arithmetic.

Nothing here imports lens or flax at import time: the library is passed in (or
imported by :func:`first_model`, inside the time it measures), so a fresh process
can import this module with jax alone (benchmarks/first_use.py's fresh rows).

Pure JAX is what a user would write by hand for the same numbers:

- nnx: ``Rngs(0)``'s ``params`` stream gives ``fold_in(key, count)`` for the
  count-th key, kernel then bias of each ``Linear`` (the bias's key is drawn
  though zeros ignore it, as flax.nnx draws it), each initialised by JAX's own
  ``lecun_normal`` / ``zeros``; the counter is a Python int (nnx keeps it on the
  device, one ``count + 1`` dispatch per key: :func:`nnx_params` with
  ``device_count=True`` does that too, an informational row).
- Linen: ``init`` draws each parameter's key as ``fold_in(key, h)`` with ``h`` the
  first four bytes of the SHA-1 of the scope path and the call count (flax.core's
  ``LazyRng``), then runs the model once (``init`` returns its output too).

:func:`check_same_numbers` checks these against flax's (a baseline that computed
other numbers would not be a baseline).
"""

from __future__ import annotations

import hashlib
import importlib
from typing import Any

import jax
import jax.numpy as jnp

WIDTH = 64
FIRST_DEPTH, FIRST_BATCH = 4, 8  # the small MLPs of the time-to-first-model rows

_lecun = jax.nn.initializers.lecun_normal()
_zeros = jax.nn.initializers.zeros


# -- nnx: Linear(WIDTH, WIDTH) x depth, relu after each


def nnx_mlp(nnx: Any, depth: int) -> Any:
    """An nnx MLP class of ``depth`` ``Linear(WIDTH, WIDTH)`` layers in an
    ``nnx.List``, relu after each."""

    class MLP(nnx.Module):
        def __init__(self, rngs: Any):
            self.layers = nnx.List(
                [nnx.Linear(WIDTH, WIDTH, rngs=rngs) for _ in range(depth)]
            )

        def __call__(self, x: Any) -> Any:
            for layer in self.layers:
                x = jax.nn.relu(layer(x))
            return x

    return MLP


def nnx_arrays(model: Any) -> list[Any]:
    """The model's parameters, kernel then bias of each layer, as arrays."""
    return [a for layer in model.layers for a in (layer.kernel[...], layer.bias[...])]


def nnx_params(depth: int, seed: int = 0, device_count: bool = False) -> list[Any]:
    """``Rngs(seed)`` and ``depth`` Linear layers' parameters, by hand: [kernel,
    bias, kernel, bias, ...]."""
    key = jax.random.key(seed)
    count: Any = jnp.zeros((), jnp.uint32) if device_count else 0
    out = []
    for _ in range(depth):
        for init, shape in ((_lecun, (WIDTH, WIDTH)), (_zeros, (WIDTH,))):
            k = jax.random.fold_in(key, count)
            count = count + 1
            out.append(init(k, shape, jnp.float32))
    return out


def pure_forward(params: list[Any], x: Any) -> Any:
    """``relu(x @ kernel + bias)`` per layer of a flat [kernel, bias, ...] list."""
    for i in range(0, len(params), 2):
        x = jax.nn.relu(x @ params[i] + params[i + 1])
    return x


# -- Linen: Dense(WIDTH) x depth, relu after each, a Dense(head) last when head


def linen_mlp(nn: Any, depth: int, head: int | None = None) -> Any:
    """A Linen MLP module of ``depth`` relu ``Dense(WIDTH)`` layers (and a
    ``Dense(head)`` after them when ``head``)."""

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x: Any) -> Any:
            for _ in range(depth):
                x = nn.relu(nn.Dense(WIDTH)(x))
            return nn.Dense(head)(x) if head else x

    return MLP()


def _path_hash(*data: str | int) -> int:
    """flax.core's ``LazyRng`` hash of a scope path and call count."""
    m = hashlib.sha1()
    for x in data:
        if isinstance(x, str):
            m.update(x.encode("utf-8"))
        else:
            m.update(x.to_bytes((x.bit_length() + 7) // 8, byteorder="big"))
    return int.from_bytes(m.digest()[:4], byteorder="big")


def linen_init(key: Any, x: Any, depth: int, head: int | None = None) -> Any:
    """``linen_mlp(nn, depth, head).init(key, x)`` by hand: the variables, and the
    forward pass ``init`` runs to make them."""
    params = {}
    sizes = [WIDTH] * depth + ([head] if head else [])
    for i, features in enumerate(sizes):
        name = f"Dense_{i}"
        k = jax.random.fold_in(key, _path_hash(name, 1))
        kernel = _lecun(k, (x.shape[-1], features), jnp.float32)
        k = jax.random.fold_in(key, _path_hash(name, 2))
        bias = _zeros(k, (features,), jnp.float32)
        params[name] = {"kernel": kernel, "bias": bias}
        x = x @ kernel + bias
        if i < depth:
            x = jax.nn.relu(x)
    return {"params": params}


def linen_apply(variables: Any, x: Any, head: bool = False) -> Any:
    """``linen_mlp(nn, depth, head).apply(variables, x)`` by hand."""
    params = variables["params"]
    n = len(params)
    for i in range(n):
        p = params[f"Dense_{i}"]
        x = x @ p["kernel"] + p["bias"]
        if i < n - 1 or not head:
            x = jax.nn.relu(x)
    return x


# -- the time-to-first-model rows: a whole first use, pure and by a library


def first_pure(api: str) -> Any:
    """Pure JAX's arithmetic of :func:`first_model`: parameters and a first call."""
    x = jnp.ones((FIRST_BATCH, WIDTH))
    if api == "nn":
        variables = linen_init(jax.random.key(0), x, FIRST_DEPTH)
        return linen_apply(variables, x)
    return pure_forward(nnx_params(FIRST_DEPTH), x)


MODULES = {
    ("nn", "lens"): "lens.nn",
    ("nn", "flax"): "flax.linen",
    ("nnx", "lens"): "lens.nnx",
    ("nnx", "flax"): "flax.nnx",
    ("nnx", "equinox"): "equinox",
}


def first_model(api: str, lib: str) -> Any:
    """Import ``lib``'s ``api``, define and build the small MLP, ``init`` it (Linen)
    and call it once: what a new user's first cell does."""
    mod = importlib.import_module(MODULES[(api, lib)])
    x = jnp.ones((FIRST_BATCH, WIDTH))
    if api == "nn":
        model = linen_mlp(mod, FIRST_DEPTH)
        variables = model.init(jax.random.key(0), x)
        return model.apply(variables, x)
    if lib == "equinox":
        return eqx_mlp(mod, FIRST_DEPTH)(jax.random.key(0))(x)
    model = nnx_mlp(mod, FIRST_DEPTH)(mod.Rngs(0))
    return model(x)


# -- Equinox: the nnx MLP's shapes as an ``eqx.Module`` (its own initialisers and
# key splitting: other numbers, the same arithmetic per call)


def eqx_mlp(eqx: Any, depth: int) -> Any:
    """An Equinox MLP class of ``depth`` ``eqx.nn.Linear(WIDTH, WIDTH)`` layers in a
    list, relu after each; built from one key, split per layer."""

    class MLP(eqx.Module):
        layers: list

        def __init__(self, key: Any):
            keys = jax.random.split(key, depth)
            self.layers = [eqx.nn.Linear(WIDTH, WIDTH, key=k) for k in keys]

        def __call__(self, x: Any) -> Any:
            for layer in self.layers:
                x = jax.nn.relu(x @ layer.weight.T + layer.bias)
            return x

    return MLP


def check_same_numbers(flax_nn: Any, flax_nnx: Any, depth: int = 3) -> None:
    """Raises AssertionError unless pure JAX's parameters and outputs are flax's."""
    x = jnp.linspace(-1.0, 1.0, 2 * WIDTH).reshape(2, WIDTH)
    model = linen_mlp(flax_nn, depth, head=1)
    variables = model.init(jax.random.key(0), x)
    pure = linen_init(jax.random.key(0), x, depth, head=1)
    close = jax.tree.map(lambda a, b: bool(jnp.allclose(a, b)), variables, pure)
    assert all(jax.tree.leaves(close)), "pure Linen init differs from flax's"
    assert jnp.allclose(
        model.apply(variables, x), linen_apply(pure, x, head=True), atol=1e-5
    )
    m = nnx_mlp(flax_nnx, depth)(flax_nnx.Rngs(0))
    for a, b in zip(nnx_arrays(m), nnx_params(depth), strict=True):
        assert jnp.allclose(a, b), "pure nnx parameters differ from flax's"
    assert jnp.allclose(m(x), pure_forward(nnx_params(depth), x), atol=1e-5)
