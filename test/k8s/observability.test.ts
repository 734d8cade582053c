/**
 * The Grafana dashboard (k8s/grafana/odds-service.json) and the alert rules
 * (k8s/prometheusrule.yaml), checked the way they fail in a cluster:
 *
 * - the PrometheusRule's structure, and its rules through `promtool check rules`;
 * - each alert through `promtool test rules`: it fires on the series it is
 *   meant for, only after its `for:`, not on a near miss, and every label its
 *   annotations name is on the alert;
 * - the dashboard's JSON model: unique ids, a datasource and targets on every
 *   panel, a grid that fits, only defined variables, queries promtool parses;
 * - every metric and label the queries and rules name, against a real scrape
 *   of the running service after traffic (a metric renamed in src/ breaks here);
 * - the kustomize build ships the dashboard as the ConfigMap Grafana's sidecar
 *   loads, and docs/operations.md's alert table lists exactly the alerts.
 *
 * As in manifests.test.ts, each check returns a list of problems; the last
 * group feeds broken copies to the checks to show that they bite.
 */
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { render } from './kustomize.js';
import { http, postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { eventually } from '../helpers/wait.js';
import { Client, image } from '../helpers/ws.js';
import { findRoot } from './root.js';

// ---------------------------------------------------------------- loading

const ROOT = findRoot();
const RULE_FILE = join(ROOT, 'k8s', 'prometheusrule.yaml');
const DASHBOARD_FILE = join(ROOT, 'k8s', 'grafana', 'odds-service.json');

interface Rule {
  alert?: string; record?: string; expr: string; for?: string;
  labels?: Record<string, string>; annotations?: Record<string, string>; [key: string]: unknown;
}
interface PrometheusRule {
  apiVersion: string; kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: { groups: Array<{ name: string; interval?: string; rules: Rule[]; [key: string]: unknown }>; [key: string]: unknown };
}
interface Target { refId?: string; expr?: string; datasource?: unknown }
interface Panel {
  id?: number; type?: string; title?: string; datasource?: unknown; targets?: Target[];
  gridPos?: { x: number; y: number; w: number; h: number }; panels?: Panel[];
}
interface Variable { type: string; name: string; query?: unknown; definition?: string }
interface Dashboard {
  uid?: string; title?: string; schemaVersion?: number; panels?: Panel[];
  templating?: { list?: Variable[] };
}

/** YAML 1.1, as kubectl reads it. */
const ruleText = readFileSync(RULE_FILE, 'utf8');
const ruleDocs = parseAllDocuments(ruleText, { version: '1.1' }) as Array<{ toJS(): unknown }>;
const rule = ruleDocs[0]!.toJS() as PrometheusRule;
const dashboardText = readFileSync(DASHBOARD_FILE, 'utf8');

const alerts = (r: PrometheusRule): Rule[] => r.spec.groups.flatMap((g) => g.rules).filter((x) => x.alert !== undefined);

// ---------------------------------------------------------------- PromQL references

interface Selector { metric: string; labels: string[] }
/** The metrics a query selects, the label names it matches on, and those it groups or joins by. */
interface Refs { selectors: Selector[]; grouping: string[] }

const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set([
  ...GROUPING, 'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values',
  'bottomk', 'topk', 'quantile', 'bool', 'and', 'or', 'unless', 'offset', 'atan2', 'inf', 'nan',
]);
const STRING = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g;

function closing(s: string, from: number, open: string, close: string): number {
  let depth = 0;
  for (let i = from; i < s.length; i++) {
    const c = s[i]!;
    if (c === '"' || c === "'" || c === '`') {
      STRING.lastIndex = i;
      const m = STRING.exec(s);
      if (m?.index === i) i += m[0].length - 1;
      continue;
    }
    if (c === open) depth++;
    else if (c === close && --depth === 0) return i;
  }
  throw new Error(`unbalanced ${open} in ${s}`);
}

/**
 * A small PromQL reader: identifiers not followed by `(` and not keywords are
 * metric names; `{...}` after one holds its matchers; `[...]` and `$variables`
 * are skipped; `by (...)` and the like hold label names.
 */
function promqlRefs(expr: string): Refs {
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  let last: Selector | undefined;
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (c === '"' || c === "'" || c === '`') {
      STRING.lastIndex = i;
      i += STRING.exec(expr)![0].length;
      last = undefined;
    } else if (c === '{') {
      const end = closing(expr, i, '{', '}');
      const body = expr.slice(i + 1, end).replace(STRING, '""');
      const labels = [...body.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((m) => m[1]!);
      if (last) last.labels.push(...labels);
      else selectors.push({ metric: '', labels });
      last = undefined;
      i = end + 1;
    } else if (c === '[') {
      i = closing(expr, i, '[', ']') + 1;
    } else if (c === '$') {
      i = expr[i + 1] === '{' ? closing(expr, i, '{', '}') + 1 : i + 1 + /^\w*/.exec(expr.slice(i + 1))![0].length;
    } else if (/[0-9.]/.test(c)) {
      i += /^[\w.+]*/.exec(expr.slice(i))![0].length || 1;
      last = undefined;
    } else if (/[a-zA-Z_:]/.test(c)) {
      const word = /^[a-zA-Z_:][\w:]*/.exec(expr.slice(i))![0];
      let after = i + word.length;
      while (/\s/.test(expr[after] ?? '')) after++;
      last = undefined;
      if (GROUPING.has(word) && expr[after] === '(') {
        const end = closing(expr, after, '(', ')');
        grouping.push(...expr.slice(after + 1, end).split(',').map((l) => l.trim()).filter(Boolean));
        i = end + 1;
        continue;
      }
      if (!KEYWORDS.has(word) && expr[after] !== '(') {
        last = { metric: word, labels: [] };
        selectors.push(last);
      }
      i += word.length;
    } else {
      if (!/\s/.test(c)) last = undefined;
      i++;
    }
  }
  return { selectors, grouping };
}

/** Grafana's `label_values(selector, label)` variable query, as PromQL references. */
function variableRefs(query: string): Refs {
  const m = /^\s*label_values\((.*),\s*([a-zA-Z_]\w*)\s*\)\s*$/s.exec(query);
  if (!m) return { selectors: [{ metric: '', labels: [] }], grouping: [] };
  const refs = promqlRefs(m[1]!);
  return { selectors: refs.selectors, grouping: [...refs.grouping, m[2]!] };
}

function variableQuery(v: Variable): string | undefined {
  if (typeof v.query === 'string') return v.query;
  if (v.query && typeof v.query === 'object' && typeof (v.query as { query?: unknown }).query === 'string') return (v.query as { query: string }).query;
  return undefined;
}

function flatPanels(d: Dashboard): Panel[] {
  return (d.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
}

/** Every query of the dashboard (panel targets and variable queries) and of the rules, each named for messages. */
function queries(d: Dashboard, r: PrometheusRule): Array<{ where: string; refs: Refs }> {
  const out: Array<{ where: string; refs: Refs }> = [];
  for (const p of flatPanels(d)) {
    for (const tg of p.targets ?? []) if (typeof tg.expr === 'string') out.push({ where: `panel "${p.title}" ${tg.refId}`, refs: promqlRefs(tg.expr) });
  }
  for (const v of d.templating?.list ?? []) {
    const q = v.type === 'query' ? variableQuery(v) : undefined;
    if (q !== undefined) out.push({ where: `variable ${v.name}`, refs: variableRefs(q) });
  }
  for (const g of r.spec.groups) for (const x of g.rules) out.push({ where: `rule ${x.alert ?? x.record}`, refs: promqlRefs(x.expr) });
  return out;
}

// ---------------------------------------------------------------- the scrape

/**
 * Series from outside the service that the rules use, with their labels:
 * kube-state-metrics' view of the Deployment (see prometheusrule.yaml for why).
 */
const EXTERNAL: Record<string, string[]> = {
  kube_deployment_status_replicas_unavailable: ['namespace', 'deployment'],
  kube_deployment_status_replicas_available: ['namespace', 'deployment'],
  kube_deployment_spec_replicas: ['namespace', 'deployment'],
};
/** Labels Prometheus adds to every series it scrapes through the ServiceMonitor. */
const TARGET_LABELS = ['namespace', 'pod', 'service', 'job', 'instance', 'container', 'endpoint'];

interface Exposition {
  /** Metric family name to type, from the `# TYPE` lines. */
  families: Map<string, string>;
  /** Sample name to the label names seen on its samples. */
  labels: Map<string, Set<string>>;
}

function readExposition(text: string): Exposition {
  const families = new Map<string, string>();
  const labels = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) families.set(type[1]!, type[2]!);
    if (!line || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][\w:]*/.exec(line)![0];
    const set = labels.get(name) ?? new Set<string>();
    for (const m of line.slice(name.length).matchAll(/([a-zA-Z_]\w*)="(?:[^"\\]|\\.)*"/g)) set.add(m[1]!);
    labels.set(name, set);
  }
  return { families, labels };
}

