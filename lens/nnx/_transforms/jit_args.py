"""Which arguments of an ``nnx.jit`` function are static or donated
(``static_argnums``/``static_argnames``, ``donate_argnums``/``donate_argnames``,
checked against the function's parameters as ``jax.jit`` does), and one call's
split of its arguments by them.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from lens._argnums import argnames, argnums


def check_static(value: Any, where: str) -> None:
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"Non-hashable static arguments are not supported: {where} is a "
            f"{type(value).__name__}, and a static argument is part of the cache "
            "key (a mutable one would give stale results).\nPass it as a normal "
            "argument, or as a hashable value (a tuple instead of a list or array)."
        ) from None


@dataclasses.dataclass(frozen=True)
class ArgSpecs:
    """Which arguments are static or donated, by position and by name."""

    static: frozenset[int]
    static_names: frozenset[str]
    donate: frozenset[int]
    donate_names: frozenset[str]
    # positions of the parameters named in static_argnames / donate_argnames
    # (those arguments may also come by keyword, or not at all)
    named: frozenset[int] = frozenset()

    def positions(self, which: frozenset[int], n: int) -> frozenset[int]:
        """``which`` among ``n`` positional arguments (a name may come by keyword)."""
        return frozenset(i % n for i in which if -n <= i < n)

    @classmethod
    def of(cls, f: Callable[..., Any], options: dict[str, Any]) -> ArgSpecs:
        static = frozenset(
            argnums(options["static_argnums"], "nnx.jit: static_argnums")
        )
        donate = frozenset(
            argnums(options["donate_argnums"], "nnx.jit: donate_argnums")
        )
        specs = cls(
            static,
            frozenset(argnames(options["static_argnames"])),
            donate,
            frozenset(argnames(options["donate_argnames"])),
        )
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):
            return specs
        return specs._checked(f, list(sig.parameters.values()))

    def _checked(self, f: Callable[..., Any], params: list[Any]) -> ArgSpecs:
        """Checks the specs against ``f``'s parameters, and makes an argument named
        in static_argnames (donate_argnames) and passed by position static
        (donated) too."""
        name = getattr(f, "__qualname__", f)
        positional = [
            p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if not any(p.kind is p.VAR_POSITIONAL for p in params):
            for i in self.static | self.donate:
                if i >= len(positional) or i < -len(positional):
                    what, which = (
                        ("static_argnums", self.static)
                        if i in self.static
                        else ("donate_argnums", self.donate)
                    )
                    raise ValueError(
                        f"Jitted function has {what}={tuple(sorted(which))}, but "
                        f"only accepts {len(positional)} positional arguments.\n"
                        f"nnx.jit of {name!r}: give positions of its parameters."
                    )
        # as jax.jit: names of positional-only parameters, then names it lacks
        only = {p.name for p in params if p.kind is p.POSITIONAL_ONLY}
        names = {
            p.name
            for p in params
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
        for what, given in (
            ("static_argnames", self.static_names),
            ("donate_argnames", self.donate_names),
        ):
            if bad := set(given) & only:
                raise ValueError(
                    f"Jitted function has invalid argnames {bad} in {what}. These "
                    f"are positional-only\nnx.jit of {name!r}: name them by "
                    "position (static_argnums, donate_argnums) instead."
                )
            if not takes_any and (bad := set(given) - names):
                raise ValueError(
                    f"Jitted function has invalid argnames {bad} in {what}. "
                    f"Function does not take these args.\nnx.jit of {name!r}: its "
                    f"parameters are {sorted(names)}."
                )
        # as jax.jit does, a position names its parameter and a name its position,
        # so an argument is static (donated) however it is passed, or left out
        keyword = [p.name for p in positional if p.kind is p.POSITIONAL_OR_KEYWORD]
        keyword += [None] * (len(positional) - len(keyword))

        def name_of(i: int) -> str | None:
            return keyword[i] if -len(positional) <= i < len(positional) else None

        static_named = {
            i for i, p in enumerate(positional) if p.name in self.static_names
        }
        donate_named = {
            i for i, p in enumerate(positional) if p.name in self.donate_names
        }
        by_position = {
            i % len(positional)
            for i in self.static | self.donate
            if -len(positional) <= i < len(positional)
        }
        return dataclasses.replace(
            self,
            static=self.static | static_named,
            static_names=self.static_names
            | {n for n in map(name_of, self.static) if n is not None},
            donate=self.donate | donate_named,
            donate_names=self.donate_names
            | {n for n in map(name_of, self.donate) if n is not None},
            named=frozenset(
                (static_named - self.static)
                | (donate_named - self.donate)
                | by_position
            ),
        )


@dataclasses.dataclass(frozen=True)
class JitCall:
    """One call's arguments: positional then dynamic keyword values, which are
    static, the keyword names, the static keywords, and the cache signature."""

    all_args: tuple[Any, ...]
    stat: frozenset[int]
    n: int
    kw_names: tuple[str, ...]
    static_kw: tuple[tuple[str, Any], ...]

    @property
    def signature(self) -> Any:
        return (self.kw_names, self.static_kw)


NOT_PASSED = (
    "static_argnums",
    "static_argnames",
    "donate_argnums",
    "donate_argnames",
    "in_shardings",  # prefixes over objects: applied by jit_shardings
    "out_shardings",
)
