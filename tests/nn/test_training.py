"""A small optax training loop: the loss falls; the jitted step is pure."""

import jax
import jax.numpy as jnp
import optax

from lens import nn


class Model(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool = False):
        x = nn.Dense(16)(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        x = nn.relu(x)
        x = nn.Dropout(0.1, deterministic=not train)(x)
        return nn.Dense(1)(x)


def test_adam_training_loop_loss_falls_and_step_is_pure():
    key = jax.random.key(0)
    x = jax.random.normal(key, (64, 4))
    y = x @ jnp.array([[1.0], [-2.0], [0.5], [3.0]]) + 0.1
    model = Model()
    variables = model.init(key, x)
    params, stats = variables["params"], variables["batch_stats"]
    tx = optax.adam(1e-2)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, stats, opt_state, batch, rng):
        x, y = batch

        def loss_fn(params):
            pred, upd = model.apply(
                {"params": params, "batch_stats": stats},
                x,
                train=True,
                rngs={"dropout": rng},
                mutable=["batch_stats"],
            )
            return jnp.mean((pred - y) ** 2), upd["batch_stats"]

        (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), stats, opt_state, loss

    losses = []
    for i in range(60):
        params, stats, opt_state, loss = step(
            params, stats, opt_state, (x, y), jax.random.key(i)
        )
        losses.append(float(loss))
    assert losses[-1] < 0.2 * losses[0]
    # pure: same inputs, same outputs
    a = step(params, stats, opt_state, (x, y), jax.random.key(0))
    b = step(params, stats, opt_state, (x, y), jax.random.key(0))
    assert jax.tree_util.tree_all(jax.tree.map(jnp.array_equal, a, b))
    # evaluation uses the running averages and needs no rng
    pred = model.apply({"params": params, "batch_stats": stats}, x)
    assert pred.shape == (64, 1)
