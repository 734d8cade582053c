import { http } from './service.js';

/** Series to value, keyed as exposed: `name{label="v",...}`, labels in exposition order. */
export type Scrape = Map<string, number>;

/** Parses the Prometheus text format: enough to read the service's own exposition. */
export function parseMetrics(text: string): Scrape {
  const out: Scrape = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

export async function scrape(base: string): Promise<Scrape> {
  const r = await http<string>(base, '/metrics');
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  return parseMetrics(r.text);
}

/** The value of the one series whose key contains every given fragment (0 when absent). */
export function value(s: Scrape, name: string, ...labels: string[]): number {
  for (const [key, v] of s) {
    if ((key === name || key.startsWith(name + '{')) && labels.every((l) => key.includes(l))) return v;
  }
  return 0;
}
