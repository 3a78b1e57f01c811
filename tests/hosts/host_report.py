"""The real-host report: scenario x host x verdict field, expected and observed, as Markdown.

Registered as a pytest plugin by the suite fixture: at the end of the run it renders every cell that
ran, writes ``build/hosts-report.md`` and prints it. A cell reads ``✓ value`` when the observed
value is the expected one, else ``✗ want … / got …``, with the rule a known failure breaks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from host_runs import provider_failed
from host_scenarios import HOSTS, SCENARIOS, expected_for, scenario_header
from host_verdicts import FIELDS, fields_for


def _code(text: str) -> str:
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


class ReportPlugin:
    def __init__(self, suite: Any, known_failures: dict[tuple[str, str, str], str], path: Path) -> None:
        self.suite, self.known_failures, self.path = suite, known_failures, path
        self.versions: dict[str, dict[str, str]] = {}

    def render(self) -> str:
        observations = self.suite.observations
        lines = [
            "# Real hosts: sampling verdicts",
            "",
            "Each cell: `✓ observed` when it is the expected verdict, else `✗ want … / got …`; "
            "a known failure names the rule it breaks (`xfail`). "
            "Expected verdicts come from what the fake provider served.",
            "",
            "Hosts:",
            "",
        ]
        for host in HOSTS:
            pins = ", ".join(f"{name} {version}" for name, version in self.versions.get(host.name, {}).items())
            lines.append(f"- **{host.name}** ({host.family.provider} SDK, {host.server_script}): {pins}")
        failing = xfail = 0
        for scenario in SCENARIOS:
            ran = [h for h in HOSTS if (scenario.name, h.name) in observations]
            if not ran:
                continue
            lines += [
                "",
                f"## {scenario.name}: {scenario.description}",
                "",
                "| field | " + " | ".join(h.name for h in ran) + " |",
                "|---|" + "---|" * len(ran),
            ]
            for field, (label, check_of) in FIELDS.items():
                cells = []
                for host in ran:
                    expected = expected_for(scenario, host)
                    if field not in fields_for(expected):
                        cells.append("n/a")
                        continue
                    check = check_of(observations[(scenario.name, host.name)], expected)
                    if check.ok:
                        cells.append(f"✓ {_code(check.got)}")
                        continue
                    known = self.known_failures.get((scenario.name, host.name, field))
                    xfail += bool(known)
                    failing += not known
                    item = " **(FAIL)**"
                    if known:
                        item = f" (xfail: {' + '.join(reason.split(':')[0] for reason in known.split(' + '))})"
                    cells.append(f"✗ want {_code(check.want)} / got {_code(check.got)}{item}")
                lines.append(f"| {label} | " + " | ".join(cells) + " |")
        reasons = sorted({reason for known in self.known_failures.values() for reason in known.split(" + ")})
        lines += [
            "",
            f"Cells wrong today: {xfail} known (xfail), {failing} not known.",
            "",
            "Known failures, by the change that fixes them:",
            "",
        ]
        lines += [f"- {reason}" for reason in reasons]
        lines += [
            "",
            "## Runs",
            "",
            "| scenario | host | x-fake-scenario | provider requests (model: HTTP status) "
            "| host output (instrumented) | seconds (both runs) |",
            "|---|---|---|---|---|---|",
        ]
        for (scenario_name, host_name), obs in observations.items():
            requests = ", ".join(
                f"{r['model']}: {r['scenario'].get('status') if provider_failed(r) else 200}"
                for r in obs.instrumented.requests
            )
            header = scenario_header(obs.scenario, obs.host.family) or "(none)"
            lines.append(
                f"| {scenario_name} | {host_name} | {_code(header)} | {requests or '—'} | "
                f"{_code(obs.instrumented.output or '(none)')} | "
                f"{self.suite.seconds.get((scenario_name, host_name), 0):.0f} |"
            )
        return "\n".join(lines) + "\n"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.suite.observations:
            return
        report = self.render()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(report, encoding="utf-8")
        terminalreporter.write_sep("=", f"real hosts report ({self.path})")
        terminalreporter.write(report)
