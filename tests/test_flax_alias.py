"""``lens.alias_flax`` / ``LENS_AS_FLAX=1``: ``import flax`` gives lens's modules.

Each case runs in a fresh interpreter: the alias changes ``sys.meta_path`` for the
whole process, and the test process itself has the real flax imported.
"""

import os
import subprocess
import sys
import textwrap

import pytest


def run(code: str, alias: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LENS_AS_FLAX"}
    env["JAX_PLATFORMS"] = "cpu"
    if alias:
        env["LENS_AS_FLAX"] = "1"
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def check(code: str, alias: bool = True) -> str:
    out = run(code, alias)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_flax_paths_are_lens_modules():
    check(
        """
        import lens
        import flax
        import flax.linen as nn
        import flax.core.frozen_dict
        from flax.linen.linear import Dense
        from flax import struct, serialization
        from flax.core import meta
        assert nn is lens.nn and flax.linen is lens.nn
        assert Dense is lens.nn.Dense
        assert flax.core.frozen_dict is lens.core.frozen_dict
        assert struct is lens.struct and serialization is lens.serialization
        assert meta.AxisMetadata is lens.core.meta.AxisMetadata
        # lens's modules keep their own names and specs
        assert lens.nn.__name__ == "lens.nn" and lens.nn.__spec__.name == "lens.nn"
        assert lens.core.frozen_dict.__spec__.name == "lens.core.frozen_dict"
        """
    )


def test_flax_version_is_the_flax_release_lens_follows():
    out = check(
        """
        import importlib.metadata, lens
        import flax, flax.version
        from flax import version
        from lens.version import flax_version
        assert lens.__version__ == "0.1.0" != flax_version, lens.__version__
        assert flax.__version__ == flax_version == version.__version__
        assert flax.version.__version__ == flax_version
        assert importlib.metadata.version("flax") == flax_version
        # a project's import-time check passes; lens's own version is untouched
        assert tuple(map(int, flax.__version__.split("."))) >= (0, 10, 6)
        assert lens.version.__version__ == "0.1.0"
        # the facade reads lens through: lazily loaded names, dir, submodules
        assert flax.linen is lens.nn and flax.nnx is lens.nnx and flax.struct is lens.struct
        assert flax.config is lens.config and "nnx" in dir(flax)
        assert flax.__path__ == lens.__path__
        print(flax.__version__)
        """
    )
    assert out.strip() == "0.12.8"


def test_flax_nnx_is_lens_nnx():
    check(
        """
        import lens
        from flax import nnx
        import flax.nnx
        import lens.nnx
        assert nnx is lens.nnx and flax.nnx.Module is lens.nnx.Module
        """
    )


def test_alias_flax_call_works_without_the_environment_variable():
    check(
        """
        import lens
        lens.alias_flax()
        lens.alias_flax()  # a second call changes nothing
        import sys
        from flax.training import train_state
        assert train_state is lens.training.train_state
        finders = [f for f in sys.meta_path if type(f).__name__ == "LensAsFlaxFinder"]
        assert len(finders) == 1
        """,
        alias=False,
    )


@pytest.mark.parametrize(
    ("statement", "lens_path"),
    [
        ("import flax.no_such_module", "lens.no_such_module"),
        ("import flax.linen.no_such_module", "lens.nn.no_such_module"),
        ("from flax.core.no_such_module import x", "lens.core.no_such_module"),
    ],
)
def test_a_module_lens_lacks_is_not_found_and_named(statement, lens_path):
    out = check(
        f"""
        import lens
        try:
            {statement}
        except ModuleNotFoundError as e:
            print(e)
        else:
            raise AssertionError("imported")
        """
    )
    assert repr(lens_path) in out, out


def test_off_by_default_flax_is_flax():
    out = check(
        """
        import lens
        import flax
        print(flax is lens, flax.__file__)
        """,
        alias=False,
    )
    assert out.startswith("False") and "site-packages" in out


def test_alias_after_real_flax_is_refused():
    out = check(
        """
        import flax
        import lens
        try:
            lens.alias_flax()
        except ImportError as e:
            print(e)
        """,
        alias=False,
    )
    assert "flax is already imported" in out and "before anything imports flax" in out


def test_import_lens_with_alias_stays_lazy():
    out = check(
        """
        import sys, lens
        print('jax' in sys.modules, any(f.__class__.__name__ == 'LensAsFlaxFinder'
                                        for f in sys.meta_path))
        """
    )
    assert out.split() == ["False", "True"]
