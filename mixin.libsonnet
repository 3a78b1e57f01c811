// otel-sampling as a monitoring mixin (the kube-prometheus / jsonnet-bundler convention):
//
//   local otelSampling = import 'otel-sampling/mixin.libsonnet';
//   otelSampling.prometheusRules    // {groups: [...]}: the recording rules
//   otelSampling.prometheusAlerts   // {groups: [...]}: the alerts
//   otelSampling.grafanaDashboards  // {'otel-sampling-overview.json': {...}, ...}
//
// The fields are the committed files themselves (alerts/otel-sampling.json, the rule file as JSON, and
// dashboards/*.json), generated with the default selectors, windows and thresholds. For other values,
// regenerate the files (`otel-sampling rules --help`, `otel-sampling dashboards --help`) and import
// those instead. Needs std.parseJson only: the C++ jsonnet 0.18 of Debian and Ubuntu
// (`apt install jsonnet`) and go-jsonnet build it (tests/test_bundled.py).
local ruleFile = std.parseJson(importstr 'alerts/otel-sampling.json');
// (no std.all: jsonnet 0.18 has none)
local isAlertGroup(group) = std.length([rule for rule in group.rules if !std.objectHas(rule, 'alert')]) == 0;

{
  prometheusRules+:: { groups+: [group for group in ruleFile.groups if !isAlertGroup(group)] },
  prometheusAlerts+:: { groups+: [group for group in ruleFile.groups if isAlertGroup(group)] },
  // Keys prefixed with the mixin's name: kube-prometheus merges every mixin's grafanaDashboards
  // into one object, where a bare 'overview.json' would collide.
  grafanaDashboards+:: {
    'otel-sampling-overview.json': std.parseJson(importstr 'dashboards/overview.json'),
    'otel-sampling-mcp-sampling.json': std.parseJson(importstr 'dashboards/mcp-sampling.json'),
    'otel-sampling-providers.json': std.parseJson(importstr 'dashboards/providers.json'),
    'otel-sampling-degradation.json': std.parseJson(importstr 'dashboards/degradation.json'),
  },
}
