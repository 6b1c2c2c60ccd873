"""Language models on pte_webgpu: tokenizers, chat templates, sampling, generation.

Pure Python (Pyodide-safe); chat templates need jinja2, imported when one is compiled.
"""

from .chat_template import ChatTemplate
from .tokenizer import StreamDecoder, Tokenizer

__all__ = ["ChatTemplate", "StreamDecoder", "Tokenizer"]
