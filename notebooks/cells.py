"""Cell sources of the tour notebooks (``build.py`` turns them into .ipynb files)."""

SETUP = """
import os
# 8 host devices for the sharding examples when JAX runs on the CPU; a GPU or TPU
# is used as JAX finds it (the tests force the CPU themselves)
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax, jax.numpy as jnp, numpy as np, optax
import lens
from lens import nn
%load_ext lens
print("JAX backend:", jax.default_backend(), "with", jax.device_count(), "devices")
"""

TOUR = [
    ("md", """
# A tour of lens

lens is a Jupyter-first neural-network library on JAX. Models are `lens.nn` modules
(the Flax Linen API: porting is an import change), variables are plain nested dicts,
and every object you meet displays usefully. This tour defines a model, looks at it
cell by cell, trains it a few steps with optax and looks at what changed.
"""),
    ("code", SETUP),
    ("md", "## A model\n\nA small classifier. `setup` names the submodules after their attributes."),
    ("code", """
class Classifier(nn.Module):
    hidden: int = 16
    classes: int = 3

    def setup(self):
        self.encoder = nn.Dense(self.hidden)
        self.norm = nn.BatchNorm()
        self.drop = nn.Dropout(0.1)
        self.head = nn.Dense(self.classes)

    def __call__(self, x, train: bool = False):
        h = nn.relu(self.norm(self.encoder(x), use_running_average=not train))
        return self.head(self.drop(h, deterministic=not train))

model = Classifier()
model
"""),
    ("md", "An unbound module is a description: it has attributes but no variables yet.\n\n## Initialise\n\n`init` returns a plain dict of collections. With `%load_ext lens` it displays as a variable collection: grouped by collection and module, with shapes, sizes and statistics."),
    ("code", """
x = jax.random.normal(jax.random.key(1), (32, 4))
labels = jnp.argmax(x[:, :3], axis=-1)
variables = model.init(jax.random.key(0), x)
variables
"""),
    ("code", "print(model.tabulate(jax.random.key(0), x, console_kwargs={'width': 120}))"),
    ("md", "## Bind and explore\n\n`bind` gives a bound module with an unlimited lifetime: the notebook workflow. Its submodules are bound too."),
    ("code", """
bound = model.bind(variables)
bound
"""),
    ("code", "bound.encoder"),
    ("code", "bound.encoder.variables['params']['kernel'].shape"),
    ("md", "## Apply"),
    ("code", """
logits = model.apply(variables, x)
logits.shape, logits.dtype
"""),
    ("md", "## Train a few steps with optax\n\nThe step is a pure function of `(params, batch_stats, opt_state, batch)`."),
    ("code", """
tx = optax.adam(1e-2)
params, stats = variables["params"], variables["batch_stats"]
opt_state = tx.init(params)

@jax.jit
def step(params, stats, opt_state, x, labels, key):
    def loss_fn(params):
        logits, upd = model.apply({"params": params, "batch_stats": stats}, x, train=True,
                                  rngs={"dropout": key}, mutable=["batch_stats"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), upd["batch_stats"]
    (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), stats, opt_state, loss

losses = []
for i in range(20):
    params, stats, opt_state, loss = step(params, stats, opt_state, x, labels, jax.random.key(i))
    losses.append(float(loss))
# Compare with a tolerance, not by printing digits: the last bits of a float differ
# between CPUs, and the stored output must hold on every machine.
print("loss fell by more than half:", losses[-1] < losses[0] / 2)
"""),
    ("md", "## What changed\n\n`lens.diff` shows which leaves changed and by how much."),
    ("code", """
trained = {"params": params, "batch_stats": stats}
lens.diff(variables, trained)
"""),
    ("md", "## Explore interactively\n\n`lens.explore` browses collections and modules: pick a leaf to see its statistics and a histogram, or search by path."),
    ("code", "lens.explore(model, trained)"),
]

