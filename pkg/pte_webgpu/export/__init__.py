"""Host-only export tools (torch, executorch, gguf: the optional extra ``[export]``).

Nothing in the runtime imports this package; it runs on a developer machine or in CI to
turn model files into ``.pte`` programs and their side files.
"""