/** A metric name is exposed when it is a family, or a histogram's (or summary's) _bucket, _sum or _count. */
function exposed(name: string, e: Exposition): boolean {
  if (e.families.has(name)) return true;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (!m) return false;
  const type = e.families.get(m[1]!);
  return type === 'histogram' || (type === 'summary' && m[2] !== 'bucket');
}

function metricProblems(qs: Array<{ where: string; refs: Refs }>, e: Exposition): string[] {
  const p: string[] = [];
  for (const { where, refs } of qs) {
    for (const s of refs.selectors) {
      if (s.metric === '') p.push(`${where}: a selector without a metric name`);
      else if (!(s.metric in EXTERNAL) && !exposed(s.metric, e)) p.push(`${where}: ${s.metric} is not in the service's /metrics`);
    }
  }
  return p;
}

/** The label names a query may use for a metric: those on its samples, or an external series' own. */
function labelsOf(metric: string, e: Exposition): Set<string> | undefined {
  if (metric in EXTERNAL) return new Set([...EXTERNAL[metric]!, 'job', 'instance']);
  const seen = e.labels.get(metric);
  return seen && new Set([...seen, ...TARGET_LABELS]);
}

function labelProblems(qs: Array<{ where: string; refs: Refs }>, e: Exposition): string[] {
  const p: string[] = [];
  for (const { where, refs } of qs) {
    const known = new Set<string>();
    for (const s of refs.selectors) {
      const own = labelsOf(s.metric, e);
      if (!own) {
        p.push(`${where}: ${s.metric} has no samples in the scrape to check labels against`);
        continue;
      }
      own.forEach((l) => known.add(l));
      for (const l of s.labels) if (!own.has(l)) p.push(`${where}: ${s.metric} has no label ${l}`);
    }
    for (const l of refs.grouping) if (!known.has(l)) p.push(`${where}: groups by ${l}, which none of its metrics has`);
  }
  return p;
}