LIFTING = [
    ("md", """
# Lifted transformations, example by example

The lifting design note's examples, run with lens. After each, the *pack trace*
shows how `pack` split the state into groups, lifted it into the JAX transform and
committed it back. In JupyterLab with the lens extension the trace is interactive;
elsewhere the static diagram below it shows the same stages.
"""),
    ("code", SETUP + "from jax import random"),
    ("code", """
class MLP(nn.Module):
    @nn.compact
    def __call__(self, xs):
        h = nn.Dense(4, name='hidden')(xs)
        h = nn.relu(h)
        return nn.Dense(1, name='out')(h)

xs = jnp.ones((3, 4))
"""),
    ("md", "## Naive `jax.vmap` fails\n\nA module is not an array, and its parameters do not exist yet: JAX cannot map over it."),
    ("code", """
class NaiveVmapMLP(nn.Module):
    @nn.compact
    def __call__(self, xs):
        mlp = MLP()
        return jax.vmap(lambda mlp, x: mlp(x))(mlp, xs)  # fails

try:
    NaiveVmapMLP().init(random.key(0), xs)
except TypeError as e:
    print(type(e).__name__, "-", str(e).splitlines()[0][:80])
"""),
    ("md", "## Manual functionalization"),
    ("code", """
class ManualVmapMLP(nn.Module):
    @nn.compact
    def __call__(self, xs):
        mlp = MLP(parent=None)
        init_fn = lambda rng, xs: jax.vmap(mlp.init, in_axes=0)(random.split(rng, xs.shape[0]), xs)['params']
        apply_fn = jax.vmap(mlp.apply, in_axes=0)
        mlp_params = self.param('mlp', init_fn, xs)
        return apply_fn({'params': mlp_params}, xs)

variables = ManualVmapMLP().init(random.key(0), xs)
jax.tree_util.tree_map(jnp.shape, variables['params'])
"""),
    ("md", "## `nn.vmap`: parameters mapped, a different key per member"),
    ("code", """
class LinenVmapMLP(nn.Module):
    @nn.compact
    def __call__(self, xs):
        VmapMLP = nn.vmap(MLP, variable_axes={'params': 0}, split_rngs={'params': True}, in_axes=0)
        return VmapMLP(name='mlp')(xs)

variables = LinenVmapMLP().init(random.key(0), xs)
jax.tree_util.tree_map(jnp.shape, variables['params'])
"""),
    ("code", "lens.show_lifting(LinenVmapMLP(), xs)"),
    ("md", "## With BatchNorm: `batch_stats` mapped too, and `train=` passed as a keyword\n\nFlax drops keyword arguments through lifted transforms; lens passes them."),
    ("code", """
class StatefulMLP(nn.Module):
    @nn.compact
    def __call__(self, x, *, train):
        h = nn.Dense(4, name='hidden')(x)
        h = nn.BatchNorm(axis_name='batch')(h, use_running_average=not train)
        h = nn.relu(h)
        return nn.Dense(1, name='out')(h)

class LinenStatefulVmapMLP(nn.Module):
    @nn.compact
    def __call__(self, xs, *, train):
        VmapMLP = nn.vmap(StatefulMLP, variable_axes={'params': 0, 'batch_stats': 0},
                          split_rngs={'params': True}, in_axes=0, axis_name='batch')
        return VmapMLP(name='mlp')(xs, train=train)

variables = LinenStatefulVmapMLP().init(random.key(0), xs, train=False)
jax.tree_util.tree_map(jnp.shape, variables)
"""),
    ("code", "lens.show_lifting(LinenStatefulVmapMLP(), xs, train=False)"),
    ("md", "## `pack` directly: `lift_transpose`\n\nThe design note's minimal use of `pack`: transpose every matrix of `params` on the way in."),
    ("code", """
from lens.core import lift, init, apply, nn as core_nn

def lift_transpose(fn, target='params', variables=True, rngs=True):
    def wrapper(scope_fn, repack_fn, variable_groups, rng_groups, *args):
        target, rest = variable_groups
        def trans(x):
            if x.ndim == 2:
                return x.T
            return x
        target = jax.tree_util.tree_map(trans, target)
        variable_groups = (target, rest)
        scope = scope_fn(variable_groups, rng_groups)
        y = fn(scope, *args)
        out_variables = repack_fn(scope)
        return y, out_variables
    return lift.pack(wrapper, in_variable_filters=(target, variables),
                     out_variable_filters=(variables,), rng_filters=(rngs,), name='lift_transpose')

x = jnp.ones((3, 2))
y, params = init(lift_transpose(core_nn.dense))(random.PRNGKey(0), x, 4)
jax.tree_util.tree_map(jnp.shape, params)
"""),
    ("code", """
with lens.trace() as trace:
    apply(lift_transpose(core_nn.dense))({"params": {"kernel": jnp.ones((4, 2)), "bias": jnp.zeros(4)}}, x, 4)
trace
"""),
]

