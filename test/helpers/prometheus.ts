/** Series to value, keyed as exposed: `name{label="v",...}`, labels in exposition order. */
export type Scrape = Map<string, number>;

/** Parses the Prometheus text format: enough to read the service's own exposition. No dependencies, so benchmarks use it too. */
export function parseMetrics(text: string): Scrape {
  const out: Scrape = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}
