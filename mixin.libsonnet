// otel-sampling as a monitoring mixin (the kube-prometheus / jsonnet-bundler convention):
//
//   local otelSampling = import 'otel-sampling/mixin.libsonnet';
//   otelSampling.prometheusRules    // {groups: [...]}: the recording rules
//   otelSampling.prometheusAlerts   // {groups: [...]}: the alerts
//   otelSampling.grafanaDashboards  // {'otel-sampling-overview.json': {...}, ...}
//
// The fields are the committed files themselves (alerts/otel-sampling.yaml, dashboards/*.json),
// generated with the default selectors, windows and thresholds. For other values, regenerate the
// files (`otel-sampling rules --help`, `otel-sampling dashboards --help`) and import those instead.
// Needs std.parseYaml (jsonnet / go-jsonnet 0.18 or newer).
local ruleFile = std.parseYaml(importstr 'alerts/otel-sampling.yaml');
local isAlertGroup(group) = std.all([std.objectHas(rule, 'alert') for rule in group.rules]);

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
