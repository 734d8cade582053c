/**
 * The Kubernetes manifests in k8s/ and the Dockerfile, checked offline:
 *
 * - what `kubectl apply -k k8s/` and `kubectl apply -k k8s/betfair/` send, rendered as kustomize
 *   would (./kustomize.ts): the service alone, and with the live Betfair adapter;
 * - every rendered manifest against the Kubernetes schema (kubernetes-models' validate(),
 *   plus a TypeScript excess-property check, since the schema alone accepts
 *   unknown keys such as a misspelt `readinesProbe`), parsed as YAML 1.1 the
 *   way kubectl reads it (an unquoted `on` is a boolean there);
 * - the ServiceMonitor (a Prometheus Operator CRD) by hand;
 * - the cross-references that break only in a cluster: probe paths and ports,
 *   selectors, scale and disruption targets, the scrape port, the shutdown
 *   budget, the security context, settings and the Secrets, image and Dockerfile;
 * - the NetworkPolicies: they select this service's pods and nothing else, let
 *   in only the Ingress controller (public port) and Prometheus (metrics
 *   port), and let out only Postgres, NATS and DNS.
 *
 * Every check is a function that returns a list of problems. The real files
 * must give none; the last group feeds each check a broken copy and expects
 * it to complain, so the checks are known to bite.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { loadConfig } from '../../src/config.js';
import { HostPolicy } from '../../src/http/host.js';
import { parseResources, render, type Doc } from './kustomize.js';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler, type IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { PodDisruptionBudget, type IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap, type IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service, type IService } from 'kubernetes-models/v1/Service';
import { NetworkPolicy, type INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IProbe } from 'kubernetes-models/v1/Probe';
import { dockerStages } from '../helpers/dockerfile.js';
import { findRoot } from './root.js';
import { NATS_BINARY } from '../helpers/nats.js';

// ---------------------------------------------------------------- loading

const ROOT = findRoot();
const K8S = join(ROOT, 'k8s');

const APP = 'odds-service';
const NAME_LABEL = 'app.kubernetes.io/name';
const CONFIGMAP = 'odds-service-config';
const DB_SECRET = 'odds-service-db';
const NATS_SECRET = 'odds-service-nats';
const METRICS_SECRET = 'odds-service-metrics';
/** The peers the NetworkPolicies name (documented in their files). */
const NATS_POD = { [NAME_LABEL]: 'nats' };
const POSTGRES_POD = { [NAME_LABEL]: 'postgresql' };
const DNS_POD = { 'k8s-app': 'kube-dns' };
const INGRESS_CONTROLLER = { namespace: 'ingress-nginx', pod: { [NAME_LABEL]: 'ingress-nginx' } };
const PROMETHEUS = { namespace: 'monitoring', pod: { [NAME_LABEL]: 'prometheus' } };
/** The live Betfair adapter's pods (k8s/betfair/betfair-adapter.yaml), in the service's namespace. */
const BETFAIR_ADAPTER = { namespace: undefined, pod: { [NAME_LABEL]: 'odds-betfair' } };
const NAMESPACE_LABEL = 'kubernetes.io/metadata.name';

interface ServiceMonitor {
  apiVersion: 'monitoring.coreos.com/v1';
  kind: 'ServiceMonitor';
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec: {
    selector: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
    namespaceSelector?: { any?: boolean; matchNames?: string[] };
    endpoints: Array<{
      port?: string; targetPort?: string | number; path?: string; scheme?: string;
      interval?: string; scrapeTimeout?: string; [key: string]: unknown;
    }>;
    [key: string]: unknown;
  };
}

interface Manifests {
  deployment: IDeployment;
  /** The live Betfair adapter (k8s/betfair/betfair-adapter.yaml). */
  adapter: IDeployment;
  service: IService;
  configMap: IConfigMap;
  pdb: IPodDisruptionBudget;
  hpa: IHorizontalPodAutoscaler;
  serviceMonitor: ServiceMonitor;
  ingressPolicy: INetworkPolicy;
  egressPolicy: INetworkPolicy;
  /** Every NetworkPolicy in k8s/. */
  policies: INetworkPolicy[];
}

/** Prometheus Operator kinds: no Kubernetes model here, so checked by hand (the PrometheusRule in observability.test.ts). */
const OPERATOR_KINDS = new Set(['ServiceMonitor', 'PrometheusRule']);

/** `kubectl apply -k k8s/`: the service; `kubectl apply -k k8s/betfair/`: it and the live Betfair adapter. */
const base = render(K8S);
const withAdapter = render(join(K8S, 'betfair'), K8S);
const allResources: Doc[] = withAdapter.docs;
/** Every YAML file under k8s/ but the kustomizations and the patches applied by hand (k8s/low-latency/): each must be rendered by one of them. */
const yamlFiles = (readdirSync(K8S, { recursive: true, withFileTypes: true }))
  .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name) && e.name !== 'kustomization.yaml')
  .map((e) => relative(K8S, join(e.parentPath, e.name))).filter((f) => !f.startsWith('low-latency/')).sort();

function only<T>(kind: string): T {
  const found = allResources.filter((d) => d.kind === kind);
  if (found.length !== 1) throw new Error(`expected exactly one ${kind} in k8s/, found ${found.length}`);
  return found[0] as T;
}

function named<T>(kind: string, name: string): T {
  const found = allResources.find((d) => d.kind === kind && (d.metadata as { name?: string }).name === name);
  if (!found) throw new Error(`no ${kind} named ${name} in k8s/`);
  return found as T;
}

const real: Manifests = {
  deployment: named<IDeployment>('Deployment', 'odds-service'),
  adapter: named<IDeployment>('Deployment', 'odds-betfair'),
  service: only<IService>('Service'),
  configMap: named<IConfigMap>('ConfigMap', CONFIGMAP),
  pdb: only<IPodDisruptionBudget>('PodDisruptionBudget'),
  hpa: only<IHorizontalPodAutoscaler>('HorizontalPodAutoscaler'),
  serviceMonitor: only<ServiceMonitor>('ServiceMonitor'),
  ingressPolicy: named<INetworkPolicy>('NetworkPolicy', 'odds-service-ingress'),
  egressPolicy: named<INetworkPolicy>('NetworkPolicy', 'odds-service-egress'),
  policies: allResources.filter((d) => d.kind === 'NetworkPolicy') as unknown as INetworkPolicy[],
};
const natsConf = readFileSync(join(K8S, 'nats', 'nats-server.conf'), 'utf8');
const natsPermissions = readFileSync(join(K8S, 'nats', 'odds-permissions.conf'), 'utf8');
const deploymentText = readFileSync(join(K8S, 'deployment.yaml'), 'utf8');
const dockerfileText = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };

const clone = (m: Manifests): Manifests => structuredClone(m);

// ---------------------------------------------------------------- schema

const MODELS: Record<string, { apiVersion: string; create: (d: Doc) => { validate(): void }; type: string; module: string }> = {
  Deployment: { apiVersion: 'apps/v1', create: (d) => new Deployment(d as never), type: 'IDeployment', module: 'kubernetes-models/apps/v1/Deployment' },
  Service: { apiVersion: 'v1', create: (d) => new Service(d as never), type: 'IService', module: 'kubernetes-models/v1/Service' },
  ConfigMap: { apiVersion: 'v1', create: (d) => new ConfigMap(d as never), type: 'IConfigMap', module: 'kubernetes-models/v1/ConfigMap' },
  PodDisruptionBudget: {
    apiVersion: 'policy/v1', create: (d) => new PodDisruptionBudget(d as never),
    type: 'IPodDisruptionBudget', module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
  },
  NetworkPolicy: {
    apiVersion: 'networking.k8s.io/v1', create: (d) => new NetworkPolicy(d as never),
    type: 'INetworkPolicy', module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
  },
  HorizontalPodAutoscaler: {
    apiVersion: 'autoscaling/v2', create: (d) => new HorizontalPodAutoscaler(d as never),
    type: 'IHorizontalPodAutoscaler', module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
  },
};

/** kubernetes-models' JSON-schema validation: types, required fields, enums, formats. */
function schemaProblems(doc: Doc): string[] {
  const model = MODELS[String(doc.kind)];
  if (!model) return [`kind ${String(doc.kind)} has no Kubernetes model here`];
  if (doc.apiVersion !== model.apiVersion) return [`${String(doc.kind)} must use apiVersion ${model.apiVersion}, not ${String(doc.apiVersion)}`];
  try {
    model.create(doc).validate();
    return [];
  } catch (err) {
    return [(err as Error).message];
  }
}

/**
 * The JSON schema of Kubernetes allows unknown keys; the API server (kubectl's
 * strict field validation) does not. Type-check each manifest as an object
 * literal against its kubernetes-models interface, whose excess-property check
 * names any unknown key, at any depth.
 */
