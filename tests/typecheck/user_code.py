"""User code that pyright must accept (make test runs pyright on this folder too).

Not collected by pytest as tests: it pins what a type checker sees of lens's public
API (module dataclass fields, ``name``/``parent`` keywords, FrozenDict generics).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from lens import nn, nnx
from lens.core import FrozenDict


class MLP(nn.Module):
    hidden: int
    out: int = 1

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        h = nn.relu(nn.Dense(self.hidden, name="hidden")(x))
        return nn.Dense(self.out)(h)


def linen_user_code() -> None:
    model = MLP(4, name="mlp", parent=None)
    variables = model.init(jax.random.key(0), jnp.ones((1, 2)))
    y = model.apply(variables, jnp.ones((1, 2)))
    frozen: FrozenDict[str, int] = FrozenDict({"a": 1})
    print(y, frozen["a"], MLP(hidden=2, out=3).clone(hidden=5))


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(2, 3, rngs=rngs)
        self.cell = nnx.LSTMCell(3, 4, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        carry = self.cell.initialize_carry(x.shape, rngs=nnx.Rngs(0))
        _, y = self.cell(carry, self.linear(x))
        return y


def nnx_user_code() -> None:
    block = Block(nnx.Rngs(0))
    lin: nnx.Linear = block.linear  # a constructor gives its own class, not Object
    print(block(jnp.ones((1, 2))), lin.kernel.value.shape)