AXES = [
    ("md", """
# Scan and vmap: where each collection goes

Lifted transforms decide, per collection, how variables cross the boundary:
mapped along an axis, broadcast (shared), or carried from step to step. Rng streams
are split (a key per step) or shared.
"""),
    ("code", SETUP),
    ("md", "## Scan over layers: parameters stacked on a new axis"),
    ("code", """
class Block(nn.Module):
    @nn.compact
    def __call__(self, c, _):
        return nn.tanh(nn.Dense(8)(c)), None

class Stack(nn.Module):
    layers: int = 6
    @nn.compact
    def __call__(self, x):
        Scanned = nn.scan(Block, variable_axes={"params": 0}, split_rngs={"params": True}, length=self.layers)
        return Scanned(name="blocks")(x, None)[0]

x = jnp.ones((2, 8))
variables = Stack().init(jax.random.key(0), x)
variables
"""),
    ("md", """
Each stacked leaf also gets a small picture over its layers: the RMS of each layer's
slice, one bar per layer (a labelled bar chart in the notebook, block characters in
text), scaled between the smallest and the largest value so real variation shows.
A layer that blew up, or went NaN, stands out by its index. `lens.diff` draws the
same picture for *how much* each layer changed:
"""),
    ("code", """
blown = jax.tree.map(lambda a: a, variables)
kernel = blown["params"]["blocks"]["Dense_0"]["kernel"]
blown["params"]["blocks"]["Dense_0"]["kernel"] = kernel.at[3].multiply(50.0)
lens.diff(variables, blown)
"""),
    ("md", """
The pack picture of the scan: one box per transform, one lane per variable (grouped by
the filter group it fell in) with its outer value, the scanned axis underlined and its
length, its inner value, and what came back; then the rng streams (split into one key
per layer here). The first line is the summary, also the text form.
"""),
    ("code", "lens.show_lifting(Stack(), x)"),
    ("md", "## Broadcast vs carry\n\n`variable_broadcast` collections are shared by every step (read-only in the loop); `variable_carry` collections go from one step to the next. lens lets carried variables be created inside the body."),
    ("code", """
class Counter(nn.Module):
    @nn.compact
    def __call__(self, c, x):
        steps = self.variable("counter", "steps", lambda: jnp.zeros((), jnp.int32))
        steps.value += 1
        scale = self.param("scale", nn.initializers.ones, ())
        return c + scale * x, c

class Loop(nn.Module):
    @nn.compact
    def __call__(self, xs):
        S = nn.scan(Counter, variable_broadcast="params", variable_carry="counter",
                    split_rngs={"params": False})
        return S()(jnp.zeros(()), xs)

xs = jnp.arange(5.0)
(c, ys), variables = Loop().init_with_output(jax.random.key(0), xs)
print("carry", float(c), "steps counted", int(variables["counter"]["ScanCounter_0"]["steps"]))
variables
"""),
    ("code", "lens.show_lifting(Loop(), xs)"),
    ("md", "## vmap ensembles: mapped, or shared"),
    ("code", """
class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(4)(x)))

class Ensemble(nn.Module):
    shared: bool = False
    @nn.compact
    def __call__(self, x):
        axes = {"params": None} if self.shared else {"params": 0}
        V = nn.vmap(MLP, variable_axes=axes, split_rngs={"params": not self.shared},
                    in_axes=None, axis_size=5)
        return V(name="members")(x)

x = jnp.ones((2, 3))
jax.tree.map(jnp.shape, Ensemble().init(jax.random.key(0), x)), jax.tree.map(jnp.shape, Ensemble(shared=True).init(jax.random.key(0), x))
"""),
    ("code", "lens.show_lifting(Ensemble(), x)"),
    ("md", "## Split vs shared rngs\n\nWith `split_rngs={'dropout': True}` every member draws its own mask."),
    ("code", """
class Noisy(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dropout(0.5, deterministic=False)(x)

for split in (True, False):
    V = nn.vmap(Noisy, variable_axes={}, split_rngs={"dropout": split}, in_axes=None, axis_size=3)
    masks = V().apply({}, jnp.ones(6), rngs={"dropout": jax.random.key(0)})
    print(f"split={split}:", (masks > 0).astype(int).tolist())
"""),
    ("md", """
## Watch a scanned stack train

`lens.display.live` draws a loop while it runs: the curves it logs, progress, the
first compile of the watched step ("compiling train_step: 3 s"), and per layer the
RMS of parameters and gradients, with a layer-by-step heatmap for each stacked leaf
group, so a layer that dies or blows up shows while it happens. Values stay on the
device until a background thread fetches them, a few times a second: the loop never
waits. The output updates in place; when the `with` block ends, the final picture
stays in the notebook.
"""),
    ("code", """
from lens.training import train_state

model = Stack(layers=6)
xs, held_out = jax.random.normal(jax.random.key(1), (2, 64, 8))
ys = jnp.sin(2.0 * xs)
state = train_state.TrainState.create(
    apply_fn=model.apply, params=model.init(jax.random.key(0), xs)["params"], tx=optax.adam(3e-2))

@jax.jit
def train_step(state, x, y):
    def loss_fn(params):
        return jnp.mean((state.apply_fn({"params": params}, x) - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss, grads

with lens.display.live("scan stack", total=48, layer_every=4) as live:
    step_fn = live.watch(train_step, "train_step")
    for step in range(48):
        state, loss, grads = step_fn(state, xs, ys)
        live.log(step, loss=loss)
        if step % 8 == 7:
            error = model.apply({"params": state.params}, held_out) - jnp.sin(2.0 * held_out)
            live.log(step, split="eval", loss=jnp.mean(error**2))
        live.layers(step, state.params, grads)
"""),
]

