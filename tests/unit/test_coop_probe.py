"""bench/coop_probe.py's kernel text (the probe itself needs a GPU that offers cooperative
matrices: it runs on the lent one)."""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import coop_probe  # noqa: E402


def test_each_accumulator_reads_its_rows_and_columns_and_stores_its_block():
    src = coop_probe.shader("f16", 16, 2, "coopLoadT", "coopLoad", "coopStoreT")
    assert src.startswith("enable f16;\nenable wgpu_cooperative_matrix;")
    assert "m0 = wid.y * 32u" in src and "n0 = wid.x * 32u" in src
    loads = dict(re.findall(r"let (\w+) = coopLoadT?<coop_mat16x16<f16, [AB]>>\(&(\w\[[^]]*\])", src))
    assert loads == {"a0": "x[(m0 + 0u) * k + kk]", "a1": "x[(m0 + 16u) * k + kk]",
                     "b0": "w[(n0 + 0u) * k + kk]", "b1": "w[(n0 + 16u) * k + kk]"}
    adds = re.findall(r"(c\d\d) = coopMultiplyAdd\((a\d), (b\d), (c\d\d)\)", src)
    assert sorted(adds) == [(f"c{i}{j}", f"a{i}", f"b{j}", f"c{i}{j}") for i in range(2)
                            for j in range(2)]
    stores = re.findall(r"coopStoreT\((c\d\d), &out\[\(m0 \+ (\d+)u\) \* n \+ n0 \+ (\d+)u\]", src)
    assert sorted(stores) == [("c00", "0", "0"), ("c01", "0", "16"), ("c10", "16", "0"),
                              ("c11", "16", "16")]


def test_an_adapter_without_the_feature_is_reported_not_tried(monkeypatch):
    class Adapter:
        info = {"device": "cpu"}
        features = {"shader-f16"}

    monkeypatch.setattr(coop_probe.wgpu.gpu, "request_adapter_sync", lambda **_: Adapter())
    assert coop_probe.probe() == {"adapter": {"device": "cpu"}, "wgpu": coop_probe.wgpu.__version__,
                                  "offered": False}
