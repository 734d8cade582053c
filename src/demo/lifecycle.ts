import type { Ingest } from '../ingest/ingest.js';
import type { Logger } from '../log.js';
import type { ReadModel } from '../refdata/model.js';
import type { Event, Market } from '../refdata/types.js';

type Item = Record<string, unknown>;
const LINE_TYPES = new Set(['session', 'ball-by-ball', 'odd-even', 'khadometer', 'line-market', 'other-market']);
/** Enough events for a lively demo without the data set growing for ever. */
const MAX_EVENTS = 60;

export interface LifecycleOptions {
  model: ReadModel;
  ingest: Ingest;
  log: Logger;
  intervalMs?: number;
  random?: () => number;
  /** Markets another publisher feeds: neither they nor their events are touched. */
  fedElsewhere?: (mid: string) => boolean;
}

/**
 * Moves the demo data through a match day, one ingest batch per step: events
 * go in play and conclude (settling their markets), markets suspend and
 * resume, sessions settle, a few results are recalled or abandoned, and new
 * events appear. Everything goes through ingest, as a real publisher's would.
 */
export class Lifecycle {
  private timer: NodeJS.Timeout | undefined;
  private readonly random: () => number;

  constructor(private readonly opts: LifecycleOptions) {
    this.random = opts.random ?? Math.random;
  }

  start(): void {
    this.timer ??= setInterval(() => {
      this.step().catch((err: Error) => this.opts.log.warn('lifecycle step refused', { err: err.message }));
    }, this.opts.intervalMs ?? 5000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Takes one step and returns the batch it ingested (empty when nothing applied). */
  async step(): Promise<Item[]> {
    const all = this.opts.model.allEvents();
    const { markets, events } = this.ours(all);
    const live = events.filter((e) => e.ip && !e.go);
    const open = (m: Market) => !m.go && live.some((e) => e.eid === m.eid);
    const actions: (() => Item[] | undefined)[] = [
      () => this.kickOff(events),
      () => this.toggle(markets.filter(open)),
      () => this.settleSession(markets.filter((m) => open(m) && m.ty === 'session')),
      () => this.conclude(live, markets),
      () => this.recall(markets.filter((m) => m.go && !m.rt && !m.m)),
      () => this.abandon(markets.filter((m) => !m.go && !m.m && events.some((e) => e.eid === m.eid && !e.ip && !e.go))),
      () => this.newEvent(all),
    ];
    for (let tries = 0; tries < actions.length; tries++) {
      const batch = this.pick(actions)();
      if (batch?.length) {
        await this.opts.ingest.accept(batch, 'simulator');
        return batch;
      }
    }
    return [];
  }

  /** The markets no other publisher feeds, and the events holding none that it does. */
  private ours(all: Event[]): { markets: Market[]; events: Event[] } {
    const fed = this.opts.fedElsewhere;
    const markets = [...this.opts.model.allMarkets()];
    if (!fed) return { markets, events: all };
    const theirs = new Set<number>();
    const mine = markets.filter((m) => {
      const elsewhere = fed(m.mid) || (m.m ?? []).some((n) => fed(n.mid));
      if (elsewhere) theirs.add(m.eid);
      return !elsewhere;
    });
    return { markets: mine.filter((m) => !theirs.has(m.eid)), events: all.filter((e) => !theirs.has(e.eid)) };
  }

  private pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.random() * list.length)];
  }

  private kickOff(events: Event[]): Item[] | undefined {
    const next = events.filter((e) => !e.ip && !e.go).sort((a, b) => (a.st < b.st ? -1 : 1))[0];
    return next && [{ kind: 'event', eid: next.eid, ip: true }];
  }

  private toggle(markets: Market[]): Item[] | undefined {
    const m = markets.length ? this.pick(markets) : undefined;
    return m && [{ kind: 'market', mid: m.mid, s: !m.s }];
  }

  private settleSession(sessions: Market[]): Item[] | undefined {
    const m = sessions.length ? this.pick(sessions) : undefined;
    return m && [{ kind: 'market', mid: m.mid, s: false, go: true }, { kind: 'result', mid: m.mid, res: String(20 + Math.floor(this.random() * 180)), rt: false, ia: false }];
  }

  /** Ends an event: every open market concludes with a result of its kind. */
  private conclude(live: Event[], markets: Market[]): Item[] | undefined {
    const e = live.length > 1 ? this.pick(live) : undefined;
    if (!e) return undefined;
    const items: Item[] = [{ kind: 'event', eid: e.eid, ip: false, go: true }];
    for (const m of markets.filter((x) => x.eid === e.eid && !x.go)) {
      items.push({ kind: 'market', mid: m.mid, s: false, go: true });
      const settle = (mid: string, rids: number[]) => items.push({ kind: 'result', mid, res: this.outcome(m, rids), rt: false, ia: false });
      if (m.m) for (const n of m.m) settle(n.mid, n.r.map((r) => r.rid));
      else settle(m.mid, (m.r ?? []).map((r) => r.rid));
    }
    return items;
  }

  private outcome(m: Market, rids: number[]): string {
    if (m.ty === 'odd-even' || m.ty === 'khadometer') return this.random() < 0.5 ? 'back' : 'lay';
    if (LINE_TYPES.has(m.ty) || !rids.length) return String(Math.floor(this.random() * 200));
    return String(this.pick(rids));
  }

  /** A settled result withdrawn: the market and its result are marked recalled. */
  private recall(settled: Market[]): Item[] | undefined {
    const m = settled.length ? this.pick(settled) : undefined;
    return m && [{ kind: 'market', mid: m.mid, rt: true }, { kind: 'result', mid: m.mid, rt: true }];
  }

  private abandon(upcoming: Market[]): Item[] | undefined {
    const m = upcoming.length ? this.pick(upcoming) : undefined;
    return m && [{ kind: 'market', mid: m.mid, s: false, go: true }, { kind: 'result', mid: m.mid, res: 'Abandoned', rt: false, ia: true }];
  }

  private newEvent(events: Event[]): Item[] | undefined {
    if (events.length >= MAX_EVENTS || !events.length) return undefined;
    const like = this.pick(events);
    const eid = Math.max(...events.map((e) => e.eid)) + 1;
    const st = new Date(Date.now() + (30 + Math.floor(this.random() * 150)) * 60_000).toISOString();
    const home = 1000 + Math.floor(this.random() * 8000);
    return [
      { kind: 'event', eid, na: `Team ${home} v Team ${home + 1}`, st, go: false, ip: false, si: like.si, li: like.li, tv: null },
      { kind: 'market', mid: `1.9${eid}`, eid, na: 'Match Odds', ty: 'match-odd', s: true, go: false, rt: false, r: [{ rid: home, na: `Team ${home}` }, { rid: home + 1, na: `Team ${home + 1}` }] },
    ];
  }
}
