"""One execute at a time per Method, whichever thread or event loop asks.

An ``asyncio.Lock`` belongs to one event loop: two threads, each running its own
loop, deadlock or fail on it. A ``threading.Lock`` held across ``await`` would
block the loop thread while another task of the same loop waits for it (fatal in
the browser's single thread). So waiters poll a threading lock without blocking
and yield to their loop between tries.
"""

from __future__ import annotations

import asyncio
import threading


class Exclusive:
    def __init__(self):
        self._lock = threading.Lock()
        self._guard = threading.Lock()  # orders when_free against the holder's exit
        self._deferred: list = []

    async def __aenter__(self):
        delay = 0.0
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(delay)  # 0 first: lets a task of this loop finish
            delay = min(0.002, delay * 2 or 0.0001)
        return self

    async def __aexit__(self, *exc):
        with self._guard:
            deferred, self._deferred = self._deferred, []
            try:
                for fn in deferred:
                    fn()
            finally:
                self._lock.release()
        return False

    def when_free(self, fn) -> None:
        """Run ``fn`` now if nobody holds the lock, else when the holder leaves (never
        blocks: the holder may be a task of this very thread's loop)."""
        with self._guard:
            if self._lock.acquire(blocking=False):
                try:
                    fn()
                finally:
                    self._lock.release()
            else:
                self._deferred.append(fn)

    @property
    def locked(self) -> bool:
        return self._lock.locked()
