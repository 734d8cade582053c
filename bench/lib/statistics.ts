/** Latency histograms and medians. */

/**
 * Latencies in microseconds: exact to 1 µs below 100 ms, 1 ms buckets up to 60 s.
 * Percentiles are the smallest value at or above that fraction of samples.
 */
export class Histogram {
  private fine = new Uint32Array(100_000);
  private coarse = new Uint32Array(60_000);
  count = 0;
  max = 0;
  sum = 0;

  recordMs(ms: number): void {
    this.recordMicros(Math.max(0, Math.round(ms * 1000)));
  }

  recordMicros(us: number): void {
    if (us < 100_000) this.fine[us]++;
    else this.coarse[Math.min(59_999, Math.floor(us / 1000))]++;
    this.count++;
    this.sum += us;
    if (us > this.max) this.max = us;
  }

  merge(o: Histogram): void {
    for (let i = 0; i < o.fine.length; i++) this.fine[i] += o.fine[i];
    for (let i = 0; i < o.coarse.length; i++) this.coarse[i] += o.coarse[i];
    this.count += o.count;
    this.sum += o.sum;
    this.max = Math.max(this.max, o.max);
  }

  /** Percentile in milliseconds. */
  pMs(p: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.ceil((p / 100) * this.count);
    let seen = 0;
    for (let i = 0; i < this.fine.length; i++) {
      seen += this.fine[i];
      if (seen >= rank) return i / 1000;
    }
    for (let i = 0; i < this.coarse.length; i++) {
      seen += this.coarse[i];
      if (seen >= rank) return i;
    }
    return this.max / 1000;
  }

  reset(): void {
    this.fine.fill(0);
    this.coarse.fill(0);
    this.count = this.max = this.sum = 0;
  }

  /** Sparse form for sending between processes. */
  toJSON(): { f: [number, number][]; c: [number, number][]; n: number; max: number; sum: number } {
    const f: [number, number][] = [];
    const c: [number, number][] = [];
    this.fine.forEach((v, i) => v && f.push([i, v]));
    this.coarse.forEach((v, i) => v && c.push([i, v]));
    return { f, c, n: this.count, max: this.max, sum: this.sum };
  }

  static from(j: ReturnType<Histogram['toJSON']>): Histogram {
    const h = new Histogram();
    for (const [i, v] of j.f) h.fine[i] = v;
    for (const [i, v] of j.c) h.coarse[i] = v;
    h.count = j.n;
    h.max = j.max;
    h.sum = j.sum;
    return h;
  }
}

export const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
