/**
 * Real-shaped odds for the delta benchmark: a runner market with full 10-level ladders on both
 * sides whose every change moves one or two levels of one runner (the size at one level, or at two
 * next to each other), as an exchange market moves between trades. Seeded, so runs compare.
 */
const LEVELS = 10;
const round = (x: number) => Math.round(x * 100) / 100;

export class LadderMarket {
  private seed: number;
  private readonly back: number[][];
  private readonly lay: number[][];

  constructor(readonly mid: string, private readonly runners: number, seed: number) {
    this.seed = seed;
    this.back = Array.from({ length: runners }, () => Array.from({ length: LEVELS }, () => this.stake()));
    this.lay = Array.from({ length: runners }, () => Array.from({ length: LEVELS }, () => this.stake()));
  }

  /** mulberry32 */
  private random(): number {
    this.seed = (this.seed + 0x6d2b79f5) | 0;
    let x = Math.imul(this.seed ^ (this.seed >>> 15), 1 | this.seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  }

  private stake(): number {
    return round(2 + this.random() * 2000);
  }

  /** The market as reference data: a match-odds market of the demo's event 30000001. */
  market(): Record<string, unknown> {
    return { kind: 'market', mid: this.mid, eid: 30000001, na: `Bench ${this.mid}`, ty: 'match-odd', r: Array.from({ length: this.runners }, (_, i) => ({ rid: i + 1, na: `Runner ${i + 1}` })) };
  }

  /** The image after one more change. */
  next(): Record<string, unknown> {
    const runner = Math.floor(this.random() * this.runners);
    const side = this.random() < 0.5 ? this.back[runner] : this.lay[runner];
    const level = Math.floor(this.random() * (LEVELS - 1));
    side[level] = this.stake();
    if (this.random() < 0.3) side[level + 1] = this.stake();
    return {
      kind: 'odds', mid: this.mid, ts: Date.now(), st: 'OPEN', ip: true,
      r: this.back.map((b, i) => {
        const base = 1.5 + i * 0.5;
        return { rid: i + 1, st: 'ACTIVE', b: b.map((s, k) => [round(base - 0.01 * k), s]), l: this.lay[i].map((s, k) => [round(base + 0.01 * (k + 1)), s]) };
      }),
    };
  }
}

/** One ingest batch over REST; throws unless it is applied. */
export async function postIngest(url: string, data: Record<string, unknown>[]): Promise<void> {
  const r = await fetch(`${url}/api/v1/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data }) });
  if (r.status !== 200) throw new Error(`ingest refused: ${await r.text()}`);
}

/** Publishes `rate` changes a second across `markets` for `seconds`, in batches every 20 ms. */
export async function publishChanges(url: string, markets: readonly LadderMarket[], rate: number, seconds: number): Promise<void> {
  const end = performance.now() + seconds * 1000;
  const perBatch = Math.max(1, Math.round(rate / 50));
  for (let k = 0; performance.now() < end; k++) {
    const at = performance.now();
    await postIngest(url, Array.from({ length: perBatch }, (_, j) => markets[(k * perBatch + j) % markets.length].next()));
    await new Promise((r) => setTimeout(r, Math.max(0, 20 - (performance.now() - at))));
  }
}
