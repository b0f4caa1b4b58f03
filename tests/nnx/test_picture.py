"""lens.nnx transforms in pack traces: lanes per variable, like lens.core's packs."""

import jax
import jax.numpy as jnp
import jsonschema

import lens
from lens import nnx
from lens.core import _trace


class Member(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(3, 4, rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)


@nnx.split_rngs(splits=5)
@nnx.vmap(in_axes=(0,), out_axes=0)
def make_ensemble(rngs):
    return Member(rngs)


def _lanes(rec):
    return {f"{x['collection']} {x['relative']}": x for x in rec["lanes"]}


def test_vmap_records_mapped_state_and_what_came_back():
    ensemble = make_ensemble(nnx.Rngs(0))
    forward = nnx.vmap(lambda m, x: m.bn(m.lin(x)), in_axes=(0, None))
    with lens.trace() as t:
        forward(ensemble, jnp.ones((2, 3)))
    doc = t.to_json()
    jsonschema.validate(doc, _trace.schema())
    (rec,) = doc["packs"]
    assert (
        rec["summary"]
        == "vmap over 5 slices of /m: Param, BatchStat on axis 0; 2 updated"
    )
    lanes = _lanes(rec)
    kernel = lanes["Param lin/kernel"]
    assert (kernel["outer"]["shape"], kernel["inner"]["shape"]) == ([5, 3, 4], [3, 4])
    assert (kernel["axis"], kernel["size"], kernel["fate"]) == (0, 5, "unchanged")
    mean = lanes["BatchStat bn/mean"]
    assert mean["fate"] == "updated" and mean["inner"]["shape"] == [4]
    assert mean["committed"] == "/m"


def test_scan_records_carry_and_scanned_state_with_nested_vmap_as_child():
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(4, 4, rngs=rngs)

    @nnx.split_rngs(splits=3)
    @nnx.vmap
    def make(rngs):
        return Block(rngs)

    stack = make(nnx.Rngs(1))

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def run(x, blk):
        inner = nnx.vmap(lambda b, r: b.lin(r), in_axes=(None, 0))
        return inner(blk, x)

    with lens.trace() as t:
        y = run(jnp.ones((2, 4)), stack)
    assert y.shape == (2, 4)
    (scan,) = t.to_json()["packs"]
    assert scan["summary"] == "scan over 3 steps of /blk: Param on axis 0"
    assert _lanes(scan)["Param lin/kernel"]["note"] == "scan axis 0, length 3"
    (child,) = scan["children"]
    assert child["transform"] == "vmap"
    assert _lanes(child)["Param lin/kernel"]["role"] == "broadcast"


def test_nothing_is_recorded_without_a_trace():
    ensemble = make_ensemble(nnx.Rngs(0))
    forward = nnx.vmap(lambda m, x: m.lin(x), in_axes=(0, None))
    assert not _trace.active()
    out = forward(ensemble, jnp.ones((2, 3)))
    assert out.shape == (5, 2, 4)
    with lens.trace() as t:
        jax.block_until_ready(forward(ensemble, jnp.ones((2, 3))))
    assert t.transforms() == ["vmap"]


def test_jit_is_traced_again_under_a_trace_and_records_nested_transforms():
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(3, 4, rngs=rngs)
            self.bn = nnx.BatchNorm(4, rngs=rngs)

    net = Net(nnx.Rngs(0))
    calls = []

    @nnx.jit
    def step(m, x):
        calls.append(1)
        inner = nnx.vmap(lambda lin, r: lin(r), in_axes=(None, 0))
        return m.bn(inner(m.lin, x))

    x = jnp.ones((2, 3))
    step(net, x)
    step(net, x)
    assert len(calls) == 1  # cached outside a trace
    with lens.trace() as t:
        y = step(net, x)
    assert len(calls) == 2 and y.shape == (2, 4)
    (jit,) = t.to_json()["packs"]
    assert jit["summary"] == "jit of /m: Param, BatchStat passed in whole; 2 updated"
    assert {x["relative"]: x["fate"] for x in jit["lanes"]}["bn/mean"] == "updated"
    (vmap,) = jit["children"]
    assert [x["role"] for x in vmap["lanes"]] == ["broadcast", "broadcast"]
    step(net, x)
    assert len(calls) == 2  # the cache still serves calls after the trace


def test_grad_records_differentiated_and_constant_state():
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(3, 4, rngs=rngs)
            self.bn = nnx.BatchNorm(4, rngs=rngs)

    net = Net(nnx.Rngs(0))
    with lens.trace() as t:
        grads = nnx.grad(lambda m, x: m.bn(m.lin(x)).sum())(net, jnp.ones((2, 3)))
    assert grads["lin"]["kernel"].value.shape == (3, 4)
    (rec,) = t.to_json()["packs"]
    assert rec["summary"] == (
        "grad of /m: Param differentiated, BatchStat constant; 2 updated"
    )
    fates = {x["relative"]: (x["role"], x["fate"]) for x in rec["lanes"]}
    assert fates["lin/kernel"] == ("differentiated", "unchanged")
    assert fates["bn/var"] == ("constant", "updated")


def test_remat_cond_and_loops_are_recorded_with_their_state():
    class Counter(nnx.Module):
        def __init__(self):
            self.n = nnx.BatchStat(jnp.zeros(()))
            self.w = nnx.Param(jnp.ones(()))

    c = Counter()

    def bump(m):
        m.n.value = m.n.value + 1
        return m

    with lens.trace() as t:
        nnx.remat(lambda m: bump(m).w.value)(c)
        nnx.cond(True, bump, bump, c)
        nnx.fori_loop(0, 3, lambda i, m: bump(m), c)
        nnx.while_loop(lambda m: m.n.value < 10, bump, c)
    assert float(c.n.value) == 10.0
    recs = t.to_json()["packs"]
    assert [r["transform"] for r in recs] == [
        "remat",
        "cond",
        "fori_loop",
        "while_loop",
    ]
    for rec in recs:
        fates = {x["relative"]: x["fate"] for x in rec["lanes"]}
        assert fates == {"n": "updated", "w": "unchanged"}, rec["transform"]
    assert (
        recs[2]["summary"] == "fori_loop of /args[0]: BatchStat, Param carry; 1 updated"
    )
    assert recs[0]["lanes"][0]["note"] == "passed in whole (the same value inside)"


def test_vjp_jvp_and_custom_vjp_are_recorded():
    lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 2))

    @nnx.custom_vjp
    def f(m, x):
        return m(x)

    def f_fwd(m, x):
        return m(x), (m, x)

    def f_bwd(res, g):
        m, x = res
        _, out_g = g
        return nnx.State(
            {"kernel": x.T @ out_g, "bias": out_g.sum(0)}
        ), out_g @ m.kernel.value.T

    f.defvjp(f_fwd, f_bwd)
    with lens.trace() as t:
        nnx.vjp(lambda m: m(x), lin)
        nnx.jvp(lambda m: m(x), (lin,), (jax.tree.map(jnp.zeros_like, nnx.state(lin)),))
        f(lin, x)
    recs = t.to_json()["packs"]
    assert [r["transform"] for r in recs] == ["vjp", "jvp", "custom_vjp"]
    assert {x["role"] for x in recs[0]["lanes"]} == {"differentiated"}
    assert recs[1]["lanes"][0]["note"] == "differentiated: a tangent flows through it"
    assert {x["relative"] for x in recs[2]["lanes"]} == {"kernel", "bias"}
