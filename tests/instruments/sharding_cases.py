"""Seeded sharding mistakes on 8 CPU devices, each one a realistic slip.

Each case builds what a user would hand ``lens.sharding`` (a Linen variable
collection, boxed; an nnx State or Module; a restore target of abstract arrays)
with one mistake in it, and says what lens must report: the kind, the
variable's path and the logical name, mesh axis or rule at fault. Its
``without_lens`` shows that the mistake is real: JAX raises, deep inside and
without the path, when the tree is placed, or lens lays it out otherwise than
the user meant, silently.

The tests (tests/instruments/test_sharding.py) check that every case is
reported before anything compiles, with its module path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lens import nn, nnx

RULES = (("batch", "data"), ("embed", None), ("mlp", "model"), ("heads", "model"))


def mesh() -> jax.sharding.Mesh:
    """The 2 x 4 mesh of every case (data x model)."""
    return jax.make_mesh((2, 4), ("data", "model"))


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    framework: str  # "nn", "nnx" or "jax"
    kind: str  # the Problem.kind lens must report
    path: str  # the variable path it must name
    module: str  # the module path it must name
    what: str  # the logical name or mesh axis it must name ("": none)
    build: Callable[[], tuple[Any, Any, Any]]  # -> (tree, mesh, rules)
    without_lens: Callable[[], str]  # what happens without lens: "raises ..." etc.


def raises(fn: Callable[[], Any]) -> str:
    """``raises <Error>: first line`` if ``fn`` raises, else ``ran``."""
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - the consequence is the error
        return f"raises {type(err).__name__}: {str(err).splitlines()[0][:120]}"
    return "ran"


# -- models


def _init(names: tuple[Any, ...]) -> Any:
    return nn.with_logical_partitioning(nn.initializers.lecun_normal(), names)


class MLP(nn.Module):
    """A Linen MLP whose kernels name logical axes."""

    hidden: int = 32
    first: tuple[Any, ...] = ("embed", "mlp")
    second: tuple[Any, ...] = ("mlp", "embed")

    @nn.compact
    def __call__(self, x):
        h = nn.Dense(self.hidden, kernel_init=_init(self.first))(x)
        return nn.Dense(x.shape[-1], kernel_init=_init(self.second))(nn.relu(h))


class Attention(nn.Module):
    """A Linen projection onto heads: a (embed, heads, kv) kernel."""

    @nn.compact
    def __call__(self, x):
        return nn.DenseGeneral(
            (4, 8), kernel_init=_init(("embed", "heads", "kv")), name="query"
        )(x)


def _abstract(model: nn.Module, x: Any) -> Any:
    return jax.eval_shape(model.init, jax.random.key(0), x)


X = jnp.ones((4, 16))


class Block(nnx.Module):
    def __init__(self, din, dout, names, rngs, **metadata):
        init = nnx.with_partitioning(nnx.initializers.lecun_normal(), names, **metadata)
        self.linear = nnx.Linear(din, dout, kernel_init=init, rngs=rngs)


class Stack(nnx.Module):
    """An nnx model: ``/layers/0/linear``, ``/layers/1/linear``; the second
    kernel named ``names``."""

    def __init__(self, names: tuple[Any, ...], dout: int = 32, **metadata: Any):
        rngs = nnx.Rngs(0)
        first = Block(16, 32, ("embed", "mlp"), rngs)
        self.layers = nnx.List([first, Block(32, dout, names, rngs, **metadata)])


def _abstract_stack(names: tuple[Any, ...], dout: int = 32, **metadata: Any) -> Any:
    """The model as nnx.eval_shape gives it: nothing allocated, nothing placed."""
    with nnx.use_eager_sharding(False):  # laid out later, by the user's code
        return nnx.eval_shape(lambda: Stack(names, dout, **metadata))


# -- lens.nn

TYPO = (("embed", None), ("mpl", "model"))


def nn_no_rule():
    return _abstract(MLP(), X), mesh(), TYPO


def nn_no_rule_without_lens():
    with nn.logical_axis_rules(TYPO):
        spec = nn.get_sharding(_abstract(MLP(), X), mesh())
    return f"silently replicated: {spec['params']['Dense_0']['kernel'].spec}"


HEADS_KV = (("embed", None), ("heads", "model"), ("kv", "model"))


def nn_conflict():
    return _abstract(Attention(), X), mesh(), HEADS_KV


def nn_conflict_without_lens():
    with nn.logical_axis_rules(HEADS_KV):
        spec = nn.get_sharding(_abstract(Attention(), X), mesh())
    return f"silently: {spec['params']['query']['kernel'].spec} (kv replicated)"


def nn_indivisible():
    return _abstract(MLP(hidden=30), X), mesh(), RULES


def nn_indivisible_without_lens():
    with nn.logical_axis_rules(RULES):
        shardings = nn.get_sharding(_abstract(MLP(hidden=30), X), mesh())
    s = shardings["params"]["Dense_0"]["kernel"]
    return raises(lambda: jax.device_put(np.zeros((16, 30), np.float32), s))


TENSOR = (("embed", None), ("mlp", "tensor"))


def nn_rule_to_missing_axis():
    return _abstract(MLP(), X), mesh(), TENSOR


def nn_rule_to_missing_axis_without_lens():
    with nn.logical_axis_rules(TENSOR):
        return raises(lambda: nn.get_sharding(_abstract(MLP(), X), mesh()))


def _mesh_names_model() -> nn.Module:
    init = nn.with_partitioning(nn.initializers.lecun_normal(), ("embed", "mlp"))
    return nn.Dense(32, kernel_init=init)


def nn_logical_names_as_mesh_axes():
    return _abstract(_mesh_names_model(), X), mesh(), RULES


def nn_logical_names_as_mesh_axes_without_lens():
    abstract = _abstract(_mesh_names_model(), X)
    return raises(lambda: nn.get_sharding(abstract, mesh()))


def _bias_model() -> nn.Module:
    bias = nn.with_partitioning(nn.initializers.zeros_init(), (None, "model"))
    return nn.Dense(32, bias_init=bias)


def nn_rank():
    return _abstract(_bias_model(), X), mesh(), RULES


def nn_rank_without_lens():
    s = nn.get_sharding(_abstract(_bias_model(), X), mesh())["params"]["bias"]
    return raises(lambda: jax.device_put(np.zeros(32, np.float32), s))


def nn_duplicate_name():
    return _abstract(MLP(hidden=16, second=("embed", "embed")), X), mesh(), RULES


def nn_duplicate_name_without_lens():
    abstract = _abstract(MLP(hidden=16, second=("embed", "embed")), X)
    with nn.logical_axis_rules(RULES):
        return raises(lambda: nn.get_sharding(abstract, mesh()))


def nn_placement():
    variables = MLP().init(jax.random.key(0), X)  # no out_shardings: one device
    return variables, mesh(), RULES


def nn_placement_without_lens():
    variables = MLP().init(jax.random.key(0), X)
    kernel = variables["params"]["Dense_0"]["kernel"].value
    return f"runs; all of it on devices {sorted(d.id for d in kernel.devices())}"


# -- lens.nnx


def nnx_no_rule():
    return nnx.state(_abstract_stack(("mlp", "hidden"))), mesh(), RULES


def nnx_no_rule_without_lens():
    with jax.set_mesh(mesh()), nn.logical_axis_rules(RULES):
        return raises(lambda: Stack(("mlp", "hidden")))


def nnx_conflict():
    return _abstract_stack(("mlp", "heads")), mesh(), RULES  # the Module itself


def nnx_conflict_without_lens():
    with jax.set_mesh(mesh()), nn.logical_axis_rules(RULES):
        return raises(lambda: Stack(("mlp", "heads")))


def nnx_indivisible():
    return nnx.state(_abstract_stack(("embed", "mlp"), dout=6)), mesh(), RULES


def nnx_indivisible_without_lens():
    with jax.set_mesh(mesh()), nn.logical_axis_rules(RULES):
        return raises(lambda: Stack(("embed", "mlp"), dout=6))


OWN = (("mlp", "data"),)


def nnx_rules_disagree():
    stack = _abstract_stack(("mlp", "embed"), sharding_rules=OWN)
    return nnx.state(stack), mesh(), RULES


def nnx_rules_disagree_without_lens():
    with jax.set_mesh(mesh()), nn.logical_axis_rules(RULES):
        return raises(lambda: Stack(("mlp", "embed"), sharding_rules=OWN))


FALLBACK = (("embed", None), ("mlp", "model"), ("mlp", "data"))  # Linen's fallback


def nnx_two_rules_for_one_name():
    return nnx.state(_abstract_stack(("mlp", "embed"))), mesh(), FALLBACK


def nnx_two_rules_for_one_name_without_lens():
    with jax.set_mesh(mesh()), nn.logical_axis_rules(FALLBACK):
        kernel = Stack(("mlp", "embed")).layers[0].linear.kernel.value
        linen = nn.logical_to_mesh_axes(("embed", "mlp"))
    return f"silently: lens.nnx lays it out {kernel.sharding.spec}, lens.nn {linen}"


def nnx_no_mesh():
    return nnx.state(_abstract_stack(("mlp", "embed"))), None, RULES


def nnx_no_mesh_without_lens():
    with nn.logical_axis_rules(RULES):
        return raises(lambda: Stack(("mlp", "embed")))


def nnx_placement():
    with nnx.use_eager_sharding(False):  # created outside the mesh: one device
        return Stack(("mlp", "embed")), mesh(), RULES


def nnx_placement_without_lens():
    kernel = nnx_placement()[0].layers[1].linear.kernel.value
    return f"runs; all of it on devices {sorted(d.id for d in kernel.devices())}"


# -- abstract targets and placed arrays (any framework)


def _target() -> dict[str, Any]:
    m = mesh()
    table = NamedSharding(m, P("model", None))
    return {
        "params": {
            "embed": jax.ShapeDtypeStruct((64, 16), jnp.float32, sharding=table),
            "head": {"kernel": jax.ShapeDtypeStruct((16, 8), jnp.float32)},
        }
    }


def jax_dropped_sharding():
    return _target(), mesh(), ()


def jax_dropped_sharding_without_lens():
    s = _target()["params"]["head"]["kernel"].sharding
    return f"runs; a restore gets sharding={s}: whole, on one device"


def _indivisible_target() -> dict[str, Any]:
    s = NamedSharding(mesh(), P("model"))
    return {"params": {"embed": jax.ShapeDtypeStruct((30, 8), jnp.float32, sharding=s)}}


def jax_indivisible():
    return _indivisible_target(), None, ()


def jax_indivisible_without_lens():
    s = _indivisible_target()["params"]["embed"].sharding
    return raises(lambda: jax.jit(lambda: jnp.zeros((30, 8)), out_shardings=s)())


def jax_other_mesh():
    small = jax.make_mesh((4,), ("model",), devices=jax.devices()[:4])
    kernel = np.zeros((16, 32), np.float32)
    kernel = jax.device_put(kernel, NamedSharding(small, P(None, "model")))
    bias = jax.device_put(np.zeros(32, np.float32), NamedSharding(mesh(), P("model")))
    return {"params": {"Dense_0": {"kernel": kernel, "bias": bias}}}, mesh(), ()


def jax_other_mesh_without_lens():
    params = jax_other_mesh()[0]["params"]["Dense_0"]
    return raises(lambda: jax.jit(jnp.add)(params["kernel"], params["bias"]))


def _c(name, framework, kind, path, module, what, build, without_lens) -> Case:
    return Case(name, framework, kind, path, module, what, build, without_lens)


CASES: list[Case] = [
    _c("logical name without a rule (a typo in the rules)", "nn", "no-rule",
       "params/Dense_0/kernel", "/Dense_0", "mlp",
       nn_no_rule, nn_no_rule_without_lens),
    _c("two logical names on one mesh axis (silent rule conflict)", "nn",
       "axis-conflict", "params/query/kernel", "/query", "model",
       nn_conflict, nn_conflict_without_lens),
    _c("dimension not divisible by its mesh axis", "nn", "indivisible",
       "params/Dense_0/kernel", "/Dense_0", "model",
       nn_indivisible, nn_indivisible_without_lens),
    _c("a rule maps to a mesh axis the mesh lacks", "nn", "unknown-axis",
       "params/Dense_0/kernel", "/Dense_0", "tensor",
       nn_rule_to_missing_axis, nn_rule_to_missing_axis_without_lens),
    _c("logical names given to nn.with_partitioning (mesh axes)", "nn",
       "unknown-axis", "params/kernel", "/", "embed",
       nn_logical_names_as_mesh_axes, nn_logical_names_as_mesh_axes_without_lens),
    _c("a bias given the kernel's two names", "nn", "rank",
       "params/bias", "/", "",
       nn_rank, nn_rank_without_lens),
    _c("one logical name on two dimensions", "nn", "duplicate-name",
       "params/Dense_1/kernel", "/Dense_1", "embed",
       nn_duplicate_name, nn_duplicate_name_without_lens),
    _c("initialised without out_shardings (placed, not laid out)", "nn",
       "placement", "params/Dense_0/kernel", "/Dense_0", "",
       nn_placement, nn_placement_without_lens),
    _c("logical name without a rule", "nnx", "no-rule",
       "/layers/1/linear/kernel", "/layers/1/linear", "hidden",
       nnx_no_rule, nnx_no_rule_without_lens),
    _c("two logical names on one mesh axis", "nnx", "axis-conflict",
       "/layers/1/linear/kernel", "/layers/1/linear", "model",
       nnx_conflict, nnx_conflict_without_lens),
    _c("dimension not divisible by its mesh axis", "nnx", "indivisible",
       "/layers/1/linear/kernel", "/layers/1/linear", "model",
       nnx_indivisible, nnx_indivisible_without_lens),
    _c("a variable's sharding_rules disagree with the rules in effect", "nnx",
       "rules-disagree", "/layers/1/linear/kernel", "/layers/1/linear", "",
       nnx_rules_disagree, nnx_rules_disagree_without_lens),
    _c("a name with two rules (lens.nn takes the first free, nnx the last)", "nnx",
       "rules-disagree", "/layers/0/linear/kernel", "/layers/0/linear", "mlp",
       nnx_two_rules_for_one_name, nnx_two_rules_for_one_name_without_lens),
    _c("axis names but no mesh (flax#5124)", "nnx", "no-mesh",
       "/layers/0/linear/kernel", "/layers/0/linear", "",
       nnx_no_mesh, nnx_no_mesh_without_lens),
    _c("created outside the mesh (placed, not laid out)", "nnx", "placement",
       "/layers/1/linear/kernel", "/layers/1/linear", "",
       nnx_placement, nnx_placement_without_lens),
    _c("restore target with a sharding dropped (flax#5110)", "jax", "no-sharding",
       "params/head/kernel", "/head", "",
       jax_dropped_sharding, jax_dropped_sharding_without_lens),
    _c("abstract array with an indivisible sharding", "jax", "indivisible",
       "params/embed", "/", "model",
       jax_indivisible, jax_indivisible_without_lens),
    _c("an array placed on another mesh", "jax", "not-on-mesh",
       "params/Dense_0/kernel", "/Dense_0", "",
       jax_other_mesh, jax_other_mesh_without_lens),
]  # fmt: skip
