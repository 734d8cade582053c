/**
 * bench:scale's market set and feed: 200 markets (40 events of 5) of 2 to 20 runners, ladders 10
 * deep a side, and full images through the `/ingest` socket in batches every 50 ms, when and how
 * much each market changes drawn from the exchange adapter's recordings (rhythm.ts).
 */
import WebSocket from 'ws';
import { sleep } from '../lib/run.js';
import { Rhythm } from './rhythm.js';

export const SI = 301;
export const EVENTS = Array.from({ length: 40 }, (_, e) => 90_000_000 + e);
export const midOf = (eid: number, n: number) => `8.${eid}.${n}`;

/** 200 markets, 5 per event; runners 2 to 20, fixed per market so every run has the same set. */
export const MARKETS = EVENTS.flatMap((eid, e) => [1, 2, 3, 4, 5].map((n) => ({ mid: midOf(eid, n), eid, runners: 2 + ((e * 5 + n) * 7) % 19 })));

export function reference(): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [{ kind: 'sport', si: SI, na: 'Scale Sport', a: true }, { kind: 'league', li: 990_001, si: SI, na: 'Scale League' }];
  for (const eid of EVENTS) items.push({ kind: 'event', eid, na: `Scale ${eid}`, si: SI, li: 990_001, st: new Date().toISOString(), go: false, ip: true });
  for (const m of MARKETS) {
    items.push({ kind: 'market', mid: m.mid, eid: m.eid, na: `Win ${m.mid}`, ty: 'match-odd', s: true, go: false, rt: false, r: Array.from({ length: m.runners }, (_, k) => ({ rid: k + 1, na: `Runner ${k + 1}` })) });
  }
  return items;
}

/**
 * A market's image, 10 levels a side; `tick` moves `levels` levels (one or two unless told), the
 * first runner's backs then lays, then the next runner's, from runner `tick % runners` on.
 */
export function image(m: (typeof MARKETS)[number], tick: number, levels = 1 + (tick % 2)): Record<string, unknown> {
  const first = tick % m.runners;
  const r = Array.from({ length: m.runners }, (_, k) => {
    const base = 2 + k * 0.5;
    const from = ((k - first + m.runners) % m.runners) * 20;
    const size = (i: number) => 10 + i + (from + i < levels ? 1 + (tick % 97) : 0);
    const b = Array.from({ length: 10 }, (_, i) => [Math.round((base - i * 0.02) * 100) / 100, size(i)]);
    const l = Array.from({ length: 10 }, (_, i) => [Math.round((base + 0.02 + i * 0.02) * 100) / 100, size(10 + i) - 9]);
    return { rid: k + 1, st: 'ACTIVE', b, l };
  });
  return { kind: 'odds', mid: m.mid, ts: Date.now(), st: 'OPEN', ip: true, r };
}

export async function post(url: string, data: Record<string, unknown>[]): Promise<void> {
  const res = await fetch(`${url}/api/v1/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data }) });
  if (res.status !== 200) throw new Error(`ingest: ${res.status} ${await res.text()}`);
}

/** A publisher's `/ingest` socket (the service's, or the peer's): one JSON batch at a time, each acked. */
export class Ingest {
  private ws!: WebSocket;
  private nextId = 1;
  private waiting = new Map<number, (ack: { status: number; message: string }) => void>();

  /** `query`: the handshake's, such as `live=60000` (docs/ingest.md, Liveness). */
  static async open(url: string, query = ''): Promise<Ingest> {
    const i = new Ingest();
    i.ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ingest${query ? `?${query}` : ''}`, ['odds.v1.json']);
    i.ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString());
      i.waiting.get(m.id)?.(m);
      i.waiting.delete(m.id);
    });
    i.ws.on('error', () => undefined);
    await new Promise((ok, fail) => (i.ws.once('open', ok), i.ws.once('error', fail)));
    return i;
  }

  send(data: Record<string, unknown>[]): Promise<void> {
    const id = this.nextId++;
    return new Promise((ok, fail) => {
      this.waiting.set(id, (a) => (a.status === 1 ? ok() : fail(new Error(`ingest: ${a.message}`))));
      this.ws.send(JSON.stringify({ id, data }));
    });
  }

  close(): void {
    this.ws.close();
  }
}

const RHYTHM = new Rhythm(EVENTS.map((eid) => MARKETS.flatMap((m, i) => (m.eid === eid ? [i] : []))));

/** Changes at `rate`/s over all markets for `seconds`, as the recordings space them, sent every 50 ms; resolves to how many were sent. */
export async function publish(to: Ingest, rate: number, seconds: number, tick: { n: number }): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let sent = 0;
  let last = Date.now();
  while (Date.now() < end) {
    await sleep(50);
    const now = Date.now();
    const batch = RHYTHM.advance(now - last, rate).map(([i, levels]) => image(MARKETS[i], tick.n++, levels));
    last = now;
    if (batch.length) await to.send(batch);
    sent += batch.length;
  }
  return sent;
}

/** The feed kept running in the background (during a storm), to whichever server `to` reaches. */
export class Feed {
  private running = false;
  private done: Promise<number> = Promise.resolve(0);
  constructor(public to: Ingest, private readonly tick: { n: number }) {}
  start(rate: number): void {
    this.running = true;
    this.done = (async () => {
      let sent = 0;
      while (this.running) sent += await publish(this.to, rate, 0.5, this.tick).catch(() => 0);
      return sent;
    })();
  }
  stop(): Promise<number> {
    this.running = false;
    return this.done;
  }
}

/** The server's epoch and every market's newest `seq`, as a new subscriber (by sport) receives them. */
export function newestSeqs(url: string): Promise<{ epoch: string; seqs: Record<string, number> }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`, ['odds.v1.json']);
  const seqs: Record<string, number> = {};
  let epoch = '';
  return new Promise((ok, fail) => {
    const t = setTimeout(() => fail(new Error('no images within 10 s')), 10_000);
    ws.on('error', fail);
    ws.on('open', () => ws.send(JSON.stringify({ op: 'subscribe', id: 1, sis: [SI] })));
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString());
      if (m.op !== 'odds') return;
      epoch = m.epoch;
      seqs[m.mid] = Math.max(seqs[m.mid] ?? 0, m.seq);
      if (Object.keys(seqs).length === MARKETS.length) {
        clearTimeout(t);
        ws.close();
        ok({ epoch, seqs });
      }
    });
  });
}
