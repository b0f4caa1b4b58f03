"""Instruments: what lens measures about a jitted step, as data first.

Each instrument makes plain records a test can check (why a function was traced
again, where its compile time goes), and lens.display draws them (text, rich,
script-free HTML). Public names: ``lens.recompiles``, ``lens.compile_time``,
``lens.memory`` and ``lens.sharding``.
"""
