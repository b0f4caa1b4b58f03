"""lens.compile_time: stage times against JAX's own, the persistent cache, and the
jaxpr's equations per module path (summing to the jaxpr's), with unrolled repeats."""

from __future__ import annotations

import inspect
import threading
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.extend.core import jaxprs_in_params

import lens
from lens import errors, nn, nnx
from lens._instruments import compile_time as C
from lens._instruments import module_scopes
from lens.display._compile_time import CompileTimeView
from tests.helpers import visible_text

# -- models


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(5)(x))
        x = nn.relu(nn.Dense(7)(x))
        return nn.Dense(1)(x)


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        return x + nn.Dense(8)(nn.LayerNorm()(x))


class Unrolled(nn.Module):
    n: int = 6

    @nn.compact
    def __call__(self, x):
        for i in range(self.n):
            x = Block(name=f"layers_{i}")(x)
        return x


class ScanBlock(nn.Module):
    @nn.compact
    def __call__(self, x, _):
        return Block()(x), None


class Scanned(nn.Module):
    n: int = 6

    @nn.compact
    def __call__(self, x):
        scan = nn.scan(
            ScanBlock,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            length=self.n,
        )
        return scan(name="layers")(x, None)[0]


class JitInside(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.jit(Block)(name="jitted")(x)


class NnxBlock(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(8, 8, rngs=rngs)

    def __call__(self, x):
        return jax.nn.relu(self.linear(x))


class NnxMLP(nnx.Module):
    def __init__(self, n, rngs):
        self.layers = nnx.List([NnxBlock(rngs) for _ in range(n)])
        self.out = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


class NnxScanned(nnx.Module):
    def __init__(self, n, rngs):
        @nnx.split_rngs(splits=n)
        @nnx.vmap(in_axes=(0,), out_axes=0)
        def make(rngs):
            return NnxBlock(rngs)

        self.layers = make(rngs)

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def body(x, layer):
            return layer(x)

        return body(x, self.layers)


x8 = jnp.ones((2, 8))


def _linen(model, x=x8):
    variables = model.init(jax.random.key(0), x)
    return model, variables


def total_equations(closed_jaxpr) -> int:
    """The jaxpr's equations, each sub-jaxpr's included (independently of lens)."""

    def count(jaxpr) -> int:
        return sum(
            1 + sum(count(sub) for sub in jaxprs_in_params(eqn.params))
            for eqn in jaxpr.eqns
        )

    return count(closed_jaxpr.jaxpr)


# -- equations per module


def test_equation_counts_sum_to_the_jaxprs_recursive_total():
    @jax.custom_vjp
    def clip_grad(x):
        return x

    clip_grad.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -1, 1),))

    def f(x):
        x = jax.nn.relu(x)  # custom_jvp, with a jit inside
        x = jax.checkpoint(lambda y: jnp.sin(y) * 2)(x)
        x = jax.lax.scan(lambda c, _: (jnp.cos(c) + 1, None), x, None, length=3)[0]
        x = jax.lax.cond(x.sum() > 0, lambda y: y + 1, lambda y: y - 1, x)
        x = jax.lax.while_loop(
            lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, x)
        )[1]
        x = jax.jit(lambda y: jnp.tanh(y) @ y.T)(x)
        return clip_grad(x)

    record = lens.compile_time(f, jnp.ones((3, 3)))
    jaxpr = jax.make_jaxpr(f)(jnp.ones((3, 3)))
    expected = total_equations(jaxpr)
    assert expected >= len(jaxpr.jaxpr.eqns) + 12  # sub-jaxprs were counted
    assert record.equations == expected
    assert sum(m.equations for m in record.modules) == expected
    assert [m.path for m in record.modules] == [C.OUTSIDE]


def test_linen_mlp_equations_by_module_path():
    model, variables = _linen(MLP(), jnp.ones((2, 3)))
    record = lens.compile_time(model.apply, variables, jnp.ones((2, 3)))
    paths = {m.path for m in record.modules}
    assert {"/Dense_0", "/Dense_1", "/Dense_2", "/"} <= paths
    assert paths <= {"/Dense_0", "/Dense_1", "/Dense_2", "/"}
    assert sum(m.equations for m in record.modules) == record.equations
    # each Dense counts what a Dense alone makes
    dense, dense_vars = _linen(nn.Dense(5), jnp.ones((2, 3)))
    alone = lens.compile_time(dense.apply, dense_vars, jnp.ones((2, 3)))
    assert record.equations_at("/Dense_0") == alone.equations_at("/") >= 2
    # the root's own equations are its relus; the record also has the subtree
    root = next(m for m in record.modules if m.path == "/")
    assert root.subtree == record.equations
    assert record.repeats == ()  # 3 -> 5 -> 7 -> 1: no two alike
    assert record.function == "MLP.apply"