// ---------------------------------------------------------------- the PrometheusRule

const DURATION = /^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$/;
const RULE_KEYS = new Set(['alert', 'record', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations']);
const GROUP_KEYS = new Set(['name', 'interval', 'rules', 'partial_response_strategy', 'limit']);
const SEVERITIES = new Set(['critical', 'warning', 'info']);

function ruleShapeProblems(r: PrometheusRule): string[] {
  const p: string[] = [];
  if (r.apiVersion !== 'monitoring.coreos.com/v1') p.push(`apiVersion must be monitoring.coreos.com/v1, not ${String(r.apiVersion)}`);
  if (r.kind !== 'PrometheusRule') p.push('kind must be PrometheusRule');
  if (typeof r.metadata?.name !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(r.metadata.name)) p.push('metadata.name must be a DNS label');
  for (const key of Object.keys(r.spec ?? {})) if (key !== 'groups') p.push(`spec.${key} is not a PrometheusRule field`);
  const groups = r.spec?.groups;
  if (!Array.isArray(groups) || groups.length === 0) return [...p, 'spec.groups must list at least one group'];
  const groupNames = new Set<string>();
  const alertNames = new Set<string>();
  for (const g of groups) {
    for (const key of Object.keys(g)) if (!GROUP_KEYS.has(key)) p.push(`group ${g.name}: ${key} is not a rule group field`);
    if (groupNames.has(g.name)) p.push(`group ${g.name} appears twice`);
    groupNames.add(g.name);
    for (const x of g.rules ?? []) {
      const name = x.alert ?? x.record ?? '(unnamed)';
      for (const key of Object.keys(x)) if (!RULE_KEYS.has(key)) p.push(`${name}: ${key} is not a rule field`);
      if (x.alert === undefined) continue;
      if (!/^[A-Z][A-Za-z0-9]*$/.test(x.alert)) p.push(`${name}: alert names are CamelCase`);
      if (alertNames.has(x.alert)) p.push(`${name} appears twice`);
      alertNames.add(x.alert);
      if (typeof x.expr !== 'string' || x.expr.trim() === '') p.push(`${name}: expr is required`);
      if (typeof x.for !== 'string' || !DURATION.test(x.for) || x.for === '') p.push(`${name}: for must be a duration, so one bad scrape does not page`);
      if (!SEVERITIES.has(String(x.labels?.severity))) p.push(`${name}: labels.severity must be one of ${[...SEVERITIES].join(', ')}`);
      for (const a of ['summary', 'description']) if (typeof x.annotations?.[a] !== 'string' || x.annotations[a]!.trim() === '') p.push(`${name}: annotations.${a} is required`);
    }
  }
  return p;
}

/** The PrometheusRule's spec field as a Prometheus rule file, which is what the Operator hands Prometheus. */
const ruleFile = (r: PrometheusRule): string => stringify({ groups: r.spec.groups });

// ---------------------------------------------------------------- the dashboard

const DS = { type: 'prometheus', uid: '${datasource}' };
const BUILTIN_VARIABLES = new Set(['__rate_interval', '__interval', '__interval_ms', '__range', '__range_s', '__range_ms', '__dashboard', '__from', '__to']);

function usedVariables(text: string): string[] {
  return [...text.matchAll(/\$(?:\{(\w+)(?::\w+)?\}|(\w+))/g)].map((m) => (m[1] ?? m[2])!);
}

function dashboardProblems(d: Dashboard): string[] {
  const p: string[] = [];
  if (typeof d.uid !== 'string' || !/^[\w-]{1,40}$/.test(d.uid)) p.push('uid must be a short stable string (Grafana links use it)');
  if (typeof d.title !== 'string' || d.title === '') p.push('title is required');
  if (typeof d.schemaVersion !== 'number' || d.schemaVersion < 36) p.push('schemaVersion must be 36 or newer (Grafana 9.x and later)');
  const vars = d.templating?.list ?? [];
  const ds = vars.find((v) => v.name === 'datasource');
  if (ds?.type !== 'datasource' || ds.query !== 'prometheus') p.push('a variable named datasource of type datasource with query prometheus is required');
  const defined = new Set(vars.map((v) => v.name));
  const panels = flatPanels(d);
  const ids = new Set<number>();
  for (const panel of panels) {
    const name = `panel ${panel.id} "${panel.title}"`;
    if (typeof panel.id !== 'number' || !Number.isInteger(panel.id) || panel.id < 1) p.push(`${name}: id must be a positive integer`);
    else if (ids.has(panel.id)) p.push(`${name}: id is not unique`);
    else ids.add(panel.id);
    const g = panel.gridPos;
    if (!g || g.x < 0 || g.y < 0 || g.w < 1 || g.h < 1 || g.x + g.w > 24) p.push(`${name}: gridPos must lie within the 24 columns`);
    if (panel.type === 'row') {
      if ((panel.targets ?? []).length > 0) p.push(`${name}: a row has no queries`);
      continue;
    }
    if (JSON.stringify(panel.datasource) !== JSON.stringify(DS)) p.push(`${name}: datasource must be ${JSON.stringify(DS)}`);
    const targets = panel.targets ?? [];
    if (targets.length === 0) p.push(`${name}: at least one target is required`);
    const refIds = new Set<string>();
    for (const tg of targets) {
      if (typeof tg.refId !== 'string' || refIds.has(tg.refId)) p.push(`${name}: every target needs its own refId`);
      else refIds.add(tg.refId);
      if (typeof tg.expr !== 'string' || tg.expr.trim() === '') p.push(`${name} ${tg.refId}: expr is required`);
      if (tg.datasource !== undefined && JSON.stringify(tg.datasource) !== JSON.stringify(DS)) p.push(`${name} ${tg.refId}: target datasource differs from the panel's`);
      for (const v of usedVariables(tg.expr ?? '')) if (!defined.has(v) && !BUILTIN_VARIABLES.has(v)) p.push(`${name} ${tg.refId}: $${v} is not a dashboard variable`);
    }
  }
  for (const v of vars) for (const used of usedVariables(variableQuery(v) ?? '')) if (!defined.has(used)) p.push(`variable ${v.name}: $${used} is not defined`);
  const placed = panels.filter((x) => x.gridPos);
  for (let i = 0; i < placed.length; i++) {
    for (let j = i + 1; j < placed.length; j++) {
      const a = placed[i]!.gridPos!;
      const b = placed[j]!.gridPos!;
      if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) p.push(`panels ${placed[i]!.id} and ${placed[j]!.id} overlap`);
    }
  }
  return p;
}

/** The dashboard's queries as recording rules with the variables filled in, so promtool parses them. */
function dashboardAsRules(d: Dashboard): string {
  const fill = (expr: string) => expr
    .replace(/\$__rate_interval|\$__interval|\$__range/g, '5m')
    .replace(/\$\{?namespace\}?/g, 'odds')
    .replace(/\$\{?pod\}?/g, '.*');
  const rules = flatPanels(d).flatMap((p) => (p.targets ?? []).map((tg) => ({ record: `dashboard:panel_${p.id}:${tg.refId}`, expr: fill(tg.expr ?? '') })));
  return stringify({ groups: [{ name: 'dashboard', rules }] });
}

// ---------------------------------------------------------------- promtool

const hasPromtool = spawnSync('promtool', ['--version']).status === 0;
const NO_PROMTOOL = 'promtool is not installed here (.ci/run installs Debian\'s prometheus package)';

function promtool(t: Test, args: string[], files: Record<string, string>): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'odds-promtool-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const r = spawnSync('promtool', args, { cwd: dir, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/**
 * One alert's unit test: input series (promtool's expanding notation, one
 * sample a minute), a time when it must not fire yet (pending, or never
 * true), and a time when it fires exactly once with these labels. Each case
 * also carries a near miss that must stay silent.
 */
