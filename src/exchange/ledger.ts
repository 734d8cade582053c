/**
 * What became of each market's data, for the adapters' summaries: images the service took, and
 * what it did not get or did not take, with the first reason. Bad data costs only its market,
 * so the summary is by market: one line each, the markets with a problem first.
 */
export type MarketOutcome =
  /** An image the service acked and did not refuse. */
  | 'published'
  /** An image the adapter kept back because the service's price rules refuse it; the market was sent stale instead. */
  | 'withheld'
  /** A change that could not be applied: the market's book is unreliable until a fresh image. */
  | 'unapplied'
  /** An item the service refused (named in its ack's `refused`, or the whole batch). */
  | 'refused';

const OUTCOMES: readonly MarketOutcome[] = ['published', 'withheld', 'unapplied', 'refused'];
const WORDS: Record<MarketOutcome, string> = { published: 'published', withheld: 'withheld', unapplied: 'not applied', refused: 'refused by the service' };

type Tally = Record<MarketOutcome, number> & { why?: string };

/** Markets tallied one by one; beyond them (a replay of a whole season) the rest are tallied together. */
const MAX_MARKETS = 100_000;
const OTHERS = '(other markets)';

export class Ledger {
  private readonly markets = new Map<string, Tally>();
  readonly totals: Record<MarketOutcome, number> = { published: 0, withheld: 0, unapplied: 0, refused: 0 };

  record(mid: string, outcome: MarketOutcome, why?: string): void {
    this.totals[outcome]++;
    const key = this.markets.has(mid) || this.markets.size < MAX_MARKETS ? mid : OTHERS;
    let tally = this.markets.get(key);
    if (!tally) this.markets.set(key, (tally = { published: 0, withheld: 0, unapplied: 0, refused: 0 }));
    tally[outcome]++;
    if (why !== undefined && tally.why === undefined) tally.why = why;
  }

  get(mid: string): Readonly<Tally> | undefined {
    return this.markets.get(mid);
  }

  /** Markets with anything not published. */
  get troubled(): number {
    let n = 0;
    for (const t of this.markets.values()) if (t.withheld + t.unapplied + t.refused) n++;
    return n;
  }

  /** One line a market: what was published and what was not, and the first reason; troubled markets first. */
  lines(): string[] {
    const bad = (t: Tally) => t.withheld + t.unapplied + t.refused > 0;
    return [...this.markets].sort(([, a], [, b]) => Number(bad(b)) - Number(bad(a))).map(([mid, t]) => {
      const counts = OUTCOMES.filter((o) => o === 'published' || t[o]).map((o) => `${t[o]} ${WORDS[o]}`).join(', ');
      return `${mid}: ${counts}${t.why ? ` (first: ${t.why})` : ''}`;
    });
  }
}
