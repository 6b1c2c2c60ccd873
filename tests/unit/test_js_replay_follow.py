"""gpu/js_replay.JsRecording.follow without a browser (a device that keeps what it would
send to JS as Python values): a grid replaced for a new size is written into the grid
numbers, one that turns empty re-sends pass_plan's ops, anything else asks for a rebuild.
tests/browser/test_js_replay.py runs the real thing in Chromium."""

from array import array

from pte_webgpu.gpu.recording import BEGIN, COPY, DISPATCH, END, Buffer, Copy, Dispatch
from pte_webgpu.gpu.js_replay import JsRecording


class _Device:
    def _obj(self, d):
        return d

    def bytes_to_js(self, view):  # the bytes of uint32 numbers
        return array("I", view.tobytes())


def _encoded(replay):
    sent = []
    replay.encode("encoder", lambda enc, plan, grids, code: sent.append((grids, code)))
    return sent[0]


def test_follow_updates_grids_ops_or_asks_for_a_rebuild():
    a, b = Dispatch("p1", "g1", (4, 1, 1), "a"), Dispatch("p2", "g2", (2, 2, 1), "b")
    src, dst, other = (Buffer(name, 16, name) for name in ("src", "dst", "other"))
    c = Copy(src, dst, 16, "c")
    steps = [a, c, b]
    replay = JsRecording(_Device(), steps)
    grids, code = _encoded(replay)
    assert list(grids) == [4, 1, 1, 2, 2, 1]
    assert list(code) == [BEGIN, 0, DISPATCH, 0, END, 0, COPY, 0, BEGIN, 0, DISPATCH, 1, END, 0]
    assert replay.follow(steps) and _encoded(replay) == (None, None)  # nothing changed

    steps[2] = Dispatch("p2", "g2", (3, 1, 1), "b")  # a new size: numbers only
    assert replay.follow(steps)
    grids, code = _encoded(replay)
    assert list(grids) == [4, 1, 1, 3, 1, 1] and code is None

    steps[0] = Dispatch("p1", "g1", (0, 1, 1), "a")  # now empty: the ops change
    assert replay.follow(steps)
    grids, code = _encoded(replay)
    assert list(grids)[:3] == [0, 1, 1]
    assert list(code) == [COPY, 0, BEGIN, 0, DISPATCH, 1, END, 0]

    steps[1] = Copy(src, dst, 16, "c again")  # the same copy, a new object: kept
    assert replay.follow(steps) and _encoded(replay) == (None, None)

    for changed in ([Dispatch("p9", "g1", (1, 1, 1), "a"), c, b],  # another pipeline
                    [steps[0], Copy(src, other, 16, "c"), steps[2]],  # another copy
                    [steps[0], steps[2], steps[1]],  # reordered
                    steps[:2]):  # shorter
        assert not JsRecording(_Device(), steps).follow(changed)
