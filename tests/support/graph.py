"""G: a delegate graph built by hand, run on a bare native device (tests/native's
``device`` fixture) through runtime.build.build_delegate; DG: G with a Method's
execute-time integers; Limited: that device with some limits lowered; rand: float32
normals from one seeded generator."""

from __future__ import annotations

import struct
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
from pte_webgpu.formats import NamedData
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ConstantRef, Graph, ListValue, Null, OpCall, Scalar, TensorValue
from pte_webgpu.runtime.build import Resources, build_delegate, upload
from pte_webgpu.runtime.dynamic import DynamicEnv
from pte_webgpu.runtime.id_checks import FLAG_BYTES
from pte_webgpu.runtime.storage import WIDE

from tests.support.gpu_thread import run_sync


class Limited:
    """The device with some limits lowered, to reach folded grids and small tiles."""

    def __init__(self, device, **limits):
        self._device, self._limits = device, limits
        # Kernels size workgroups from info.traits: lower the limits there too.
        self.info = replace(device.info, limits={**device.info.limits, **limits})

    def __getattr__(self, name):
        return getattr(self._device, name)

    def limit(self, name, default):
        return self._limits.get(name) or self._device.limit(name, default)


class G:
    """A delegate graph under construction."""

    def __init__(self, storage=WIDE, options=None):
        self.values, self.ops, self.inputs, self.outputs = [], [], [], []
        self.constants, self.blob, self.feeds = [], bytearray(), []
        self.storage = storage  # Storage(half=True): float16 tensors run the f16 kernels
        self.options = options or {}  # as Runtime.create(options=...) gives them

    def _add(self, value) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def tensor(self, shape, mem_obj=-1, dtype=dtypes.FLOAT32) -> int:
        return self._add(TensorValue(dtype, tuple(shape), mem_obj_id=mem_obj))

    def input(self, array, dtype=dtypes.FLOAT32) -> int:
        vid = self.tensor(array.shape, dtype=dtype)
        self.inputs.append(vid)
        self.feeds.append(np.ascontiguousarray(array, self._np_storage(dtype)))
        return vid

    def const(self, array, dtype=dtypes.FLOAT32) -> int:
        data = np.ascontiguousarray(array, dtype.name).tobytes()
        ref = ConstantRef(len(self.constants), len(self.blob), len(data), None)
        self.constants.append(ref)
        self.blob += data + bytes(-len(data) % 16)
        return self._add(TensorValue(dtype, tuple(array.shape), constant_id=ref.index))

    def _np_storage(self, dtype):
        return self.storage.dtype(dtype).name

    def int(self, v) -> int:
        return self._add(Scalar("int", v))

    def double(self, v) -> int:
        return self._add(Scalar("double", v))

    def bool(self, v) -> int:
        return self._add(Scalar("bool", v))

    def string(self, v) -> int:
        return self._add(Scalar("string", v))

    def ints(self, items) -> int:
        return self._add(ListValue("int_list", tuple(items)))

    def null(self) -> int:
        return self._add(Null())

    def op(self, name, *args) -> int:
        self.ops.append(OpCall(name, tuple(args)))
        return args[-1]

    def run(self, device, *outputs):
        """Build and execute once; the outputs as float32 arrays (float16 ones read as f32)."""
        self.outputs = list(outputs)
        return run_sync(self._run(device))

    async def _run(self, device, env=None, as_f32=True):
        """``env``: a DynamicEnv for ops that read execute-time integers (its host steps
        run before the submit); ``as_f32``: outputs widened to float32."""
        graph = Graph(self.values, self.ops, self.inputs, self.outputs, self.constants)
        vk = SimpleNamespace(graph=graph, constant_bytes=memoryview(bytes(self.blob)))
        resources = Resources(device)
        try:
            io = {vid: resources.buffer(self.storage.nbytes(self.values[vid]), f"io {vid}")
                  for vid in self.inputs + self.outputs}
            recording = Recording()

            def setup(ctx):
                if env is not None:
                    ctx.dyn, ctx.graph_key = env, 1
            ctx = await build_delegate(device, vk, NamedData(None), io, resources, recording,
                                       {}, "test", self.options, storage=self.storage,
                                       setup=setup)
            for buf, data in env.run(recording) if env is not None else ():
                upload(device, buf, data)
            for vid, array in zip(self.inputs, self.feeds):
                if array.size:
                    upload(device, io[vid], array.tobytes())  # padded to 4 bytes
            outs = [(io[v], self.storage.nbytes(self.values[v])) for v in self.outputs]
            outs += [(c.flag, FLAG_BYTES) for c in ctx.id_checks]  # ids out of range
            staging = resources.buffer(sum(s for _, s in outs), "staging", ("map_read", "copy_dst"))
            self.steps = len(recording.steps)  # dispatches and copies recorded
            raw, _ = await device.run(recording, outs, staging)
            self.id_flags = [struct.unpack("<IIIi", bytes(r[:FLAG_BYTES]))
                             for r in raw[len(self.outputs):]]
            arrays = [np.frombuffer(data, self._np_storage(self.values[v].dtype))
                      [:self.values[v].numel].reshape(self.values[v].shape)
                      for data, v in zip(raw, self.outputs)]
            return [a.astype(np.float32) for a in arrays] if as_f32 else arrays
        finally:
            resources.release()


class DG(G):
    """G with the Method's execute-time integers attached (runtime/dynamic.py)."""

    def values_list(self, items) -> int:
        return self._add(ListValue("value_list", tuple(items)))

    def state_const(self, array) -> int:
        vid = self.const(array)
        t = self.values[vid]
        self.values[vid] = TensorValue(t.dtype, t.shape, constant_id=t.constant_id, mem_obj_id=0)
        return vid

    def run(self, gpu, *outputs):
        self.outputs = list(outputs)
        return run_sync(self._run(gpu, env=DynamicEnv(), as_f32=False))


RNG = np.random.default_rng(7)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)