function unknownFieldProblems(docs: Doc[]): string[][] {
  const dir = join(ROOT, '.k8s-typecheck');
  const files = docs.map((doc, i) => {
    const model = MODELS[String(doc.kind)];
    const name = join(dir, `m${i}.ts`);
    const text = model
      ? `import type { ${model.type} } from '${model.module}';\nexport const m: ${model.type} = ${JSON.stringify(doc, null, 1)};\n`
      : 'export {};\n';
    return { name, text };
  });
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022, strict: true, noEmit: true, skipLibCheck: true, types: [],
    lib: ['lib.es2022.d.ts'],
  };
  const host = ts.createCompilerHost(options);
  const virtual = new Map(files.map((f) => [f.name, f.text]));
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => {
    const text = virtual.get(name);
    return text !== undefined ? ts.createSourceFile(name, text, lang) : getSourceFile(name, lang, ...rest);
  };
  host.fileExists = (name) => virtual.has(name) || fileExists(name);
  host.readFile = (name) => virtual.get(name) ?? readFile(name);
  const program = ts.createProgram(files.map((f) => f.name), options, host);
  return files.map((f) => {
    const source = program.getSourceFile(f.name)!;
    return ts.getPreEmitDiagnostics(program, source)
      .filter((d) => d.file?.fileName === f.name)
      .map((d) => {
        const where = d.start === undefined ? '' : source.text.slice(d.start, d.start + 60).split('\n')[0];
        return `${ts.flattenDiagnosticMessageText(d.messageText, ' ')} (at ${where})`;
      });
  });
}

const DURATION = /^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$/;
const ENDPOINT_KEYS = new Set([
  'port', 'targetPort', 'path', 'scheme', 'interval', 'scrapeTimeout', 'params', 'honorLabels',
  'honorTimestamps', 'relabelings', 'metricRelabelings', 'tlsConfig', 'bearerTokenSecret',
  'authorization', 'basicAuth', 'oauth2', 'followRedirects', 'enableHttp2', 'filterRunning',
  'proxyUrl', 'trackTimestampsStaleness',
]);
const SM_SPEC_KEYS = new Set([
  'selector', 'endpoints', 'namespaceSelector', 'jobLabel', 'targetLabels', 'podTargetLabels',
  'sampleLimit', 'targetLimit', 'labelLimit', 'labelNameLengthLimit', 'labelValueLengthLimit',
  'keepDroppedTargets', 'attachMetadata', 'scrapeProtocols', 'scrapeClass', 'bodySizeLimit',
]);

/** The ServiceMonitor CRD (monitoring.coreos.com/v1) has no model here: its structure by hand. */
function serviceMonitorShapeProblems(sm: ServiceMonitor): string[] {
  const p: string[] = [];
  if (sm.apiVersion !== 'monitoring.coreos.com/v1') p.push(`apiVersion must be monitoring.coreos.com/v1, not ${String(sm.apiVersion)}`);
  if (sm.kind !== 'ServiceMonitor') p.push('kind must be ServiceMonitor');
  if (typeof sm.metadata?.name !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(sm.metadata.name)) p.push('metadata.name must be a DNS label');
  const spec = sm.spec as ServiceMonitor['spec'] | undefined;
  if (!spec || typeof spec !== 'object') return [...p, 'spec is required'];
  for (const key of Object.keys(spec)) if (!SM_SPEC_KEYS.has(key)) p.push(`spec.${key} is not a ServiceMonitor field`);
  if (!spec.selector || typeof spec.selector !== 'object') p.push('spec.selector is required');
  else if (!spec.selector.matchLabels && !spec.selector.matchExpressions) p.push('spec.selector selects everything: give matchLabels');
  else if (spec.selector.matchLabels) {
    for (const [k, v] of Object.entries(spec.selector.matchLabels)) if (typeof v !== 'string') p.push(`spec.selector.matchLabels.${k} must be a string`);
  }
  if (!Array.isArray(spec.endpoints) || spec.endpoints.length === 0) return [...p, 'spec.endpoints must list at least one endpoint'];
  spec.endpoints.forEach((e, i) => {
    for (const key of Object.keys(e)) if (!ENDPOINT_KEYS.has(key)) p.push(`spec.endpoints[${i}].${key} is not an endpoint field`);
    if (e.port === undefined && e.targetPort === undefined) p.push(`spec.endpoints[${i}] needs port (a Service port name)`);
    if (e.port !== undefined && typeof e.port !== 'string') p.push(`spec.endpoints[${i}].port must be a port name (string)`);
    if (e.path !== undefined && (typeof e.path !== 'string' || !e.path.startsWith('/'))) p.push(`spec.endpoints[${i}].path must start with /`);
    if (e.scheme !== undefined && !['http', 'https'].includes(String(e.scheme))) p.push(`spec.endpoints[${i}].scheme must be http or https`);
    for (const key of ['interval', 'scrapeTimeout'] as const) {
      const v = e[key];
      if (v !== undefined && (typeof v !== 'string' || !DURATION.test(v))) p.push(`spec.endpoints[${i}].${key} must be a duration like 15s`);
    }
  });
  return p;
}

// ---------------------------------------------------------------- helpers

function container(m: Manifests): IContainer {
  const cs = m.deployment.spec?.template.spec?.containers ?? [];
  if (cs.length !== 1) throw new Error(`expected one container in the Deployment, found ${cs.length}`);
  return cs[0]!;
}

/** The container port a probe's or Service's port (name or number) points at, if declared. */
function resolvePort(c: IContainer, port: string | number | undefined): number | undefined {
  if (port === undefined) return undefined;
  const ports = c.ports ?? [];
  const hit = typeof port === 'number' ? ports.find((p) => p.containerPort === port) : ports.find((p) => p.name === port);
  return hit?.containerPort;
}