interface AlertCase { series: Array<[string, string]>; quiet: string; fires: string; labels: Record<string, string> }

const CASES: Record<string, AlertCase> = {
  OddsFeedStale: {
    series: [
      ['odds_feed_stale{namespace="odds",pod="a"}', '0 0 1x20'],
      ['odds_feed_stale{namespace="odds",pod="b"}', '0x22'],
      ['odds_feed_stale{namespace="live",pod="c"}', '0x22'],
    ],
    quiet: '3m', fires: '6m', labels: { severity: 'critical', namespace: 'odds' },
  },
  OddsBusDown: {
    series: [
      ['odds_bus_connected{namespace="odds",pod="a"}', '1 1 0x20'],
      ['odds_bus_connected{namespace="odds",pod="b"}', '1x22'],
    ],
    quiet: '3m', fires: '6m', labels: { severity: 'critical', namespace: 'odds', pod: 'a' },
  },
  OddsSlowConsumerClosesRising: {
    series: [
      ['odds_slow_consumer_closes_total{namespace="odds",pod="a"}', '0+3x40'],
      ['odds_slow_consumer_closes_total{namespace="calm",pod="b"}', '0+0.5x40'],
    ],
    quiet: '5m', fires: '25m', labels: { severity: 'warning', namespace: 'odds' },
  },
  OddsSourceToPublishSlow: {
    series: [
      // Cricket: most images take 1 to 2.5 s; soccer, in the same namespace, stays under 0.5 s.
      ['odds_source_to_publish_seconds_bucket{namespace="odds",pod="a",sport="Cricket",le="0.5"}', '0+10x40'],
      ['odds_source_to_publish_seconds_bucket{namespace="odds",pod="a",sport="Cricket",le="1"}', '0+10x40'],
      ['odds_source_to_publish_seconds_bucket{namespace="odds",pod="a",sport="Cricket",le="2.5"}', '0+100x40'],
      ['odds_source_to_publish_seconds_bucket{namespace="odds",pod="a",sport="Cricket",le="+Inf"}', '0+100x40'],
      ['odds_source_to_publish_seconds_bucket{namespace="odds",pod="a",sport="Soccer",le="0.5"}', '0+100x40'],
      ['odds_source_to_publish_seconds_bucket{namespace="odds",pod="a",sport="Soccer",le="1"}', '0+100x40'],
      ['odds_source_to_publish_seconds_bucket{namespace="odds",pod="a",sport="Soccer",le="2.5"}', '0+100x40'],
      ['odds_source_to_publish_seconds_bucket{namespace="odds",pod="a",sport="Soccer",le="+Inf"}', '0+100x40'],
    ],
    quiet: '5m', fires: '15m', labels: { severity: 'warning', namespace: 'odds', sport: 'Cricket' },
  },
  OddsHttp5xxRate: {
    series: [
      ['odds_http_requests_total{namespace="odds",route="/api/v1/sports",method="GET",status="200"}', '0+90x30'],
      ['odds_http_requests_total{namespace="odds",route="/api/v1/subscribe",method="POST",status="503"}', '0+10x30'],
      ['odds_http_requests_total{namespace="draining",route="/api/v1/sports",method="GET",status="200"}', '0+50x30'],
      ['odds_http_requests_total{namespace="draining",route="/ready",method="GET",status="503"}', '0+50x30'],
    ],
    quiet: '3m', fires: '10m', labels: { severity: 'critical', namespace: 'odds' },
  },
  OddsIngestRejectionsRising: {
    series: [
      ['odds_ingest_batches_total{namespace="odds",outcome="ok"}', '0+90x40'],
      ['odds_ingest_batches_total{namespace="odds",outcome="rejected"}', '0+10x40'],
      ['odds_ingest_batches_total{namespace="pgdown",outcome="ok"}', '0+90x40'],
      ['odds_ingest_batches_total{namespace="pgdown",outcome="unavailable"}', '0+10x40'],
    ],
    quiet: '5m', fires: '25m', labels: { severity: 'warning', namespace: 'odds' },
  },
  OddsReadModelLag: {
    series: [
      ['odds_read_model_refresh_lag_seconds_bucket{namespace="odds",le="0.005"}', '0x40'],
      ['odds_read_model_refresh_lag_seconds_bucket{namespace="odds",le="0.5"}', '0x40'],
      ['odds_read_model_refresh_lag_seconds_bucket{namespace="odds",le="1"}', '0+10x40'],
      ['odds_read_model_refresh_lag_seconds_bucket{namespace="odds",le="+Inf"}', '0+10x40'],
      ['odds_read_model_refresh_lag_seconds_bucket{namespace="fast",le="0.005"}', '0+10x40'],
      ['odds_read_model_refresh_lag_seconds_bucket{namespace="fast",le="0.5"}', '0+10x40'],
      ['odds_read_model_refresh_lag_seconds_bucket{namespace="fast",le="1"}', '0+10x40'],
      ['odds_read_model_refresh_lag_seconds_bucket{namespace="fast",le="+Inf"}', '0+10x40'],
    ],
    quiet: '5m', fires: '25m', labels: { severity: 'warning', namespace: 'odds' },
  },
  OddsPostgresErrors: {
    series: [
      ['odds_pg_errors_total{namespace="odds",pod="a",kind="unavailable"}', '0+2x30'],
      ['odds_pg_errors_total{namespace="odds",pod="a",kind="idle_client_lost"}', '0 1x30'],
    ],
    quiet: '4m', fires: '20m', labels: { severity: 'warning', namespace: 'odds', kind: 'unavailable' },
  },
  OddsPodsNotReady: {
    series: [
      ['kube_deployment_status_replicas_unavailable{namespace="odds",deployment="odds-service"}', '0 0 1x20'],
      ['kube_deployment_status_replicas_unavailable{namespace="odds",deployment="other"}', '2x22'],
    ],
    quiet: '5m', fires: '15m', labels: { severity: 'warning', namespace: 'odds', deployment: 'odds-service' },
  },
  OddsRecordBehind: {
    series: [
      ['odds_record_lag_seconds{namespace="odds",pod="a"}', '0 0 90x20'],
      ['odds_record_lag_seconds{namespace="odds",pod="b"}', '0 30x21'],
    ],
    quiet: '4m', fires: '9m', labels: { severity: 'warning', namespace: 'odds', pod: 'a' },
  },
  OddsRecordLosing: {
    series: [
      ['odds_record_lost_total{namespace="odds",pod="a",where="log"}', '0 0 0 0 5+5x20'],
      ['odds_record_lost_total{namespace="calm",pod="b",where="log"}', '3x24'],
    ],
    quiet: '3m', fires: '8m', labels: { severity: 'critical', namespace: 'odds' },
  },
  OddsNoPodReady: {
    series: [
      ['kube_deployment_status_replicas_available{namespace="odds",deployment="odds-service"}', '3 3 0x10'],
      ['kube_deployment_spec_replicas{namespace="odds",deployment="odds-service"}', '3x12'],
      ['kube_deployment_status_replicas_available{namespace="parked",deployment="odds-service"}', '0x12'],
      ['kube_deployment_spec_replicas{namespace="parked",deployment="odds-service"}', '0x12'],
    ],
    quiet: '3m', fires: '6m', labels: { severity: 'critical', namespace: 'odds', deployment: 'odds-service' },
  },
};

