"""The commands README.md and docs/getting-started.md tell a newcomer to type, run for real.

Every command of ours the two pages show (in a shell block or in running text) runs here with the
page's placeholders filled in: ``otel-sampling ...`` and ``python -m otel_sampling....``. A command
that serves until stopped (the fake provider) runs with ``--help`` instead. Each program also
answers ``--help`` and ``--version`` with exit 0; the ``make`` targets the pages name exist; the
README's supported-versions line covers the versions this suite runs with.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from harness.limits import HANG_S
from otel_sampling import __version__

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", ROOT / "docs" / "getting-started.md")
# A command of ours: the console script, or one of our modules run with -m (any venv prefix).
OURS = re.compile(r"(?:\S*/)?(?:otel-sampling|python3? -m otel_sampling[\w.]*)(?: +[^`#|;&]*)?")
SERVES = ("otel_sampling.testing.fake_provider",)  # serves until stopped: its --help runs instead

pytestmark = pytest.mark.subprocess


def snippets(page: Path) -> list[str]:
    """The page's code: each line of its fenced blocks, each inline code span (its line breaks
    joined: ``otel-sampling rules --out\nFILE`` in running text is one command), and each comment's
    text in a block (``# check it: python -m otel_sampling.policy FILE``)."""
    text = page.read_text()
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    lines = [line for block in blocks for line in block.splitlines()]
    comments = [c.rsplit(": ", 1)[-1] for line in lines if "#" in line for c in [line.split("#", 1)[1].strip()]]
    prose = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    spans = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]
    return [s.split("#", 1)[0].strip() for s in lines] + comments + spans


def documented() -> list[tuple[str, str]]:
    """(page, command) for every command of ours the pages show, in order, without repeats."""
    found: dict[tuple[str, str], None] = {}
    for page in PAGES:
        for snippet in snippets(page):
            match = OURS.fullmatch(snippet)
            if match:
                found[(page.name, snippet)] = None
    return list(found)


def argv(command: str, tmp_path: Path) -> list[str]:
    """The command as this test runs it: our interpreter and console script, placeholders filled."""
    words = shlex.split(command)
    program = Path(words[0]).name
    if len(words) == 1 or words[1:] == ["-m", words[-1]]:  # the program named alone
        words.append("--help")
    if program.startswith("python"):
        words = [sys.executable, *words[1:]]
        if words[2] in SERVES and "--help" not in words:
            words = [*words[:3], "--help"]
    else:
        words = [str(Path(sys.executable).with_name("otel-sampling")), *words[1:]]
    filled = {
        "DIR": str(tmp_path / "dashboards"),
        "FILE": str(ROOT / "examples" / "triage" / "policy.toml")
        if "otel_sampling.policy" in words
        else str(tmp_path / "rules.yaml"),
    }
    return [filled.get(w, w) for w in words]


def run(words: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(words, capture_output=True, text=True, timeout=HANG_S, cwd=ROOT, check=False)


def test_the_pages_show_commands_of_ours():
    """Not vacuous: the export commands, the policy check and the fake provider are all found."""
    commands = " ".join(command for _, command in documented())
    for expected in ("otel-sampling dashboards", "otel-sampling rules", "otel_sampling.policy", "fake_provider"):
        assert expected in commands


@pytest.mark.parametrize(("page", "command"), documented())
def test_a_documented_command_runs(page, command, tmp_path):
    done = run(argv(command, tmp_path))
    assert done.returncode == 0, f"{page}: {command}\n{done.stdout}{done.stderr}"


PROGRAMS = (
    ["otel-sampling"],
    ["-m", "otel_sampling.policy"],
    ["-m", "otel_sampling.mixin"],
    ["-m", "otel_sampling.testing.fake_provider"],
)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p[-1])
def test_every_command_answers_help(program):
    words = [sys.executable, *program] if program[0] == "-m" else [str(Path(sys.executable).with_name(program[0]))]
    done = run([*words, "--help"])
    assert (done.returncode, done.stdout.startswith("usage: "), done.stderr) == (0, True, "")


@pytest.mark.parametrize(
    "words",
    [["otel-sampling", "--version"], [sys.executable, "-m", "otel_sampling.policy", "--version"]],
    ids=["otel-sampling", "policy"],
)
def test_version_prints_the_package_version(words):
    if words[0] == "otel-sampling":
        words = [str(Path(sys.executable).with_name("otel-sampling")), *words[1:]]
    done = run(words)
    assert (done.returncode, done.stdout.strip()) == (0, f"otel-sampling {version('otel-sampling')}")
    assert __version__ == version("otel-sampling")


def test_the_make_targets_the_pages_name_exist():
    makefile = (ROOT / "Makefile").read_text()
    targets = {s.split()[1] for page in PAGES for s in snippets(page) if re.match(r"make [a-z]", s)}
    assert targets >= {"demo", "test", "test-busy"}
    assert [t for t in sorted(targets) if not re.search(rf"^{re.escape(t)}:", makefile, re.MULTILINE)] == []


def test_the_readme_versions_line_covers_the_versions_this_suite_runs():
    """README "Supported versions": the installed mcp, anthropic and openai lie inside the stated
    ranges (a newer SDK the suite passed on moves the range's end, in the README)."""
    line = " ".join((ROOT / "README.md").read_text().split("Supported versions", 1)[1].split("\n\n", 1)[0].split())

    def as_tuple(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split("."))

    dash = "\N{EN DASH}"
    for package in ("mcp", "anthropic", "openai"):
        installed = as_tuple(".".join(version(package).split(".")[:2]))
        ranges = re.search(rf"\b{package} ((?:\d+\.\d+{dash}\d+\.\d+(?: and )?)+)", line)
        assert ranges, f"the README's versions line names no range for {package}"
        spans = [tuple(map(as_tuple, r.split(dash))) for r in re.findall(rf"\d+\.\d+{dash}\d+\.\d+", ranges[1])]
        assert any(low <= installed <= high for low, high in spans), (
            f"README says {package} {ranges[1]}, the suite ran {version(package)}: move the range's end"
        )


def test_the_getting_started_alert_list_names_what_fires():
    """Step 6's list: every alert it names is in the rule file, and it holds every alert the same
    scenario fires in tests/test_prometheus_e2e.py (a Prometheus started after the scenario)."""
    from test_prometheus_e2e import EXPECTED_FIRING

    rules = (ROOT / "alerts" / "otel-sampling.yaml").read_text()
    page = (ROOT / "docs" / "getting-started.md").read_text()
    listed = set(re.findall(r"`(OtelSampling[A-Za-z]+)`", page.split("## 6.", 1)[1].split("## 7.", 1)[0]))
    assert listed <= set(re.findall(r"alert: (OtelSampling[A-Za-z]+)", rules))
    assert listed >= EXPECTED_FIRING
