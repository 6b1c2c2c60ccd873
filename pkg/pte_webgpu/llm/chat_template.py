"""Chat templates: the Jinja template a GGUF carries (``tokenizer.chat_template``), rendered
as transformers' ``apply_chat_template(..., tokenize=False)`` renders it (``jinja_env.py``).

``render(messages, add_generation_prompt=True, **variables)`` gives the template
``messages`` (dicts; keys whose value is None dropped, as transformers does), ``tools`` and
``documents`` (None), ``add_generation_prompt``, the tokenizer's ``bos_token``,
``eos_token``, ``unk_token`` and ``pad_token`` (those it has) and any ``variables``.
The text is then encoded without adding BOS/EOS (the template writes them), as
transformers does. Any problem is a ``ChatTemplateError`` naming the template, the line
where there is one, and the problem (a syntax error, an error while rendering, or the
template's own ``raise_exception`` message).
"""

from __future__ import annotations

from ..errors import ChatTemplateError, InputError, UnsupportedError

SPECIAL_NAMES = ("bos", "eos", "unk", "pad")


def _plain(value, where: str):
    """A copy of ``value`` made of JSON types only (what a template may be given)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    raise InputError(f"{where}: {type(value).__name__} values cannot go into a chat template "
                     "(str, numbers, bools, None, lists and dicts can)")


def _template_line(exc: BaseException) -> int | None:
    """The template line an error was raised at (Jinja puts template frames in the traceback)."""
    line, tb = getattr(exc, "lineno", None), exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


class ChatTemplate:
    """A compiled chat template."""

    def __init__(self, source: str, *, name: str = "tokenizer.chat_template",
                 special_tokens: dict | None = None):
        if not isinstance(source, str) or not source.strip():
            raise ChatTemplateError(name, "the model has no chat template")
        self.source, self.name = source, name
        self.special_tokens = {k: v for k, v in (special_tokens or {}).items() if v is not None}
        try:
            from . import jinja_env
        except ImportError as exc:  # pragma: no cover - jinja2 is a dependency
            raise UnsupportedError(f"chat templates need jinja2 ({exc})") from None
        self._jinja = jinja_env
        import jinja2

        try:
            self._compiled = jinja_env.environment().from_string(source)
        except jinja2.TemplateSyntaxError as exc:
            raise ChatTemplateError(name, f"syntax error: {exc.message}", line=exc.lineno) from None
        except jinja2.TemplateError as exc:
            raise ChatTemplateError(name, f"{type(exc).__name__}: {exc}") from None

    @classmethod
    def from_tokenizer(cls, tokenizer, name: str | None = None) -> "ChatTemplate":
        """The tokenizer's template, with its special tokens' text as ``bos_token`` etc."""
        specials = {f"{k}_token": tokenizer.token_text(k) for k in SPECIAL_NAMES}
        label = name or (f"tokenizer.chat_template of {tokenizer.source!r}" if tokenizer.source
                         else "tokenizer.chat_template")
        return cls(tokenizer.chat_template, name=label, special_tokens=specials)

    def render(self, messages, *, add_generation_prompt: bool = True, **variables) -> str:
        if not isinstance(messages, (list, tuple)) or not messages:
            raise InputError("a conversation is a non-empty list of messages "
                             f"(got {type(messages).__name__}{'' if messages else ', empty'})")
        chat = []
        for n, message in enumerate(messages):
            if not isinstance(message, dict):
                raise InputError(f"message {n} is {type(message).__name__}, not a dict "
                                 "with 'role' and 'content'")
            chat.append(_plain({k: v for k, v in message.items() if v is not None},
                               f"message {n}"))
        context = {**self.special_tokens, **_plain(variables, "template variables")}
        import jinja2

        try:
            return self._compiled.render(messages=chat, tools=None, documents=None,
                                         add_generation_prompt=bool(add_generation_prompt),
                                         **context)
        except self._jinja.TemplateRaised as exc:
            raise ChatTemplateError(self.name, f"refuses the conversation: {exc}",
                                    line=_template_line(exc)) from None
        except (jinja2.TemplateError, TypeError, ValueError, KeyError, IndexError,
                AttributeError, ArithmeticError, RecursionError) as exc:
            raise ChatTemplateError(self.name, f"{type(exc).__name__}: {exc}",
                                    line=_template_line(exc)) from None
