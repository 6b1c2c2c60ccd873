"""The CPU reference: a pure-Python interpreter of whole programs (delegate calls,
kernels, moves), in float64 with each result rounded to its tensor's dtype. Each op's
reference is defined beside its kernel in ops/ (one op, one place); this runs them.

    from pte_webgpu import reference
    outputs = reference.run_program(program.file, inputs)
"""

from .interpreter import (
    from_tensor,
    round_to,
    run_delegate,
    run_op,
    run_op_outputs,
    run_program,
    supported_ops,
    to_tensor,
)

__all__ = ["from_tensor", "round_to", "run_delegate", "run_op", "run_op_outputs", "run_program",
           "supported_ops", "to_tensor"]