METADATA = [
    ("md", """
# Axis metadata and sharding

Parameters can carry per-axis metadata in boxes (`nn.Partitioned`). Modules see
plain arrays; the boxes survive `vmap`/`scan` (which add their axis name), optax,
and serialization, and turn into real JAX shardings on a device mesh. This notebook
uses 8 virtual CPU devices.
"""),
    ("code", "import os\n# the sharding examples lay arrays out on 8 devices: 8 CPU host devices here,\n# whatever accelerator this machine has\nos.environ.setdefault(\"JAX_PLATFORMS\", \"cpu\")\n" + SETUP.lstrip("\n") + "from jax.sharding import PartitionSpec, NamedSharding\nprint(jax.device_count(), 'devices')"),
    ("md", "## The design note's example"),
    ("code", """
partitioned_dense = nn.Dense(8, kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), (None, "data")))
variables = partitioned_dense.init(jax.random.key(0), jnp.ones((4,)))
jax.tree.map(np.shape, variables)
"""),
    ("code", """
def to_sharding_spec(x):
    if isinstance(x, nn.Partitioned):
        return PartitionSpec(*x.names)
    return PartitionSpec()

jax.tree.map(to_sharding_spec, variables, is_leaf=lambda x: isinstance(x, nn.Partitioned))
"""),
    ("md", "## Logical axis names and rules\n\nAnnotate with logical names; rules map them to mesh axes."),
    ("code", """
class MLPBlock(nn.Module):
    @nn.compact
    def __call__(self, x):
        lp = nn.with_logical_partitioning
        h = nn.Dense(32, kernel_init=lp(nn.initializers.lecun_normal(), ("embed", "mlp")),
                     bias_init=lp(nn.initializers.zeros, ("mlp",)))(x)
        h = nn.with_logical_constraint(nn.gelu(h), ("batch", "mlp"))
        return nn.Dense(16, kernel_init=lp(nn.initializers.lecun_normal(), ("mlp", "embed")))(h)

rules = [("batch", "data"), ("embed", None), ("mlp", "model")]
auto = jax.sharding.AxisType.Auto
mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(auto, auto))
x = jnp.ones((8, 16))
abstract = jax.eval_shape(MLPBlock().init, jax.random.key(0), x)
nn.get_partition_spec(abstract)
"""),
    ("code", """
with jax.set_mesh(mesh), nn.logical_axis_rules(rules):
    shardings = nn.get_sharding(abstract, mesh)
    variables = jax.jit(MLPBlock().init, out_shardings=shardings)(jax.random.key(0), x)
variables
"""),
    ("code", "variables['params']['Dense_0']['kernel'].value.sharding.spec"),
    ("md", "## Optimizer state inherits the boxes"),
    ("code", """
tx = optax.adam(1e-3)
opt_state = tx.init(variables["params"])
nn.get_partition_spec(opt_state[0].mu)
"""),
    ("md", "## Scan over layers adds a named axis"),
    ("code", """
class Layer(nn.Module):
    @nn.compact
    def __call__(self, x, _):
        k = self.param("kernel", nn.with_partitioning(nn.initializers.lecun_normal(), ("embed", "mlp")), (16, 16))
        return x @ k, None

class Deep(nn.Module):
    @nn.compact
    def __call__(self, x):
        S = nn.scan(Layer, variable_axes={"params": 0}, split_rngs={"params": True}, length=8,
                    metadata_params={nn.PARTITION_NAME: "layers"})
        return S()(x, None)[0]

deep = Deep().init(jax.random.key(0), jnp.ones((2, 16)))
deep["params"]["ScanLayer_0"]["kernel"]
"""),
]