const labelRefs = (x: Rule): string[] => [...new Set(Object.values(x.annotations ?? {}).flatMap((a) => [...a.matchAll(/\$labels\.(\w+)/g)].map((m) => m[1]!)))].sort();

/**
 * The rules with each alert's annotations replaced by one that renders every
 * label its annotations name: promtool compares annotations exactly, and
 * this way it proves the labels are there without pinning the prose.
 */
function unitTestFiles(r: PrometheusRule, name: string, c: AlertCase): Record<string, string> {
  const probe = structuredClone(r);
  for (const x of alerts(probe)) x.annotations = { labels: labelRefs(x).map((l) => `${l}={{ $labels.${l} }}`).join(' ') };
  const target = alerts(r).find((x) => x.alert === name);
  const expected = (target ? labelRefs(target) : []).map((l) => `${l}=${c.labels[l] ?? '(missing)'}`).join(' ');
  const test = {
    rule_files: ['rules.yaml'],
    evaluation_interval: '1m',
    tests: [{
      interval: '1m',
      input_series: c.series.map(([series, values]) => ({ series, values })),
      alert_rule_test: [
        { eval_time: c.quiet, alertname: name, exp_alerts: [] },
        { eval_time: c.fires, alertname: name, exp_alerts: [{ exp_labels: c.labels, exp_annotations: { labels: expected } }] },
      ],
    }],
  };
  return { 'rules.yaml': ruleFile(probe), 'test.yaml': stringify(test) };
}

