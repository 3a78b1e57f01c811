"""A thin layer over grafana-foundation-sdk (the Grafana 11.6 build pinned by the ``mixin`` extra) that
fixes its defaults.

The SDK leaves ``refId`` empty, hides legends (``showLegend: false``) and assigns no panel ids;
every builder here sets those, and every panel and query points at the ``$datasource`` variable
(dashboard-linter ``panel-datasource-rule``).
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus as prom
from grafana_foundation_sdk.builders import stat, statetimeline, table, timeseries
from grafana_foundation_sdk.models import common as cm
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from otel_sampling import names
from otel_sampling.mixin import metrics as m
from otel_sampling.mixin.config import MixinConfig
from otel_sampling.mixin.promql import counted, label_selector, matchers
from otel_sampling.mixin.rules import PREFIX, alerting_rules

DATASOURCE = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
JOB = f'{m.JOB}=~"$job"'
TAG = "otel-sampling"
REF_IDS = "ABCDEFGHIJ"


def raw_selector(config: MixinConfig, *matchers: str) -> str:
    """The selector of a raw series on a dashboard: ``$job``, the config's ``scope_selector``, then
    ``matchers``. A recorded series takes ``$job`` only: the rules aggregated the scope away."""
    return label_selector(JOB, config.scope_selector, *matchers)


def query(expr: str, legend: str, ref: str, *, instant: bool = False, as_table: bool = False) -> prom.Dataquery:
    q = prom.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(DATASOURCE)
    q = q.instant() if instant else q.range()
    return q.format(PromQueryFormat.TABLE) if as_table else q


def thresholds(*steps: tuple[float | None, str]) -> dash.ThresholdsConfig:
    return (
        dash.ThresholdsConfig()
        .mode(dm.ThresholdsMode.ABSOLUTE)
        .steps([dm.Threshold(value=v, color=c) for v, c in steps])
    )


NEUTRAL = thresholds((None, "text"))
PanelBuilder = stat.Panel | timeseries.Panel | table.Panel | statetimeline.Panel


def stat_panel(
    title: str,
    description: str,
    targets: list[tuple[str, str]],
    unit: str,
    *,
    steps: dash.ThresholdsConfig = NEUTRAL,
    decimals: int | None = None,
    width: int = 4,
    no_value: str = "no data",
) -> stat.Panel:
    """One number (or one per legend value), instant queries, neutral colour unless ``steps``;
    ``no_value`` is shown when the query returns nothing (say why: "n < 20", never "healthy")."""
    p = (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(width)
        .height(4)
        .graph_mode(cm.BigValueGraphMode.NONE)
        .color_mode(cm.BigValueColorMode.VALUE if steps is not NEUTRAL else cm.BigValueColorMode.NONE)
        .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .thresholds(steps)
        .no_value(no_value)
    )
    if decimals is not None:
        p = p.decimals(decimals)
    for ref, (expr, legend) in zip(REF_IDS, targets, strict=False):
        p = p.with_target(query(expr, legend, ref, instant=True))
    return p


def timeseries_panel(
    title: str,
    description: str,
    targets: list[tuple[str, str]],
    unit: str,
    *,
    width: int = 12,
    bars: bool = False,
    threshold: float | None = None,
) -> timeseries.Panel:
    """Lines over time with a table legend (last, max) and a sorted multi tooltip."""
    p = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(width)
        .height(8)
        .fill_opacity(10)
        .show_points(cm.VisibilityMode.NEVER)
        .legend(
            cb.VizLegendOptions()
            .show_legend(True)
            .display_mode(cm.LegendDisplayMode.TABLE)
            .placement(cm.LegendPlacement.BOTTOM)
            .calcs(["lastNotNull", "max"])
        )
        .tooltip(cb.VizTooltipOptions().mode(cm.TooltipDisplayMode.MULTI).sort(cm.SortOrder.DESCENDING))
    )
    if bars:
        p = p.draw_style(cm.GraphDrawStyle.BARS)
    if threshold is not None:
        p = p.thresholds(thresholds((None, "green"), (threshold, "red"))).thresholds_style(
            cb.GraphThresholdsStyleConfig().mode(cm.GraphThresholdsStyleMode.LINE)
        )
    for ref, (expr, legend) in zip(REF_IDS, targets, strict=False):
        p = p.with_target(query(expr, legend, ref))
    return p


def table_panel(
    title: str, description: str, targets: list[tuple[str, str]], unit: str, *, width: int = 24
) -> table.Panel:
    """Instant table queries, merged on their labels; the Time column hidden."""
    p = (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(width)
        .height(8)
        .show_header(True)
        .with_transformation(dm.DataTransformerConfig(id_val="merge", options={}))
        .with_transformation(dm.DataTransformerConfig(id_val="organize", options={"excludeByName": {"Time": True}}))
    )
    for ref, (expr, legend) in zip(REF_IDS, targets, strict=False):
        p = p.with_target(query(expr, legend, ref, instant=True, as_table=True))
    return p


def state_panel(
    title: str,
    description: str,
    targets: list[tuple[str, str]],
    *,
    states: tuple[tuple[str, str], ...],
    width: int = 24,
) -> statetimeline.Panel:
    """States over time: the value ``i`` of a series is shown as ``states[i]`` (text, colour), so 0/1
    (or 0/1/2) read as words (the units rule does not apply with mappings)."""
    p = (
        statetimeline.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .span(width)
        .height(6)
        .show_value(cm.VisibilityMode.AUTO)
        .legend(
            cb.VizLegendOptions()
            .show_legend(True)
            .display_mode(cm.LegendDisplayMode.LIST)
            .placement(cm.LegendPlacement.BOTTOM)
        )
        .mappings(
            [
                dm.ValueMap(
                    options={
                        str(value): dm.ValueMappingResult(text=text, color=color, index=value)
                        for value, (text, color) in enumerate(states)
                    }
                )
            ]
        )
    )
    for ref, (expr, legend) in zip(REF_IDS, targets, strict=False):
        p = p.with_target(query(expr, legend, ref))
    return p


def row(title: str) -> dash.Row:
    """An expanded row: the panels added after it, up to the next row, are its panels."""
    return dash.Row(title).collapsed(False)


def runbook_link(config: MixinConfig, alert: str) -> dash.DashboardLink:
    """A panel link to the runbook section of ``alert`` (a full name, ``OtelSampling...``): the
    ``runbook_url`` the alert itself carries."""
    [url] = [rule["annotations"]["runbook_url"] for rule in alerting_rules(config) if rule["alert"] == alert]
    return (
        dash.DashboardLink(f"Runbook: {alert}").type(dm.DashboardLinkType.LINK).url(url).target_blank(True).icon("doc")
    )


def annotation(name: str, expr: str, color: str) -> dash.AnnotationQuery:
    """A Prometheus annotation: every series ``expr`` returns marks its timestamps (filter with ``> 0``)."""
    return dash.AnnotationQuery().name(name).datasource(DATASOURCE).expr(expr).icon_color(color).enable(True)


def dashboard(
    config: MixinConfig, uid: str, title: str, description: str, extra_variables: tuple[dash.QueryVariable, ...] = ()
) -> dash.Dashboard:
    """A read-only dashboard with ``datasource`` and ``job`` variables, links to its siblings, and
    annotations for this mixin's firing alerts and for degradation entries."""
    entered = raw_selector(config, matchers(**{m.DIRECTION: names.DIRECTION_ENTER}))
    d = (
        dash.Dashboard(f"Agent sampling / {title}")
        .uid(uid)
        .description(description)
        .tags([TAG])
        .readonly()
        .refresh(config.dashboard_refresh)
        .time(config.dashboard_time_from, "now")
        .timezone("browser")
        .tooltip(dm.DashboardCursorSync.CROSSHAIR)
        .link(
            dash.DashboardLink("Runbook")
            .type(dm.DashboardLinkType.LINK)
            .url(config.runbook_url)
            .target_blank(True)
            .icon("doc")
        )
        .link(
            dash.DashboardLink("Agent sampling")
            .type(dm.DashboardLinkType.DASHBOARDS)
            .tags([TAG])
            .as_dropdown(True)
            .include_vars(True)
            .keep_time(True)
        )
        .with_variable(dash.DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(label_variable("job", "Job", m.SAMPLING_REQUESTS, m.JOB, label_selector(config.scope_selector)))
        .annotation(
            annotation("Alerts firing", f'ALERTS{{alertstate="firing", alertname=~"{PREFIX}.*", {JOB}}}', "red")
        )
        .annotation(
            annotation(  # counted(): the first entry of a component creates its series at 1
                "Degradation entered",
                f"sum by ({m.COMPONENT}) ({counted(m.DEGRADATION_TRANSITIONS + entered, '$__rate_interval')}) > 0",
                "orange",
            )
        )
    )
    for variable in extra_variables:
        d = d.with_variable(variable)
    return d


def label_variable(name: str, label: str, series: str, label_name: str, selector: str = "") -> dash.QueryVariable:
    """A multi-value ``label_values()`` variable, All = ``.+``, refreshed on time-range change."""
    return (
        dash.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(f"label_values({series}{selector}, {label_name})")
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".+")
    )


def assign_panel_ids(model: dm.Dashboard) -> None:
    """The SDK leaves panel ids unset and gives rows id 0: number every panel and row from 1."""
    next_id = 1
    for panel in model.panels or []:
        panel.id_val = next_id
        next_id += 1
        for child in getattr(panel, "panels", None) or []:
            child.id_val = next_id
            next_id += 1
