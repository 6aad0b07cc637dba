"""A wheel built from the repository carries the package whole: every module, the styles and the
shipped themes, and an install of it finds its themes without the checkout."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """``pip wheel`` of a copy of the project's source (the build leaves nothing in the checkout),
    with the venv's own setuptools: no download."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("ctxfst_tui", "themes"):
        shutil.copytree(ROOT / folder, src / folder, ignore=skip)
    out = work / "dist"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("ctxfst_tui-*.whl")
    return built


def test_the_wheel_carries_themes_styles_data_and_every_module(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    themes = {p.name for p in (ROOT / "themes").glob("*.toml")}
    assert themes and {f"ctxfst_tui/themes_data/{n}" for n in themes} <= names
    styles = {p.name for p in (ROOT / "ctxfst_tui" / "ui" / "styles").glob("*.tcss")}
    assert styles and {f"ctxfst_tui/ui/styles/{n}" for n in styles} <= names
    assert "ctxfst_tui/core/entities/data/tech_aliases.json" in names
    # the package list in pyproject.toml is explicit: a new subpackage must be added there
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "ctxfst_tui").rglob("*.py")}
    assert modules - names == set(), "modules missing from the wheel: add their package to pyproject.toml"
    assert not any(n.startswith(("themes/", "tests/")) for n in names)  # nothing outside the package


def test_an_install_of_the_wheel_finds_its_themes_without_the_checkout(wheel, tmp_path):
    """The wheel unpacked alone on sys.path (the venv only for the dependencies), run away from
    the checkout: the themes come from the unpacked package."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = ("import json, ctxfst_tui, ctxfst_tui.ui.themes as t; "
             "found, problems = t.load_themes(); "
             "print(json.dumps([ctxfst_tui.__file__, str(t.bundled_themes_dir()), [x.name for x in found], problems]))")
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "CTXFST_TUI_CONFIG_DIR": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    package, folder, names, problems = json.loads(done.stdout.splitlines()[-1])
    assert package.startswith(str(site)) and folder.startswith(str(site / "ctxfst_tui" / "themes_data"))
    assert {"ctxfst-dark", "ctxfst-light", "ctxfst-high-contrast"} <= set(names)
    assert problems == []
