/**
 * Bytes held per source (an API key, an address), bounded by `max` each, so one source cannot make
 * the process hold more however many requests or connections it opens. A source holding nothing
 * may always spend, so one item larger than `max` alone still goes through. Spending that does not
 * fit counts nothing and returns the owner's refusal, built from what the source holds.
 */
export class ByteBudget<Refusal> {
  private readonly held = new Map<string, number>();

  constructor(readonly max: number, private readonly refusal: (held: number, max: number) => Refusal) {}

  /** Counts `bytes` against `source`, or returns the refusal when they do not fit. */
  spend(source: string, bytes: number): Refusal | undefined {
    const no = this.refuses(source, bytes);
    if (!no) this.held.set(source, (this.held.get(source) ?? 0) + bytes);
    return no;
  }

  /** The refusal `spend` would give now, counting nothing. */
  refuses(source: string, bytes: number): Refusal | undefined {
    const held = this.held.get(source) ?? 0;
    return held > 0 && held + bytes > this.max ? this.refusal(held, this.max) : undefined;
  }

  give(source: string, bytes: number): void {
    const held = (this.held.get(source) ?? 0) - bytes;
    if (held > 0) this.held.set(source, held);
    else this.held.delete(source);
  }
}
