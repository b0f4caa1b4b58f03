"""Every public attribute of flax's public classes is on lens's class of the same
path: a method a user calls on flax's State, FlatState, List or Variable works on
lens's. ``tests/test_flax_surface.py`` compares module names and signatures; this
walks one level further, into the classes. Where an attribute is missing on
purpose, EXCLUDED says why (and stale exclusions fail).
"""

import importlib
import inspect
import pkgutil

import pytest

flax = pytest.importorskip("flax")

# What lens's class lacks at class level, and why that is not a gap.
EXCLUDED = {
    # set per instance on lens (present on every instance, as flax's values)
    "flax.configurations.Config": "flags are read through __getattr__ per instance",
    "flax.nnx.Bidirectional": "merge_fn/return_carry/time_major are instance fields",
    "flax.nnx.PathContains": "exact is an instance field",
    "flax.nnx.bridge.ToNNX": "module/rngs are instance attributes",
    "flax.nnx.summary.SizeBytes": "size/bytes are instance attributes",
    # jit's stages: lens's delegate to JAX's stage objects per instance
    "flax.nnx.transforms.compilation.Compiled": "per-instance fields",
    "flax.nnx.transforms.compilation.Lowered": "per-instance fields",
    "flax.nnx.transforms.compilation.Traced": "per-instance fields",
    "flax.nnx.transforms.compilation.SimpleCompiled": "per-instance fields",
    "flax.nnx.transforms.compilation.SimpleLowered": "per-instance fields",
    "flax.nnx.transforms.compilation.SimplePartialCompiled": "per-instance fields",
    "flax.nnx.transforms.compilation.SimplePartialLowered": "per-instance fields",
    "flax.nnx.transforms.compilation.SimplePartialTraced": "per-instance fields",
    "flax.nnx.transforms.compilation.SimpleTraced": "per-instance fields",
    # graph internals: lens's GraphDef is built otherwise (docs/porting.md)
    "flax.nnx.extract.TreeState": "graph internals",
    "flax.nnx.graph.GraphContext": "graph internals",
    "flax.nnx.graph.HashableMapping": "graph internals",
    "flax.nnx.graph.NodeDef": "graph internals",
    "flax.nnx.graph.TreeNodeDef": "graph internals",
    "flax.nnx.graph.VariableDef": "graph internals",
    "flax.nnx.rnglib.SplitBackups": "a plain class on lens, not a flax.struct",
    "flax.nnx.use_eager_sharding": "a context on lens, not flax's config stack",
    # hijax internals (JAX's hijax types): lens builds hijax Variables its own way
    "flax.nnx.variablelib.AbstractVariable": "hijax internals",
    "flax.nnx.variablelib.HijaxVariable": "hijax internals",
}


def _class_pairs():
    seen = set()
    for info in pkgutil.walk_packages(flax.__path__, "flax."):
        name = info.name
        parts = name.split(".")[1:]
        if any(p.startswith("_") or "test" in p or p == "experimental" for p in parts):
            continue
        try:
            flax_module = importlib.import_module(name)
            lens_module = importlib.import_module(
                name.replace("flax.linen", "lens.nn").replace("flax", "lens", 1)
            )
        except Exception:  # noqa: BLE001 - optional dependencies (tensorflow, ...)
            continue
        for attr in dir(flax_module):
            theirs = getattr(flax_module, attr, None)
            if attr.startswith("_") or not inspect.isclass(theirs):
                continue
            if id(theirs) in seen or not theirs.__module__.startswith("flax"):
                continue
            seen.add(id(theirs))
            ours = getattr(lens_module, attr, None)
            if inspect.isclass(ours):
                yield f"{name}.{attr}", theirs, ours


def _missing():
    out = {}
    for where, theirs, ours in _class_pairs():
        public = {a for a in dir(theirs) if not a.startswith("_")}
        lacking = sorted(public - {a for a in dir(ours) if not a.startswith("_")})
        if lacking:
            out[where] = lacking
    return out


def test_flax_classes_public_attributes_are_on_lens_classes():
    missing = _missing()
    gaps = {k: v for k, v in missing.items() if k not in EXCLUDED}
    assert not gaps, f"lens's classes lack flax's public attributes: {gaps}"
    stale = sorted(set(EXCLUDED) - set(missing))
    assert not stale, f"excluded but no longer missing (drop them): {stale}"


# Methods whose parameters lens names otherwise, and why.
RENAMED = {
    # hijax primitives' rules (JAX's hijax protocol): lens builds its own
    "flax.nnx.variablelib.AbstractVariable",
    "flax.nnx.variablelib.GetVariable",
    "flax.nnx.variablelib.NewVariable",
    "flax.nnx.variablelib.SetVariable",
    # fp8 internals lens's Fp8 ops implement without the dtype argument
    "flax.linen.fp8_ops.Fp8MetaTyRules",
    # Python's list methods (positional-only), as FlatState is a list on lens
    "flax.nnx.FlatState.count",
    "flax.nnx.FlatState.index",
}


def _accepts_by_name(method, names):
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return True
    return names <= {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}


def test_flax_methods_parameters_are_accepted_by_name_on_lens():
    # a keyword call written for flax (graphdef.apply(state, graph=False),
    # layers.insert(index=0, value=x)) works on lens
    wrong = []
    for where, theirs, ours in _class_pairs():
        if where in RENAMED:
            continue
        for attr in dir(theirs):
            if attr.startswith("_") and attr not in ("__init__", "__call__"):
                continue
            if f"{where}.{attr}" in RENAMED:
                continue
            f, ours_f = getattr(theirs, attr, None), getattr(ours, attr, None)
            if not (callable(f) and callable(ours_f)) or inspect.isclass(f):
                continue
            try:
                named = {
                    p.name
                    for p in inspect.signature(f).parameters.values()
                    if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                    and p.name not in ("self", "cls")
                }
            except (TypeError, ValueError):
                continue
            if not _accepts_by_name(ours_f, named):
                wrong.append(f"{where}.{attr}")
    assert not wrong, f"lens's methods do not take flax's parameter names: {wrong}"