// ---------------------------------------------------------------- tests: the rules

t.test('the PrometheusRule has the structure of monitoring.coreos.com/v1, and every alert a for, a severity, a summary and a description', async (t) => {
  t.same(ruleShapeProblems(rule), []);
});

t.test('the PrometheusRule carries app.kubernetes.io/name: odds-service', async (t) => {
  t.equal(rule.metadata.labels?.['app.kubernetes.io/name'], 'odds-service');
});

t.test('promtool check rules accepts the rules', { skip: hasPromtool ? false : NO_PROMTOOL }, async (t) => {
  const r = promtool(t, ['check', 'rules', 'rules.yaml'], { 'rules.yaml': ruleFile(rule) });
  t.equal(r.status, 0, r.output);
  t.match(r.output, new RegExp(`SUCCESS: ${alerts(rule).length} rules found`));
});

t.test('every alert has a promtool unit test here, and every unit test an alert', async (t) => {
  t.same(alerts(rule).map((x) => x.alert).sort(), Object.keys(CASES).sort());
});

for (const [name, c] of Object.entries(CASES)) {
  t.test(`${name} fires after its for: on the series it watches, not on a near miss, with the labels its annotations name`, { skip: hasPromtool ? false : NO_PROMTOOL }, async (t) => {
    const r = promtool(t, ['test', 'rules', 'test.yaml'], unitTestFiles(rule, name, c));
    t.equal(r.status, 0, r.output);
  });
}

// ---------------------------------------------------------------- tests: the dashboard

t.test('the dashboard is valid JSON', async (t) => {
  t.doesNotThrow(() => JSON.parse(dashboardText));
});

const dashboard = JSON.parse(dashboardText) as Dashboard;

t.test('the dashboard has unique panel ids, a Prometheus datasource variable on every panel, targets, a fitting grid and only defined variables', async (t) => {
  t.same(dashboardProblems(dashboard), []);
});