function labelsMatch(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

type EnvSource = { kind: 'value'; value: string; via: 'configMap' | 'literal' } | { kind: 'secret'; name: string; key: string } | { kind: 'other' };

/** The container's environment as the kubelet builds it: envFrom first, then env overrides. */
function effectiveEnv(m: Manifests): Map<string, EnvSource> {
  const c = container(m);
  const out = new Map<string, EnvSource>();
  for (const from of c.envFrom ?? []) {
    if (from.configMapRef && from.configMapRef.name === m.configMap.metadata?.name) {
      for (const [k, v] of Object.entries(m.configMap.data ?? {})) out.set(`${from.prefix ?? ''}${k}`, { kind: 'value', value: String(v), via: 'configMap' });
    }
  }
  for (const e of c.env ?? []) {
    if (e.value !== undefined) out.set(e.name, { kind: 'value', value: e.value, via: 'literal' });
    else if (e.valueFrom?.secretKeyRef) out.set(e.name, { kind: 'secret', name: e.valueFrom.secretKeyRef.name ?? '', key: e.valueFrom.secretKeyRef.key });
    else if (e.valueFrom?.configMapKeyRef && e.valueFrom.configMapKeyRef.name === m.configMap.metadata?.name) {
      const v = m.configMap.data?.[e.valueFrom.configMapKeyRef.key];
      out.set(e.name, v === undefined ? { kind: 'other' } : { kind: 'value', value: v, via: 'configMap' });
    } else out.set(e.name, { kind: 'other' });
  }
  return out;
}

function envNumber(m: Manifests, name: string): number | undefined {
  const e = effectiveEnv(m).get(name);
  return e?.kind === 'value' && /^\d+$/.test(e.value) ? Number(e.value) : undefined;
}

/** Seconds the preStop hook pauses: the sleep action, or `sleep N` in an exec command. */
function preStopSeconds(c: IContainer): number {
  const pre = c.lifecycle?.preStop as ({ sleep?: { seconds: number } } & NonNullable<NonNullable<IContainer['lifecycle']>['preStop']>) | undefined;
  if (!pre) return 0;
  if (pre.sleep) return pre.sleep.seconds;
  const cmd = (pre.exec?.command ?? []).join(' ');
  const match = /\bsleep\s+(\d+)\b/.exec(cmd);
  return match ? Number(match[1]) : 0;
}

// ---------------------------------------------------------------- checks

function probeProblems(m: Manifests, which: 'startupProbe' | 'livenessProbe' | 'readinessProbe', path: string): string[] {
  const c = container(m);
  const probe = c[which] as IProbe | undefined;
  if (!probe) return [`${which} is missing`];
  if (!probe.httpGet) return [`${which} must be an httpGet probe`];
  const p: string[] = [];
  if (probe.httpGet.path !== path) p.push(`${which} must GET ${path}, not ${String(probe.httpGet.path)}`);
  if (probe.httpGet.scheme && probe.httpGet.scheme !== 'HTTP') p.push(`${which} must use HTTP`);
  if (resolvePort(c, probe.httpGet.port) === undefined) p.push(`${which} port ${String(probe.httpGet.port)} is not a container port`);
  return p;
}

function servicePortProblems(m: Manifests): string[] {
  const c = container(m);
  const probed = resolvePort(c, container(m).readinessProbe?.httpGet?.port);
  const ports = m.service.spec?.ports ?? [];
  if (ports.length === 0) return ['the Service has no ports'];
  const p: string[] = [];
  for (const sp of ports) {
    if (!sp.name) p.push(`Service port ${sp.port} has no name`);
    const target = resolvePort(c, sp.targetPort ?? sp.port);
    if (target === undefined) p.push(`Service port ${String(sp.name)} targets ${String(sp.targetPort)}, which is not a container port`);
  }
  if (!ports.some((sp) => resolvePort(c, sp.targetPort ?? sp.port) === probed)) p.push(`no Service port targets the probed container port ${String(probed)}`);
  return p;
}

function serviceSelectorProblems(m: Manifests): string[] {
  const podLabels = m.deployment.spec?.template.metadata?.labels;
  const p: string[] = [];
  if (!labelsMatch(m.service.spec?.selector, podLabels)) p.push(`Service selector ${JSON.stringify(m.service.spec?.selector)} does not match pod labels ${JSON.stringify(podLabels)}`);
  if (!labelsMatch(m.deployment.spec?.selector.matchLabels, podLabels)) p.push('Deployment selector does not match its own pod template labels');
  return p;
}

function pdbProblems(m: Manifests): string[] {
  const p: string[] = [];
  const podLabels = m.deployment.spec?.template.metadata?.labels;
  if (m.pdb.spec?.selector?.matchExpressions?.length) p.push('PDB selector should use matchLabels only');
  if (!labelsMatch(m.pdb.spec?.selector?.matchLabels, podLabels)) p.push('PDB selector does not match the Deployment pods');
  if (JSON.stringify(m.pdb.spec?.selector?.matchLabels) !== JSON.stringify(m.deployment.spec?.selector.matchLabels)) p.push('PDB selector differs from the Deployment selector');
  const replicas = m.deployment.spec?.replicas ?? 1;
  const { minAvailable, maxUnavailable } = m.pdb.spec ?? {};
  if (minAvailable === undefined && maxUnavailable === undefined) p.push('PDB needs minAvailable or maxUnavailable');
  if (typeof minAvailable === 'number' && minAvailable >= replicas) p.push(`PDB minAvailable ${minAvailable} blocks every drain with ${replicas} replicas`);
  if (maxUnavailable === 0 || maxUnavailable === '0%') p.push('PDB maxUnavailable 0 blocks every drain');
  return p;
}

function hpaProblems(m: Manifests): string[] {
  const p: string[] = [];
  const ref = m.hpa.spec?.scaleTargetRef;
  if (ref?.apiVersion !== 'apps/v1' || ref.kind !== 'Deployment' || ref.name !== m.deployment.metadata?.name) {
    p.push(`HPA targets ${JSON.stringify(ref)}, not the Deployment ${String(m.deployment.metadata?.name)}`);
  }
  const min = m.hpa.spec?.minReplicas ?? 1;
  if (min < 2) p.push('HPA minReplicas must be at least 2 (a single pod drops every socket on restart)');
  if ((m.hpa.spec?.maxReplicas ?? 0) < min) p.push('HPA maxReplicas is below minReplicas');
  const cpu = (m.hpa.spec?.metrics ?? []).find((x) => x.type === 'Resource' && x.resource?.name === 'cpu');
  if (!cpu || cpu.resource?.target.type !== 'Utilization' || !cpu.resource.target.averageUtilization) p.push('HPA must scale on CPU utilization');
  if (!container(m).resources?.requests?.cpu) p.push('CPU utilization needs a CPU request on the container');
  return p;
}

function serviceMonitorProblems(m: Manifests): string[] {
  const sm = m.serviceMonitor;
  const p: string[] = [];
  if (!labelsMatch(sm.spec.selector.matchLabels, m.service.metadata?.labels)) p.push('ServiceMonitor selector does not match the Service labels');
  const ports = new Map((m.service.spec?.ports ?? []).map((x) => [x.name, x]));
  const metrics = sm.spec.endpoints.filter((e) => (e.path ?? '/metrics') === '/metrics');
  if (metrics.length === 0) p.push('no ServiceMonitor endpoint scrapes /metrics');
  const metricsPort = resolvePort(container(m), 'metrics');
  for (const e of metrics) {
    const sp = typeof e.port === 'string' ? ports.get(e.port) : undefined;
    if (!sp) p.push(`ServiceMonitor port ${String(e.port)} is not a named port of the Service`);
    // The public port answers /metrics with a 404: a scrape there would find nothing.
    else if (resolvePort(container(m), sp.targetPort ?? sp.port) !== metricsPort) p.push(`ServiceMonitor port ${String(e.port)} does not reach the container port named metrics`);
  }
  return p;
}

function shutdownBudgetProblems(m: Manifests): string[] {
  const grace = m.deployment.spec?.template.spec?.terminationGracePeriodSeconds ?? 30;
  const pre = preStopSeconds(container(m));
  const drain = envNumber(m, 'DRAIN_DELAY_MS');
  const bound = envNumber(m, 'SHUTDOWN_TIMEOUT_MS');
  const p: string[] = [];
  if (pre < 1) p.push('preStop must pause (sleep) so endpoints drop the pod before SIGTERM');
  if (drain === undefined) p.push('DRAIN_DELAY_MS is not set');
  if (bound === undefined) p.push('SHUTDOWN_TIMEOUT_MS is not set');
  if (drain !== undefined && bound !== undefined && !(grace > pre + drain / 1000 + bound / 1000)) {
    p.push(`terminationGracePeriodSeconds ${grace} must exceed preStop ${pre} + drain ${drain / 1000} + shutdown ${bound / 1000}`);
  }
  return p;
}

function securityProblems(m: Manifests): string[] {
  const pod = m.deployment.spec?.template.spec?.securityContext ?? {};
  const c = container(m);
  const sc = c.securityContext ?? {};
  const p: string[] = [];
  if ((sc.runAsNonRoot ?? pod.runAsNonRoot) !== true) p.push('runAsNonRoot must be true');
  const uid = sc.runAsUser ?? pod.runAsUser;
  if (uid !== 1000) p.push(`runAsUser must be 1000 (node), not ${String(uid)}`);
  if (sc.allowPrivilegeEscalation !== false) p.push('allowPrivilegeEscalation must be false');
  if (sc.privileged === true) p.push('privileged must not be true');
  if (!(sc.capabilities?.drop ?? []).includes('ALL')) p.push('capabilities must drop ALL');
  if ((sc.capabilities?.add ?? []).length > 0) p.push('no capabilities may be added');
  if ((sc.seccompProfile ?? pod.seccompProfile)?.type !== 'RuntimeDefault') p.push('seccompProfile must be RuntimeDefault');
  if (sc.readOnlyRootFilesystem !== true) p.push('readOnlyRootFilesystem must be true');
  const tmp = (c.volumeMounts ?? []).find((v) => v.mountPath === '/tmp');
  const vol = tmp && (m.deployment.spec?.template.spec?.volumes ?? []).find((v) => v.name === tmp.name);
  if (!vol?.emptyDir) p.push('/tmp must be a mounted emptyDir (the root filesystem is read-only)');
  if (tmp?.readOnly) p.push('/tmp must be writable');
  return p;
}

function resourceProblems(m: Manifests): string[] {
  const r = container(m).resources;
  const p: string[] = [];
  for (const kind of ['requests', 'limits'] as const) {
    for (const res of ['cpu', 'memory'] as const) if (r?.[kind]?.[res] === undefined) p.push(`resources.${kind}.${res} is missing`);
  }
  return p;
}

function settingsProblems(m: Manifests): string[] {
  const env = effectiveEnv(m);
  const p: string[] = [];
  const want: Record<string, string> = {
    PORT: '8080', HOST: '0.0.0.0', METRICS_PORT: '9464', INGEST_ORIGINS: '', LOG_LEVEL: 'info', LOG_FORMAT: 'json', AUTH: 'on', DEMO_DATA: 'off',
    SIMULATOR: 'off', BUS: 'nats', NATS_URL: 'nats://nats:4222', DRAIN_DELAY_MS: '5000',
    SHUTDOWN_TIMEOUT_MS: '20000', PG_POOL_MAX: '10', NATS_USER: 'odds',
  };
  for (const [k, v] of Object.entries(want)) {
    const e = env.get(k);
    if (e?.kind !== 'value' || e.via !== 'configMap') p.push(`${k} must come from the ConfigMap ${CONFIGMAP}`);
    else if (e.value !== v) p.push(`${k} must be ${v}, not ${e.value}`);
  }
  const httpPort = resolvePort(container(m), 'http');
  if (httpPort === undefined || String(httpPort) !== (env.get('PORT') as { value?: string } | undefined)?.value) p.push('PORT must equal the container port named http');
  const metricsPort = resolvePort(container(m), 'metrics');
  if (metricsPort === undefined || String(metricsPort) !== (env.get('METRICS_PORT') as { value?: string } | undefined)?.value) p.push('METRICS_PORT must equal the container port named metrics');
  return p;
}

function secretProblems(m: Manifests): string[] {
  const p: string[] = [];
  const db = effectiveEnv(m).get('DATABASE_URL');
  if (db?.kind !== 'secret' || db.name !== DB_SECRET || db.key !== 'DATABASE_URL') {
    p.push(`DATABASE_URL must come from secretKeyRef ${DB_SECRET}/DATABASE_URL, not ${JSON.stringify(db)}`);
  }
  if (m.configMap.data && 'DATABASE_URL' in m.configMap.data) p.push('DATABASE_URL must not be in the ConfigMap');
  return p;
}

function natsSecretProblems(m: Manifests): string[] {
  const p: string[] = [];
  const pw = effectiveEnv(m).get('NATS_PASSWORD');
  if (pw?.kind !== 'secret' || pw.name !== NATS_SECRET || pw.key !== 'NATS_PASSWORD') {
    p.push(`NATS_PASSWORD must come from secretKeyRef ${NATS_SECRET}/NATS_PASSWORD, not ${JSON.stringify(pw)}`);
  }
  if (m.configMap.data && 'NATS_PASSWORD' in m.configMap.data) p.push('NATS_PASSWORD must not be in the ConfigMap');
  return p;
}

/** Whether `peer` is exactly the pods `pod` in the namespace `namespace` (both selectors in one peer: both must hold). */
function isPeer(peer: INetworkPolicyPeerLike, pod: Record<string, string>, namespace?: string): boolean {
  if (peer.ipBlock || peer.podSelector?.matchExpressions?.length || peer.namespaceSelector?.matchExpressions?.length) return false;
  if (JSON.stringify(peer.podSelector?.matchLabels) !== JSON.stringify(pod)) return false;
  return namespace === undefined ? peer.namespaceSelector === undefined : JSON.stringify(peer.namespaceSelector?.matchLabels) === JSON.stringify({ [NAMESPACE_LABEL]: namespace });
}
type INetworkPolicyPeerLike = NonNullable<NonNullable<NonNullable<INetworkPolicy['spec']>['ingress']>[number]['from']>[number];
type PolicyPort = { protocol?: string; port?: string | number };

/** The container port a policy's port (name or number) means. */
const policyPort = (m: Manifests, p: PolicyPort): number | undefined => resolvePort(container(m), p.port);

/**
 * Every NetworkPolicy selects this service's pods and only those: its
 * podSelector requires the service's name label, as the Deployment's own
 * selector does, and nothing broader. Other workloads (Postgres, NATS, any
 * application sharing them) keep their own policies.
 */
function policySelectorProblems(m: Manifests): string[] {
  const p: string[] = [];
  if (m.policies.length === 0) return ['k8s/ holds no NetworkPolicy'];
  const podLabels = m.deployment.spec?.template.metadata?.labels;
  for (const policy of m.policies) {
    const name = policy.metadata?.name;
    const sel = policy.spec?.podSelector;
    if (sel?.matchExpressions?.length) p.push(`${name} selects by expressions: use matchLabels`);
    if (sel?.matchLabels?.[NAME_LABEL] !== APP) p.push(`${name} must select only ${NAME_LABEL}: ${APP} pods, not ${JSON.stringify(sel)}`);
    if (!labelsMatch(sel?.matchLabels, podLabels)) p.push(`${name} does not select the Deployment's pods`);
  }
  return p;
}

/**
 * Into the pods: the public port from the Ingress controller and from the Betfair adapter (a
 * publisher on /ingest, in the same namespace), the metrics port from Prometheus, nothing else.
 */
function ingressPolicyProblems(m: Manifests): string[] {
  const policy = m.ingressPolicy;
  const p: string[] = [];
  if (JSON.stringify(policy.spec?.policyTypes) !== JSON.stringify(['Ingress'])) p.push('odds-service-ingress must have policyTypes [Ingress]');
  const want = [
    { name: 'http', port: resolvePort(container(m), 'http'), peers: [{ ...INGRESS_CONTROLLER, who: 'the Ingress controller' }, { ...BETFAIR_ADAPTER, who: 'the Betfair adapter' }] },
    { name: 'metrics', port: resolvePort(container(m), 'metrics'), peers: [{ ...PROMETHEUS, who: 'Prometheus' }] },
  ];
  const rules = policy.spec?.ingress ?? [];
  for (const [i, r] of rules.entries()) {
    if (!r.from?.length) p.push(`ingress[${i}] admits every source`);
    if (!r.ports?.length) p.push(`ingress[${i}] opens every port`);
    for (const port of r.ports ?? []) {
      const w = want.find((x) => x.port === policyPort(m, port));
      if (!w) { p.push(`ingress[${i}] opens port ${String(port.port)}, which is neither http nor metrics`); continue; }
      for (const f of r.from ?? []) if (!w.peers.some((peer) => isPeer(f, peer.pod, peer.namespace))) p.push(`ingress[${i}] lets ${JSON.stringify(f)} reach port ${w.name}`);
    }
  }
  for (const w of want) {
    for (const peer of w.peers) {
      const covered = rules.some((r) => (r.ports ?? []).some((x) => policyPort(m, x) === w.port) && (r.from ?? []).some((f) => isPeer(f, peer.pod, peer.namespace)));
      if (!covered) p.push(`odds-service-ingress must let ${peer.who} reach port ${w.name}`);
    }
  }
  if (!labelsMatch(BETFAIR_ADAPTER.pod, m.adapter.spec?.template.metadata?.labels)) {
    p.push(`the Betfair adapter's pods must carry ${NAME_LABEL}: ${BETFAIR_ADAPTER.pod[NAME_LABEL]}, which odds-service-ingress admits`);
  }
  return p;
}

/** Out of the pods: Postgres, NATS and DNS, each to its own pods and port, nothing else. */
function egressPolicyProblems(m: Manifests): string[] {
  const policy = m.egressPolicy;
  const p: string[] = [];
  if (JSON.stringify(policy.spec?.policyTypes) !== JSON.stringify(['Egress'])) p.push('odds-service-egress must have policyTypes [Egress]');
  const want = [
    { pod: POSTGRES_POD, ports: ['TCP/5432'], what: 'Postgres' },
    { pod: NATS_POD, ports: ['TCP/4222'], what: 'NATS' },
    { pod: DNS_POD, namespace: 'kube-system', ports: ['TCP/53', 'UDP/53'], what: 'DNS' },
  ];
  const rules = policy.spec?.egress ?? [];
  for (const [i, r] of rules.entries()) {
    if (!r.to?.length) { p.push(`egress[${i}] reaches every destination`); continue; }
    const w = want.find((x) => r.to!.every((to) => isPeer(to, x.pod, x.namespace)));
    if (!w) { p.push(`egress[${i}] reaches ${JSON.stringify(r.to)}, which is not Postgres, NATS or DNS`); continue; }
    const ports = (r.ports ?? []).map((x) => `${x.protocol ?? 'TCP'}/${String(x.port)}`).sort();
    if (JSON.stringify(ports) !== JSON.stringify(w.ports)) p.push(`egress[${i}] to ${w.what} must open ${w.ports.join(', ')} only, not ${ports.join(', ') || 'every port'}`);
  }
  for (const w of want) if (!rules.some((r) => r.to?.length && r.to.every((to) => isPeer(to, w.pod, w.namespace)))) p.push(`odds-service-egress must let the pods reach ${w.what}`);
  return p;
}

/** The metrics port opened on purpose: every interface (so Prometheus reaches it), a token from the Secret, the ServiceMonitor showing it. */
function metricsAccessProblems(m: Manifests): string[] {
  const p: string[] = [];
  const env = effectiveEnv(m);
  const host = env.get('METRICS_HOST');
  if (host?.kind !== 'value' || host.value !== '0.0.0.0') p.push('METRICS_HOST must be 0.0.0.0 in the ConfigMap, or Prometheus cannot reach the metrics port');
  const token = env.get('METRICS_TOKEN');
  if (token?.kind !== 'secret' || token.name !== METRICS_SECRET || token.key !== 'token') p.push(`METRICS_TOKEN must come from secretKeyRef ${METRICS_SECRET}/token, not ${JSON.stringify(token)}`);
  if (m.configMap.data && 'METRICS_TOKEN' in m.configMap.data) p.push('METRICS_TOKEN must not be in the ConfigMap');
  for (const [i, e] of m.serviceMonitor.spec.endpoints.entries()) {
    const auth = e.authorization as { type?: string; credentials?: { name?: string; key?: string } } | undefined;
    if (auth?.type !== 'Bearer' || auth.credentials?.name !== METRICS_SECRET || auth.credentials.key !== 'token') {
      p.push(`ServiceMonitor endpoint ${i} must send the bearer token from ${METRICS_SECRET}/token`);
    }
  }
  return p;
}

/** Behind the Ingress: the names it serves, and whom to believe about client addresses. */
function edgeProblems(m: Manifests): string[] {
  const p: string[] = [];
  const env = effectiveEnv(m);
  const hosts = env.get('ALLOWED_HOSTS');
  if (hosts?.kind !== 'value' || hosts.value.trim() === '' || hosts.value.split(',').some((h) => h.trim() === '*')) p.push('ALLOWED_HOSTS must list the names the Ingress serves (not *)');
  const proxies = env.get('TRUSTED_PROXIES');
  if (proxies?.kind !== 'value' || proxies.value.trim() === '') p.push('TRUSTED_PROXIES must name the Ingress controller\'s addresses, or every client shares its address');
  else if (/(^|,)\s*(0\.0\.0\.0\/0|::\/0)\s*(,|$)/.test(proxies.value)) p.push('TRUSTED_PROXIES must not trust every address');
  return p;
}

/** The NATS configuration: a password only from the environment, the ConfigMap's user, and permissions limited to the prefix. */
function natsConfigProblems(m: Manifests, conf: string, permissions: string): string[] {
  const p: string[] = [];
  const user = m.configMap.data?.NATS_USER;
  if (!new RegExp(`\\{\\s*user:\\s*${user},\\s*password:\\s*\\$ODDS_NATS_PASSWORD,\\s*permissions:\\s*\\$ODDS_SERVICE_PERMISSIONS\\s*\\}`).test(conf)) {
    p.push(`nats-server.conf must admit user ${String(user)} with password $ODDS_NATS_PASSWORD and $ODDS_SERVICE_PERMISSIONS`);
  }
  if (!/include "odds-permissions.conf"/.test(conf)) p.push('nats-server.conf must include odds-permissions.conf');
  if (!/^authorization\s*\{/m.test(conf)) p.push('nats-server.conf has no authorization block');
  const allowed = [...permissions.replace(/#.*$/gm, '').matchAll(/"([^"]+)"/g)].map((x) => x[1]!);
  for (const subject of allowed) {
    if (!/^(odds\.>|_INBOX\.>|\$JS\.API\.INFO|\$JS\.API\.[A-Z]+\.[A-Z.]+\.ODDS_(ODDS|RECORD)(\.>)?|\$JS\.ACK\.ODDS_RECORD\.>)$/.test(subject)) p.push(`permission ${subject} reaches beyond the odds prefix and its stream`);
  }
  if (!allowed.includes('odds.>')) p.push('the service user needs odds.>');
  return p;
}

function dockerBaseProblems(text: string): string[] {
  const stages = dockerStages(text);
  if (stages.length === 0) return ['the Dockerfile has no FROM'];
  const p: string[] = [];
  const names = new Set<string>();
  for (const stage of stages) {
    const [image, as, name] = stage[0]!.args.split(/\s+/);
    // uWS v20.57 (Node 22 and 24) needs glibc 2.38: Debian 13 (trixie). None of the builds load on musl.
    if (!names.has(image!) && !/^node:24(\.[\d.]+)?-trixie(-slim)?$/.test(image!)) p.push(`base ${image} is not a Node 24 LTS image on Debian 13 (glibc 2.38 or newer)`);
    if (as?.toUpperCase() === 'AS' && name) names.add(name);
  }
  return p;
}

function dockerUserProblems(text: string): string[] {
  const final = dockerStages(text).at(-1) ?? [];
  const user = final.filter((i) => i.op === 'USER').at(-1)?.args.split(':')[0];
  if (!user) return ['the final stage sets no USER (it would run as root)'];
  if (user === 'root' || user === '0') return [`the final stage runs as ${user}`];
  if (!['node', '1000'].includes(user)) return [`USER ${user} is not the node user (uid 1000) the Deployment runs as`];
  return [];
}

/** The runtime stage installs what the service runs besides Node: bzip2 for .bz2 exchange files; apt's lists are not kept in the layer. */
function dockerPackageProblems(text: string): string[] {
  const runs = (dockerStages(text).at(-1) ?? []).filter((i) => i.op === 'RUN').map((i) => i.args);
  const apt = runs.find((r) => /apt-get install/.test(r));
  if (!apt || !/\bbzip2\b/.test(apt)) return ['the runtime stage does not install bzip2: recorded .bz2 exchange files could not be read'];
  if (!/--no-install-recommends/.test(apt) || !/rm -rf \/var\/lib\/apt\/lists/.test(apt)) return ['apt-get install without --no-install-recommends, or leaving its lists in the image'];
  return [];
}

function dockerCmdProblems(text: string): string[] {
  const final = dockerStages(text).at(-1) ?? [];
  const p: string[] = [];
  const cmd = final.filter((i) => i.op === 'CMD').at(-1)?.args;
  let argv: unknown;
  try { argv = cmd === undefined ? undefined : JSON.parse(cmd); } catch { argv = undefined; }
  if (JSON.stringify(argv) !== JSON.stringify(['node', 'dist/src/main.js'])) p.push(`CMD must be ["node", "dist/src/main.js"] in exec form (so node gets SIGTERM), not ${String(cmd)}`);
  if (final.some((i) => i.op === 'ENTRYPOINT')) p.push('an ENTRYPOINT would wrap the CMD');
  if (!final.some((i) => i.op === 'ENV' && /\bNODE_ENV=production\b/.test(i.args))) p.push('NODE_ENV=production is not set');
  const exposed = final.filter((i) => i.op === 'EXPOSE').flatMap((i) => i.args.split(/\s+/).map((x) => x.split('/')[0]));
  for (const port of ['8080', '9464']) if (!exposed.includes(port)) p.push(`EXPOSE ${port} is missing`);
  const env = final.filter((i) => i.op === 'ENV').map((i) => i.args).join(' ');
  if (!/\bHOST=0\.0\.0\.0\b/.test(env) || !/\bAUTH=on\b/.test(env)) p.push('the image must set HOST=0.0.0.0 together with AUTH=on: a published port with auth off lets anyone publish prices');
  return p;
}

/** The image named in the Deployment's header comment (docker build -t NAME). */
function documentedImage(text: string): string | undefined {
  return /^#.*docker build -t (\S+)/m.exec(text)?.[1];
}

const ADAPTER_SECRET = 'odds-betfair';
/** The adapter's credentials: each from a file the Secret's key is mounted as. */
const ADAPTER_CREDENTIALS: Record<string, string> = { BETFAIR_APP_KEY_FILE: 'app-key', BETFAIR_SESSION_FILE: 'session', ODDS_INGEST_KEY_FILE: 'ingest-key' };

/**
 * The Betfair adapter: node run directly (SIGTERM reaches it), one replica replaced by
 * Recreate, credentials only as files from its Secret, the service's /ingest by the Service's
 * name and port, its pods never taken for the service's, the service's image, run restricted.
 */
function adapterProblems(m: Manifests): string[] {
  const p: string[] = [];
  const spec = m.adapter.spec;
  const pod = spec?.template.spec;
  const c = pod?.containers?.[0];
  if (!c || pod!.containers.length !== 1) return ['the adapter must run one container'];
  if (JSON.stringify(c.command) !== JSON.stringify(['node', 'dist/src/cli/betfair.js'])) p.push(`the adapter must run node dist/src/cli/betfair.js directly (SIGTERM reaches node), not ${JSON.stringify(c.command)}`);
  if (spec?.replicas !== 1) p.push('one adapter replica: two would publish every market twice');
  if (spec?.strategy?.type !== 'Recreate') p.push('the adapter must be replaced by Recreate, never running two at once');
  const labels = spec?.template.metadata?.labels;
  if (labelsMatch(m.service.spec?.selector, labels)) p.push('the Service selects the adapter\'s pods');
  if (labelsMatch(m.pdb.spec?.selector?.matchLabels, labels)) p.push('the PodDisruptionBudget selects the adapter\'s pods');
  if (!labelsMatch(spec?.selector.matchLabels, labels)) p.push('the adapter\'s selector does not select its pods');
  const args = c.args ?? [];
  const url = args[args.indexOf('--url') + 1];
  const port = (m.service.spec?.ports ?? []).find((x) => x.name === 'http')?.port;
  if (url !== `ws://${m.service.metadata?.name}:${port}/ingest`) p.push(`--url must be the Service's /ingest (ws://${m.service.metadata?.name}:${port}/ingest), not ${url}`);
  for (const flag of ['--app-key', '--session', '--key']) if (args.includes(flag)) p.push(`${flag} as an argument shows in the process list: use its file`);
  const mount = (c.volumeMounts ?? []).find((v) => v.name === 'credentials');
  const volume = (pod?.volumes ?? []).find((v) => v.name === 'credentials');
  if (!mount?.readOnly || volume?.secret?.secretName !== ADAPTER_SECRET) p.push(`the credentials must be the Secret ${ADAPTER_SECRET} mounted read-only`);
  for (const [name, key] of Object.entries(ADAPTER_CREDENTIALS)) {
    const e = (c.env ?? []).find((x) => x.name === name);
    const item = volume?.secret?.items?.find((i) => i.key === key);
    if (!e || !item || e.value !== `${mount?.mountPath}/${item.path}`) p.push(`${name} must name the file of the Secret's key ${key}`);
  }
  for (const e of c.env ?? []) if (/KEY$|SESSION$/.test(e.name)) p.push(`${e.name} carries a credential as a value`);
  if (c.image !== container(m).image) p.push(`the adapter runs ${String(c.image)}, not the service's image ${String(container(m).image)}`);
  const sc = c.securityContext ?? {};
  if (!(sc.readOnlyRootFilesystem && sc.allowPrivilegeEscalation === false && sc.runAsNonRoot && sc.capabilities?.drop?.includes('ALL'))) p.push('the adapter must run restricted with a read-only root');
  if (!c.resources?.limits?.memory || !c.resources?.requests?.memory) p.push('the adapter needs memory requests and limits');
  return p;
}

/** The runbook: where every Secret the manifests name must be made, by a command a user can paste. */
const operationsText = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');

/** The keys each `kubectl create secret generic NAME --from-literal=KEY=...` (or --from-file=KEY=) in a text makes, by Secret. */
function documentedSecrets(text: string): Map<string, Set<string>> {
  const made = new Map<string, Set<string>>();
  for (const m of text.replace(/\\\n\s*/g, ' ').matchAll(/kubectl create secret generic ([a-z0-9-]+)([^\n]*)/g)) {
    const keys = made.get(m[1]!) ?? new Set<string>();
    for (const k of m[2]!.matchAll(/--from-(?:literal|file)=([A-Za-z0-9_.-]+)=/g)) keys.add(k[1]!);
    made.set(m[1]!, keys);
  }
  return made;
}

/**
 * What each rendered workload's pods read by name: every ConfigMap must be in the same render
 * (else the pod never starts), and every Secret made by a command in the runbook, with each key
 * the pods read (the manifests never carry one).
 */
function referenceProblems(docs: Doc[], runbook: string): string[] {
  const made = documentedSecrets(runbook);
  const rendered = new Set(docs.filter((d) => d.kind === 'ConfigMap').map((d) => (d.metadata as { name: string }).name));
  const p: string[] = [];
  for (const d of docs.filter((d) => d.kind === 'Deployment') as unknown as IDeployment[]) {
    const who = `Deployment ${d.metadata?.name}`;
    const pod = d.spec?.template.spec;
    const configMaps: string[] = [];
    const secrets: [string, string | undefined][] = [];
    for (const c of pod?.containers ?? []) {
      for (const e of c.envFrom ?? []) {
        if (e.configMapRef?.name) configMaps.push(e.configMapRef.name);
        if (e.secretRef?.name) secrets.push([e.secretRef.name, undefined]);
      }
      for (const e of c.env ?? []) {
        if (e.valueFrom?.configMapKeyRef) configMaps.push(e.valueFrom.configMapKeyRef.name!);
        if (e.valueFrom?.secretKeyRef) secrets.push([e.valueFrom.secretKeyRef.name!, e.valueFrom.secretKeyRef.key]);
      }
    }
    for (const v of pod?.volumes ?? []) {
      if (v.configMap?.name) configMaps.push(v.configMap.name);
      if (v.secret?.secretName) {
        const items = v.secret.items ?? [];
        if (!items.length) secrets.push([v.secret.secretName, undefined]);
        for (const i of items) secrets.push([v.secret.secretName, i.key]);
      }
    }
    for (const name of configMaps) if (!rendered.has(name)) p.push(`${who}: the ConfigMap ${name} it reads is not rendered with it`);
    for (const [name, key] of secrets) {
      const keys = made.get(name);
      if (!keys) p.push(`${who}: the Secret ${name} it reads is made by no \`kubectl create secret generic ${name}\` in docs/operations.md`);
      else if (key !== undefined && !keys.has(key)) p.push(`${who}: key ${key} of the Secret ${name} is not made by its command in docs/operations.md`);
    }
  }
  return [...new Set(p)];
}

/** A value of the right form for each Secret a pod reads, so its settings load as they would in the pod. */
const SECRET_STANDINS: Record<string, string> = { DATABASE_URL: 'postgres://odds@postgresql:5432/odds', RECORD_DATABASE_URL: 'postgres://odds@postgresql:5432/odds_record' };

/**
 * The adapter publishes through the Service by name: the service must answer to that Host, by its
 * own Host rule and the settings its pods load (the ConfigMap, and the Secrets' values stood in).
 */
function adapterHostProblems(m: Manifests): string[] {
  const args = m.adapter.spec?.template.spec?.containers[0]?.args ?? [];
  const host = new URL(args[args.indexOf('--url') + 1] ?? 'ws://none').host;
  const env = Object.fromEntries([...effectiveEnv(m)].flatMap(([k, e]) =>
    e.kind === 'value' ? [[k, e.value]] : e.kind === 'secret' ? [[k, SECRET_STANDINS[k] ?? 'a-secret-value-of-32-characters!']] : []));
  let policy: HostPolicy;
  try {
    policy = new HostPolicy(loadConfig(env, 65536).allowedHosts);
  } catch (err) {
    return [`the ConfigMap's settings do not load: ${(err as Error).message}`];
  }
  return policy.allows(host) ? [] : [`the service answers 421 to the adapter's Host ${host}: ALLOWED_HOSTS is ${String(m.configMap.data?.ALLOWED_HOSTS)}`];
}

function imageProblems(m: Manifests, headerText: string): string[] {
  const image = container(m).image;
  const documented = documentedImage(headerText);
  const p: string[] = [];
  if (!documented) p.push('deployment.yaml does not document `docker build -t IMAGE` in its header comment');
  else if (image !== documented) p.push(`the Deployment runs ${String(image)} but its header documents ${documented}`);
  if (image !== `${pkg.name}:${pkg.version}`) p.push(`image ${String(image)} does not match package.json (${pkg.name}:${pkg.version})`);
  return p;
}

// ---------------------------------------------------------------- tests

t.test('kubectl apply -k k8s/ renders every resource file but the adapter, one document each; k8s/betfair/ renders them and the adapter', async (t) => {
  t.ok(yamlFiles.length >= 10, `found ${yamlFiles.join(', ')}`);
  t.same([...withAdapter.files].sort(), yamlFiles, 'k8s/betfair/: every file, each once');
  t.same([...base.files].sort(), yamlFiles.filter((f) => !f.startsWith('betfair/')), 'k8s/: all but the adapter');
  t.equal(withAdapter.docs.length, base.docs.length + 1, 'one document a file, and the one Deployment more');
  t.notOk(base.docs.some((d) => (d.metadata as { name?: string }).name === 'odds-betfair'), 'the default leaves out the adapter, which needs Betfair credentials');
  for (const name of ['odds-service-dashboard', 'odds-service-nats-config']) t.ok(base.docs.some((d) => d.kind === 'ConfigMap' && (d.metadata as { name?: string }).name === name), `${name} generated`);
});

t.test('the low-latency patch adds the one sysctl to the Deployment\'s pods, which stays a valid Deployment; the default sets none', async (t) => {
  const patch = parseResources(readFileSync(join(K8S, 'low-latency', 'sysctl-patch.yaml'), 'utf8'), 'sysctl-patch.yaml')[0] as { spec: { template: { spec: { securityContext: { sysctls: unknown[] } } } } };
  const deployment = structuredClone(real.deployment);
  t.equal(deployment.spec!.template.spec!.securityContext?.sysctls, undefined, 'the default Deployment sets no sysctl: a node that does not allow one would refuse its pods');
  // A strategic merge of a field the Deployment does not set: the patch's list, beside what is there.
  Object.assign(deployment.spec!.template.spec!.securityContext!, patch.spec.template.spec.securityContext);
  t.same(deployment.spec!.template.spec!.securityContext!.sysctls, [{ name: 'net.ipv4.tcp_notsent_lowat', value: '131072' }]);
  t.same(schemaProblems(deployment as unknown as Doc), [], 'the patched Deployment matches the schema');
  t.match(readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8'), 'kubectl patch deployment odds-service --patch-file k8s/low-latency/sysctl-patch.yaml', 'the runbook says how to apply it');
});

t.test('every rendered built-in resource matches the Kubernetes schema', async (t) => {
  for (const doc of allResources) {
    if (OPERATOR_KINDS.has(String(doc.kind))) continue;
    t.same(schemaProblems(doc), [], `${String(doc.kind)} ${String((doc.metadata as { name?: string }).name)}`);
  }
});

t.test('no rendered built-in resource has a field Kubernetes does not know', async (t) => {
  const docs = allResources.filter((d) => !OPERATOR_KINDS.has(String(d.kind)));
  const problems = unknownFieldProblems(docs);
  docs.forEach((d, i) => t.same(problems[i], [], `${String(d.kind)} ${String((d.metadata as { name?: string }).name)}`));
});

t.test('every ConfigMap a pod reads is rendered with it, and every Secret is made by a command in docs/operations.md', async (t) => {
  for (const [how, rendered] of [['k8s/', base], ['k8s/betfair/', withAdapter]] as const) t.same(referenceProblems(rendered.docs, operationsText), [], how);
});

t.test('the Betfair adapter\'s Host is one the service answers to, by the settings the ConfigMap gives it', async (t) => {
  t.same(adapterHostProblems(real), []);
});

t.test('the ServiceMonitor has the structure of monitoring.coreos.com/v1', async (t) => {
  t.same(serviceMonitorShapeProblems(real.serviceMonitor), []);
});

t.test('every resource carries app.kubernetes.io/name: odds-service', async (t) => {
  for (const d of allResources) {
    const meta = d.metadata as { name?: string; labels?: Record<string, string> };
    t.equal(meta.labels?.[NAME_LABEL], APP, `${String(d.kind)} ${String(meta.name)}`);
  }
  t.equal(real.deployment.spec?.template.metadata?.labels?.[NAME_LABEL], APP, 'pod template');
});

t.test('the Deployment runs several replicas', async (t) => {
  t.ok((real.deployment.spec?.replicas ?? 1) >= 3, `replicas ${real.deployment.spec?.replicas}`);
});

t.test('the startup probe GETs /health on a container port', async (t) => {
  t.same(probeProblems(real, 'startupProbe', '/health'), []);
});

t.test('the liveness probe GETs /health on a container port', async (t) => {
  t.same(probeProblems(real, 'livenessProbe', '/health'), []);
});

t.test('the readiness probe GETs /ready on a container port', async (t) => {
  t.same(probeProblems(real, 'readinessProbe', '/ready'), []);
});

t.test('the Service has named ports and targets the probed container port', async (t) => {
  t.same(servicePortProblems(real), []);
});

t.test('the Service selects the Deployment pods', async (t) => {
  t.same(serviceSelectorProblems(real), []);
});

t.test('the PodDisruptionBudget covers the Deployment pods and allows drains', async (t) => {
  t.same(pdbProblems(real), []);
});

t.test('the HorizontalPodAutoscaler scales the Deployment on CPU', async (t) => {
  t.same(hpaProblems(real), []);
});

t.test('the ServiceMonitor scrapes /metrics on the Service port that reaches the metrics port', async (t) => {
  t.same(serviceMonitorProblems(real), []);
});

t.test('terminationGracePeriodSeconds exceeds preStop + drain delay + shutdown bound', async (t) => {
  t.same(shutdownBudgetProblems(real), []);
});

t.test('the container runs restricted with a read-only root and a writable /tmp', async (t) => {
  t.same(securityProblems(real), []);
});

t.test('the container has resource requests and limits', async (t) => {
  t.same(resourceProblems(real), []);
});

t.test('settings, AUTH=on included, come from the ConfigMap', async (t) => {
  t.same(settingsProblems(real), []);
});

t.test('DATABASE_URL comes from the Secret odds-service-db', async (t) => {
  t.same(secretProblems(real), []);
});

t.test('NATS_PASSWORD comes from the Secret odds-service-nats', async (t) => {
  t.same(natsSecretProblems(real), []);
});

t.test('every NetworkPolicy selects this service\'s pods and no other workload\'s', async (t) => {
  t.same(policySelectorProblems(real), []);
  t.same(real.policies.map((x) => x.metadata?.name).sort(), ['odds-service-egress', 'odds-service-ingress']);
});

t.test('only the Ingress controller and the Betfair adapter reach the public port, and only Prometheus the metrics port', async (t) => {
  t.same(ingressPolicyProblems(real), []);
});

t.test('the pods reach Postgres, NATS and DNS, and nothing else', async (t) => {
  t.same(egressPolicyProblems(real), []);
});

t.test('the metrics port is opened to Prometheus with a token from the Secret odds-service-metrics, which the ServiceMonitor shows', async (t) => {
  t.same(metricsAccessProblems(real), []);
});

t.test('behind the Ingress: its host names allowed, its controller trusted for client addresses', async (t) => {
  t.same(edgeProblems(real), []);
});

t.test('the NATS configuration admits the service user with its password from the environment and rights on its prefix only', async (t) => {
  t.same(natsConfigProblems(real, natsConf, natsPermissions), []);
});

t.test('nats-server accepts the NATS configuration', { skip: !NATS_BINARY && 'nats-server is not installed here' }, async (t) => {
  const r = spawnSync(NATS_BINARY!, ['-t', '-c', join(K8S, 'nats', 'nats-server.conf')], { env: { ...process.env, ODDS_NATS_PASSWORD: 'odds-check' }, encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr || r.stdout);
});

t.test('the Dockerfile builds on Debian-based node:20 images', async (t) => {
  t.same(dockerBaseProblems(dockerfileText), []);
});

t.test('the Dockerfile runs as the non-root node user', async (t) => {
  t.same(dockerUserProblems(dockerfileText), []);
});

t.test('the Dockerfile starts node dist/src/main.js in production mode on 8080, metrics on 9464, every interface, with auth on', async (t) => {
  t.same(dockerCmdProblems(dockerfileText), []);
});

t.test('the runtime image has bzip2, for recorded .bz2 exchange files, without apt\'s lists', async (t) => {
  t.same(dockerPackageProblems(dockerfileText), []);
});

t.test('the Deployment runs the image its header documents', async (t) => {
  t.same(imageProblems(real, deploymentText), []);
});

t.test('the Betfair adapter runs node directly, alone, with its credentials as files from its Secret, its pods apart from the service\'s', async (t) => {
  t.same(adapterProblems(real), []);
});

// ---------------------------------------------------------------- the checks bite

t.test('the checks reject broken manifests', async (t) => {
  t.test('a Secret no command makes, a key the command leaves out, a ConfigMap not rendered', async (t) => {
    const m = clone(real);
    m.adapter.spec!.template.spec!.volumes![0]!.secret!.secretName = 'odds-betfair-typo';
    t.match(referenceProblems([m.adapter as unknown as Doc], operationsText), [/Secret odds-betfair-typo .*no `kubectl create secret generic odds-betfair-typo`/]);
    t.match(referenceProblems(allResources, operationsText.replace('--from-literal=session=', '--from-literal=sesion=')), [/key session of the Secret odds-betfair/]);
    t.match(referenceProblems(allResources.filter((d) => (d.metadata as { name?: string }).name !== CONFIGMAP), operationsText), [/ConfigMap odds-service-config .* not rendered/]);
  });

  t.test('an adapter dialling a name ALLOWED_HOSTS leaves out, as shipped before (421)', async (t) => {
    const m = clone(real);
    m.configMap.data!.ALLOWED_HOSTS = 'odds.example.com';
    t.match(adapterHostProblems(m), [/the service answers 421 to the adapter's Host odds-service:8080/]);
  });

  const broken = (mutate: (m: Manifests) => void): Manifests => {
    const m = clone(real);
    mutate(m);
    return m;
  };

  t.test('a container port given as a string fails the schema', async (t) => {
    const m = broken((m) => { (container(m).ports![0] as { containerPort: unknown }).containerPort = '8080'; });
    t.not(schemaProblems(m.deployment as unknown as Doc).length, 0);
  });

  t.test('an unquoted on in a ConfigMap (a YAML 1.1 boolean) fails the schema', async (t) => {
    const [doc] = parseResources('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {AUTH: on}\n', 'x.yaml');
    t.not(schemaProblems(doc!).length, 0);
  });

  t.test('a misspelt field is reported as unknown', async (t) => {
    const m = broken((m) => {
      const c = container(m) as unknown as Record<string, unknown>;
      c.readinesProbe = c.readinessProbe;
      delete c.readinessProbe;
    });
    const [problems] = unknownFieldProblems([m.deployment as unknown as Doc]);
    t.match(problems!.join('\n'), /readinesProbe/);
  });

  t.test('a ServiceMonitor endpoint with an unknown key or bad interval is rejected', async (t) => {
    const m = broken((m) => { m.serviceMonitor.spec.endpoints[0]!.interval = '15 seconds'; m.serviceMonitor.spec.endpoints[0]!.paht = '/metrics'; });
    t.equal(serviceMonitorShapeProblems(m.serviceMonitor).length, 2);
  });

  t.test('a readiness probe on the wrong path', async (t) => {
    const m = broken((m) => { container(m).readinessProbe!.httpGet!.path = '/health'; });
    t.not(probeProblems(m, 'readinessProbe', '/ready').length, 0);
  });

  t.test('a liveness probe on an undeclared port name', async (t) => {
    const m = broken((m) => { container(m).livenessProbe!.httpGet!.port = 'admin'; });
    t.not(probeProblems(m, 'livenessProbe', '/health').length, 0);
  });

  t.test('a Service targeting a port the container does not have', async (t) => {
    const m = broken((m) => { m.service.spec!.ports![0]!.targetPort = 9090; });
    t.not(servicePortProblems(m).length, 0);
  });

  t.test('a Service selector the pods do not carry', async (t) => {
    const m = broken((m) => { m.service.spec!.selector = { [NAME_LABEL]: 'odds' }; });
    t.not(serviceSelectorProblems(m).length, 0);
  });

  t.test('a PDB that selects other pods', async (t) => {
    const m = broken((m) => { m.pdb.spec!.selector = { matchLabels: { [NAME_LABEL]: 'other' } }; });
    t.not(pdbProblems(m).length, 0);
  });

  t.test('an HPA that targets another Deployment', async (t) => {
    const m = broken((m) => { m.hpa.spec!.scaleTargetRef.name = 'odds'; });
    t.not(hpaProblems(m).length, 0);
  });

  t.test('a ServiceMonitor on a port name the Service lacks', async (t) => {
    const m = broken((m) => { m.serviceMonitor.spec.endpoints[0]!.port = 'prometheus'; });
    t.match(serviceMonitorProblems(m).join('\n'), /not a named port of the Service/);
  });

  t.test('a ServiceMonitor scraping the public port', async (t) => {
    const m = broken((m) => { m.serviceMonitor.spec.endpoints[0]!.port = 'http'; });
    t.match(serviceMonitorProblems(m).join('\n'), /does not reach the container port named metrics/);
  });

  t.test('a metrics port in the ConfigMap that the container does not declare', async (t) => {
    const m = broken((m) => { m.configMap.data!.METRICS_PORT = '9090'; });
    t.match(settingsProblems(m).join('\n'), /METRICS_PORT/);
  });

  t.test('a grace period the shutdown does not fit in', async (t) => {
    const m = broken((m) => { m.deployment.spec!.template.spec!.terminationGracePeriodSeconds = 30; });
    t.not(shutdownBudgetProblems(m).length, 0);
  });

  t.test('a longer drain delay in the ConfigMap', async (t) => {
    const m = broken((m) => { m.configMap.data!.DRAIN_DELAY_MS = '30000'; });
    t.not(shutdownBudgetProblems(m).length, 0);
  });

  t.test('a writable root filesystem', async (t) => {
    const m = broken((m) => { container(m).securityContext!.readOnlyRootFilesystem = false; });
    t.not(securityProblems(m).length, 0);
  });

  t.test('a container that may escalate privileges', async (t) => {
    const m = broken((m) => { delete container(m).securityContext!.allowPrivilegeEscalation; });
    t.not(securityProblems(m).length, 0);
  });

  t.test('AUTH=off in the ConfigMap', async (t) => {
    const m = broken((m) => { m.configMap.data!.AUTH = 'off'; });
    t.not(settingsProblems(m).length, 0);
  });

  t.test('AUTH overridden by a literal env value', async (t) => {
    const m = broken((m) => { container(m).env!.push({ name: 'AUTH', value: 'on' }); });
    t.not(settingsProblems(m).length, 0);
  });

  t.test('DATABASE_URL as a plain value', async (t) => {
    const m = broken((m) => { container(m).env = [{ name: 'DATABASE_URL', value: 'postgres://u:p@db/odds' }]; });
    t.not(secretProblems(m).length, 0);
  });

  t.test('NATS_PASSWORD as a plain value', async (t) => {
    const m = broken((m) => { container(m).env!.push({ name: 'NATS_PASSWORD', value: 'secret' }); });
    t.not(natsSecretProblems(m).length, 0);
  });

  t.test('a policy that selects Postgres pods (another workload), or every pod', async (t) => {
    const other = broken((m) => { m.egressPolicy.spec!.podSelector = { matchLabels: POSTGRES_POD }; m.policies = [m.ingressPolicy, m.egressPolicy]; });
    t.match(policySelectorProblems(other).join('\n'), /odds-service-egress must select only/);
    const every = broken((m) => { m.ingressPolicy.spec!.podSelector = {}; m.policies = [m.ingressPolicy, m.egressPolicy]; });
    t.not(policySelectorProblems(every).length, 0);
  });

  t.test('a public port open to any pod, or a metrics port open to the Ingress controller', async (t) => {
    const anyPod = broken((m) => { m.ingressPolicy.spec!.ingress![0]!.from!.push({ podSelector: {} }); });
    t.not(ingressPolicyProblems(anyPod).length, 0);
    const namespaceOnly = broken((m) => { delete m.ingressPolicy.spec!.ingress![1]!.from![0]!.podSelector; });
    t.not(ingressPolicyProblems(namespaceOnly).length, 0, 'every pod of the monitoring namespace');
    const swapped = broken((m) => { m.ingressPolicy.spec!.ingress![1]!.ports = [{ protocol: 'TCP', port: 'http' }]; });
    t.not(ingressPolicyProblems(swapped).length, 0);
    const open = broken((m) => { m.ingressPolicy.spec!.ingress!.push({ ports: [{ protocol: 'TCP', port: 'metrics' }] }); });
    t.match(ingressPolicyProblems(open).join('\n'), /admits every source/);
  });

  t.test('the Betfair adapter shut out of the public port, let into the metrics port, or relabelled', async (t) => {
    const shut = broken((m) => {
      for (const r of m.ingressPolicy.spec!.ingress!) r.from = r.from!.filter((f) => f.podSelector?.matchLabels?.[NAME_LABEL] !== 'odds-betfair');
    });
    t.match(ingressPolicyProblems(shut), ['odds-service-ingress must let the Betfair adapter reach port http']);
    const metrics = broken((m) => { m.ingressPolicy.spec!.ingress![1]!.from!.push({ podSelector: { matchLabels: { [NAME_LABEL]: 'odds-betfair' } } }); });
    t.match(ingressPolicyProblems(metrics), [/^ingress\[1\] lets .*odds-betfair.* reach port metrics$/]);
    const otherNamespace = broken((m) => {
      const peer = m.ingressPolicy.spec!.ingress![0]!.from!.find((f) => f.podSelector?.matchLabels?.[NAME_LABEL] === 'odds-betfair')!;
      peer.namespaceSelector = {};
    });
    t.not(ingressPolicyProblems(otherNamespace).length, 0, 'odds-betfair pods of every namespace');
    const relabelled = broken((m) => { m.adapter.spec!.template.metadata!.labels![NAME_LABEL] = 'betfair'; });
    t.match(ingressPolicyProblems(relabelled), [/the Betfair adapter's pods must carry app\.kubernetes\.io\/name: odds-betfair/]);
  });

  t.test('egress to anywhere, or to another port', async (t) => {
    const anywhere = broken((m) => { m.egressPolicy.spec!.egress!.push({ ports: [{ protocol: 'TCP', port: 443 }] }); });
    t.match(egressPolicyProblems(anywhere).join('\n'), /reaches every destination/);
    const port = broken((m) => { m.egressPolicy.spec!.egress![0]!.ports!.push({ protocol: 'TCP', port: 22 }); });
    t.not(egressPolicyProblems(port).length, 0);
    const noDns = broken((m) => { m.egressPolicy.spec!.egress!.pop(); });
    t.match(egressPolicyProblems(noDns).join('\n'), /must let the pods reach DNS/);
  });

  t.test('a metrics port on loopback, a token in the ConfigMap, or a ServiceMonitor without the token', async (t) => {
    t.not(metricsAccessProblems(broken((m) => { delete m.configMap.data!.METRICS_HOST; })).length, 0);
    t.not(metricsAccessProblems(broken((m) => { m.configMap.data!.METRICS_TOKEN = 'x'.repeat(32); })).length, 0);
    t.not(metricsAccessProblems(broken((m) => { delete m.serviceMonitor.spec.endpoints[0]!.authorization; })).length, 0);
  });

  t.test('ALLOWED_HOSTS of any name, or every address trusted as a proxy', async (t) => {
    t.not(edgeProblems(broken((m) => { m.configMap.data!.ALLOWED_HOSTS = '*'; })).length, 0);
    t.not(edgeProblems(broken((m) => { m.configMap.data!.TRUSTED_PROXIES = '0.0.0.0/0'; })).length, 0);
    t.not(edgeProblems(broken((m) => { delete m.configMap.data!.TRUSTED_PROXIES; })).length, 0);
  });

  t.test('NATS permissions wider than the prefix, or a password written in the file', async (t) => {
    t.not(natsConfigProblems(real, natsConf, natsPermissions.replace('"odds.>"', '">"')).length, 0);
    t.not(natsConfigProblems(real, natsConf.replace('$ODDS_NATS_PASSWORD', 'hunter2'), natsPermissions).length, 0);
  });

  t.test('an alpine base image', async (t) => {
    t.not(dockerBaseProblems(dockerfileText.replace(/node:24-trixie-slim/g, 'node:24-alpine')).length, 0);
  });

  t.test('a Debian 12 base, whose glibc 2.36 loads no uWS build for Node 24', async (t) => {
    t.not(dockerBaseProblems(dockerfileText.replace(/node:24-trixie-slim/g, 'node:24-bookworm-slim')).length, 0);
  });

  t.test('a Dockerfile without a non-root USER', async (t) => {
    t.not(dockerUserProblems(dockerfileText.replace(/^USER .*$/m, '')).length, 0);
    t.not(dockerUserProblems(`${dockerfileText}\nUSER root\n`).length, 0);
  });

  t.test('a runtime image without bzip2', async (t) => {
    t.not(dockerPackageProblems(dockerfileText.replace(/--no-install-recommends bzip2/, '--no-install-recommends')).length, 0);
  });

  t.test('a shell-form CMD', async (t) => {
    t.not(dockerCmdProblems(dockerfileText.replace(/^CMD .*$/m, 'CMD node dist/src/main.js')).length, 0);
  });

  t.test('an image listening on every interface with auth off', async (t) => {
    t.not(dockerCmdProblems(dockerfileText.replace(/AUTH=on/, 'AUTH=off')).length, 0);
  });

  t.test('an image that differs from the documented one', async (t) => {
    const m = broken((m) => { container(m).image = 'odds-service:latest'; });
    t.not(imageProblems(m, deploymentText).length, 0);
  });
  t.test('the adapter with a credential as an argument, run through npm, selected by the Service, or with two replicas', async (t) => {
    const arg = broken((m) => { m.adapter.spec!.template.spec!.containers[0]!.args!.push('--session', 'token'); });
    t.match(adapterProblems(arg), ['--session as an argument shows in the process list: use its file']);
    const npm = broken((m) => { m.adapter.spec!.template.spec!.containers[0]!.command = ['npm', 'run', 'betfair']; });
    t.match(adapterProblems(npm), [/must run node dist\/src\/cli\/betfair\.js directly/]);
    const selected = broken((m) => { m.adapter.spec!.template.metadata!.labels![NAME_LABEL] = APP; m.adapter.spec!.selector.matchLabels![NAME_LABEL] = APP; });
    t.match(adapterProblems(selected), ['the Service selects the adapter\'s pods', 'the PodDisruptionBudget selects the adapter\'s pods']);
    const two = broken((m) => { m.adapter.spec!.replicas = 2; });
    t.match(adapterProblems(two), [/one adapter replica/]);
    const value = broken((m) => { m.adapter.spec!.template.spec!.containers[0]!.env!.push({ name: 'BETFAIR_SESSION', value: 'token' }); });
    t.match(adapterProblems(value), ['BETFAIR_SESSION carries a credential as a value']);
  });
});
