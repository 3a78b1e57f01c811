"""What users install: the dashboards and rules shipped in the package, the ``otel-sampling`` command
that exports them (no extra) or regenerates them (the ``mixin`` extra), the jsonnet mixin over the
committed files, and the project metadata the runbook links build on."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import _gojsonnet
import _jsonnet
import pytest
import tomllib
import yaml

from otel_sampling.mixin import MixinConfig, bundle
from otel_sampling.mixin.cli import main
from otel_sampling.mixin.config import REPOSITORY, RUNBOOK_URL
from otel_sampling.mixin.generate import render

ROOT = Path(__file__).resolve().parents[1]
COMMITTED_DASHBOARDS = {p.name: p.read_text() for p in sorted((ROOT / "dashboards").glob("*.json"))}
COMMITTED_RULES = (ROOT / "alerts" / bundle.RULES_FILE).read_text()
COMMITTED_RULES_JSON = (ROOT / "alerts" / bundle.RULES_JSON_FILE).read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_package_copy_equals_the_committed_files():
    assert bundle.dashboards() == COMMITTED_DASHBOARDS, "run `make generate` and commit"
    assert bundle.rules() == COMMITTED_RULES, "run `make generate` and commit"
    assert bundle.files_by_path()[f"alerts/{bundle.RULES_JSON_FILE}"] == COMMITTED_RULES_JSON
    assert sorted((ROOT / "alerts").iterdir()) == [
        ROOT / "alerts" / f for f in (bundle.RULES_JSON_FILE, bundle.RULES_FILE)
    ]
    # the JSON copy mixin.libsonnet reads is the YAML rule file's data
    assert json.loads(COMMITTED_RULES_JSON) == yaml.safe_load(COMMITTED_RULES)


def test_export_writes_the_committed_files(tmp_path, capsys):
    assert main(["dashboards", "--out", str(tmp_path / "d")]) == 0
    assert main(["rules", "--out", str(tmp_path / "r" / "rules.yaml")]) == 0
    assert {p.name: p.read_text() for p in (tmp_path / "d").iterdir()} == COMMITTED_DASHBOARDS
    assert (tmp_path / "r" / "rules.yaml").read_text() == COMMITTED_RULES
    printed = capsys.readouterr().out.split()
    assert str(tmp_path / "d" / "overview.json") in printed
    assert str(tmp_path / "r" / "rules.yaml") in printed


def test_export_needs_no_extra(tmp_path, monkeypatch):
    for module in [name for name in sys.modules if name.startswith(("yaml", "grafana_foundation_sdk"))]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.delitem(sys.modules, "otel_sampling.mixin.generate", raising=False)
    assert main(["dashboards", "--out", str(tmp_path)]) == 0
    assert main(["rules", "--out", str(tmp_path / "r.yaml")]) == 0
    assert (tmp_path / "r.yaml").read_text() == COMMITTED_RULES


def test_an_option_regenerates_with_its_value(tmp_path):
    config = MixinConfig(window="1h", min_requests=50, rule_selector='job="triage-host"')
    options = ["--window", "1h", "--min-requests", "50", "--rule-selector", 'job="triage-host"']
    assert main(["rules", "--out", str(tmp_path / "r.yaml"), *options]) == 0
    assert main(["dashboards", "--out", str(tmp_path / "d"), *options]) == 0
    files = render(config)
    assert (tmp_path / "r.yaml").read_text() == files[f"alerts/{bundle.RULES_FILE}"]
    assert (
        "job:otel_sampling_sampling_degraded:ratio1h > 0.1\n      and on (job) "
        "job:otel_sampling_sampling_requests:increase1h >= 50"
    ) in (tmp_path / "r.yaml").read_text()
    assert {f"dashboards/{p.name}": p.read_text() for p in (tmp_path / "d").iterdir()} == {
        path: text for path, text in files.items() if path.startswith("dashboards/")
    }


def test_regeneration_without_the_extra_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "yaml", None)
    monkeypatch.delitem(sys.modules, "otel_sampling.mixin.generate", raising=False)
    assert main(["rules", "--out", str(tmp_path / "r.yaml"), "--window", "1h"]) == 1
    err = capsys.readouterr().err
    assert "regenerating with --window needs the 'mixin' extra" in err
    assert "yaml is not installed" in err
    assert "otel-sampling[mixin]" in err
    assert not (tmp_path / "r.yaml").exists()


def test_a_bad_value_is_refused_naming_the_option(tmp_path, capsys):
    assert main(["rules", "--out", str(tmp_path / "r.yaml"), "--window", "half an hour"]) == 2
    assert "window: 'half an hour' is not a Prometheus duration" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--help"], ["rules", "--help"], ["dashboards", "--help"]])
def test_help_works_without_the_extra(argv, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "yaml", None)
    monkeypatch.setitem(sys.modules, "grafana_foundation_sdk", None)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "usage: otel-sampling" in out
    assert ("--degraded-share-threshold" in out) == (argv != ["--help"])


def test_a_command_and_its_out_are_required(capsys):
    for argv in ([], ["rules"], ["dashboards"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
    assert "the following arguments are required" in capsys.readouterr().err


MIXIN_SNIPPET = (
    "local mixin = import 'mixin.libsonnet'; {rules: mixin.prometheusRules, "
    "alerts: mixin.prometheusAlerts, dashboards: mixin.grafanaDashboards}"
)


def _debian_jsonnet(snippet: str) -> str:
    """The ``jsonnet`` command (Debian/Ubuntu package ``jsonnet``: the C++ jsonnet, 0.18 in bookworm)."""
    command = shutil.which("jsonnet")
    if command is None:
        pytest.skip("jsonnet (Debian package jsonnet) is not installed: `make test` installs it")
    done = subprocess.run([command, "-J", str(ROOT), "-e", snippet], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


EVALUATORS = {
    "jsonnet (Python binding of the C++ jsonnet)": lambda s: _jsonnet.evaluate_snippet("t", s, jpathdir=[str(ROOT)]),
    "gojsonnet (Python binding of go-jsonnet)": lambda s: _gojsonnet.evaluate_snippet("t", s, jpathdir=[str(ROOT)]),
    "jsonnet command (Debian package)": _debian_jsonnet,
}


def jsonnet_mixin(evaluate=EVALUATORS["jsonnet (Python binding of the C++ jsonnet)"]) -> dict:
    return json.loads(evaluate(MIXIN_SNIPPET))


@pytest.mark.parametrize("evaluator", EVALUATORS)
def test_the_jsonnet_mixin_evaluates_to_the_committed_files(evaluator):
    mixin = jsonnet_mixin(EVALUATORS[evaluator])
    groups = yaml.safe_load(COMMITTED_RULES)["groups"]
    assert mixin["rules"]["groups"] + mixin["alerts"]["groups"] == groups
    assert all("record" in rule for group in mixin["rules"]["groups"] for rule in group["rules"])
    assert all("alert" in rule for group in mixin["alerts"]["groups"] for rule in group["rules"])
    assert mixin["dashboards"] == {
        f"otel-sampling-{name}": json.loads(text) for name, text in COMMITTED_DASHBOARDS.items()
    }


@pytest.mark.parametrize("evaluator", EVALUATORS)
def test_the_jsonnet_mixin_composes_like_a_mixin(evaluator):
    """kube-prometheus adds mixins together: ours extends, not replaces, what is already there."""
    snippet = (
        "local mixin = {prometheusAlerts+:: {groups+: [{name: 'other', rules: []}]}} "
        "+ import 'mixin.libsonnet'; [g.name for g in mixin.prometheusAlerts.groups]"
    )
    assert json.loads(EVALUATORS[evaluator](snippet)) == [
        "other",
        "otel-sampling.alerts",
        "otel-sampling.alerts-on-alerts",
    ]


def test_jsonnetfile_is_a_jsonnet_bundler_manifest():
    assert json.loads((ROOT / "jsonnetfile.json").read_text()) == {
        "version": 1,
        "dependencies": [],
        "legacyImports": True,
    }


def test_every_runbook_link_starts_with_the_one_base():
    alerts = [rule for group in yaml.safe_load(COMMITTED_RULES)["groups"] for rule in group["rules"] if "alert" in rule]
    assert alerts
    assert all(a["annotations"]["runbook_url"] == f"{RUNBOOK_URL}#{a['alert'].lower()}" for a in alerts)
    links = [
        link["url"] for text in COMMITTED_DASHBOARDS.values() for link in json.loads(text)["links"] if link.get("url")
    ]
    assert links == [RUNBOOK_URL] * len(COMMITTED_DASHBOARDS)
    other = "https://runbooks.example.com/otel-sampling.md"
    regenerated = render(MixinConfig(runbook_url=other))
    assert RUNBOOK_URL not in "".join(regenerated.values())
    assert f"{other}#otelsamplingdegradedsharehigh" in regenerated[f"alerts/{bundle.RULES_FILE}"]


def test_the_project_metadata_names_the_same_repository():
    project = PYPROJECT["project"]
    assert project["urls"]["Repository"] == REPOSITORY
    assert project["urls"]["Runbook"] == RUNBOOK_URL
    assert all(url.startswith(REPOSITORY) for url in project["urls"].values())
    assert project["scripts"] == {"otel-sampling": "otel_sampling.mixin.cli:main"}


def test_the_license_file_is_the_license_pyproject_names():
    text = (ROOT / "LICENSE").read_text()
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text


def pip_install_requirements(text: str) -> list[str]:
    """The requirements of every ``pip install`` command in ``text`` (inline code and blocks)."""
    out = []
    for match in re.finditer(r"pip install ([^`\n#]+)", text):
        out += [arg for arg in shlex.split(match.group(1)) if not arg.startswith("-")]
    return out


def test_every_install_line_in_the_docs_works_without_an_index():
    """The package is not on an index: a requirement by name must say where it comes from."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "examples" / "triage" / "README.md"]
    requirements = [r for doc in docs for r in pip_install_requirements(doc.read_text())]
    by_name = [r for r in requirements if r.startswith("otel-sampling")]
    assert len(by_name) >= 4
    assert [r for r in by_name if not r.endswith(f" @ git+{REPOSITORY}")] == []
    assert all(r.startswith((".", "./")) for r in requirements if r not in by_name)