def test_nnx_mlp_equations_by_module_path_and_modules_left_untouched():
    model = NnxMLP(3, nnx.Rngs(0))
    before = jax.tree.map(lambda a: a, nnx.state(model))
    step = nnx.jit(lambda m, x: m(x))
    record = lens.compile_time(step, model, x8)
    paths = {m.path for m in record.modules}
    assert {"/layers/0/linear", "/layers/1/linear", "/layers/2/linear", "/out"} <= paths
    assert record.equations_at("/layers/0/linear") == record.equations_at("/out") >= 2
    assert record.equations_at("/layers/1") >= 1  # the relu
    assert sum(m.equations for m in record.modules) == record.equations
    assert total_equations(step.trace(model, x8).jaxpr) == record.equations
    for _, m in nnx.iter_modules(model):
        assert module_scopes.NNX_PATH not in vars(m)
    after = nnx.state(model)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool((a == b).all()), before, after))


def test_unrolled_linen_layers_are_named_as_repeats_and_scanned_ones_are_not():
    unrolled, v = _linen(Unrolled())
    record = lens.compile_time(unrolled.apply, v, x8)
    (repeat,) = record.repeats
    assert repeat.pattern == "/layers_*"
    assert repeat.count == 6 and repeat.transform == "nn.scan"
    assert repeat.paths == tuple(f"/layers_{i}" for i in range(6))
    assert repeat.line().startswith(
        "6 identical blocks at /layers_*: nn.scan would trace one"
    )
    assert "6 identical blocks at /layers_*: nn.scan would trace one" in record.text()

    scanned, v = _linen(Scanned())
    record = lens.compile_time(scanned.apply, v, x8)
    assert record.repeats == ()
    assert any(m.path.startswith("/layers/") for m in record.modules)


def test_unrolled_nnx_layers_name_nnx_scan_and_scanned_ones_are_not_repeats():
    record = lens.compile_time(nnx.jit(lambda m, x: m(x)), NnxMLP(4, nnx.Rngs(0)), x8)
    (repeat,) = record.repeats
    assert repeat.pattern == "/layers/*" and repeat.transform == "nnx.scan"
    assert repeat.line().startswith(
        "4 identical blocks at /layers/*: nnx.scan would trace one"
    )
    scanned = NnxScanned(4, nnx.Rngs(0))
    record = lens.compile_time(nnx.jit(lambda m, x: m(x)), scanned, x8)
    assert record.repeats == ()
    assert record.equations_at("/layers/linear") >= 2  # through nnx.scan's copies


