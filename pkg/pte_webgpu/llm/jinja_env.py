"""The Jinja environment chat templates are written for: transformers' ``apply_chat_template``.

Sandboxed and immutable (templates come with model files: they may not reach Python
internals or change their inputs), ``trim_blocks`` and ``lstrip_blocks``, loop controls
(``{% break %}``, ``{% continue %}``), the ``{% generation %}`` tag (here it only renders its
body), and these names: ``raise_exception(message)``, ``strftime_now(format)``, a
``tojson`` filter that does not escape HTML (``json.dumps`` with ``ensure_ascii=False`` and
its ``indent``/``separators``/``sort_keys``), ``dict(...)`` and a ``namespace`` that refuses
names starting with ``_``.

Imported only when a template is compiled: ``import pte_webgpu.llm`` does not load jinja2.
"""

from __future__ import annotations

import json
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace


class TemplateRaised(jinja2.TemplateError):
    """What ``raise_exception`` raises: the template refuses its input."""


def raise_exception(message):
    raise TemplateRaised(str(message))


def strftime_now(format):
    return datetime.now().strftime(format)


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


class _Dict:
    """``dict(...)`` and ``dict.fromkeys(...)`` for templates, without the type itself
    (whose attributes lead out of the sandbox)."""

    def __call__(self, *args, **kwargs):
        return dict(*args, **kwargs)

    def fromkeys(self, *args, **kwargs):
        return dict.fromkeys(*args, **kwargs)


def _public(name):
    if isinstance(name, str) and name.startswith("_"):
        raise jinja2.exceptions.SecurityError(
            f"a namespace attribute may not start with an underscore: {name!r}")
    return name


class _Namespace(Namespace):
    """Jinja's ``namespace()``, refusing ``_``-prefixed attribute names."""

    def __init__(*args, **kwargs):  # noqa: N805 - Namespace's own signature: self may be a key
        for key in dict(*args[1:], **kwargs):
            _public(key)
        Namespace.__init__(*args, **kwargs)

    def __setitem__(self, name, value):
        Namespace.__setitem__(self, _public(name), value)


class GenerationTag(Extension):
    """``{% generation %}...{% endgeneration %}``: marks the assistant's text for training
    masks in transformers; rendering is the body, unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


_ENV: list = []


def environment() -> ImmutableSandboxedEnvironment:
    if not _ENV:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                            extensions=[GenerationTag, loopcontrols])
        env.filters["tojson"] = tojson
        env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now,
                           dict=_Dict(), namespace=_Namespace)
        _ENV.append(env)
    return _ENV[0]
