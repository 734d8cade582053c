/**
 * What the load asks for, read from the service's own REST answers after it seeded the demo
 * data: every sport, league, event and market ID, and the open markets (not concluded) with
 * their runners, which odds images are published for and sockets subscribe to.
 */
import { isLineType, type MarketType } from '../../src/refdata/types.js';

export interface OpenMarket {
  mid: string;
  /** Top-level markets can have their state toggled; nested player-race markets cannot. */
  topLevel: boolean;
  /** Runner IDs of the image; session-like markets without runners publish one runner, 1. */
  rids: number[];
  s: boolean;
  /** Priced as one line (Yes and No run lines at rates) rather than in decimal odds. */
  line: boolean;
}

export interface Catalog {
  sis: number[];
  lis: number[];
  eids: number[];
  mids: string[];
  open: OpenMarket[];
}

interface WireMarket {
  mid: string;
  ty: MarketType;
  go: boolean;
  s: boolean;
  r?: { rid: number }[];
  m?: { mid: string; go: boolean; s: boolean; r?: { rid: number }[] }[];
}

async function getJson<T>(base: string, path: string): Promise<T> {
  const r = await fetch(base + path);
  if (r.status !== 200) throw new Error(`GET ${path} answered ${r.status}: ${await r.text()}`);
  return (await r.json()) as T;
}

const chunks = <T>(xs: T[], n: number): T[][] => Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, i * n + n));

export async function readCatalog(base: string): Promise<Catalog> {
  const sports = await getJson<{ si: number }[]>(base, '/api/v1/sports');
  const sis = sports.map((s) => s.si);
  const eids: number[] = [];
  const lis = new Set<number>();
  for (const part of chunks(sis, 50)) {
    const ev = await getJson<{ data: Record<string, { eid: number; li: number }[]> }>(base, `/api/v1/sports/events?si=${part.join(',')}`);
    for (const list of Object.values(ev.data)) {
      for (const e of list) {
        eids.push(e.eid);
        lis.add(e.li);
      }
    }
  }
  const mids: string[] = [];
  const open: OpenMarket[] = [];
  for (const part of chunks(eids, 50)) {
    const mk = await getJson<{ data: Record<string, WireMarket[]> }>(base, `/api/v1/events/markets?eid=${part.join(',')}`);
    for (const list of Object.values(mk.data)) {
      for (const m of list) {
        mids.push(m.mid);
        if (!m.go) open.push({ mid: m.mid, topLevel: true, rids: m.r?.map((r) => r.rid) ?? [1], s: m.s, line: isLineType(m.ty) });
        for (const n of m.m ?? []) {
          mids.push(n.mid);
          if (!m.go && !n.go) open.push({ mid: n.mid, topLevel: false, rids: n.r?.map((r) => r.rid) ?? [1], s: n.s, line: false });
        }
      }
    }
  }
  if (open.length < 10) throw new Error(`the demo data has only ${open.length} open markets; the soak needs at least 10`);
  return { sis, lis: [...lis], eids, mids, open };
}
