"""Writes the pack-trace fixtures the extension's unit tests read (run by make test)."""

import json
import pathlib

import jax
import jax.numpy as jnp

import lens
from lens import nn

HERE = pathlib.Path(__file__).parent / "fixtures"


class Block(nn.Module):
    @nn.compact
    def __call__(self, c, _):
        h = nn.Dense(4, kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), ("embed", "mlp")))(c)
        return nn.BatchNorm(use_running_average=False)(h), None


class Stack(nn.Module):
    @nn.compact
    def __call__(self, x):
        S = nn.scan(Block, variable_axes={"params": 0, "batch_stats": 0}, split_rngs={"params": True}, length=3,
                    metadata_params={nn.PARTITION_NAME: "layers"})
        return S()(x, None)[0]


class Ensemble(nn.Module):
    @nn.compact
    def __call__(self, x):
        V = nn.vmap(Stack, variable_axes={"params": 0, "batch_stats": 0}, split_rngs={"params": True},
                    metadata_params={nn.PARTITION_NAME: "ens"})
        return V(name="<img src=x onerror=alert(1)>")(x)


def main() -> None:
    HERE.mkdir(exist_ok=True)
    x = jnp.ones((2, 5, 4))
    trace = lens.show_lifting(Ensemble(), x)
    (HERE / "vmap_scan.json").write_text(json.dumps(trace.to_json(), indent=1))
    two = lens.show_lifting(nn.vmap(Stack, variable_axes={"params": 0, "batch_stats": 0},
                                    split_rngs={"params": True}, metadata_params={nn.PARTITION_NAME: "ens"})(), x)
    with lens.trace() as both:
        jax.eval_shape(lambda: Ensemble().init(jax.random.key(0), x))
        jax.eval_shape(lambda: Stack().init(jax.random.key(0), x[0]))
    (HERE / "two_transforms.json").write_text(json.dumps(both.to_json(), indent=1))
    del two
    variables = Ensemble().init(jax.random.key(0), x)
    with lens.trace() as applied:  # apply: groups hold variables, batch_stats mutated
        Ensemble().apply(variables, x, mutable=["batch_stats"])
    (HERE / "vmap_apply.json").write_text(json.dumps(applied.to_json(), indent=1))


if __name__ == "__main__":
    main()