def test_a_repeat_names_only_the_identical_siblings():
    class FirstDiffers(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dense(8, name="layers_0")(jnp.concatenate([x, x], -1))
            for i in range(1, 4):
                x = nn.Dense(8, name=f"layers_{i}")(x)
            return x

    model, v = _linen(FirstDiffers())
    (repeat,) = lens.compile_time(model.apply, v, x8).repeats
    assert repeat.paths == ("/layers_1", "/layers_2", "/layers_3")
    assert repeat.siblings == 4 and "/layers_1 … /layers_3" in repeat.line()


# -- the jit kinds


def test_every_jit_kind_is_measured():
    model, v = _linen(MLP(), jnp.ones((2, 3)))
    x3 = jnp.ones((2, 3))
    by_jax = lens.compile_time(jax.jit(model.apply), v, x3)
    assert by_jax.jit == "jax.jit"
    plain = lens.compile_time(model.apply, v, x3)
    assert plain.jit.startswith("jax.jit, applied by lens.compile_time")
    assert by_jax.equations == plain.equations

    jitted, jv = _linen(JitInside())
    inside = lens.compile_time(jitted.apply, jv, x8)
    assert inside.equations_at("/jitted/Dense_0") >= 2  # inside nn.jit's jit
    assert inside.equations_at("/jitted/LayerNorm_0") >= 2

    net = NnxMLP(2, nnx.Rngs(0))
    by_nnx = lens.compile_time(nnx.jit(lambda m, x: m(x)), net, x8)
    assert by_nnx.jit == "nnx.jit"
    assert by_nnx.equations_at("/out") >= 2

    class Method(nnx.Module):  # nnx.jit on a method: bound as partial(jit, self)
        def __init__(self, rngs):
            self.linear = nnx.Linear(8, 8, rngs=rngs)

        @nnx.jit
        def __call__(self, x):
            return self.linear(x)

    bound = lens.compile_time(Method(nnx.Rngs(0)).__call__, x8)
    assert bound.jit == "nnx.jit" and bound.equations_at("/linear") >= 2

    # a module itself, and a jax.jit of a closure over one
    assert lens.compile_time(net, x8).equations_at("/out") >= 2
    closure = lens.compile_time(jax.jit(lambda x: net(x)), x8)
    assert closure.equations_at("/layers/1/linear") >= 2


def test_the_trace_is_fresh_and_leaves_the_functions_cache_alone():
    f: Any = jax.jit(lambda x: jnp.sin(x) @ x)
    square = jnp.ones((4, 4))
    f(square)  # compiled once, so an ordinary .trace() would come from the cache
    size = f._cache_size()
    record = lens.compile_time(f, square)
    assert record.fresh
    assert record.jax_trace_s is not None and record.jax_compile_s is not None
    assert f._cache_size() == size
    f(square)
    assert f._cache_size() == size


def test_the_retrace_explainer_does_not_report_compile_times_trace():
    f = jax.jit(lambda x: jnp.cos(x) * 3)
    f(x8)
    with lens.recompiles() as log:
        lens.compile_time(f, x8)
    assert log.traces == []


def test_name_scopes_only_while_compile_time_traces():
    assert module_scopes.TRACING.get() is False
    model, v = _linen(MLP(), jnp.ones((2, 3)))
    jaxpr = jax.make_jaxpr(model.apply)(v, jnp.ones((2, 3)))
    names = [str(e.source_info.name_stack) for e in jaxpr.jaxpr.eqns]
    assert not any("lens.nn" in n for n in names)
    assert any("Dense_0" in n for n in names)  # Linen's own profiling scopes stay
    net = NnxMLP(2, nnx.Rngs(0))
    jaxpr = jax.make_jaxpr(lambda x: net(x))(x8)
    assert all(str(e.source_info.name_stack) == "" for e in jaxpr.jaxpr.eqns)
    # outside compile_time an nnx module's __call__ is the class's own, and
    # compile_time gives it back afterwards
    own = vars(NnxBlock)["__call__"]
    assert inspect.unwrap(own) is own
    lens.compile_time(nnx.jit(lambda m, x: m(x)), NnxBlock(nnx.Rngs(0)), x8)
    assert vars(NnxBlock)["__call__"] is own


# -- JAX's own timers and the persistent cache


def _deep(x):
    for i in range(60):
        x = jnp.tanh(x @ x) + i
    return x


def test_times_agree_with_jaxs_own_stage_timers():
    seen: list[tuple[str, float]] = []
    me = threading.get_ident()

    def listen(event: str, duration_secs: float, **kwargs: Any) -> None:
        if threading.get_ident() == me:
            seen.append((event, duration_secs))

    x = jnp.ones((16, 16))  # made before listening: making it compiles too
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        record = lens.compile_time(_deep, x)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)

    def jax_sum(event):
        return sum(d for e, d in seen if e == event)

    # the record holds the same events this listener saw
    assert record.jax_trace_s == pytest.approx(jax_sum(C.TRACE_EVENT), rel=1e-9)
    assert record.jax_lower_s == pytest.approx(jax_sum(C.LOWER_EVENT), rel=1e-9)
    assert record.jax_compile_s == pytest.approx(jax_sum(C.COMPILE_EVENT), rel=1e-9)
    # lens's clocks are around JAX's stages, so each is at least JAX's timer of
    # it, and together they agree with JAX's within 5% (a busy machine may stall
    # the Python between JAX's timers once: the best of three calls is judged)
    for stage, ours, theirs in record.stages():
        assert theirs is not None and ours >= theirs * 0.999, stage
    gaps = []
    for _ in range(3):
        assert record.jax_total_s is not None
        gaps.append(record.total_s / record.jax_total_s - 1)
        if gaps[-1] <= 0.05:
            break
        record = lens.compile_time(_deep, x)
    assert min(gaps) <= 0.05, gaps