LIFECYCLE = [
    ("md", """
# The Module lifecycle

The lifecycle design note's examples: setup vs compact, init as a special case of
apply, cloning, bind, lazy setup, naming under control flow, and closures.
"""),
    ("code", SETUP + "from jax import random"),
    ("code", """
class MLP(nn.Module):
    hidden_size: int
    out_size: int

    def setup(self):
        self.hidden = nn.Dense(self.hidden_size)
        self.out = nn.Dense(self.out_size)

    def __call__(self, x):
        a = self.hidden(x)
        h = nn.relu(a)
        return self.out(h)

mlp = MLP(hidden_size=5, out_size=3)
x = jax.numpy.ones((1, 2))
variables = mlp.init(random.key(0), x)
y = mlp.apply(variables, x)
y.shape
"""),
    ("md", "`init` is `apply` with no variables, a `params` stream and every collection mutable:"),
    ("code", """
_, variables2 = mlp.apply({}, x, rngs={"params": random.key(0)}, mutable=True)
jax.tree_util.tree_all(jax.tree.map(jnp.array_equal, variables, variables2))
"""),
    ("md", "## Compact modules"),
    ("code", """
class CompactScaledMLP(nn.Module):
    hidden_size: int
    out_size: int

    @nn.compact
    def __call__(self, x):
        scale = self.param("scale", nn.initializers.ones_init(), x.shape[-1:])
        x *= scale[None]
        a = nn.Dense(self.hidden_size)(x)
        h = nn.relu(a)
        return nn.Dense(self.out_size)(h)

CompactScaledMLP(4, 5).init(random.key(0), jnp.ones((3, 2)))
"""),
    ("md", "## Naming under control flow\n\nAuto-names follow construction order. Construct before branching:"),
    ("code", """
class CorrectModule(nn.Module):
    @nn.compact
    def __call__(self, x, mode):
        encoder = nn.Dense(8)
        decoder = nn.Dense(4)
        if mode == "encode":
            return encoder(x)
        elif mode == "decode":
            return decoder(x)

def init_fn(mdl):
    x = jax.numpy.ones((3, 2))
    z = mdl(x, "encode")
    return mdl(z, "decode")

vars = nn.init(init_fn, CorrectModule())(random.key(0))
jax.tree.map(jnp.shape, vars)
"""),
    ("md", "## Unbound, bound, lazy setup"),
    ("code", """
class TopLevelAccess(nn.Module):
    def setup(self):
        self.foo = nn.Dense(2)

mdl = TopLevelAccess()
print("unbound has foo:", hasattr(mdl, "foo"))
bound = mdl.bind({"params": {}})
print("bound has foo:", hasattr(bound, "foo"))
"""),
    ("code", "mlp.bind(variables)"),
    ("code", "mlp.clone(out_size=7)"),
    ("md", "## Beyond the note: `declare()` makes submodules inspectable unbound"),
    ("code", """
class AutoEncoder(nn.Module):
    def declare(self):
        self.encoder = nn.Dense(2)
        self.decoder = nn.Dense(4)

    def __call__(self, x):
        return self.decoder(self.encoder(x))

ae = AutoEncoder()
variables = ae.init(random.key(0), jnp.ones((1, 4)))
z = jnp.ones((1, 2))
ae.decoder.apply({"params": variables["params"]["decoder"]}, z).shape
"""),
    ("md", "## Closures and the `Partial` trick\n\nA closure hides the module from the transform, and lens says so; a pytree `Partial` passes it in the open."),
    ("code", """
from collections.abc import Callable, Iterable
from typing import Any
from lens import struct

class ClosureFoo(nn.Module):
    @nn.compact
    def __call__(self, x):
        dense = nn.Dense(x.shape[-1])
        fn = lambda x: dense(x) + 1
        vmap_inner = nn.vmap(ClosureFoo.inner, in_axes=0, variable_axes={"params": 0}, split_rngs={"params": True})
        return vmap_inner(self, x, fn)

    def inner(self, x, fn):
        for i in range(3):
            x = fn(x)
        return x

try:
    ClosureFoo().init(random.key(0), jnp.ones((3, 2)))
except lens.errors.JaxTransformError as e:
    print(e)
"""),
    ("code", """
class Partial(struct.PyTreeNode):
    fn: Callable = struct.field(pytree_node=False)
    args: Iterable[Any]

    def __call__(self, *args, **kwargs):
        return self.fn(*(tuple(self.args) + args), **kwargs)

class Foo(nn.Module):
    @nn.compact
    def __call__(self, x):
        dense = nn.Dense(x.shape[-1])
        fn = lambda mdl, x: mdl(x) + 1
        vmap_inner = nn.vmap(Foo.inner, in_axes=0, variable_axes={"params": 0}, split_rngs={"params": True})
        return vmap_inner(self, x, Partial(fn, [dense]))

    def inner(self, x, fn):
        for i in range(3):
            x = fn(x)
        return x

vars = Foo().init(random.key(0), jnp.ones((3, 2)))
vars["params"]["Dense_0"]["kernel"].shape
"""),
]

