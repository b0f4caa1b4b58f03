"""The arithmetic lens.nn's and lens.nnx's layers share: dtype rules, normalization
statistics, dense and conv contractions.

Both layer families (Linen-style modules and eager nnx objects) compute the same
numbers for the same parameters; this package holds that arithmetic once, below both,
so neither imports the other's internals. It knows nothing of modules or variables.
"""
