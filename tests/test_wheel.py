"""A new user's install: a wheel built from this tree, installed into a fresh venv with no extras,
run from outside the tree. ``otel-sampling dashboards`` and ``otel-sampling rules`` write the
committed files, promtool loads the exported rules, ``--help`` works, and regeneration says which
extra it needs.

The venv installs the core dependencies from the package index (pip's cache makes a second run
quick); the wheel itself is built without build isolation, by the hatchling of the test extra.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.limits import HANG_S

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(3 * HANG_S)]


def run(argv: list[str | Path], cwd: Path, timeout: float = HANG_S) -> subprocess.CompletedProcess[str]:
    # No PYTHONPATH (a test run may put the source tree on it): the venv reads its installed copy.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the wheel and its core dependencies (no extras)."""
    work = tmp_path_factory.mktemp("wheel")
    built = run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            work / "dist",
            ROOT,
        ],
        cwd=work,
        timeout=HANG_S,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = (work / "dist").glob("otel_sampling-*.whl")
    created = run([sys.executable, "-m", "venv", work / "venv"], cwd=work)
    assert created.returncode == 0, created.stderr
    installed = run(
        [work / "venv" / "bin" / "python", "-m", "pip", "install", "--quiet", wheel],
        cwd=work,
        timeout=HANG_S,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return work / "venv"


def test_the_installed_copy_is_the_wheel_and_has_no_extra(venv, tmp_path):
    code = (
        "import importlib.util, otel_sampling; print(otel_sampling.__file__); "
        "print([m for m in ('yaml', 'grafana_foundation_sdk') if importlib.util.find_spec(m)])"
    )
    result = run([venv / "bin" / "python", "-c", code], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    location, extras = result.stdout.splitlines()
    assert Path(location).is_relative_to(venv)
    assert extras == "[]"


def test_the_exported_files_are_the_committed_ones(venv, tmp_path):
    dashboards = run([venv / "bin" / "otel-sampling", "dashboards", "--out", tmp_path / "d"], cwd=tmp_path)
    rules = run([venv / "bin" / "otel-sampling", "rules", "--out", tmp_path / "r.yaml"], cwd=tmp_path)
    assert dashboards.returncode == 0, dashboards.stderr
    assert rules.returncode == 0, rules.stderr
    committed = {p.name: p.read_text() for p in (ROOT / "dashboards").glob("*.json")}
    assert {p.name: p.read_text() for p in (tmp_path / "d").iterdir()} == committed
    assert (tmp_path / "r.yaml").read_text() == (ROOT / "alerts" / "otel-sampling.yaml").read_text()
    checked = run(["promtool", "check", "rules", tmp_path / "r.yaml"], cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


def test_help_and_the_missing_extra(venv, tmp_path):
    helped = run([venv / "bin" / "otel-sampling", "rules", "--help"], cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "--rule-selector" in helped.stdout
    regenerated = run(
        [venv / "bin" / "otel-sampling", "rules", "--out", tmp_path / "r.yaml", "--rule-selector", 'job="a"'],
        cwd=tmp_path,
    )
    assert regenerated.returncode == 1
    assert "regenerating with --rule-selector needs the 'mixin' extra" in regenerated.stderr
    assert "Traceback" not in regenerated.stderr
    assert not (tmp_path / "r.yaml").exists()
