"""The CLI installed from a wheel uses built-in launch options: they must match
playwright.config.py at the repository root."""

import runpy
from pathlib import Path

from pte_webgpu.chromium import config


def test_builtin_defaults_match_playwright_config():
    from_file = runpy.run_path(str(Path(__file__).resolve().parents[1] / "playwright.config.py"))
    builtin = config._builtin_namespace()
    for name in ("CHROMIUM", "LAUNCH_ARGS", "TIMEOUT_MS"):
        assert builtin[name] == from_file[name], name
    assert builtin["launch_options"]() == from_file["launch_options"]()



def test_a_config_file_in_the_current_folder_is_never_run(tmp_path, monkeypatch):
    trap = tmp_path / "ran"
    (tmp_path / "playwright.config.py").write_text(
        f"open({str(trap)!r}, 'w').write('x')\nLAUNCH_ARGS = ['--evil']\n")
    monkeypatch.chdir(tmp_path)
    options = config.launch_options()
    assert "--evil" not in options["args"] and not trap.exists()
    assert config.find_config_file() in (None, Path(__file__).resolve().parents[1] / "playwright.config.py")


def test_an_installed_package_uses_its_builtin_options(monkeypatch):
    from pte_webgpu.chromium import paths

    monkeypatch.setattr(paths, "source_checkout", lambda: None)
    assert config.find_config_file() is None
    assert config.load_config()["__file__"] == "<built-in>"
