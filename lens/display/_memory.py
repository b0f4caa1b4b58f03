"""``lens.memory``'s view: one stacked bar of a step's bytes by category, the
categories with their bytes and shares, argument bytes per module, the
donation hints. Script-free HTML with inline styles (trusted or not, nbconvert,
GitHub); the bar is a row of inline-block segments with a scale under it.
"""

from __future__ import annotations

from typing import Any

from lens._instruments.memory import (
    GRADIENTS,
    INPUTS,
    OPTIMIZER,
    OUTPUTS,
    PARAMETERS,
    RNG,
    TEMPORARIES,
    Memory,
)
from lens._instruments.units import fmt_bytes
from lens.display._base import View, e

# translucent accents that read on light and dark themes alike
COLOURS = {
    PARAMETERS: "rgba(42,122,176,.75)",
    OPTIMIZER: "rgba(120,80,180,.7)",
    RNG: "rgba(128,128,128,.5)",
    INPUTS: "rgba(46,125,50,.7)",
    GRADIENTS: "rgba(178,106,0,.75)",
    TEMPORARIES: "rgba(198,40,40,.6)",
    OUTPUTS: "rgba(0,150,136,.6)",
}
OTHER = "rgba(160,130,40,.6)"
MEANING = {
    PARAMETERS: "the trainable parameters passed in (nnx Param, Linen 'params')",
    OPTIMIZER: "the optimizer's state passed in (Adam's moments, the step count)",
    RNG: "random-number keys and counters",
    INPUTS: "the other arguments: the batch, labels, flags",
    GRADIENTS: "one gradient per trainable parameter, if the step differentiates; "
    "an estimate, at most the compiler's temporaries",
    TEMPORARIES: "the rest of the compiler's temporaries: activations kept for the "
    "backward pass, intermediate results, scratch",
    OUTPUTS: "outputs in buffers of their own (not reusing a donated argument's)",
}


class MemoryView(View):
    """A :class:`~lens._instruments.memory.Memory`, drawn."""

    def __init__(self, memory: Memory):
        self.memory = memory

    def text(self) -> str:
        return self.memory.text()

    def html_body(self) -> str:
        m = self.memory
        cats = {c: b for c, b in m.categories().items() if b > 0}
        total = sum(cats.values()) or 1
        head = (
            f"<div class='c'>Memory of {e(m.function)}: {e(fmt_bytes(total))}</div>"
            f"<div class='m'>XLA: arguments {e(fmt_bytes(m.argument_bytes))}, new "
            f"outputs {e(fmt_bytes(m.output_bytes - m.alias_bytes))}, temporaries "
            f"{e(fmt_bytes(m.temp_bytes))}"
            + (f", peak {e(fmt_bytes(m.peak_bytes))}" if m.peak_bytes else "")
            + "</div>"
        )
        segments = "".join(
            f"<span title='{e(c)}: {e(fmt_bytes(b))} ({b / total:.1%})' "
            f"style='display:inline-block;height:14px;width:{100 * b / total:.3f}%;"
            f"background:{COLOURS.get(c, OTHER)}'></span>"
            for c, b in cats.items()
        )
        bar = (
            "<div style='display:flex;max-width:640px;margin:4px 0 0 0;"
            "border:1px solid rgba(128,128,128,.5);line-height:0'>"
            f"{segments}</div>"
            "<div style='display:flex;justify-content:space-between;max-width:642px'>"
            f"<span class='m'>0</span><span class='m'>{e(fmt_bytes(total // 2))}</span>"
            f"<span class='m'>{e(fmt_bytes(total))}</span></div>"
        )
        rows = "".join(
            "<tr>"
            f"<td><span style='display:inline-block;width:10px;height:10px;"
            f"background:{COLOURS.get(c, OTHER)}'></span></td>"
            f"<td><span title='{e(MEANING.get(c, 'a variable collection passed in'))}'"
            f" style='cursor:help'>{e(c)}</span></td>"
            f"<td style='text-align:right'>{e(fmt_bytes(b))}</td>"
            f"<td style='text-align:right' class='m'>{b / total:.1%}</td></tr>"
            for c, b in cats.items()
        )
        table = f"<table>{rows}</table>"
        modules = m.by_module()
        mod_html = ""
        if modules:
            names = [c for c in cats if any(c in r for r in modules.values())]
            head_row = "".join(
                f"<th style='text-align:right'>{e(c)}</th>" for c in names
            )
            body = "".join(
                f"<tr><td>{e(mod)}</td>"
                + "".join(
                    f"<td style='text-align:right'>{e(fmt_bytes(row.get(c, 0)))}</td>"
                    for c in names
                )
                + "</tr>"
                for mod, row in list(modules.items())[:24]
            )
            more = (
                f"<div class='m'>… and {len(modules) - 24} more modules</div>"
                if len(modules) > 24
                else ""
            )
            mod_html = (
                "<div class='m' style='margin-top:4px'>arguments by module</div>"
                f"<table><tr><th>module</th>{head_row}</tr>{body}</table>{more}"
            )
        hints = "".join(
            f"<div class='hint'>donate {e(d.argument)}"
            + (f" (donate_argnums={d.position})" if d.position is not None else "")
            + f": saves {e(fmt_bytes(d.bytes))}; an output of the same shape and "
            "dtype can reuse its buffers</div>"
            for d in m.donations
        )
        return f"{head}{bar}{table}{mod_html}{hints}"

    def rich(self) -> Any:
        from rich.text import Text

        return Text(self.text())
