"""A sharded lens train step that runs the same on one process or on several.

``tests/test_multiprocess.py`` runs it as 2 processes x 4 CPU devices and compares
what it writes with the same code run in the test process (1 process x 8 devices);
``docs/scaling.md`` shows a shorter version. One process of a run::

    XLA_FLAGS=--xla_force_host_platform_device_count=4 JAX_PLATFORMS=cpu \\
      python tests/multiprocess_worker.py --process-id 0 --num-processes 2 \\
      --coordinator localhost:12345 --out /tmp/run

(and the same with ``--process-id 1``). With ``--num-processes 1`` it runs alone,
without ``jax.distributed``. Every process writes ``{out}/result_{id}.npz``: the
losses, every parameter gathered to the host, the restored checkpoints, and the
text display of the sharded parameters.

The model code, the logical axis rules and the train step are the ones a single
process runs; only three things know about processes: ``jax.distributed``, each
process loading its own rows of the batch (:func:`local_rows`), and gathering the
parameters for the comparison (``process_allgather``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import lens
from lens import display, nn, nnx
from lens.training import checkpoints

# Logical axis names -> mesh axes: the same table a single-process run uses.
RULES = (("batch", "data"), ("embed", None), ("mlp", "model"))
MESH_SHAPE = (2, 4)  # ('data', 'model'): 8 devices, on 1 or 2 processes
RESTORE_MESH_SHAPE = (1, 8)  # the checkpoint comes back onto another layout
BATCH, FEATURES, HIDDEN, STEPS = 16, 8, 32, 3


def make_mesh(shape: tuple[int, int]) -> jax.sharding.Mesh:
    auto = jax.sharding.AxisType.Auto
    return jax.make_mesh(shape, ("data", "model"), axis_types=(auto, auto))


def global_batch() -> tuple[np.ndarray, np.ndarray]:
    """The whole batch; each process keeps only its own rows (load_batch)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, FEATURES)).astype(np.float32)
    y = np.tanh(x @ rng.normal(size=(FEATURES, FEATURES))).astype(np.float32)
    return x, y


def local_rows(sharding: NamedSharding, global_shape: tuple[int, ...]) -> slice:
    """The rows of a batch that this process's devices hold under ``sharding``."""
    rows = [
        idx[0].indices(global_shape[0])[:2]  # (start, stop) of each device's rows
        for idx in sharding.addressable_devices_indices_map(global_shape).values()
        if idx is not None
    ]
    return slice(min(r[0] for r in rows), max(r[1] for r in rows))


def load_batch(mesh: jax.sharding.Mesh) -> tuple[jax.Array, jax.Array]:
    """The global batch as arrays sharded over 'data', built from each process's
    own rows (a real input pipeline reads only these)."""
    sharding = NamedSharding(mesh, P("data"))
    x, y = global_batch()
    rows = local_rows(sharding, x.shape)
    return (
        jax.make_array_from_process_local_data(sharding, x[rows], x.shape),
        jax.make_array_from_process_local_data(sharding, y[rows], y.shape),
    )


# ----------------------------------------------------------------- lens.nn


class NNMLP(nn.Module):
    """Two Dense layers whose kernels carry logical axis names."""

    @nn.compact
    def __call__(self, x):
        init = nn.initializers.lecun_normal()
        h = nn.Dense(
            HIDDEN, kernel_init=nn.with_logical_partitioning(init, ("embed", "mlp"))
        )(x)
        h = nn.with_logical_constraint(nn.relu(h), ("batch", "mlp"))
        return nn.Dense(
            FEATURES, kernel_init=nn.with_logical_partitioning(init, ("mlp", "embed"))
        )(h)


def nn_abstract(mesh: jax.sharding.Mesh, x: Any) -> Any:
    """The parameters' shapes, each with the sharding its logical names give on
    ``mesh`` (call within ``nn.logical_axis_rules``); nothing is allocated."""
    init, key = NNMLP().init, jax.random.key(0)
    shardings = nn.get_sharding(jax.eval_shape(init, key, x), mesh)
    return jax.eval_shape(jax.jit(init, out_shardings=shardings), key, x)["params"]


