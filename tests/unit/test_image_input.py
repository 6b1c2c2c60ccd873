"""web/image.js (the demo page's picture -> NCHW float32 input) run in Node, against the
rule written out in numpy (tests/support/picture.py; the fixtures' exporter checked that
one against torch's antialiased F.interpolate)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
from tests.support import picture

MODULE = Path(__file__).resolve().parents[2] / "web" / "image.js"


def node() -> str:
    """A Node binary: the PATH's, else the one Playwright (a test dependency) ships."""
    found = shutil.which("node")
    if found:
        return found
    from playwright._impl._driver import compute_driver_executable
    return compute_driver_executable()[0]


def calls(*pairs):
    """[image.js's ``function(*args)`` for each (function, args) pair], in one Node process;
    typed arrays come back as lists, a thrown Error as {"error": message}."""
    url = "data:text/javascript;base64," + base64.b64encode(MODULE.read_bytes()).decode()
    script = f"""
const m = await import({json.dumps(url)});
let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map(([name, args]) => {{
  if (name === "pictureTensor") args[0] = Uint8ClampedArray.from(args[0]);
  try {{
    const result = m[name](...args);
    return ArrayBuffer.isView(result) ? Array.from(result) : result;
  }} catch (e) {{ return {{ error: e.message }}; }}
}});
process.stdout.write(JSON.stringify(results));
"""
    done = subprocess.run([node(), "--input-type=module", "-e", script], input=json.dumps(pairs),
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def call(function: str, *args):
    return calls((function, args))[0]


def rgba(rgb: np.ndarray) -> list[int]:
    alpha = np.full(rgb.shape[:2] + (1,), 255, np.uint8)
    return np.concatenate([rgb, alpha], axis=2).reshape(-1).tolist()


def test_picture_tensor_matches_numpy():
    """Shrinking and enlarging, crops along either side and none, one and three channels."""
    rgb = picture.picture()
    cases = [(32, 32, 3), (20, 50, 3), (64, 48, 3), (44, 60, 3), (7, 9, 1), (24, 40, 1)]
    norms = {3: (picture.IMAGENET_MEAN, picture.IMAGENET_STD), 1: ((0.3,), (0.2,))}
    got = calls(*[("pictureTensor", [rgba(rgb), rgb.shape[1], rgb.shape[0],
                                     {"channels": c, "outHeight": h, "outWidth": w,
                                      "mean": norms[c][0], "std": norms[c][1]}])
                  for h, w, c in cases])
    for (h, w, c), values in zip(cases, got):
        want = picture.preprocess(rgb, h, w, c, *norms[c])
        np.testing.assert_allclose(np.array(values, np.float32).reshape(want.shape), want,
                                   rtol=0, atol=1e-6, err_msg=f"{c}x{h}x{w}")


def test_crop_box_matches_the_rule():
    sizes = [(60, 44, 32, 32), (60, 44, 50, 20), (61, 45, 2, 3), (5, 1000, 224, 224), (7, 7, 7, 7),
             (640, 480, 224, 224), (3000, 4000, 513, 513)]
    boxes = calls(*[("cropBox", size) for size in sizes])
    for size, box in zip(sizes, boxes):
        assert [box[k] for k in ("left", "top", "width", "height")] == list(picture.crop_box(*size))


def test_defaults_are_imagenet_and_its_averages():
    three, one = calls(("defaultNormalization", [3]), ("defaultNormalization", [1]))
    assert three == {"mean": list(picture.IMAGENET_MEAN), "std": list(picture.IMAGENET_STD)}
    assert one == {"mean": [0.449], "std": [0.226]}


def test_mean_and_std_fields_are_checked():
    ok, short, zero, text = calls(("parseValues", ["0.5, 0.25 1", 3, "mean"]),
                                  ("parseValues", ["0.5, 0.25", 3, "mean"]),
                                  ("parseValues", ["0.5, 0, 1", 3, "std", True]),
                                  ("parseValues", ["x", 1, "std", True]))
    assert ok == [0.5, 0.25, 1]
    assert "expected 3 numbers" in short["error"] and "positive" in zero["error"]
    assert 'got "x"' in text["error"]
