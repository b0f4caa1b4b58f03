"""Variables beyond the ``Variable`` class (lens/nnx/variablelib.py, flax's path).

- ``defaults``: ``var_defaults`` (metadata defaults a block of code gives new variables);
- ``static``: ``StaticValue``, a hashable box for a static value in a pytree;
- ``hijax``: hijax variables (mutable array references inside a trace);
- ``hooks``: the ``on_get_value``/``on_set_value`` style metadata hooks;
- ``names``: the variable type <-> collection name registry;
- ``refs``: ``jax.Ref``-backed variables and their update protocol;
- ``trace``: which trace a variable was made in (mutation checks).
"""