def train_nn(mesh: jax.sharding.Mesh, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    model, tx = NNMLP(), optax.adam(1e-2)
    with jax.set_mesh(mesh), nn.logical_axis_rules(RULES):
        key = jax.random.key(0)
        abstract = jax.eval_shape(model.init, key, x)
        shardings = nn.get_sharding(abstract, mesh)
        params = jax.jit(model.init, out_shardings=shardings)(key, x)["params"]
        opt_state = jax.jit(tx.init)(params)

        @jax.jit
        def step(params, opt_state, x, y):
            def loss_fn(p):
                return jnp.mean((model.apply({"params": p}, x) - y) ** 2)

            loss, grads = jax.value_and_grad(loss_fn)(params)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        losses = []
        for _ in range(STEPS):
            params, opt_state, loss = step(params, opt_state, x, y)
            losses.append(float(loss))
    return {"params": params, "opt_state": opt_state, "losses": losses}


# ---------------------------------------------------------------- lens.nnx


class NNXMLP(nnx.Module):
    """The same two layers in lens.nnx, the names as ``out_sharding`` metadata."""

    def __init__(self, rngs: nnx.Rngs):
        init = nnx.initializers.lecun_normal()
        self.up = nnx.Linear(
            FEATURES,
            HIDDEN,
            kernel_init=nnx.with_partitioning(init, ("embed", "mlp")),
            rngs=rngs,
        )
        self.down = nnx.Linear(
            HIDDEN,
            FEATURES,
            kernel_init=nnx.with_partitioning(init, ("mlp", "embed")),
            rngs=rngs,
        )

    def __call__(self, x):
        return self.down(nnx.relu(self.up(x)))


@nnx.jit
def nnx_create() -> NNXMLP:
    """The model built inside jit, each parameter laid out by its metadata."""
    model = NNXMLP(nnx.Rngs(0))
    state = nnx.state(model)
    specs = nnx.get_partition_spec(state)
    nnx.update(model, jax.lax.with_sharding_constraint(state, specs))
    return model


def nnx_eager(mesh: jax.sharding.Mesh) -> Any:
    """The model built outside jit: each variable is put on its devices as it is
    created (nnx's eager sharding), on every process."""
    with jax.set_mesh(mesh), nnx.logical_axis_rules(RULES):
        return NNXMLP(nnx.Rngs(0))


def train_nnx(mesh: jax.sharding.Mesh, x: jax.Array, y: jax.Array) -> dict[str, Any]:
    with jax.set_mesh(mesh), nnx.logical_axis_rules(RULES):
        model = nnx_create()
        optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)

        @nnx.jit
        def step(model, optimizer, x, y):
            def loss_fn(m):
                return jnp.mean((m(x) - y) ** 2)

            loss, grads = nnx.value_and_grad(loss_fn)(model)
            optimizer.update(model, grads)
            return loss

        losses = [float(step(model, optimizer, x, y)) for _ in range(STEPS)]
    return {"model": model, "params": nnx.state(model, nnx.Param), "losses": losses}


# ------------------------------------------------------------- checkpoints


def checkpoint_round_trip(
    ckpt_dir: str, nn_params: Any, nnx_model: Any
) -> tuple[Any, Any, str]:
    """Saves both models' parameters from every process, then restores them onto
    a mesh of another shape: the target holds abstract arrays whose shardings say
    where each restored leaf goes. Returns both and the path saved to."""
    # an nnx State goes in as a pure dict (serialization holds plain containers)
    nnx_params = nnx.state(nnx_model, nnx.Param).to_pure_dict()
    saved = {"nn": nn_params, "nnx": nnx_params}
    path = checkpoints.save_checkpoint_multiprocess(ckpt_dir, saved, step=STEPS)
    checkpoints.save_checkpoint_multiprocess(
        ckpt_dir, nn_params, step=STEPS, prefix="checkpoint_nn_"
    )
    other = make_mesh(RESTORE_MESH_SHAPE)
    with jax.set_mesh(other), nn.logical_axis_rules(RULES):
        gdef, nnx_abstract = nnx.get_abstract_model(lambda: NNXMLP(nnx.Rngs(0)), other)
        target = {
            "nn": nn_abstract(other, jnp.zeros((BATCH, FEATURES))),
            "nnx": nnx_abstract.to_pure_dict(),
        }
    restored = checkpoints.restore_checkpoint(ckpt_dir, target=target)
    nnx.replace_by_pure_dict(nnx_abstract, restored["nnx"])
    return restored["nn"], nnx.merge(gdef, nnx_abstract), path


def restore_into_live_arrays(ckpt_dir: str, nn_params: Any) -> dict[str, Any]:
    """Restores into the trained arrays themselves (on 2 processes they span
    both): each leaf comes back with its target's sharding."""
    restored = checkpoints.restore_checkpoint(
        ckpt_dir, target=nn_params, prefix="checkpoint_nn_"
    )
    same = [
        getattr(r, "sharding", None) == t.sharding
        for r, t in zip(
            jax.tree.leaves(nn.unbox(restored)),
            jax.tree.leaves(nn.unbox(nn_params)),
            strict=True,
        )
    ]
    return {"restored": restored, "same_sharding": np.array(same)}


