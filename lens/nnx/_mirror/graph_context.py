"""flax.nnx's graph-context internals under their flax names: ``GraphContext``
and ``GRAPH_CONTEXT`` (the open update, split and merge contexts and the
graph-mode stacks of this thread), ``StaticCache`` and ``static_cache``.

lens keeps that state in contextvars (per thread and per asyncio task, see
:mod:`lens.nnx._mirror.contexts` and :mod:`lens.nnx._graph.mode`); ``GRAPH_CONTEXT``
reads them, so code written against flax's object sees lens's live state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, MutableMapping
from typing import Any, NamedTuple

from lens._facades import show_at_flax_paths
from lens.nnx._graph.defs import GraphDef
from lens.nnx._graph.mode import set_graph_mode, set_graph_updates
from lens.nnx._mirror.contexts import (
    MERGE_CONTEXTS,
    SPLIT_CONTEXTS,
    TMP_STATIC_CACHE,
    IndexMap,
    RefMap,
    UpdateContext,
    _stacks,
)
from lens.nnx._variables.variable import Variable
from lens.typing import PathParts


class StaticCache(NamedTuple):
    """What a cached partial keeps of one split: the graphdef going in, the one
    coming out (each node its own outer index), the leaf paths, the Variables,
    and the maps between objects and indices."""

    graphdef: GraphDef[Any]
    final_graphdef: GraphDef[Any]
    paths: tuple[PathParts, ...]
    variables: list[Variable[Any]]
    new_ref_index: RefMap
    new_index_ref: IndexMap

    @staticmethod
    def create(
        graphdef: GraphDef[Any],
        paths: tuple[PathParts, ...],
        variables: list[Variable[Any]],
        new_ref_index: RefMap,
    ) -> StaticCache:
        """The cache of one split: ``final_graphdef`` and ``new_index_ref`` are
        derived from the others."""
        return StaticCache(
            graphdef=graphdef,
            final_graphdef=graphdef.with_same_outer_index(),
            paths=paths,
            variables=variables,
            new_ref_index=new_ref_index,
            new_index_ref=IndexMap.from_refmap(new_ref_index),
        )


class GraphContext:
    """The graph state of a thread, with flax.nnx's fields: the open update
    contexts by tag, the open split and merge contexts, the static cache being
    handed over, whether one is in use, and the graph-mode stacks.

    ``GraphContext(...)`` is a record of the values given; ``GRAPH_CONTEXT`` is
    the live one, whose attributes read lens's contextvars.
    """

    def __init__(
        self,
        update_context_stacks: dict[Any, list[UpdateContext]] | None = None,
        ref_index_stack: list[Any] | None = None,
        index_ref_stack: list[Any] | None = None,
        tmp_static_cache: MutableMapping[Any, StaticCache] | None = None,
        caching: bool = False,
        graph_mode_stack: list[bool] | None = None,
        graph_updates_stack: list[bool] | None = None,
    ):
        self.update_context_stacks = update_context_stacks or {}
        self.ref_index_stack = ref_index_stack or []
        self.index_ref_stack = index_ref_stack or []
        self.tmp_static_cache = tmp_static_cache
        self.caching = caching
        self.graph_mode_stack = graph_mode_stack or []
        self.graph_updates_stack = graph_updates_stack or []

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(update_context_stacks="
            f"{self.update_context_stacks!r}, graph_mode_stack="
            f"{self.graph_mode_stack!r}, graph_updates_stack="
            f"{self.graph_updates_stack!r})"
        )


class _LiveGraphContext(GraphContext):
    """``GRAPH_CONTEXT``: this thread's (and task's) graph state; each
    attribute reads lens's contextvars."""

    def __init__(self) -> None:
        pass

    @property
    def update_context_stacks(self) -> dict[Any, list[UpdateContext]]:
        """``{tag: [UpdateContext, ...]}`` of the open ``update_context``\\ s."""
        return _stacks()

    @property
    def ref_index_stack(self) -> list[Any]:
        """The open ``split_context``\\ s, innermost last."""
        return list(SPLIT_CONTEXTS.get())

    @property
    def index_ref_stack(self) -> list[Any]:
        """The open ``merge_context``\\ s, innermost last."""
        return list(MERGE_CONTEXTS.get())

    @property
    def tmp_static_cache(self) -> MutableMapping[Any, StaticCache] | None:
        """The cache ``static_cache(...)`` hands to the next update context."""
        return TMP_STATIC_CACHE.get()

    @property
    def caching(self) -> bool:
        """Whether an update context that holds a static cache is open."""
        return any(
            ctx.static_cache is not None
            for stack in _stacks().values()
            for ctx in stack
        )

    @property
    def graph_mode_stack(self) -> list[bool]:
        """``set_graph_mode``'s stack of values."""
        return set_graph_mode.get_stack()

    @property
    def graph_updates_stack(self) -> list[bool]:
        """``set_graph_updates``'s stack of values."""
        return set_graph_updates.get_stack()


GRAPH_CONTEXT: GraphContext = _LiveGraphContext()


@contextlib.contextmanager
def static_cache(
    static_cache: MutableMapping[Any, StaticCache],
) -> Iterator[None]:
    """Hands ``static_cache`` to the next ``update_context`` opened inside the
    block (its ``UpdateContext.static_cache``); inside a context that already
    caches, does nothing.

    Raises:
        ValueError: no update context took the cache.
    """
    if GRAPH_CONTEXT.caching:
        yield
        return
    token = TMP_STATIC_CACHE.set(static_cache)
    try:
        yield
    except BaseException:
        TMP_STATIC_CACHE.reset(token)
        raise
    left = TMP_STATIC_CACHE.get()
    TMP_STATIC_CACHE.reset(token)
    if left is not None:
        raise ValueError(
            "GRAPH_CONTEXT.tmp_static_cache should be None, no context "
            "consumed it.\nOpen an nnx.update_context(tag) (a transform opens "
            "one) inside nnx.graphlib.static_cache(...)."
        )


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
