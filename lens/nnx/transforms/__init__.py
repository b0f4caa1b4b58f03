"""JAX-style transforms over eager objects, in flax.nnx's rooms: ``general`` (the
recipe they share), ``autodiff``, ``compilation``, ``iteration`` and
``transforms``."""