@pytest.fixture
def persistent_cache(tmp_path):
    """JAX's persistent cache in a fresh folder, storing every program; the
    config and JAX's cache object are restored afterwards."""
    from jax._src import compilation_cache

    names = (
        "jax_compilation_cache_dir",
        "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes",
    )
    old = {n: jax.config.values[n] for n in names}
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    compilation_cache.reset_cache()
    try:
        yield tmp_path
    finally:
        for n, v in old.items():
            jax.config.update(n, v)
        compilation_cache.reset_cache()


def test_persistent_cache_miss_then_hit(persistent_cache):
    f = jax.jit(lambda x: jnp.cos(x) @ x + 3.0)
    miss = lens.compile_time(f, jnp.ones((5, 5)))
    assert miss.cache == "miss"
    assert "stored" in miss.cache_detail
    assert any(persistent_cache.iterdir())
    hit = lens.compile_time(f, jnp.ones((5, 5)))
    assert hit.cache == "hit"
    assert "persistent cache: hit" in hit.text()
    assert "persistent cache: miss" in miss.text()


def test_persistent_cache_off_without_a_folder():
    before = jax.config.values["jax_compilation_cache_dir"]
    jax.config.update("jax_compilation_cache_dir", None)  # the tests may set one
    try:
        record = lens.compile_time(lambda x: x + 1, jnp.ones(3))
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
    assert record.cache == "off"
    assert record.cache_line().startswith("persistent cache: off")


# -- views


def test_views_are_script_free_and_say_what_the_record_says():
    model, v = _linen(Unrolled(3))
    record = lens.compile_time(model.apply, v, x8)
    bundle = record._repr_mimebundle_()
    html = bundle["text/html"]
    for banned in ("<script", "<style", "var(--", "<svg", "javascript:"):
        assert banned not in html.lower()
    text = visible_text(html)
    assert "3 identical blocks at /layers_*: nn.scan would trace one" in text
    assert "/layers_0/LayerNorm_0" in text and "persistent cache:" in text
    assert "trace" in text and "compile" in text
    assert bundle["text/plain"] == record.text()
    assert repr(record).startswith("CompileTime(Unrolled.apply: trace ")
    assert len(repr(record).splitlines()) == 1 and str(record) == repr(record)
    rich = record.__rich__()
    assert "nn.scan would trace one" in rich.plain
    assert CompileTimeView(record).html() == html


def test_many_modules_fold_into_details_and_the_axis_has_values():
    model, v = _linen(Unrolled(12))
    html = lens.compile_time(model.apply, v, x8)._repr_mimebundle_()["text/html"]
    assert "<details" in html and "more modules" in html
    assert ">0</span>" in html and "equations</span>" in html
    assert C.seconds(0.0123) == "12.3 ms" and C.seconds(2.5) == "2.5 s"


# -- bad input


def test_a_value_that_is_not_a_function_is_a_clear_error():
    with pytest.raises(errors.CompileTimeTargetError) as info:
        lens.compile_time(jnp.ones(3), jnp.ones(3))
    message = str(info.value)
    assert isinstance(info.value, TypeError)
    assert "lens.compile_time(train_step, state, batch)" in message
    assert "Array" in message


def test_a_call_that_fails_to_trace_names_the_function_stage_and_fix():
    def bad_step(x):
        return x @ jnp.ones((5, 2))

    net = NnxMLP(1, nnx.Rngs(0))
    with pytest.raises(errors.CompileTimeStageError) as info:
        lens.compile_time(bad_step, jnp.ones((2, 3)))
    message = str(info.value)
    assert "could not trace bad_step (test_compile_time.py:" in message
    assert "TypeError" in message and "float32[2, 3]" in message
    assert "static_argnums" in message
    assert isinstance(info.value.__cause__, TypeError)
    # nnx modules are left as they were when the trace fails
    with pytest.raises(errors.CompileTimeStageError):
        lens.compile_time(nnx.jit(lambda m, x: m(x)), net, jnp.ones((2, 3)))
    assert all(module_scopes.NNX_PATH not in vars(m) for _, m in nnx.iter_modules(net))
    assert module_scopes.TRACING.get() is False
