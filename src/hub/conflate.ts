/**
 * Conflation on shared timers: one per interval that some socket asked for,
 * never one per socket. A market that changes during an interval is marked;
 * at the end of the interval its newest image goes once to every variant of
 * that interval. A timer runs only while something is marked, so an idle
 * interval costs nothing, and the first change after a quiet spell starts
 * the interval it belongs to.
 */
export class Conflator {
  private readonly groups = new Map<number, { timer: NodeJS.Timeout; dirty: Map<string, number> }>();
  /** Set at shutdown: an image published after it (a batch still applying) must start no timer. */
  private stopped = false;

  constructor(private readonly flush: (mid: string, conflate: number, thinned: boolean) => void) {}

  /**
   * A market changed (or, with no update, needs its frame sent again); its subscribers at this
   * interval get it at the end of the interval.
   */
  mark(mid: string, conflate: number, updates = 1): void {
    if (this.stopped) return;
    let g = this.groups.get(conflate);
    if (!g) {
      const dirty = new Map<string, number>();
      // Unref'd: a conflation timer never keeps a stopping process alive.
      const timer = setInterval(() => this.tick(conflate), conflate).unref();
      this.groups.set(conflate, (g = { timer, dirty }));
    }
    g.dirty.set(mid, (g.dirty.get(mid) ?? 0) + updates);
  }

  stop(): void {
    this.stopped = true;
    for (const g of this.groups.values()) clearInterval(g.timer);
    this.groups.clear();
  }

  private tick(conflate: number): void {
    const g = this.groups.get(conflate);
    if (!g) return;
    if (g.dirty.size === 0) {
      clearInterval(g.timer);
      this.groups.delete(conflate);
      return;
    }
    const dirty = g.dirty;
    g.dirty = new Map();
    // More than one update in the interval means some were held back: the frame says so.
    for (const [mid, updates] of dirty) this.flush(mid, conflate, updates > 1);
  }
}
