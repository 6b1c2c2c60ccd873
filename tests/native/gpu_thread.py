"""The one thread native GPU work runs on in tests.

The browser tests' sync Playwright keeps an asyncio loop running on the main
thread, where asyncio.run() would refuse; this thread has loops of its own.
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor

_GPU_THREAD = ThreadPoolExecutor(max_workers=1)


def run_sync(coro):
    return _GPU_THREAD.submit(asyncio.run, coro).result()
