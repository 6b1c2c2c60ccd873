"""Decode steps chained on the GPU: each step is fed the token the step before it picked
(``readout.LastArgmax``) and as many steps as the method's picker has staging buffers for
(``PendingArgmax.depth``, ``readout.in_flight()``) are submitted beyond the one whose token
the host is reading, so the GPU never waits for a read-back. The one loop that
``LanguageModel.generate``, ``bench --llm`` and its warm-up run."""

from __future__ import annotations

import array
import time
from collections import deque

from ..model.tensor import Tensor
from ..runtime.readout import LastArgmax


def int64_tensor(values: list[int], shape) -> Tensor:
    return Tensor(array.array("q", values), shape, "int64")


class ChainedSteps:
    """``async for token in ChainedSteps(method, token, positions)``: yields ``token``
    first (once the first steps are submitted, so the GPU runs while the caller uses it),
    then the pick of each decode step, one per position taken from ``positions`` (an
    iterable of ints, pulled only when a step is about to be submitted: a generator may
    decide late that there is no room for more). ``draws(n)``: the ``readout.Sample`` of
    the n-th step (1-based), None for argmax. ``host_us``: how long each
    ``execute(wait=False)`` took to return (the host's whole work for a step)."""

    def __init__(self, method, token: int, positions, draws=None):
        self.method, self.token, self.draws = method, int(token), draws
        self.positions = iter(positions)
        self.host_us: list[float] = []

    def __aiter__(self):
        return self._run()

    async def _run(self):
        inflight: deque = deque()
        submitted = 0

        async def submit() -> bool:
            nonlocal submitted
            position = next(self.positions, None)
            if position is None:
                return False
            submitted += 1
            feed = int64_tensor([self.token], (1, 1)) if submitted == 1 else LastArgmax()
            started = time.perf_counter()
            inflight.append(await self.method.execute(
                [feed, int64_tensor([position], (1,))], argmax=True, wait=False,
                sample=self.draws and self.draws(submitted)))
            self.host_us.append((time.perf_counter() - started) * 1e6)
            return True

        more = await submit()
        ahead = inflight[0].depth if inflight else 0  # the picker's, made by that submit
        token = self.token
        while True:
            while more and inflight and len(inflight) <= ahead:
                more = await submit()
            yield token
            if not inflight:
                return
            token = (await inflight.popleft())[0]
