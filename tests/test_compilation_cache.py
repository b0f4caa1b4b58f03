"""lens's notebook default: JAX's persistent compilation cache in a per-user folder."""

import pathlib
import subprocess
import sys

import jax
import pytest

from lens import compilation_cache as cc


@pytest.fixture
def restore_jax_cache():
    before = jax.config.jax_compilation_cache_dir
    yield
    jax.config.update("jax_compilation_cache_dir", before)
    cc._reset_jax_cache()


def test_default_folder_is_per_user_and_can_be_moved(monkeypatch, tmp_path):
    monkeypatch.delenv("LENS_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cc.default_cache_dir() == tmp_path / "lens" / "jax"
    monkeypatch.setenv("LENS_COMPILATION_CACHE_DIR", str(tmp_path / "here"))
    assert cc.default_cache_dir() == tmp_path / "here"


def test_enable_sets_jax_config_opt_out_and_user_folder_kept(
    monkeypatch, tmp_path, restore_jax_cache
):
    monkeypatch.setenv("LENS_COMPILATION_CACHE", "0")
    jax.config.update("jax_compilation_cache_dir", None)
    assert cc.enable_compilation_cache(tmp_path) is None
    assert jax.config.jax_compilation_cache_dir is None
    monkeypatch.setenv("LENS_COMPILATION_CACHE", "1")
    assert cc.enable_compilation_cache(tmp_path, max_bytes=1 << 20) == tmp_path
    assert jax.config.jax_compilation_cache_dir == str(tmp_path)
    assert jax.config.jax_compilation_cache_max_size == 1 << 20
    # A folder the user set is kept when lens picks the default.
    assert cc.enable_compilation_cache() == tmp_path
    cc.disable_compilation_cache()
    assert jax.config.jax_compilation_cache_dir is None


def test_load_ext_turns_the_cache_on_and_a_restarted_process_loads_programs(tmp_path):
    # Two fresh processes (a kernel restart): the second finds the first's program.
    script = (
        "import jax, jax.numpy as jnp\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.instance().run_line_magic('load_ext', 'lens')\n"
        "print(jax.config.jax_compilation_cache_dir)\n"
        "f = jax.jit(lambda x: jnp.linalg.inv(x @ x.T + 3.0) @ jnp.sin(x))\n"
        "f(jnp.ones((64, 64))).block_until_ready()\n"
    )
    env = {
        **__import__("os").environ,
        "LENS_COMPILATION_CACHE_DIR": str(tmp_path),
        "LENS_COMPILATION_CACHE": "1",
        "LENS_COMPILATION_CACHE_MIN_SECONDS": "0",  # store even a fast compile
    }
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == str(tmp_path)
    entries = [p for p in pathlib.Path(tmp_path).iterdir() if p.is_file()]
    assert entries, "the compiled program was not stored"
