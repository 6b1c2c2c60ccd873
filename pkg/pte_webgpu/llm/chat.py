"""Chat templates without Jinja: the ChatML family, recognised from the template text.

Supported: ChatML templates (``<|im_start|>ROLE\\nCONTENT<|im_end|>\\n`` per message,
``<|im_start|>assistant\\n`` as the generation prompt), with or without a default system
message that is inserted when the conversation does not start with one (SmolLM2, Qwen2 and
others write it as ``<|im_start|>system\\n...<|im_end|>`` inside the template; it is read
from there). Anything else raises UnsupportedError naming what was found.
"""

from __future__ import annotations

import re

from ..errors import InputError, UnsupportedError

START, END = "<|im_start|>", "<|im_end|>"
# A default system block written as a Jinja string literal inside the template.
_DEFAULT_SYSTEM = re.compile(re.escape(START) + r"system(?:\n|\\n)(.*?)" + re.escape(END), re.S)
# Jinja string-literal escapes that may appear in the default message.
_ESCAPES = {"n": "\n", "t": "\t", "'": "'", '"': '"', "\\": "\\"}


class ChatTemplate:
    """``render(messages, add_generation_prompt=True) -> str`` for a ChatML template."""

    kind = "chatml"

    def __init__(self, default_system: str | None):
        self.default_system = default_system

    @classmethod
    def from_template(cls, template: str) -> "ChatTemplate":
        if not template:
            raise UnsupportedError("the model has no chat template")
        if START not in template or END not in template:
            raise UnsupportedError(
                "chat template is not ChatML (no <|im_start|>/<|im_end|>); only ChatML templates "
                f"are supported. It begins: {template[:120]!r}"
            )
        if "tools" in template or "tool_call" in template:
            # Tool-calling variants add branches we do not interpret.
            raise UnsupportedError("ChatML templates with tool calling are not supported")
        found = _DEFAULT_SYSTEM.search(template)
        default = None
        if found and "!= 'system'" in template.replace('"', "'"):
            default = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), found.group(1))
        return cls(default)

    def render(self, messages, *, add_generation_prompt: bool = True) -> str:
        out = []
        for n, message in enumerate(messages):
            try:
                role, content = message["role"], message["content"]
            except (TypeError, KeyError) as exc:
                raise InputError(f"message {n} needs 'role' and 'content': {message!r}") from exc
            if not isinstance(role, str) or not isinstance(content, str):
                raise InputError(f"message {n}: role and content must be strings")
            if n == 0 and role != "system" and self.default_system is not None:
                out.append(f"{START}system\n{self.default_system}{END}\n")
            out.append(f"{START}{role}\n{content}{END}\n")
        if add_generation_prompt:
            out.append(f"{START}assistant\n")
        return "".join(out)
