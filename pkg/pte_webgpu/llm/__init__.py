"""Language models on pte_webgpu: tokenizer, chat template, sampling, generation.

Pure Python (Pyodide-safe). ``generate`` is unfinished until the runtime runs decoders.
"""

from .chat import ChatTemplate
from .tokenizer import StreamDecoder, Tokenizer

__all__ = ["ChatTemplate", "StreamDecoder", "Tokenizer"]
