import { http, metricsUrlOf } from './service.js';
import { parseMetrics, type Scrape } from './prometheus.js';

export { parseMetrics, type Scrape } from './prometheus.js';

/** A scrape of the service at `base`: its metrics URL, or the public URL of a test service. */
export async function scrape(base: string): Promise<Scrape> {
  const r = await http<string>(metricsUrlOf(base), '/metrics');
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
