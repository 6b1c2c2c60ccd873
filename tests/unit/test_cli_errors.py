"""Every user error of the CLI exits 2 with one line, found before a browser or GPU starts."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu.app import cli, preflight
from pte_webgpu.errors import InputError

from tests.support.cli import cli_run, one_line_exit_2

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ADD = FIXTURES / "add_2x3x4"


@pytest.mark.parametrize("repeat", ["0", "-5", "two"])
def test_repeat_below_one_is_refused(repeat):
    one_line_exit_2(cli_run("run", f"{ADD}.pte", "--inputs", f"{ADD}.npz", "--repeat", repeat),
                    "--repeat")


def test_output_into_a_missing_folder_fails_before_the_run(tmp_path):
    started = time.perf_counter()
    done = cli_run("run", f"{ADD}.pte", "--inputs", f"{ADD}.npz", "--output", tmp_path / "no" / "o.npz")
    one_line_exit_2(done, "does not exist")
    assert time.perf_counter() - started < 10


def test_port_in_use_is_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = cli_run("serve", "--port", taken.getsockname()[1])
    one_line_exit_2(done, "is in use")


def test_inputs_are_checked_before_the_browser_starts(tmp_path):
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, in0=np.zeros((4, 4), np.float32), in1=np.zeros((2, 3, 4), np.float32))
    one_line_exit_2(cli_run("run", f"{ADD}.pte", "--inputs", wrong),
                    "InputError: input 0 ('in0') has shape [4, 4]; the method expects [2, 3, 4]")
    one_line_exit_2(cli_run("run", f"{ADD}.pte"), "takes 2 inputs", "--inputs")


def test_a_missing_ptd_names_the_flag():
    name = FIXTURES / "rmsnorm_extdata_1x8x64"
    one_line_exit_2(cli_run("run", f"{name}.pte", "--inputs", f"{name}.npz"),
                    "MissingDataError", "named data key", "--data")


def test_an_unreadable_file_and_a_corrupted_program(tmp_path):
    one_line_exit_2(cli_run("run", tmp_path / "nope.pte"), "cannot read")
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"\x00" * 64)
    one_line_exit_2(cli_run("run", bad, "--inputs", f"{ADD}.npz"), "FormatError", "ET12")


def test_inspect_into_a_closed_pipe_is_quiet():
    # `true` exits without reading, long before Python has started: every write hits EPIPE
    shell = (f"{sys.executable} -m pte_webgpu inspect --json {FIXTURES / 'block_1x8x64.pte'} | true; "
             "echo ${PIPESTATUS[0]}")
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60)
    assert done.stderr == "" and done.stdout.strip() == str(cli.EXIT_BROKEN_PIPE)


def test_version_and_help():
    from pte_webgpu import __version__

    done = cli_run("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"pte-webgpu {__version__}"
    assert "--quiet" in cli_run("run", "--help").stdout


def arrays(**named):
    return {k: _tensor(v) for k, v in named.items()}


def _tensor(a):
    from pte_webgpu.runtime import Tensor

    return Tensor(np.ascontiguousarray(a).tobytes(), a.shape, a.dtype.name)


SPECS = [((2, 3), "float32"), ((3,), "float32")]


def test_inputs_by_name_else_in_file_order():
    from pte_webgpu.app.npz_inputs import match_inputs

    x, y = np.ones((2, 3), np.float32), np.zeros(3, np.float32)
    assert match_inputs(SPECS, arrays(in1=y, in0=x, out0=x))[1] == ["in0", "in1"]
    assert match_inputs(SPECS, arrays(x=x, y=y, out0=x))[1] == ["x", "y"]
    with pytest.raises(InputError, match=r"takes 2 inputs \(in0: float32\[2, 3\], in1: float32\[3\]\); "
                                         r"the inputs file has 1: x \(name them in0, in1"):
        match_inputs(SPECS, arrays(x=x))


def test_casts_only_when_asked():
    from pte_webgpu.app.npz_inputs import match_inputs

    x, y = np.arange(6, dtype=np.float64).reshape(2, 3), np.zeros(3, np.float32)
    with pytest.raises(InputError,
                       match=r"float64; the method expects float32 \(ask for a cast with --cast\)"):
        match_inputs(SPECS, arrays(in0=x, in1=y))
    got, _ = match_inputs(SPECS, arrays(in0=x, in1=y), cast=True)
    assert got[0].dtype.name == "float32" and got[0].tolist() == x.tolist()
    with pytest.raises(InputError, match="int64; the method expects float32$"):
        match_inputs(SPECS, arrays(in0=x.astype(np.int64), in1=y), cast=True)
    with pytest.raises(InputError, match="outside the int32 range"):
        match_inputs([((1,), "int32")], arrays(in0=np.array([2**40])), cast=True)


def test_preflight_returns_the_names_it_will_use(tmp_path):
    data = np.load(f"{ADD}.npz")
    path = tmp_path / "xy.npz"
    np.savez(path, x=data["in0"], y=data["in1"], out0=data["out0"])
    names = preflight.check_run(Path(f"{ADD}.pte").read_bytes(), [], path.read_bytes())
    assert names == ["x", "y"]


def test_error_text_names_the_class_and_stays_on_one_line():
    assert cli.error_text(InputError("a\nb")) == "InputError: a b"
    from pte_webgpu.errors import PteError
    assert cli.error_text(PteError("plain")) == "plain"


def test_a_page_error_comes_back_as_the_same_class_and_text():
    from pte_webgpu.chromium.remote import remote_error
    from pte_webgpu.errors import MissingDataError, PteError

    e = remote_error("MissingDataError", "named data key 'k' not found; searched: x")
    assert type(e) is MissingDataError and str(e) == "named data key 'k' not found; searched: x"
    assert type(remote_error("NoSuchError", "m")) is PteError
    assert type(remote_error("ValueError", "m")) is PteError  # only the PteError family
