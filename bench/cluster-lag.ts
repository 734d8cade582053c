/**
 * How long a write acked by one pod takes to show on another pod (`npm run bench:cluster`, its
 * `lag` part). Each write is made on pod A and timed from its answer to the moment pod B shows it:
 * a reference change (a market suspended or resumed) until B's socket on the market gets its
 * `market` frame, which B sends in the same step that updates its REST answers; a REST subscribe
 * or unsubscribe until B's socket of that client gets the image or `unsubscribed`; a key created
 * or revoked with the key command's own code until every pod has confirmed it (the command's
 * whole run, which is what an operator waits). One write at a time, on idle pods.
 */
import pg from 'pg';
import WebSocket from 'ws';
import { changeKey } from '../src/auth/key-change.js';
import { createKey, revokeKey } from '../src/auth/keys.js';

export interface LagRow {
  what: string;
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

type Frame = { op: string; mid?: string; mids?: string[]; s?: boolean };

/** A JSON socket on pod B keeping its frames, with a wait for one that matches. */
class Watcher {
  private readonly frames: Frame[] = [];
  private wake = (): void => undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d: Buffer) => {
      this.frames.push(JSON.parse(String(d)) as Frame);
      this.wake();
    });
  }

  static async open(url: string): Promise<Watcher> {
    const ws = new WebSocket(url.replace('http', 'ws') + '/ws', ['odds.v1.json']);
    await new Promise((ok, fail) => { ws.once('open', ok); ws.once('error', fail); });
    return new Watcher(ws);
  }

  get mark(): number {
    return this.frames.length;
  }

  /** Resolves with the time the first matching frame after `from` arrived; fails after 10 s. */
  async until(from: number, match: (f: Frame) => boolean): Promise<number> {
    const end = Date.now() + 10_000;
    for (let i = from; ; ) {
      for (; i < this.frames.length; i++) if (match(this.frames[i])) return performance.now();
      if (Date.now() > end) throw new Error(`pod B never showed the write (last frame: ${JSON.stringify(this.frames.at(-1))})`);
      await new Promise<void>((ok) => {
        const timer = setTimeout(ok, 100);
        this.wake = () => { clearTimeout(timer); ok(); };
      });
    }
  }
}

async function post(url: string, path: string, body: unknown): Promise<void> {
  const r = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${await r.text()}`);
}

function row(what: string, ms: number[]): LagRow {
  const sorted = [...ms].sort((x, y) => x - y);
  const at = (q: number) => Number(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))].toFixed(2));
  return { what, samples: ms.length, p50: at(0.5), p99: at(0.99), max: at(1) };
}

/** One write on A, timed from its answer until `shown` (B) resolves; shown before the answer counts 0. */
async function timed(write: () => Promise<unknown>, shown: () => Promise<number>): Promise<number> {
  const seen = shown();
  await write();
  const acked = performance.now();
  return Math.max(0, (await seen) - acked);
}

export async function crossPodLag(a: string, b: string, dbUrl: string, mids: readonly string[], samples: number): Promise<LagRow[]> {
  const [reference, stored] = mids;
  const watcher = await Watcher.open(b);
  watcher.ws.send(JSON.stringify({ op: 'subscribe', id: 1, mids: [reference] }));
  await watcher.until(0, (f) => f.op === 'ack');
  await post(a, '/api/v1/ingest', { data: [{ kind: 'odds', mid: stored, ts: Date.now(), st: 'OPEN', ip: true, r: [{ rid: 1, st: 'ACTIVE', b: [[2, 10]], l: [[2.02, 10]] }] }] });

  const marketLag: number[] = [];
  for (let i = 0; i < samples; i++) {
    const s = i % 2 === 1;
    const from = watcher.mark;
    marketLag.push(await timed(() => post(a, '/api/v1/ingest', { data: [{ kind: 'market', mid: reference, s }] }),
      () => watcher.until(from, (f) => f.op === 'market' && f.mid === reference && f.s === s)));
  }

  const setLag: number[] = [];
  for (let i = 0; i < samples; i++) {
    const on = i % 2 === 0;
    const from = watcher.mark;
    setLag.push(await timed(() => post(a, on ? '/api/v1/subscribe' : '/api/v1/unsubscribe', { data: [stored] }),
      () => watcher.until(from, (f) => (on ? f.op === 'odds' && f.mid === stored : f.op === 'unsubscribed' && !!f.mids?.includes(stored)))));
  }
  watcher.ws.terminate();

  const pool = new pg.Pool({ connectionString: dbUrl, max: 2 });
  const keyLag: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      const t0 = performance.now();
      const made = await changeKey(pool, (db) => createKey(db, 'bench', 'subscriber'), (k) => k.id, 10_000);
      const t1 = performance.now();
      const gone = await changeKey(pool, (db) => revokeKey(db, made.result.id), () => made.result.id, 10_000);
      if (made.unconfirmed || gone.unconfirmed) throw new Error('a pod did not confirm a key change within 10 s');
      keyLag.push(t1 - t0, performance.now() - t1);
    }
  } finally {
    await pool.end();
  }
  return [
    row('reference change (market `s`): A\'s ack to B\'s `market` frame', marketLag),
    row('REST subscribe/unsubscribe: A\'s answer to B\'s socket of the client', setLag),
    row('key create/revoke: the command\'s run, every pod confirmed', keyLag),
  ];
}
