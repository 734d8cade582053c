/**
 * What `kubectl apply -k DIR` sends to the API server, rendered offline (no kubectl, no network
 * at test time): the kustomization's resources in order (files, and folders holding a
 * kustomization of their own), then its ConfigMap generators. Only the parts of kustomize that
 * k8s/ uses are rendered; any other key fails the render by name, so a kustomization that grows
 * one cannot be checked as something it is not.
 */
import { readFileSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { parseAllDocuments, parse } from 'yaml';

export type Doc = Record<string, unknown>;

export interface Rendered {
  /** The resources in the order listed: each kustomization's resources, then its generated ConfigMaps (kubectl sorts them by kind before it applies them). */
  readonly docs: Doc[];
  /** Every YAML resource file a render read, relative to the root given. */
  readonly files: string[];
}

const KNOWN = new Set(['apiVersion', 'kind', 'resources', 'configMapGenerator']);
const GENERATOR_KEYS = new Set(['name', 'files', 'literals', 'options']);
const OPTION_KEYS = new Set(['disableNameSuffixHash', 'labels', 'annotations']);

/** YAML 1.1, as kubectl (go-yaml) reads it: unquoted on/off/yes/no become booleans. */
export function parseResources(text: string, file: string): Doc[] {
  const docs = parseAllDocuments(text, { version: '1.1' });
  if (!Array.isArray(docs)) throw new Error(`${file}: not a YAML stream`);
  return docs.map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]!.message}`);
    return d.toJS() as Doc;
  }).filter((d) => d !== null && d !== undefined);
}

interface Generator {
  name: string;
  files?: string[];
  literals?: string[];
  options?: { disableNameSuffixHash?: boolean; labels?: Record<string, string>; annotations?: Record<string, string> };
}

function generated(dir: string, g: Generator): Doc {
  for (const key of Object.keys(g)) if (!GENERATOR_KEYS.has(key)) throw new Error(`${dir}: configMapGenerator ${g.name}: ${key} is not rendered here`);
  for (const key of Object.keys(g.options ?? {})) if (!OPTION_KEYS.has(key)) throw new Error(`${dir}: configMapGenerator ${g.name}: options.${key} is not rendered here`);
  // kustomize names a generated ConfigMap with a hash of its content unless told not to.
  if (g.options?.disableNameSuffixHash !== true) throw new Error(`${dir}: configMapGenerator ${g.name}: a name hash suffix is not rendered here`);
  const data: Record<string, string> = {};
  for (const entry of g.files ?? []) {
    const [key, path] = entry.includes('=') ? entry.split('=', 2) as [string, string] : [basename(entry), entry];
    const full = resolve(dir, path);
    // kustomize's default load restrictor: a generator reads files inside its kustomization's folder only.
    if (relative(dir, full).startsWith('..')) throw new Error(`${dir}: configMapGenerator ${g.name}: ${path} is outside the kustomization`);
    data[key] = readFileSync(full, 'utf8');
  }
  for (const literal of g.literals ?? []) {
    const at = literal.indexOf('=');
    data[literal.slice(0, at)] = literal.slice(at + 1);
  }
  const metadata: Doc = { name: g.name };
  if (g.options?.labels) metadata.labels = g.options.labels;
  if (g.options?.annotations) metadata.annotations = g.options.annotations;
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata, data };
}

/** Renders the kustomization in `dir`; `root` is what `files` are given relative to. */
export function render(dir: string, root = dir): Rendered {
  const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'), { version: '1.1' }) as Doc;
  for (const key of Object.keys(k)) if (!KNOWN.has(key)) throw new Error(`${dir}/kustomization.yaml: ${key} is not rendered here`);
  if (k.kind !== 'Kustomization') throw new Error(`${dir}/kustomization.yaml: kind ${String(k.kind)} is not rendered here`);
  const docs: Doc[] = [];
  const files: string[] = [];
  for (const entry of (k.resources ?? []) as string[]) {
    const path = resolve(dir, entry);
    if (statSync(path).isDirectory()) {
      const nested = render(path, root);
      docs.push(...nested.docs);
      files.push(...nested.files);
    } else {
      docs.push(...parseResources(readFileSync(path, 'utf8'), path));
      files.push(relative(root, path));
    }
  }
  for (const g of (k.configMapGenerator ?? []) as Generator[]) docs.push(generated(dir, g));
  const names = docs.map((d) => `${String(d.kind)}/${String((d.metadata as { name?: string } | undefined)?.name)}`);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  // kustomize refuses a resource listed twice (an overlay that also lists its base's file).
  if (twice) throw new Error(`${dir}: ${twice} is rendered twice`);
  return { docs, files };
}