def fault_checks(ckpt_dir: str, x: jax.Array, params: Any) -> dict[str, str]:
    """What each process sees when a multi-process save goes wrong: the outcome
    of each case as ``'ErrorType: message'`` (or ``'ok'``)."""
    outcomes = {}

    def outcome(name: str, fn: Any) -> None:
        try:
            fn()
            outcomes[name] = "ok"
        except Exception as e:  # noqa: BLE001 - the test reads what was raised
            notes = " ".join(getattr(e, "__notes__", ()))
            outcomes[name] = f"{type(e).__name__}: {e} {notes}"

    # the single-process save refuses an array spread over processes
    outcome("single", lambda: checkpoints.save_checkpoint(ckpt_dir, {"x": x}, 99))
    # an outdated step fails on every process (agreed before process 0 writes)
    outcome(
        "outdated",
        lambda: checkpoints.save_checkpoint_multiprocess(ckpt_dir, params, STEPS),
    )
    # process 0 cannot write: the others hear of it instead of going on
    real = checkpoints.save_checkpoint
    if jax.process_index() == 0:

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise OSError("disk full (injected by the test)")

        checkpoints.save_checkpoint = broken
    try:
        outcome(
            "write_fails",
            lambda: checkpoints.save_checkpoint_multiprocess(
                ckpt_dir, params, STEPS + 1
            ),
        )
    finally:
        checkpoints.save_checkpoint = real
    # a slow process has looked for newer checkpoints before process 0 writes (a
    # host-local target: no gather collective to wait in), so it does not take
    # process 0's new file for a newer one
    if jax.process_index() == 1:
        time.sleep(1.0)
    outcome(
        "slow_peer",
        lambda: checkpoints.save_checkpoint_multiprocess(
            ckpt_dir, {"w": np.ones(3)}, STEPS + 2, prefix="checkpoint_slow_"
        ),
    )
    return outcomes


# -------------------------------------------------------------------- main


def gathered(tree: Any) -> dict[str, np.ndarray]:
    """Every array leaf of ``tree``, whole on this host, by its key path."""
    tree = nn.unbox(tree)
    if jax.process_count() > 1:
        tree = multihost_utils.process_allgather(tree, tiled=True)
    flat = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(k): np.asarray(v) for k, v in flat}


def run(out_dir: str) -> dict[str, Any]:
    """Trains both models on the (2, 4) mesh, checkpoints them, builds the nnx
    model eagerly too; returns what the test compares."""
    mesh = make_mesh(MESH_SHAPE)
    x, y = load_batch(mesh)
    nn_run = train_nn(mesh, x, y)
    nnx_run = train_nnx(mesh, x, y)
    nn_restored, nnx_restored, saved_path = checkpoint_round_trip(
        os.path.join(out_dir, "ckpt"), nn_run["params"], nnx_run["model"]
    )
    restored = {"nn": nn_restored, "nnx": nnx.state(nnx_restored).to_pure_dict()}
    eager = nnx_eager(mesh)
    live = restore_into_live_arrays(os.path.join(out_dir, "ckpt"), nn_run["params"])
    result: dict[str, Any] = {
        "saved_path": np.array(saved_path),
        "nn_losses": np.array(nn_run["losses"]),
        "nnx_losses": np.array(nnx_run["losses"]),
    }
    for name, tree in (
        ("nn", nn_run["params"]),
        ("nnx", nnx.to_pure_dict(nnx_run["params"])),
        ("restored", restored),
        ("live", live["restored"]),
        ("eager", nnx.state(eager).to_pure_dict()),
    ):
        for path, value in gathered(tree).items():
            result[f"{name}{path}"] = value
    result["live_same_sharding"] = live["same_sharding"]
    result["eager_kernel_spec"] = np.array(str(eager.up.kernel.value.sharding.spec))
    result["restored_specs"] = np.array(
        [str(leaf.sharding.spec) for leaf in jax.tree.leaves(nn.unbox(restored))]
    )
    shown = {"params": nn_run["params"], "restored": nn_restored, "batch": {"x": x}}
    result["display"] = np.array(display.VariablesView(shown).text())
    report = lens.sharding({"params": nn_run["params"], "batch": {"x": x}})
    result["sharding"] = np.array(report.text())
    result["sharding_bytes"] = np.array(
        [(d.process, d.id, d.bytes) for d in report.devices], dtype=np.int64
    )
    if jax.process_count() > 1:
        ckpt_dir = os.path.join(out_dir, "ckpt")
        for name, text in fault_checks(ckpt_dir, x, nn_run["params"]).items():
            result[f"fault_{name}"] = np.array(text)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="One process of a sharded run.")
    parser.add_argument("--process-id", type=int, default=0)
    parser.add_argument("--num-processes", type=int, default=1)
    parser.add_argument("--coordinator", default="localhost:12345")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.num_processes > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=args.coordinator,
            num_processes=args.num_processes,
            process_id=args.process_id,
        )
    result = run(args.out)
    np.savez(os.path.join(args.out, f"result_{jax.process_index()}.npz"), **result)
    print(f"process {jax.process_index()}: losses {result['nn_losses']}", flush=True)
    if args.num_processes > 1:
        jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
