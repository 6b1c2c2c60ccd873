"""The q8da fixtures (tests/fixtures/q8da: the tiny llama with a 4-bit embedding, and with
8da4w linears too) and the check of a decoder_report on one: every step within the
fixture's tolerance of eager torch of the same quantized model, the same argmax, and the
quantized ops really in the program (none refused, none left float)."""

import json
from pathlib import Path

DIR = Path(__file__).parent.parent / "fixtures" / "q8da"
INDEX = json.loads((DIR / "index.json").read_text())
NAMES = sorted(INDEX)


def check_report(name, report):
    info = INDEX[name]
    assert "unsupported" not in report, report
    ops = info["methods"]["forward"]["delegates"][0]["vk_ops"]
    assert "et_vk.embedding_q4gsw.default" in ops
    if info["qmode"] == "8da4w":
        assert "et_vk.linear_dq8ca_q4gsw.default" in ops
        assert "torchao.choose_qparams_affine.default" in ops
    assert len(report["errors"]) == len(report["want_argmax"]) >= 7
    assert max(report["errors"]) <= info["tolerance"], report["errors"]
    assert report["argmax"] == report["want_argmax"]
    assert report["reset_error"] <= info["tolerance"]