t.test('the dashboard has panels for every area operators watch', async (t) => {
  const exprs = flatPanels(dashboard).flatMap((p) => (p.targets ?? []).map((tg) => tg.expr ?? '')).join('\n');
  for (const m of [
    'odds_feed_stale', 'odds_bus_connected', 'odds_updates_ingested_total', 'odds_ingest_items_total', 'odds_ingest_batches_total',
    'odds_frames_published_total', 'odds_frames_delivered_total', 'odds_frames_skipped_total', 'odds_resyncs_total',
    'odds_slow_consumer_closes_total', 'odds_ws_connections', 'odds_ws_subscriptions', 'odds_http_requests_total',
    'odds_http_request_duration_seconds_bucket', 'odds_read_model_refresh_lag_seconds_bucket', 'odds_bus_lag_seconds_bucket',
    'odds_bus_images_received_total', 'odds_pg_pool_connections', 'odds_pg_errors_total', 'odds_source_to_ingest_seconds_bucket',
    'odds_ingest_to_publish_seconds_bucket', 'odds_source_to_publish_seconds_bucket',
  ]) t.match(exprs, new RegExp(`\\b${m}\\b`), m);
});

t.test('promtool parses every dashboard query', { skip: hasPromtool ? false : NO_PROMTOOL }, async (t) => {
  const r = promtool(t, ['check', 'rules', 'dashboard.yaml'], { 'dashboard.yaml': dashboardAsRules(dashboard) });
  t.equal(r.status, 0, r.output);
});

// ---------------------------------------------------------------- tests: against the running service

const svc = await startTestService(t);
const M = '1.200001001';

/** Traffic that gives every labelled metric a sample: REST, sockets of both formats, good and bad ingest, and lost Postgres connections. */
async function traffic(t: Test): Promise<string> {
  const sockets = [await Client.connect(svc.url, { format: 'json' }), await Client.connect(svc.url, { format: 'proto' })];
  t.teardown(() => sockets.forEach((c) => c.close()));
  for (const c of sockets) await c.request({ op: 'subscribe', mids: [M] });
  await http(svc.url, '/api/v1/sports');
  await http(svc.url, '/ready');
  await postJson(svc.url, '/api/v1/ingest', { data: [image(M, 2.5)] });
  await postJson(svc.url, '/api/v1/ingest', { data: [image('no.such')] });
  for (const c of sockets) await c.settled();
  const admin = await sqlClient(t, svc.databaseUrl);
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  const r = await eventually(() => http<string>(svc.metricsUrl, '/metrics'), (r) => /^odds_pg_errors_total\{/m.test(r.text));
  return r.text;
}

t.test('every metric the dashboard and the rules name is exposed by the running service', async (t) => {
  const e = readExposition(await traffic(t));
  t.same(metricProblems(queries(dashboard, rule), e), []);
});

t.test('every label the dashboard and the rules match on or group by is on the series it names', async (t) => {
  const e = readExposition(await traffic(t));
  t.same(labelProblems(queries(dashboard, rule), e), []);
});

// ---------------------------------------------------------------- tests: shipping and docs

t.test('the kustomize build ships the dashboard as a ConfigMap for Grafana\'s sidecar, small enough for kubectl apply', async (t) => {
  // Rendered as kubectl kustomize would, offline (kustomize.ts).
  const docs = render(join(ROOT, 'k8s')).docs as Array<{ kind: string; metadata: { name: string; labels?: Record<string, string> }; data?: Record<string, string> }>;
  const cm = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'odds-service-dashboard');
  t.ok(cm, 'ConfigMap odds-service-dashboard, without a hash suffix');
  t.equal(cm?.metadata.labels?.grafana_dashboard, '1');
  t.equal(cm?.data?.['odds-service.json'], dashboardText, 'the dashboard file, verbatim');
  // Client-side apply stores the whole object in an annotation, which Kubernetes caps at 256 KiB.
  t.ok(JSON.stringify(cm).length < 256 * 1024, `${JSON.stringify(cm).length} bytes`);
  t.ok(docs.some((d) => d.kind === 'PrometheusRule'), 'the PrometheusRule is in the build');
});

t.test('the alert table of docs/operations.md lists exactly the alerts of the PrometheusRule', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const section = doc.split(/^## Dashboard and alerts$/m)[1]?.split(/^#{1,3} /m)[0] ?? '';
  const listed = [...section.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]!).sort();
  t.same(listed, alerts(rule).map((x) => x.alert).sort());
});

// ---------------------------------------------------------------- the checks bite

