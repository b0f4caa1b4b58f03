"""Variables and state: the boxes a graph's values live in, and the mappings of them.

- ``variable``: ``Variable`` and its types (``Param``, ``BatchStat``, ``Cache``,
  ``Intermediate``, ...), their metadata, pytree form and mutation checks;
- ``state``: ``State`` and ``FlatState``, nested and flat mappings of a graph's
  variables, and pure dicts (flax's ``statelib``);
- ``filters``: filters over paths and variable types (flax's ``filterlib``);
- ``defaults``: ``var_defaults`` (metadata defaults a block of code gives new variables);
- ``static``: ``StaticValue``, a hashable box for a static value in a pytree;
- ``hijax``: hijax variables (mutable array references inside a trace);
- ``hooks``: the ``on_get_value``/``on_set_value`` style metadata hooks;
- ``names``: the variable type <-> collection name registry;
- ``refs``: ``jax.Ref``-backed variables and their update protocol;
- ``trace``: which trace a variable was made in (mutation checks).

flax.nnx's ``variablelib``, ``statelib`` and ``filterlib`` are facades over this
package (lens/_facades.py).
"""
