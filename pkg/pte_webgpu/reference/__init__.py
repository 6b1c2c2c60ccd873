"""The CPU reference: a pure-Python interpreter of whole programs (delegate calls,
kernels, moves). Each op's reference is defined beside its kernel in ops/."""