t.test('the checks reject broken dashboards and rules', async (t) => {
  const brokenDashboard = (mutate: (d: Dashboard) => void): Dashboard => {
    const d = structuredClone(dashboard);
    mutate(d);
    return d;
  };
  const brokenRule = (mutate: (r: PrometheusRule) => void): PrometheusRule => {
    const r = structuredClone(rule);
    mutate(r);
    return r;
  };
  const firstQuery = (d: Dashboard): Target => flatPanels(d).find((p) => p.targets?.length)!.targets![0]!;
  const firstAlert = (r: PrometheusRule): Rule => alerts(r)[0]!;
  const scrape = readExposition(await http<string>(svc.metricsUrl, '/metrics').then((r) => r.text));

  t.test('two panels with one id', async (t) => {
    const d = brokenDashboard((d) => { d.panels![2]!.id = d.panels![1]!.id; });
    t.match(dashboardProblems(d).join('\n'), /id is not unique/);
  });

  t.test('a panel without a datasource', async (t) => {
    const d = brokenDashboard((d) => { delete flatPanels(d).find((p) => p.type !== 'row')!.datasource; });
    t.match(dashboardProblems(d).join('\n'), /datasource must be/);
  });

  t.test('a panel without targets', async (t) => {
    const d = brokenDashboard((d) => { flatPanels(d).find((p) => p.type !== 'row')!.targets = []; });
    t.match(dashboardProblems(d).join('\n'), /at least one target/);
  });

  t.test('a query using an undefined variable', async (t) => {
    const d = brokenDashboard((d) => { firstQuery(d).expr = 'odds_feed_stale{cluster="$cluster"}'; });
    t.match(dashboardProblems(d).join('\n'), /\$cluster is not a dashboard variable/);
  });

  t.test('overlapping panels', async (t) => {
    const d = brokenDashboard((d) => { const [a, b] = flatPanels(d).filter((p) => p.type !== 'row'); b!.gridPos = { ...a!.gridPos! }; });
    t.match(dashboardProblems(d).join('\n'), /overlap/);
  });

  t.test('a misspelt metric in a dashboard query', async (t) => {
    const d = brokenDashboard((d) => { firstQuery(d).expr = 'sum(rate(odds_frames_delivered{namespace="x"}[5m]))'; });
    t.match(metricProblems(queries(d, rule), scrape).join('\n'), /odds_frames_delivered is not in/);
  });

  t.test('_bucket on a counter', async (t) => {
    const r = brokenRule((r) => { firstAlert(r).expr = 'sum(rate(odds_resyncs_total_bucket[5m])) > 0'; });
    t.not(metricProblems(queries(dashboard, r), scrape).length, 0);
  });

  t.test('a matcher on a label the metric does not have', async (t) => {
    const r = brokenRule((r) => { firstAlert(r).expr = 'sum(rate(odds_http_requests_total{code=~"5.."}[5m])) > 0'; });
    t.match(labelProblems(queries(dashboard, r), scrape).join('\n'), /odds_http_requests_total has no label code/);
  });

  t.test('grouping by a label none of the metrics has', async (t) => {
    const r = brokenRule((r) => { firstAlert(r).expr = 'sum by (market) (odds_ws_subscriptions) > 0'; });
    t.match(labelProblems(queries(dashboard, r), scrape).join('\n'), /groups by market/);
  });

  t.test('an alert without for, severity or description', async (t) => {
    const r = brokenRule((r) => { const a = firstAlert(r); delete a.for; a.labels = {}; delete a.annotations!.description; });
    t.equal(ruleShapeProblems(r).length, 3);
  });

  t.test('a misspelt rule field', async (t) => {
    const r = brokenRule((r) => { (firstAlert(r) as Record<string, unknown>).annotation = {}; });
    t.match(ruleShapeProblems(r).join('\n'), /annotation is not a rule field/);
  });

  t.test('an alert that fires on the near miss, or whose annotations name a label it drops', { skip: hasPromtool ? false : NO_PROMTOOL }, async (t) => {
    const loose = brokenRule((r) => { alerts(r).find((x) => x.alert === 'OddsHttp5xxRate')!.expr = 'sum by (namespace) (rate(odds_http_requests_total{status=~"5.."}[5m])) / sum by (namespace) (rate(odds_http_requests_total[5m])) > 0.05'; });
    t.not(promtool(t, ['test', 'rules', 'test.yaml'], unitTestFiles(loose, 'OddsHttp5xxRate', CASES.OddsHttp5xxRate!)).status, 0, '/ready 503s counted');
    const dropped = brokenRule((r) => { alerts(r).find((x) => x.alert === 'OddsBusDown')!.expr = 'max by (namespace) (odds_bus_connected) == 0'; });
    const c = { ...CASES.OddsBusDown!, labels: { severity: 'critical', namespace: 'odds' } };
    t.not(promtool(t, ['test', 'rules', 'test.yaml'], unitTestFiles(dropped, 'OddsBusDown', c)).status, 0, '$labels.pod without pod');
  });

  t.test('the PromQL reader finds metrics, matchers and grouping labels, and skips functions, strings and variables', async (t) => {
    const refs = promqlRefs('histogram_quantile(0.99, sum by (le, route) (rate(a_bucket{route!="/x{y}", pod=~"$pod"}[$__rate_interval]))) / on (route) group_left b offset 5m > bool 1e3');
    t.same(refs.selectors, [{ metric: 'a_bucket', labels: ['route', 'pod'] }, { metric: 'b', labels: [] }]);
    t.same(refs.grouping, ['le', 'route', 'route']);
  });
});
