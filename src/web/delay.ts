/**
 * Publish-to-screen delay: the last `size` samples (ms) in a ring, so a long
 * session holds a fixed amount; the median is taken when asked, not per sample.
 */
export class Delay {
  private readonly samples: Float64Array;
  private count = 0;
  private next = 0;

  constructor(size = 200) {
    this.samples = new Float64Array(size);
  }

  add(ms: number): void {
    this.samples[this.next] = ms;
    this.next = (this.next + 1) % this.samples.length;
    this.count = Math.min(this.count + 1, this.samples.length);
  }

  /** The median of the samples held, or undefined before the first. */
  p50(): number | undefined {
    if (!this.count) return undefined;
    const sorted = this.samples.slice(0, this.count).sort();
    const mid = this.count >> 1;
    return this.count % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }
}
