"""Real projects built on Flax: their own tests, run under real flax and under lens.

Each project in :data:`PROJECTS` is a public repository pinned to a commit, with the
test paths to run (its own pytest suite, or the part of it that runs on a CPU in
minutes without downloading data or weights) and the extra packages its tests need.
``python -m parity.projects [NAME ...]`` gets each source into
``parity/.cache/projects`` (from a local git mirror when there is one, else by git
clone), installs the extra packages there, one folder per project (``pip install
--target``, no dependencies, so the dev environment's jax/flax/numpy are never
touched and two projects may pin one package at two versions), and runs
the tests twice: with the installed flax (the oracle; cached, ``--rerun-flax`` runs
it again) and with ``flax`` resolved to lens (``-p parity.lens_as_flax``, as
:mod:`parity.flax_tests` does for Flax's own tests). It prints a table: tests,
passes under each, and what blocked lens (the first errors of the tests that pass
under flax and not under lens, most frequent first). ``--write`` puts the table in
``docs/porting.md`` between its ``projects`` markers; a project that has no results
here (none of its runs was made on this machine) keeps the row the page has.

Example:
    python -m parity.projects qwix --timeout 900
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from parity.flax_tests import (
    CACHE,
    FLAX_VERSION,
    REPO,
    _installed_flax_version,  # pyright: ignore[reportPrivateUsage]
    pytest_command,
    pytest_env,
)
from parity.flax_tests import _commit as lens_commit  # pyright: ignore[reportPrivateUsage]

PROJECTS_CACHE = CACHE / "projects"
DEPS = PROJECTS_CACHE / "deps"
STARTUP = pathlib.Path(__file__).resolve().with_name("startup")  # sitecustomize.py
PLUGINS = pathlib.Path(__file__).resolve().with_name("plugins")  # Project.plugins
DOC = REPO / "docs" / "porting.md"
BEGIN, END = "<!-- projects:begin -->", "<!-- projects:end -->"
# Where `fetch`-style bare mirrors live (``owner+name/repo``); git clone otherwise.
MIRROR = pathlib.Path(os.environ.get("LENS_PROJECTS_MIRROR", "/work/.mirror"))


@dataclasses.dataclass(frozen=True)
class Project:
    """One third-party project and the part of its test suite that is run."""

    name: str
    repo: str  # owner/name on GitHub
    commit: str
    api: str  # "Linen", "NNX" or both
    tests: tuple[str, ...]
    args: tuple[str, ...] = ()
    deps: tuple[str, ...] = ()  # pip specs its tests import, besides our venv's
    paths: tuple[str, ...] = ()  # the part of the tree to unpack (all when empty)
    pythonpath: tuple[str, ...] = ()  # folders of the tree to import from (its root)
    devices: int = 0  # CPU devices its tests need (XLA_FLAGS), 0: JAX's default
    # files its build step would write (a setuptools-scm ``_version.py``): (path, text)
    generated: tuple[tuple[str, str], ...] = ()
    # its pytest settings import flax before ``-p`` plugins load (parity/startup)
    alias_at_startup: bool = False
    # environment its tests need, "{root}" standing for the unpacked tree
    env: tuple[tuple[str, str], ...] = ()
    # pytest plugins from parity/plugins, loaded in both runs (``-p``)
    plugins: tuple[str, ...] = ()


# what `import tunix` and its tests import (the tunix and tunix-rl rows)
TUNIX_DEPS = (
    "google-metrax==0.2.4",
    "clu==0.0.12",
    "ml_collections==1.1.0",
    "wrapt==2.5.2",
    "tensorboardX==2.6.5",
    "jaxtyping==0.3.11",
    "wadler_lindig==0.1.8",
    "tqdm==4.70.1",
    "huggingface_hub==2.4.0",
    "sentencepiece==0.2.3",
    "safetensors==0.7.0",
    "pillow==13.0.0",
    "perfetto==0.59.1",
    "pandas==3.1.1",
    "chex==0.1.92",
    "toolz==1.2.0",
    "qwix==0.1.8",
    "grain==0.2.18",
    "array_record==0.8.6",
    "portpicker==1.6.0",
    "tenacity==9.2.1",
    "einops==0.8.2",
)


PROJECTS: tuple[Project, ...] = (
    Project(
        name="qwix",  # quantization (QAT, PTQ, LoRA/QLoRA) by intercepting layers
        repo="google/qwix",
        commit="aa623acb24c418563265fd8d541c1d51fc285269",
        api="Linen+NNX",
        tests=(
            "tests/_src/providers/lora_test.py",
            "tests/_src/providers/ptq_test.py",
            "tests/_src/providers/qt_test.py",
            "tests/_src/model_test.py",
            "tests/_src/qconfig_test.py",
            "tests/_src/utils/flax_util_test.py",
        ),
    ),
    Project(
        name="numpyro",  # flax_module / nnx_module: Flax models inside NumPyro
        repo="pyro-ppl/numpyro",
        commit="0b935d488056ae1775b4ab05cbe2812f51f21a4f",
        api="Linen+NNX",
        tests=("test/contrib/test_module.py",),
        # MCMC runs take minutes each on a CPU; equinox is another library.
        args=("-k", "not mcmc and not eqx"),
        deps=("multipledispatch==1.0.0", "tqdm==4.67.1"),
        paths=("numpyro", "test", "pyproject.toml"),
    ),
    Project(
        name="clu",  # CommonLoopUtils: metrics (flax.struct) and parameter overviews
        repo="google/CommonLoopUtils",
        commit="04ad2f9edbd5c80f2307746d15a947fea43cb5e5",
        api="Linen",
        tests=("clu/metrics_test.py", "clu/parameter_overview_test.py"),
        # test_collection_mixed_async merges from a thread pool into a nonlocal
        # without a lock: it fails now and then under flax and lens alike (5 of
        # 6 runs under flax on this machine), so it measures the race, not lens
        args=("-k", "not test_collection_mixed_async"),
        deps=("chex==0.1.91", "toolz==1.0.0", "ml_collections==1.1.0", "wrapt==1.17.2"),
    ),
    Project(
        name="recurrentgemma",  # Griffin / RecurrentGemma models in Linen
        repo="google-deepmind/recurrentgemma",
        commit="2efa84dac0e68e63547a27a18fa943c98f1c312e",
        api="Linen",
        tests=(
            "recurrentgemma/jax/complex_lib_test.py",
            "recurrentgemma/jax/layers_test.py",
            "recurrentgemma/jax/modules_test.py",
            "recurrentgemma/jax/griffin_test.py",
        ),
        deps=(
            "einops==0.8.1",
            "jaxtyping==0.3.2",
            "wadler_lindig==0.1.7",
            "typeguard==2.13.3",
            "sentencepiece==0.2.0",
        ),
    ),
    Project(
        name="tunix",  # LLM post-training in NNX: LoRA (qwix), SFT, DPO, distillation
        repo="google/tunix",
        commit="c7d8950f12a9c55a976bf2e1a0d8b447d71c20b3",
        api="NNX",
        # Trainers on 4 CPU devices (the tests set XLA_FLAGS), orbax checkpoints,
        # a Gemma 4 model with qwix LoRA; checkpoint_manager_test is Python 3.12.
        tests=(
            "tests/sft/peft_trainer_test.py",
            "tests/sft/sharding_utils_test.py",
            "tests/sft/dpo/dpo_trainer_test.py",
            "tests/sft/dpo/orpo_trainer_test.py",
            "tests/distillation/distillation_trainer_test.py",
            "tests/distillation/feature_extraction/sowed_module_test.py",
            "tests/models/gemma4/model_test.py",
            "tests/rl/common_test.py",
            "tests/generate/beam_search_test.py",
            "tests/generate/sampler_test.py",
            "tests/generate/utils_test.py",
            "tests/distillation/strategies/attention_test.py",
            "tests/distillation/strategies/feature_pooling_test.py",
            "tests/distillation/strategies/feature_projection_test.py",
            "tests/distillation/strategies/logit_test.py",
            "tests/distillation/feature_extraction/pooling_test.py",
            "tests/distillation/feature_extraction/projection_test.py",
            "tests/rl/rl_learner_test.py",
            "tests/rl/rl_utils_test.py",
            "tests/rl/algo_core_test.py",
            "tests/sft/sft_utils_test.py",
        ),
        deps=TUNIX_DEPS,
        paths=("tunix", "tests", "pyproject.toml"),
    ),
    Project(
        name="tunix-rl",  # tunix's GRPO and PPO learners (LoRA policies, nnx.jit)
        repo="google/tunix",
        commit="c7d8950f12a9c55a976bf2e1a0d8b447d71c20b3",
        api="NNX",
        # Their own process: each sets 2 CPU devices at import, where the files
        # of the `tunix` row set 4 (a second setting in one process fails setUp).
        tests=(
            "tests/rl/grpo/grpo_learner_test.py",
            "tests/rl/ppo/ppo_learner_test.py",
        ),
        deps=TUNIX_DEPS,
        paths=("tunix", "tests", "pyproject.toml"),
    ),
    Project(
        name="bonsai",  # NNX model implementations (Qwen3-VL, Mamba2), sharded
        repo="jax-ml/bonsai",
        commit="36284254cf738d99c1c5d1e3a292d27656a0a365",
        api="NNX",
        # Qwen3-VL on a 4x2 explicit-axes mesh of 8 CPU devices. Not run: Gemma3's
        # sharding test (XLA aborts on the CPU), Qwen3's (a 0.6B model: out of
        # memory), the parity tests (they download weights).
        tests=(
            "bonsai/models/qwen3_vl/tests/test_sharding_qwen3vl.py",
            "bonsai/models/mamba2/tests/test_outputs_mamba_2.py",
            "bonsai/utils/tests/samplers_test.py",
        ),
        args=("-k", "not GoldenParity"),
        deps=(
            "jaxtyping==0.3.11",
            "wadler_lindig==0.1.8",
            "safetensors==0.7.0",
            "tqdm==4.70.1",
            "pillow==13.0.0",
        ),
        paths=("bonsai", "pyproject.toml"),
        devices=8,
    ),
    Project(
        # Haiku's Flax interop: a Linen module run as a Haiku module (its
        # variables become Haiku parameters and state) and a Haiku function run
        # as a Linen module (flax.errors it expects)
        name="haiku",
        repo="google-deepmind/dm-haiku",
        commit="f4d858a5cbb29140855d68f81f5fd625e078a5ae",
        api="Linen",
        tests=("haiku/_src/flax",),
        deps=("jmp==0.0.4", "tabulate==0.9.0"),
        paths=("haiku",),
    ),
    Project(
        # Google's T5-family transformer components in Linen (T5, LongT5, MoE,
        # BERT, dual encoders, Perceiver AR): params with logical axes for
        # partitioning, nn.scan'd layer stacks, remat, relative position biases.
        # Test modules that import TensorFlow, gin or t5x fail to load under both.
        name="flaxformer",
        repo="google/flaxformer",
        commit="399ea3a85e9807ada653fd0de1a9de627eb0acde",
        api="Linen",
        tests=("flaxformer",),
        args=("--ignore=flaxformer/t5x", "-n", "2", "--dist", "loadfile"),
        deps=("chex==0.1.92", "immutabledict==4.2.1", "toolz==1.2.0", "aqtp==0.8.4"),
        paths=("flaxformer",),
    ),
    Project(
        # Accurate Quantized Training: quantized Linen dot_general/einsum layers,
        # their quantization state as variables, freezing for serving, and method
        # interception (the MNIST examples need tensorflow_datasets: not run)
        name="aqt",
        repo="google/aqt",
        commit="9d1667ebde057f474cf8d2c80d4e52c5670d6c8a",
        api="Linen",
        tests=(
            "aqt/jax/v2/flax/aqt_flax_test.py",
            "aqt/jax/v2/flax/freezer_test.py",
            "aqt/jax/v2/flax/intercept/aqt_intercept_methods_test.py",
        ),
        args=("-n", "2"),
        paths=("aqt",),
    ),
    Project(
        # equivariant networks for E(3) (atoms, molecules): its Linen layers take
        # IrrepsArray pytrees; the rest of its suite is pure JAX, Haiku and Equinox
        name="e3nn-jax",
        repo="e3nn/e3nn-jax",
        commit="04e761c8e9a42c339cc712fb8b9af85ddd618eab",  # 0.21.0
        api="Linen",
        tests=(
            "tests/_src/linear_flax_test.py",
            "tests/_src/batchnorm/bn_flax_test.py",
        ),
        deps=("sympy==1.14.0", "mpmath==1.3.0", "attrs==25.4.0"),
        paths=("e3nn_jax", "tests", "pyproject.toml"),
    ),
    Project(
        name="ott",  # optimal transport: neural OT (ICNNs, Monge gap, flow matching)
        repo="ott-jax/ott",
        commit="6aace50f673b877cc3394d0b53a24da0bbf11308",
        api="Linen+NNX",
        tests=("tests/neural", "tests/initializers/neural"),
        deps=(
            "jaxopt==0.8.5",
            "lineax==0.1.1",
            "equinox==0.13.8",
            "diffrax==0.7.2",
            "optimistix==0.1.0",
            "jaxtyping==0.3.11",
            "wadler_lindig==0.1.8",
            "chex==0.1.92",
            "toolz==1.2.0",
            "matplotlib==3.11.2",  # tests/conftest.py
            "pillow==13.0.0",
            "pyparsing==3.3.3",
            "cycler==0.12.1",
            "kiwisolver==1.5.1",
            "fonttools==4.68.0",
        ),
        paths=("src", "tests", "pyproject.toml"),
        pythonpath=("src",),
    ),
    Project(
        # variational quantum states: Linen and NNX models, checks flax.__version__
        name="netket",
        repo="netket/netket",
        commit="3b9e1c2865290d08d5df170661128a6b6c8d3939",
        api="Linen+NNX",
        tests=(
            "test/nn",
            "test/utils/test_frameworks.py",
            "test/models/test_mlp.py",
            "test/models/test_nn.py",
            "test/models/test_rbm.py",
            "test/variational/test_apply_operator.py",
        ),
        deps=(
            "numba==0.68.1",
            "llvmlite==0.50.0",
            "igraph==1.0.0",
            "texttable==1.7.2",
            "plum-dispatch==2.10.1",
            "beartype==0.23.1",
            "sparse==0.19.3",
            "orjson==3.13.0",
            "tqdm==4.70.1",
            "einops==0.8.2",
            "equinox==0.13.8",
            "jaxtyping==0.3.11",
            "wadler_lindig==0.1.8",
        ),
        paths=("netket", "test", "pyproject.toml"),
        generated=(("netket/_version.py", 'version = __version__ = "0.0.0"\n'),),
        alias_at_startup=True,  # its filterwarnings name netket.errors classes
    ),
    Project(
        # Keras 3 on its JAX backend with NNX on: Keras variables are nnx.Variable
        # subclasses with their own value property, layers are nnx objects
        name="keras",
        repo="keras-team/keras",
        commit="250b42181ce9f37df68319d8f4753ec89a349a43",  # v3.15.1
        api="NNX",
        tests=(
            "keras/src/backend/jax",
            "keras/src/backend/common",
            "keras/src/layers",
            "keras/src/models",
            "keras/src/trainers",
            "keras/src/saving",
            "keras/src/optimizers",
            "keras/src/random",
            "keras/src/callbacks",
            "keras/src/metrics",
            "keras/src/losses",
            "keras/src/quantizers",
            "keras/src/distribution",
            "keras/src/dtype_policies",
            "keras/src/initializers",
        ),
        # preprocessing layers are tf.data's (TensorFlow is not installed)
        args=(
            "-o",
            "addopts=",
            "-n",
            "2",
            "--dist",
            "loadfile",
            "--ignore=keras/src/layers/preprocessing",
        ),
        deps=(
            "namex==0.1.0",
            "h5py==3.16.0",
            "optree==0.20.0",
            "dm-tree==0.1.10",
            "pandas==3.1.1",
            "pillow==13.0.0",
            "PyYAML==6.0.4",
        ),
        paths=("keras", "conftest.py", "pyproject.toml"),
        alias_at_startup=True,  # `import keras` imports flax.nnx (conftest)
        env=(
            ("KERAS_BACKEND", "jax"),
            ("KERAS_NNX_ENABLED", "true"),
            ("KERAS_HOME", "{root}/.keras_home"),
        ),
    ),
    Project(
        # physics and RL: every state a flax.struct dataclass, policies and value
        # networks in Linen, checkpoints through flax.serialization and orbax
        name="brax",
        repo="google/brax",
        commit="0b96d056328d15ea7ebfd3ce07f42be72ec76e40",  # 0.14.2
        api="Linen",
        tests=(
            "brax/training/types_test.py",
            "brax/training/replay_buffers_test.py",
            "brax/training/agents/ppo/losses_test.py",
            "brax/training/agents/ppo/checkpoint_test.py",
            "brax/training/agents/sac/checkpoint_test.py",
            "brax/envs/wrappers/training_test.py",
            "brax/io/json_test.py",
            "brax/math_test.py",
            "brax/scan_test.py",
            "brax/base_test.py",
        ),
        deps=(
            "mujoco==3.8.1",
            "mujoco-mjx==3.8.1",
            "tensorboardX==2.6.5",
            "trimesh==5.2.0",
            "flask==3.1.3",
            "flask_cors==6.0.5",
            "jaxopt==0.8.5",
            "dm_env==1.6",
            "dm-tree==0.1.10",
            "transforms3d==0.4.2",
            "glfw==2.11.0",
        ),
        # its folders but barkour's assets (images and logs the mirror lacks)
        paths=(
            "brax/__init__.py",
            "brax/actuator.py",
            "brax/base.py",
            "brax/com.py",
            "brax/contact.py",
            "brax/fluid.py",
            "brax/kinematics.py",
            "brax/math.py",
            "brax/scan.py",
            "brax/test_utils.py",
            "brax/base_test.py",
            "brax/math_test.py",
            "brax/scan_test.py",
            "brax/envs",
            "brax/generalized",
            "brax/io",
            "brax/mjx",
            "brax/positional",
            "brax/spring",
            "brax/test_data",
            "brax/training",
            "brax/visualizer",
            "pyproject.toml",
        ),
    ),
    Project(
        # Gemma's LoRA and quantization for Linen, by method interception
        # (gemma.peft; the models, gemma.gm, need kauldron>=1.4.4, not on PyPI)
        name="gemma",
        repo="google-deepmind/gemma",
        commit="7691fd4e7f26c9ec5db38110dddb3addfab4d767",
        api="Linen",
        tests=("gemma/peft",),
        deps=("einops==0.8.1", "tqdm==4.67.1"),
        paths=("gemma/__init__.py", "gemma/peft", "pyproject.toml"),
    ),
    Project(
        # JAX reimplementations of RL environments: every state a flax.struct
        # dataclass, jitted and vmapped; rollouts of a Linen policy
        name="gymnax",
        repo="RobertTLange/gymnax",
        commit="086ad95697d5898b95ce3b14fa25f2b0bae4a1fc",
        api="Linen",
        tests=("tests",),
        deps=(
            "gymnasium==1.1.1",
            "farama-notifications==0.0.6",
            "cloudpickle==3.1.3",
            "chex==0.1.91",
            "toolz==1.0.0",
            "MinAtar==1.0.15",
            "seaborn==0.13.2",
            "matplotlib==3.11.2",
            "pandas==3.1.1",
            "contourpy==1.3.3",
            "cycler==0.12.1",
            "fonttools==4.68.0",
            "kiwisolver==1.5.1",
            "pyparsing==3.3.3",
        ),
        paths=("gymnax", "tests", "pyproject.toml"),
    ),
    Project(
        # Orbax's own checkpoint tests that build Flax objects: a TrainState,
        # flax.struct dataclasses, nnx.eval_shape targets, saved and restored
        # through the v0 handlers, CheckpointManager and the v1 API
        name="orbax",
        repo="google/orbax",
        commit="3ff7b24aa0e23db4a575f7dc4bc6f815008ac6fd",  # orbax-checkpoint 0.12.4
        api="Linen+NNX",
        tests=tuple(
            f"checkpoint/orbax/checkpoint/{f}"
            for f in (
                "_src/handlers/pytree_checkpoint_handler_test.py",
                "_src/handlers/standard_checkpoint_handler_test.py",
                "_src/tree/parts_of_test.py",
                "_src/tree/structure_utils_test.py",
                "_src/tree/utils_test.py",
                "checkpoint_manager_test.py",
                "experimental/v1/_src/handlers/pytree_handler_test.py",
                "experimental/v1/_src/testing/save_load_test.py",
                "transform_utils_test.py",
            )
        ),
        args=("-n", "2"),
        deps=(
            "chex==0.1.92",
            "toolz==1.2.0",
            "portpicker==1.6.0",
            "grain==0.2.18",
        ),
        paths=("checkpoint",),
        pythonpath=("checkpoint",),  # its source, not the installed orbax
        devices=8,
        # its tests are MultiProcessTests: one process of JAX's distributed runtime
        plugins=("single_process_distributed",),
    ),
    Project(
        # scico's learned imaging models: Linen networks (DnCNN, ResNet, UNet,
        # MoDL, ODP) built on flax.linen.module internals, a TrainState trainer
        # with its own checkpoints, parameter traversals and input pipelines
        name="scico",
        repo="lanl/scico",
        commit="b082d7b5ee37b5d3dcbb3a7136f4c8628042b8ea",
        api="Linen",
        tests=("scico/test/flax",),
        deps=("imageio==2.38.1", "tifffile==2026.3.3"),
        paths=("scico", "pyproject.toml"),
    ),
    Project(
        # NNX language models (Llama, Gemma 2 and 3, T5, ModernBERT) and their
        # attention layers, with generation loops under nnx.jit and orbax
        # checkpoints of nnx State
        name="jaxgarden",
        repo="ml-gde/jaxgarden",
        commit="0ab3a32b1c03560a0c8e77762f0eace3b860707e",
        api="NNX",
        tests=("tests",),
        # ModernBERT's test compares with a PyTorch model (PyTorch not installed)
        args=("--ignore=tests/models/test_modernbert.py",),
        deps=(
            "huggingface-hub==1.0.0",
            "tokenizers==0.22.1",
            "safetensors==0.6.2",
            "tqdm==4.67.1",
        ),
        paths=("jaxgarden", "tests", "pyproject.toml"),
    ),
    Project(
        # optax's own tests that build Linen models: gradient accumulation
        # (MultiSteps) of a Dense loss in several dtypes, and the power
        # iteration / matrix functions on a Linen MLP's parameters
        name="optax",
        repo="google-deepmind/optax",
        commit="2edbcbe2390da13983b92cbef94ac0460ecde1c5",
        api="Linen",
        tests=(
            "optax/_src/linear_algebra_test.py",
            "optax/transforms/_accumulation_test.py",
        ),
        paths=("optax", "pyproject.toml"),
    ),
    Project(
        # evolution strategies in JAX: every algorithm's state and params a
        # flax.struct dataclass, Linen networks as problems, learned algorithms
        # (LES, LGA, EvoTF) whose pickled Linen params are restored with
        # flax.serialization
        name="evosax",
        repo="RobertTLange/evosax",
        commit="d4b4127708cb2cd0cc906b910ddcd091013153a9",
        api="Linen",
        tests=("tests",),
        deps=(
            "dotmap==1.3.30",
            "matplotlib==3.11.2",
            "contourpy==1.3.3",
            "cycler==0.12.1",
            "fonttools==4.68.0",
            "kiwisolver==1.5.1",
            "pyparsing==3.3.3",
        ),
        paths=("evosax", "tests", "pyproject.toml"),
    ),
    Project(
        # cellular automata in NNX: perceive and update modules (convolutions,
        # MLPs, residual updates), neural CA and Lenia systems, a VAE, a
        # sample pool and a buffer
        name="cax",
        repo="maxencefaldor/cax",
        commit="474b785fa1f1dec9c58dfebdb2da15031ba25b08",
        api="NNX",
        tests=("tests",),
        paths=("src", "tests", "pyproject.toml"),
        pythonpath=("src",),
    ),
    Project(
        # Gaussian processes in NNX: kernels, mean functions, likelihoods and
        # variational families are nnx Modules whose hyperparameters are
        # Variable subclasses with constraints; fitting through nnx.split/merge
        # and optax; every gpjax function runs under beartype (its conftest's
        # jaxtyping import hook), and any warning is an error
        name="gpjax",
        repo="JaxGaussianProcesses/GPJax",
        commit="046d07a97a94b5aac67f58c8b1fa3828e2a37e40",
        api="NNX",
        tests=("tests",),
        # test_markdown runs the docs' code blocks (docs/ is not unpacked)
        args=("--ignore=tests/test_markdown.py",),
        deps=(
            "numpyro==0.22.0",
            "multipledispatch==1.0.0",
            "jaxtyping==0.3.11",
            "wadler_lindig==0.1.8",
            "beartype==0.23.1",
            "tqdm==4.70.1",
            "networkx==3.6.1",
        ),
        paths=("gpjax", "tests", "pyproject.toml"),
    ),
    Project(
        # Google's streaming sequence layer library in Linen: every layer's
        # step-by-step `step` checked against its whole-sequence `layer`
        # (combinators, conditioning, dense and normalization layers here)
        name="sequence-layers",
        repo="google/sequence-layers",
        commit="149b0990bb5281154b7d1e2838a66a26e39eb36a",  # the last on Python 3.11
        api="Linen",
        # four of its files (566 tests, ~20 min a run on two cores): its whole
        # JAX suite takes hours here, and five files compare with TensorFlow
        tests=tuple(
            f"sequence_layers/jax/{f}_test.py"
            for f in ("combinators", "conditioning", "dense", "normalization")
        ),
        deps=(
            "recurrentgemma==1.0.1",
            "sentencepiece==0.2.0",
            "einops==0.8.1",
            "jaxtyping==0.3.2",
            "wadler_lindig==0.1.7",
            "typeguard==2.13.3",
            "chex==0.1.91",
            "toolz==1.0.0",
        ),
        paths=("sequence_layers", "pyproject.toml"),
    ),
)


def source(project: Project) -> pathlib.Path:
    """The project's tree at its commit, unpacked once under the cache."""
    root = PROJECTS_CACHE / f"{project.name}-{project.commit[:12]}"
    if root.is_dir():
        return root
    mirror = MIRROR / project.repo.replace("/", "+") / "repo"
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        work = pathlib.Path(tmp) / "src"
        if mirror.is_dir():
            # one archive a path: given several, git archive may walk the whole
            # tree and stop at a blob the mirror lacks (a large asset elsewhere)
            archive = pathlib.Path(tmp) / "src.tar"
            for path in project.paths or (None,):
                with archive.open("wb") as out:
                    subprocess.run(
                        ["git", f"--git-dir={mirror}", "archive", project.commit]
                        + ([path] if path else []),
                        stdout=out,
                        check=True,
                    )
                with tarfile.open(archive) as tar:
                    tar.extractall(work, filter="data")
        else:
            url = f"https://github.com/{project.repo}"
            subprocess.run(["git", "clone", "--quiet", url, str(work)], check=True)
            subprocess.run(
                ["git", "-C", str(work), "checkout", "--quiet", project.commit],
                check=True,
            )
        for path, text in project.generated:
            (work / path).write_text(text)
        root.parent.mkdir(parents=True, exist_ok=True)
        work.rename(root)
    return root


