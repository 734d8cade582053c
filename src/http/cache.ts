/**
 * Whole answers by route and raw query string, for as long as the read model
 * has not changed. Betting sites poll the same event and market lists over and
 * over; a hit skips parsing, validation and joining, leaving only the write.
 * Bounded: when full it starts again empty, which costs one miss per entry.
 */
export class AnswerCache {
  private entries = new Map<string, string>();
  private version = -1;

  constructor(private readonly max = 2_000) {}

  get(key: string, version: number): string | undefined {
    if (version !== this.version) {
      this.entries.clear();
      this.version = version;
      return undefined;
    }
    return this.entries.get(key);
  }

  set(key: string, version: number, body: string): void {
    if (version !== this.version) return;
    if (this.entries.size >= this.max) this.entries.clear();
    this.entries.set(key, body);
  }
}
