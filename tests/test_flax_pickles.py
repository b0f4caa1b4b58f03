"""Objects pickled by flax 0.12.8 load under lens (``flax`` resolving to lens), as
a user who pickled a model or its State before porting loads it.

flax.nnx pickles internals lens keeps otherwise: a TraceState as the class with an
empty state, every Variable mode flag in ``_var_metadata``, an object's
``_pytree__nodes``, and an ``nnx.List``'s items as attributes ``"0"``, ``"1"``, ...
with ``_length``; a Linen module's id is flax's ``FlaxId`` with a dict state. The
pickles are written by flax in one process and read by lens in another (the
alias replaces ``flax`` in ``sys.modules``).
"""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("flax.nnx")

MODEL = textwrap.dedent(
    """
    import jax.numpy as jnp
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 3, rngs=rngs)
            self.bn = nnx.BatchNorm(3, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)
            self.layers = nnx.List([nnx.Linear(3, 3, rngs=rngs), abs])
            self.extra = nnx.Dict(scale=nnx.Param(jnp.full((3,), 2.0)))

        def __call__(self, x):
            h = self.drop(self.bn(self.lin(x)))
            return self.layers[1](self.layers[0](h)) * self.extra["scale"][...]
    """
)

WRITE = """
import pickle, sys
import jax.numpy as jnp, numpy as np, optax
from flax import nnx
from block import Block

model = Block(nnx.Rngs(0))
model(jnp.ones((4, 2)))  # batch stats and the dropout stream move
model.eval()
objs = {
    "model": model,
    "state": nnx.state(model),
    "param": nnx.Param(jnp.arange(2.0), note="kept"),
    "lora": nnx.LoRAParam(jnp.ones(2)),
    "rngs": nnx.Rngs(0, params=1),
    "opt_state": nnx.state(nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)),
    "expected": np.asarray(model(jnp.ones((4, 2)))),
}
pickle.dump(objs, open(sys.argv[1], "wb"))
"""

READ = """
import pickle, sys
import lens
lens.alias_flax()
import jax, jax.numpy as jnp, numpy as np
from flax import nnx
from block import Block

objs = pickle.load(open(sys.argv[1], "rb"))
model = objs["model"]
assert type(model.lin.kernel) is nnx.Param and type(model.layers) is nnx.List
assert len(model.layers) == 2 and model.layers[1] is abs
np.testing.assert_allclose(model(jnp.ones((4, 2))), objs["expected"], rtol=1e-6)
# the same structure as the model built by lens itself
fresh = Block(nnx.Rngs(0))
fresh.eval()
assert nnx.graphdef(model) == nnx.graphdef(fresh), "another graph"
assert "_pytree__nodes" not in vars(model)
nnx.update(fresh, objs["state"])
np.testing.assert_allclose(fresh(jnp.ones((4, 2))), objs["expected"], rtol=1e-6)
out = nnx.jit(lambda m, x: m(x))(model, jnp.ones((4, 2)))
np.testing.assert_allclose(out, objs["expected"], rtol=1e-6)
model.train()
model(jnp.ones((4, 2)))  # writes batch stats and draws from the stream
# mode flags at their defaults are not metadata on lens (flax stores them)
param = objs["param"]
assert param.get_metadata() == {
    "note": "kept", "hijax": False, "ref": False, "eager_sharding": True
}
assert "hijax=" not in repr(param) and "note='kept'" in repr(param)
assert type(objs["lora"]) is nnx.LoRAParam
rngs = objs["rngs"]
assert list(rngs) == ["params", "default"]
assert jax.random.key_data(rngs.params()).shape == (2,)
shapes = jax.tree.map(jnp.shape, objs["opt_state"].to_pure_dict())
assert shapes["opt_state"][0]["mu"]["lin"]["kernel"] == (2, 3)
print("loaded")
"""


def test_flax_pickles_of_models_states_variables_and_rngs_load_on_lens(tmp_path):
    _write_then_read(tmp_path, MODEL, WRITE, READ)


LINEN_MODEL = textwrap.dedent(
    """
    import flax.linen as nn
    import flax.struct as struct
    import jax.numpy as jnp

    class MLP(nn.Module):
        features: int = 3

        @nn.compact
        def __call__(self, x):
            init = nn.with_partitioning(nn.initializers.ones, ("a", "b"))
            return nn.Dense(self.features, kernel_init=init)(x)

    @struct.dataclass
    class Point:
        a: jnp.ndarray
        b: int = struct.field(pytree_node=False, default=3)
    """
)

LINEN_WRITE = """
import pickle, sys
import jax, jax.numpy as jnp, numpy as np
from flax.core import freeze
from block import MLP, Point

model = MLP(features=3)
variables = model.init(jax.random.key(0), jnp.ones((2, 2)))
objs = {
    "model": model,
    "variables": variables,
    "frozen": freeze({"a": {"b": jnp.ones(2)}}),
    "point": Point(jnp.ones(2), 4),
    "expected": np.asarray(model.apply(variables, jnp.ones((2, 2)))),
}
pickle.dump(objs, open(sys.argv[1], "wb"))
"""

LINEN_READ = """
import pickle, sys
import lens
lens.alias_flax()
import jax, jax.numpy as jnp, numpy as np
import flax.linen as nn
from flax.core import FrozenDict
from block import MLP, Point

objs = pickle.load(open(sys.argv[1], "rb"))
model = objs["model"]
assert type(model) is MLP and model.features == 3 and model == MLP(features=3)
out = model.apply(objs["variables"], jnp.ones((2, 2)))
np.testing.assert_allclose(out, objs["expected"])
kernel = objs["variables"]["params"]["Dense_0"]["kernel"]
assert type(kernel) is nn.Partitioned and kernel.names == ("a", "b")
fresh = model.init(jax.random.key(0), jnp.ones((2, 2)))
assert jax.tree.structure(fresh) == jax.tree.structure(objs["variables"])
assert type(objs["frozen"]) is FrozenDict and objs["frozen"]["a"]["b"].shape == (2,)
assert objs["point"].b == 4 and jax.tree.leaves(objs["point"])[0].shape == (2,)
print("loaded")
"""


def test_flax_pickles_of_linen_modules_and_variables_load_on_lens(tmp_path):
    _write_then_read(tmp_path, LINEN_MODEL, LINEN_WRITE, LINEN_READ)


def _write_then_read(tmp_path, model, write, read):
    (tmp_path / "block.py").write_text(model)
    data = tmp_path / "objs.pkl"
    env = {"PYTHONPATH": str(tmp_path)}
    run = dict(cwd=tmp_path, capture_output=True, text=True, env=_env(env))
    wrote = subprocess.run([sys.executable, "-c", write, str(data)], **run)
    assert wrote.returncode == 0, wrote.stderr
    got = subprocess.run([sys.executable, "-c", read, str(data)], **run)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip().endswith("loaded")


def _env(extra):
    import os

    env = dict(os.environ)
    paths = [extra["PYTHONPATH"], *sys.path[1:]]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env