def deps_dir(project: Project) -> pathlib.Path:
    """Where the project's extra test packages are installed: its own folder, as
    two projects may pin one package at two versions (typeguard 2 and 4)."""
    return DEPS / project.name


def install_deps(projects: Sequence[Project]) -> set[str]:
    """Installs each project's extra test packages into its folder (no
    dependencies); a folder whose packages differ from the pins is made anew.
    Returns the names of the projects whose folder was (re)made: their cached
    oracle runs saw other packages."""
    made: set[str] = set()
    for project in projects:
        target = deps_dir(project)
        marker = target / ".installed"
        wanted = "\n".join(sorted(project.deps)) + "\n"
        if marker.exists() and marker.read_text() == wanted:
            continue
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        if project.deps:
            cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
            cmd += ["--target", str(target), *project.deps]
            subprocess.run(cmd, check=True)
        marker.write_text(wanted)
        made.add(project.name)
    return made


def xml_path(project: Project, backend: str) -> pathlib.Path:
    """Where one run's junit XML is kept."""
    return (
        PROJECTS_CACHE
        / "results"
        / f"{project.name}-{project.commit[:12]}-{backend}.xml"
    )


def run_tests(project: Project, backend: str, timeout: float) -> pathlib.Path:
    """Runs the project's tests under one backend; returns the junit XML."""
    root = source(project)
    out = xml_path(project, backend)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    extra = ["-W", "ignore", *project.args, "--rootdir", str(root), *_own_config(root)]
    extra += [arg for plugin in project.plugins for arg in ("-p", plugin)]
    cmd = pytest_command(project.tests, out, backend, tb="short", extra=extra)
    startup = [str(STARTUP)] if backend == "lens" and project.alias_at_startup else []
    startup += [str(PLUGINS)] if project.plugins else []
    env = pytest_env(
        backend,
        first=[*startup, *(str(root / f) for f in project.pythonpath or (".",))],
        last=[str(deps_dir(project))],
    )
    env.update((k, v.format(root=root)) for k, v in project.env)
    if project.devices:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={project.devices}"
    print(f"[projects] {project.name} under {backend}", flush=True)
    if backend == "lens":  # which lens this run measured, for the table
        out.with_suffix(".lens-commit").write_text(lens_commit())
    try:
        subprocess.run(
            cmd,
            cwd=root,
            env=env,
            timeout=timeout,
            check=False,
            stdout=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        print(
            f"[projects] {project.name} under {backend}: stopped after {timeout:.0f} s"
        )
    return out


def _own_config(root: pathlib.Path) -> list[str]:
    """``-c <empty ini>`` for a project with no pytest settings of its own: pytest
    would otherwise walk up to lens's (its addopts, its doctests)."""
    found = (root / "pytest.ini").exists() or any(
        marker in (root / name).read_text()
        for name, marker in (
            ("pyproject.toml", "[tool.pytest"),
            ("setup.cfg", "[tool:pytest]"),
            ("tox.ini", "[pytest]"),
        )
        if (root / name).exists()
    )
    if found:
        return []
    ini = root.parent / "results" / "empty-pytest.ini"
    ini.parent.mkdir(parents=True, exist_ok=True)
    ini.write_text("[pytest]\n")
    return ["-c", str(ini)]


@dataclasses.dataclass
class Outcome:
    """One test's result and, when it did not pass, its first error line."""

    status: str  # passed, failed, skipped
    error: str = ""


_ERROR_LINE = re.compile(r"^E\s+(\w[\w.]*(Error|Exception|Exit|Warning)\b.*)$")


def _first_error(case: ET.Element) -> str:
    """The exception line of a failure or error (``Type: message``), shortened."""
    for child in case:
        if child.tag not in {"failure", "error"}:
            continue
        for line in (child.text or "").splitlines():
            match = _ERROR_LINE.match(line.strip())
            if match:
                return _short(match.group(1))
        return _short(child.get("message", "") or child.tag)
    return ""


def _short(text: str) -> str:
    text = re.sub(r"0x[0-9a-f]+", "0x…", text.strip())
    return text if len(text) <= 160 else text[:157] + "..."


def read_outcomes(xml: pathlib.Path) -> dict[str, Outcome]:
    """``{test id: outcome}`` from a junit XML (empty when the run wrote none)."""
    outcomes: dict[str, Outcome] = {}
    if not xml.exists():
        return outcomes
    for case in ET.parse(xml).iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            outcomes[test_id] = Outcome("failed", _first_error(case))
        elif "skipped" in tags:
            outcomes[test_id] = Outcome("skipped")
        else:
            outcomes[test_id] = Outcome("passed")
    return outcomes


def blockers(
    flax: dict[str, Outcome], lens: dict[str, Outcome]
) -> collections.Counter[str]:
    """What stopped the tests that pass under flax and not under lens, by count.

    A test that lens never ran is put down to its file's collection error when
    there is one.
    """
    file_errors = {  # a collection error's id is "::<module>"
        tid[2:]: o.error
        for tid, o in lens.items()
        if o.status == "failed" and tid.startswith("::")
    }
    counts: collections.Counter[str] = collections.Counter()
    for tid, outcome in flax.items():
        if outcome.status != "passed":
            continue
        got = lens.get(tid)
        if got is not None and got.status == "passed":
            continue
        if got is None:
            module = tid.split("::")[0]
            error = next(
                (
                    e
                    for m, e in file_errors.items()
                    if module == m or module.startswith(m + ".")
                ),
                "not run (the lens run stopped early?)",
            )
            counts[error] += 1
        else:
            counts[got.error or got.status] += 1
    return counts


@dataclasses.dataclass
class Row:
    """One project's line of the table."""

    project: Project
    lens_commit: str  # the lens the lens run measured
    tests: int
    flax: int
    lens: int
    both: int
    blocked: collections.Counter[str]


def row(project: Project) -> Row:
    """The counts of one project from its cached XMLs."""
    flax = read_outcomes(xml_path(project, "flax"))
    lens = read_outcomes(xml_path(project, "lens"))
    passed = {t for t, o in flax.items() if o.status == "passed"}
    lens_passed = {t for t, o in lens.items() if o.status == "passed"}
    stamp = xml_path(project, "lens").with_suffix(".lens-commit")
    return Row(
        project,
        stamp.read_text().strip() if stamp.exists() else "?",
        len(flax),
        len(passed),
        len(lens_passed),
        len(passed & lens_passed),
        blockers(flax, lens),
    )


def table(rows: Sequence[Row], top: int = 3) -> str:
    """The markdown table: per project, tests, passes, and what blocked lens."""
    lines = [
        "| project | API | commit | tests | pass under flax | pass under lens "
        "| what blocked (tests: first error) | lens |",
        "| --- | --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    totals = [0, 0, 0]
    for r in rows:
        totals = [totals[0] + r.tests, totals[1] + r.flax, totals[2] + r.both]
        blocked = "; ".join(
            f"{n}: `{e.replace('|', '/').replace('`', '')}`"
            for e, n in r.blocked.most_common(top)
        )
        p = r.project
        cells = [
            f"[{p.name}](https://github.com/{p.repo})",
            p.api,
            f"`{p.commit[:10]}`",
            str(r.tests),
            str(r.flax),
            f"{r.both}" + (f" ({100 * r.both / r.flax:.0f}%)" if r.flax else ""),
            blocked or "-",
            f"`{r.lens_commit}`",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    pct = f" ({100 * totals[2] / totals[1]:.0f}%)" if totals[1] else ""
    lines.append(
        f"| **total** | | | **{totals[0]}** | **{totals[1]}** | **{totals[2]}{pct}** "
        "| | |"
    )
    return "\n".join(lines)


_DOC_ROW = re.compile(r"^\| \[(?P<name>[^\]]+)\]\(")
_BLOCKED = re.compile(r"(\d+): `([^`]*)`")


def kept_rows(doc: pathlib.Path = DOC) -> dict[str, Row]:
    """The rows the page's table has, by project name, for the projects at the
    commit the row names: what ``--write`` keeps for a project with no results
    on this machine."""
    known = {p.name: p for p in PROJECTS}
    current = doc.read_text() if doc.exists() else ""
    start, end = current.find(BEGIN), current.find(END)
    rows: dict[str, Row] = {}
    for line in current[start:end].splitlines() if 0 <= start < end else []:
        match = _DOC_ROW.match(line)
        project = known.get(match.group("name")) if match else None
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if project is None or len(cells) != 8:
            continue
        if cells[2].strip("`") != project.commit[:10]:
            continue  # measured at another commit of the project
        blocked = collections.Counter(
            {error: int(n) for n, error in _BLOCKED.findall(cells[6])}
        )
        rows[project.name] = Row(
            project,
            cells[7].strip("`"),
            int(cells[3]),
            int(cells[4]),
            int(cells[5].split()[0]),
            int(cells[5].split()[0]),
            blocked,
        )
    return rows


def write_doc(text: str, doc: pathlib.Path = DOC) -> None:
    """Replaces the part of ``doc`` between the projects markers with ``text``."""
    current = doc.read_text()
    start, end = current.find(BEGIN), current.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{doc} has no '{BEGIN}' ... '{END}' markers to write between")
    doc.write_text(current[: start + len(BEGIN)] + "\n" + text + "\n" + current[end:])


def main(argv: Sequence[str] | None = None) -> str:
    """Runs the projects asked for (all by default) and prints the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("names", nargs="*", help="projects to run (default: all)")
    parser.add_argument(
        "--timeout", type=float, default=1200.0, help="per run, seconds"
    )
    parser.add_argument(
        "--rerun-flax", action="store_true", help="run the oracle again"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="table from the XMLs"
    )
    parser.add_argument("--write", action="store_true", help=f"update {DOC.name}")
    args = parser.parse_args(argv)
    known = {p.name: p for p in PROJECTS}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"unknown project(s) {unknown}; known: {sorted(known)}")
    chosen = [known[n] for n in args.names] if args.names else list(PROJECTS)
    if not args.report_only:
        new_deps = install_deps(chosen)
        for project in chosen:
            flax_xml = xml_path(project, "flax")
            if args.rerun_flax or project.name in new_deps or not flax_xml.exists():
                installed = _installed_flax_version()
                if installed != FLAX_VERSION:
                    raise SystemExit(
                        f"the oracle run needs flax=={FLAX_VERSION} installed "
                        f"(found {installed})"
                    )
                run_tests(project, "flax", args.timeout)
            run_tests(project, "lens", args.timeout)
    kept = kept_rows() if args.write else {}
    rows = [
        row(p) if xml_path(p, "flax").exists() or p.name not in kept else kept[p.name]
        for p in PROJECTS
        if p in chosen or args.write
    ]
    text = table(rows)
    caption = (
        f"\nRun by `python -m parity.projects` against flax {FLAX_VERSION}; *lens* "
        "is the lens commit each lens run measured."
    )
    print(text + caption)
    if args.write:
        write_doc(text + "\n" + caption.strip())
    return text


if __name__ == "__main__":
    main()