NNX = [
    ("md", """
# Eager modules: `lens.nnx`

`lens.nnx` is flax.nnx's API on lens: modules are ordinary Python objects that
hold their variables, and `nnx.jit`, `nnx.grad`, `nnx.vmap` and `nnx.scan` take
them as JAX transforms take pytrees. This notebook trains a small CNN, looks at
its state, builds a vmap ensemble and runs a scanned stack of layers.
"""),
    ("code", SETUP + "from lens import nnx\n"),
    ("md", """
## Data

8x8 images with one bright 3x3 patch; the label is the quadrant the patch is in.
`make_data` is jitted, so it compiles once per `n`: run eagerly, each of its two
dozen ops would compile on its own, and again for every new `n`.
"""),
    ("code", """
from functools import partial

@partial(jax.jit, static_argnames="n")
def make_data(key, n=256):
    kq, kx, ky, kn = jax.random.split(key, 4)
    labels = jax.random.randint(kq, (n,), 0, 4)
    row = 4 * (labels // 2) + jax.random.randint(kx, (n,), 0, 2)
    col = 4 * (labels % 2) + jax.random.randint(ky, (n,), 0, 2)
    ii, jj = jnp.arange(8)[None, :, None], jnp.arange(8)[None, None, :]
    patch = ((ii >= row[:, None, None]) & (ii < row[:, None, None] + 3)
             & (jj >= col[:, None, None]) & (jj < col[:, None, None] + 3))
    images = patch.astype(jnp.float32) + 0.1 * jax.random.normal(kn, (n, 8, 8))
    return images[..., None], labels

images, labels = make_data(jax.random.key(0))
images.shape, labels.shape
"""),
    ("md", "## A CNN\n\nLayers are built eagerly from an `nnx.Rngs`: the model holds its parameters as soon as it exists."),
    ("code", """
class CNN(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=rngs)
        self.bn1 = nnx.BatchNorm(8, rngs=rngs)
        self.conv2 = nnx.Conv(8, 16, kernel_size=(3, 3), rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)
        self.head = nnx.Linear(2 * 2 * 16, 4, rngs=rngs)

    def features(self, x):
        x = nnx.avg_pool(nnx.relu(self.bn1(self.conv1(x))), (2, 2), strides=(2, 2))
        x = nnx.avg_pool(nnx.relu(self.conv2(x)), (2, 2), strides=(2, 2))
        return x.reshape(x.shape[0], -1)

    def __call__(self, x):
        return self.head(self.dropout(self.features(x)))

model = CNN(nnx.Rngs(0))
model
"""),
    ("md", "The module displays its state grouped by variable type (`Param`, `BatchStat`, the dropout stream's `RngState`). `nnx.state` gives the same as a State; filters pick a part."),
    ("code", "nnx.state(model, nnx.BatchStat)"),
    ("md", "`nnx.display` (flax.nnx's name, so Flax's guides run as written) shows anything with lens's richest view: here the dropout layer, its rate and its RNG stream."),
    ("code", "nnx.display(model.dropout)"),
    ("md", "## Train with `nnx.jit` and `nnx.Optimizer`\n\nThe step mutates the model, the optimizer and the metrics in place; `nnx.jit` carries the updates out. `lens.display.live` shows the loop while it runs (curves, per-layer RMS, the first compile) and leaves the final picture in the notebook."),
    ("code", """
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"))
before = nnx.clone(nnx.state(model))  # nnx.state shares the live variables

@nnx.jit
def train_step(model, optimizer, metrics, x, y):
    def loss_fn(model):
        logits = model(x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits
    (loss, logits), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
    metrics.update(loss=loss, logits=logits, labels=y)
    optimizer.update(model, grads)
    return loss, grads

model.train()
accuracies = []
# a live view: loss per step, accuracy per epoch, per-layer RMS, the first compile
with lens.display.live("CNN", total=24, layer_every=2) as live:
    step_fn = live.watch(train_step, "train_step")
    for epoch in range(3):
        for i in range(0, 256, 32):
            step = epoch * 8 + i // 32
            loss, grads = step_fn(model, optimizer, metrics, images[i:i + 32], labels[i:i + 32])
            live.log(step, loss=loss)
            live.layers(step, nnx.state(model, nnx.Param), grads)
        accuracies.append(float(metrics.compute()["accuracy"]))
        live.log(step, accuracy=accuracies[-1])
        metrics.reset()
# a float's last digits differ between CPUs: print what holds everywhere
print("learned (last epoch's accuracy above 90%):", accuracies[-1] > 0.9)
"""),
    ("md", "## What training changed\n\n`lens.diff` takes States and modules: every parameter moved, and the batch statistics too."),
    ("code", "lens.diff(before, model)"),
    ("md", "## Evaluate through a view\n\n`nnx.view` is a copy with `deterministic=True` and running averages on; its variables are the model's own."),
    ("code", """
evaluation = nnx.view(model, deterministic=True, use_running_average=True)
test_images, test_labels = make_data(jax.random.key(1), 128)
accuracy = jnp.mean(jnp.argmax(evaluation(test_images), -1) == test_labels)
print("test accuracy above 80%:", bool(accuracy > 0.8))
print("shares the trained kernel:", evaluation.conv1.kernel is model.conv1.kernel)
"""),
    ("md", "## Capture intermediates\n\n`nnx.capture` returns what modules `sow` during a call, as a State; with `method_outputs` it records every method's output (here `features` and each layer's `__call__`)."),
    ("code", """
_, intermediates = nnx.capture(
    evaluation, nnx.Intermediate, method_outputs=nnx.Intermediate
)(test_images[:4])
intermediates
"""),
    ("md", "## A vmap ensemble\n\n`nnx.split_rngs` gives each member its own keys and `nnx.vmap` stacks the members' parameters on a new leading axis."),
    ("code", """
class MLP(nnx.Module):
    def __init__(self, rngs):
        self.hidden = nnx.Linear(64, 32, rngs=rngs)
        self.out = nnx.Linear(32, 4, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))

@nnx.split_rngs(splits=5)
@nnx.vmap(in_axes=0, out_axes=0)
def make_ensemble(rngs):
    return MLP(rngs)

ensemble = make_ensemble(nnx.Rngs(1))
ensemble
"""),
    ("md", "`lens.trace()` records lens.nnx transforms as it records Linen's: each object argument is a lifted scope, each variable type a collection. Here the ensemble's constructor: the rng streams go in split five ways, the members' parameters come out stacked."),
    ("code", """
with lens.trace() as trace:
    make_ensemble(nnx.Rngs(1))
trace
"""),
    ("code", """
@nnx.vmap(in_axes=(0, None))
def predict(member, x):
    return member(x)

flat = test_images.reshape(128, -1)
predict(ensemble, flat).shape
"""),
    ("md", "## A scanned stack of layers\n\nThe layer-stack pattern: make the stack with `vmap`, run it with `scan` over the stacked axis (one trace for all the layers)."),
    ("code", """
class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(16, 16, rngs=rngs)
        self.norm = nnx.LayerNorm(16, rngs=rngs)

    def __call__(self, x):
        return x + nnx.relu(self.norm(self.linear(x)))

@nnx.split_rngs(splits=6)
@nnx.vmap(in_axes=0, out_axes=0)
def make_stack(rngs):
    return Block(rngs)

stack = make_stack(nnx.Rngs(2))

@nnx.jit
@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
def forward(x, block):
    return block(x)

y = forward(jnp.ones((3, 16)), stack)
y.shape, stack.linear.kernel.shape
"""),
    ("code", "stack"),
    ("md", "The pack picture of the scanned stack: the carry goes round the loop, each block's parameters are sliced per step (axis 0) and come back restacked."),
    ("code", """
with lens.trace() as trace:
    forward(jnp.ones((3, 16)), stack)
trace
"""),
]


NOTEBOOKS = {
    "01_tour": TOUR,
    "02_lifting": LIFTING,
    "03_scan_and_vmap_axes": AXES,
    "04_axis_metadata": METADATA,
    "05_module_lifecycle": LIFECYCLE,
    "06_nnx": NNX,
}
