"""Bytes between Python and JavaScript in Pyodide, right past 2 GiB of wasm heap.

Pyodide 314 takes an object's place in the wasm heap as a signed 32-bit number. Once the
heap is past 2 GiB (a second fp32 SmolLM2 loaded beside the first does it), ``getBuffer``
of an object placed there raises RangeError, ``to_bytes``/``to_py`` of a typed array
raise it for the bytes object they make, and ``to_js`` of a memoryview copies the wrong
bytes without a word (measured in Chromium 156: tests/browser/test_wasm_heap.py). So while
the heap (with what a call adds) stays under 2 GiB these calls serve as they are; past it,
the bytes go through a JS view of the heap made at the address ctypes gives, which is
unsigned. Browser only: nothing here runs natively.
"""

from __future__ import annotations

import contextlib
import ctypes

SIGNED_LIMIT = 1 << 31  # heap bytes below which Pyodide's own conversions are right

# PyObject_GetBuffer with PyBUF_SIMPLE: contiguous bytes, read-only objects included
# (ctypes' from_buffer takes writable ones only).
PYBUF_SIMPLE = 0


class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int),
                ("ndim", ctypes.c_int), ("format", ctypes.c_char_p),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


class WasmHeap:
    """Pyodide's heap as the conversions see it: ``js_view`` (a view for one JS call),
    ``to_js`` (a JS copy) and ``to_python`` (a Python copy of a typed array)."""

    def __init__(self):
        import js
        import pyodide_js
        from pyodide.ffi import create_proxy, to_js

        self._module, self._u8 = pyodide_js._module, js.Uint8Array
        self._create_proxy, self._to_js = create_proxy, to_js
        api = ctypes.pythonapi
        api.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer),
                                           ctypes.c_int]
        api.PyBuffer_Release.argtypes = [ctypes.POINTER(_PyBuffer)]
        self._get, self._release = api.PyObject_GetBuffer, api.PyBuffer_Release

    def signed_safe(self, extra: int = 0) -> bool:
        """Whether the heap, grown by ``extra`` bytes, is still below 2 GiB."""
        return self._module.HEAPU8.length + extra < SIGNED_LIMIT

    @contextlib.contextmanager
    def js_view(self, view: memoryview):
        """A JS Uint8Array over ``view``'s bytes (contiguous), valid inside the block as
        long as nothing in it grows the heap."""
        if self.signed_safe():
            proxy = self._create_proxy(view)
            try:
                heap_view = proxy.getBuffer("u8")
                try:
                    yield heap_view.data
                finally:
                    heap_view.release()
            finally:
                proxy.destroy()
            return
        held = _PyBuffer()
        self._get(view, ctypes.byref(held), PYBUF_SIMPLE)
        try:
            yield self._u8.new(self._module.HEAPU8.buffer, held.buf or 0, held.len)
        finally:
            self._release(ctypes.byref(held))

    def to_js(self, view: memoryview):
        """A JS Uint8Array holding a copy of ``view``'s bytes."""
        if self.signed_safe():
            return self._to_js(view)
        with self.js_view(view) as data:
            return data.slice()

    def to_python(self, u8) -> bytes | bytearray:
        """A Python copy of the bytes of ``u8`` (a JS typed array or ArrayBuffer view)."""
        n = int(u8.byteLength)
        if self.signed_safe(n + (1 << 20)):  # the copy Pyodide makes lands in the heap too
            return u8.to_bytes()
        out = bytearray(n)
        if n:
            source = self._u8.new(u8.buffer, u8.byteOffset, n)
            address = ctypes.addressof((ctypes.c_char * n).from_buffer(out))
            self._module.HEAPU8.set(source, address)
        return out


_HEAP: list[WasmHeap] = []


def wasm_heap() -> WasmHeap:
    """The one WasmHeap of this interpreter (made on first use)."""
    if not _HEAP:
        _HEAP.append(WasmHeap())
    return _HEAP[0]
