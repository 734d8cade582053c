/**
 * The images a stream file implies, worked out here without src/exchange: plain arrays for the
 * price ladders, arrays indexed by position for the positional ones, the rules written out again
 * from the exchange's description, so a mistake in the adapter's book is not repeated here.
 */
import type { OddsMessage } from '../../src/odds/messages.js';

type Level = [number, number];
// The file is parsed JSON of a known shape; the reference reads it as loosely as a script would.
type Obj = Record<string, any>;

interface RunnerRef {
  atb: Level[]; atl: Level[]; trd: Level[];
  batb: (Level | undefined)[]; batl: (Level | undefined)[]; bdatb: (Level | undefined)[]; bdatl: (Level | undefined)[];
  ltp?: number; tv?: number;
}

interface MarketRef { def: Obj; runners: Record<number, RunnerRef>; tv?: number; kinds: string[] }

export interface ExpectedImage {
  mid: string; ts: number; st: string; ip: boolean; tv?: number;
  r: { rid: number; st: string; b: Level[]; l: Level[]; ltp?: number; tv?: number }[];
}

/** What a subscriber's odds frame says, in the keys the reference computes: `ltp` and `tv` only where the frame carries them. */
export function seen(f: OddsMessage): ExpectedImage {
  const out: ExpectedImage = { mid: f.mid, ts: f.ts, st: f.st, ip: f.ip, r: f.r.map((x) => ({
    rid: x.rid, st: x.st, b: x.b, l: x.l, ...(x.ltp === undefined ? {} : { ltp: x.ltp }), ...(x.tv === undefined ? {} : { tv: x.tv }),
  })) };
  return f.tv === undefined ? out : { ...out, tv: f.tv };
}

const cents = (n: number) => Math.round(n * 100) / 100;

function setPrice(ladder: Level[], price: number, size: number): void {
  const at = ladder.findIndex((l) => l[0] === price);
  if (at >= 0) ladder.splice(at, 1);
  if (size > 0) ladder.push([price, size]);
}

const emptyRunner = (): RunnerRef => ({ atb: [], atl: [], trd: [], batb: [], batl: [], bdatb: [], bdatl: [] });

const STATUS: Record<string, string> = { ACTIVE: 'ACTIVE', WINNER: 'WINNER', PLACED: 'WINNER', LOSER: 'LOSER', REMOVED: 'REMOVED', REMOVED_VACANT: 'REMOVED', HIDDEN: 'SUSPENDED' };

export class ReferenceBooks {
  readonly markets = new Map<string, MarketRef>();

  /** The images one message yields, one per market change, in order. */
  apply(msg: Obj): ExpectedImage[] {
    const out: ExpectedImage[] = [];
    for (const mc of msg.mc ?? []) {
      let m = this.markets.get(mc.id);
      if (!m) this.markets.set(mc.id, (m = { def: mc.marketDefinition, runners: {}, kinds: [] }));
      if (mc.marketDefinition) m.def = mc.marketDefinition;
      if (mc.img) {
        m.runners = {};
        m.tv = undefined;
        m.kinds = [];
      }
      if (typeof mc.tv === 'number') m.tv = mc.tv;
      for (const rc of mc.rc ?? []) {
        const r = (m.runners[rc.id] ??= emptyRunner());
        for (const key of ['atb', 'atl', 'trd'] as const) for (const [p, s] of rc[key] ?? []) setPrice(r[key], p, s);
        for (const key of ['batb', 'batl', 'bdatb', 'bdatl'] as const) {
          for (const [pos, p, s] of rc[key] ?? []) r[key][pos] = s > 0 ? [p, s] : undefined;
        }
        for (const key of ['atb', 'atl', 'batb', 'batl', 'bdatb', 'bdatl']) if (rc[key] && !m.kinds.includes(key)) m.kinds.push(key);
        if (typeof rc.ltp === 'number') r.ltp = rc.ltp;
        if (typeof rc.tv === 'number') r.tv = rc.tv;
      }
      out.push(this.image(mc.id, m, msg.pt));
    }
    return out;
  }

  private image(mid: string, m: MarketRef, ts: number): ExpectedImage {
    const has = (...keys: string[]) => keys.some((k) => m.kinds.includes(k));
    const pair = has('atb', 'atl') ? ['atb', 'atl'] : has('batb', 'batl') ? ['batb', 'batl'] : has('bdatb', 'bdatl') ? ['bdatb', 'bdatl'] : undefined;
    const runners = [...m.def.runners].sort((a: Obj, b: Obj) => a.sortPriority - b.sortPriority);
    const r = runners.map((rd: Obj) => {
      const book = m.runners[rd.id] ?? emptyRunner();
      const side = (key: string | undefined, backSide: boolean): Level[] => {
        if (!key) return [];
        const levels = key === 'atb' || key === 'atl'
          ? [...(book[key] as Level[])].sort((a, b) => (backSide ? b[0] - a[0] : a[0] - b[0]))
          : (book[key as 'batb'] as (Level | undefined)[]).filter((l): l is Level => l !== undefined);
        return levels.slice(0, 10).map((l) => [l[0], l[1]] as Level);
      };
      const tv = book.tv ?? (book.trd.length ? cents(book.trd.reduce((a, l) => a + l[1], 0)) : undefined);
      return { rid: rd.id, st: STATUS[rd.status], b: side(pair?.[0], true), l: side(pair?.[1], false), ...(book.ltp !== undefined ? { ltp: book.ltp } : {}), ...(tv !== undefined ? { tv } : {}) };
    });
    const runnerTvs = Object.keys(m.runners).map((id) => {
      const book = m.runners[Number(id)];
      return book.tv ?? (book.trd.length ? cents(book.trd.reduce((a, l) => a + l[1], 0)) : undefined);
    }).filter((v): v is number => v !== undefined);
    const tv = m.tv ?? (runnerTvs.length ? cents(runnerTvs.reduce((a, b) => a + b, 0)) : undefined);
    const st = m.def.status === 'INACTIVE' ? 'SUSPENDED' : m.def.status;
    return { mid, ts, st, ip: m.def.inPlay, r, ...(tv !== undefined ? { tv } : {}) };
  }
}

/** Every image of a file's messages, by market, in order. */
export function expectedImages(messages: Obj[]): Map<string, ExpectedImage[]> {
  const books = new ReferenceBooks();
  const out = new Map<string, ExpectedImage[]>();
  for (const msg of messages) for (const img of books.apply(msg)) out.set(img.mid, [...(out.get(img.mid) ?? []), img]);
  return out;
}
