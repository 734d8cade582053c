/**
 * `npm run bench:flood`: what a flood from one API key costs another client of the service. One
 * key floods `/ws` from a process of its own (4 sockets, each sending a 64 KiB subscribe as fast
 * as its socket takes it, past every limit, reconnecting when closed); a bystander with its own
 * key pings once every 25 ms (within its socket's rate), for a calm spell and then during the
 * flood. The figure is the bystander's round trip, and the share of its pings slower than its calm
 * median by 5 ms: a refused frame costs the service a bucket check and a small ack, never a parse,
 * and a socket that sends on while refused is closed and its key cooled down, so the bystander
 * should barely notice. (What the limits refuse, and when, is tested in test/http/budget.test.ts
 * and test/http/ws.test.ts, over a clock the tests move.)
 *
 * Settings (env; a bad value stops the run naming it): BENCH_FLOOD_SECONDS (3: each spell),
 * BENCH_FLOOD_SOCKETS (4). DATABASE_URL unset: an embedded Postgres in bench/.pg.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import WebSocket from 'ws';
import { createKey } from '../src/auth/keys.js';
import { pinLoadGenerator } from './lib/cores.js';
import { prepareDatabase } from './lib/data.js';
import { envNumber } from './lib/env.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, runMain, sleep } from './lib/run.js';
import { startServer } from './lib/server.js';
import { median } from './lib/statistics.js';

const SETTINGS = Object.freeze({
  seconds: envNumber('BENCH_FLOOD_SECONDS', 3),
  sockets: Math.round(envNumber('BENCH_FLOOD_SOCKETS', 4)),
});

/** A socket that answers each ping with its ack, in order. */
async function bystander(url: string, key: string): Promise<{ ping(): Promise<number>; close(): void }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws?key=${key}`, ['odds.v1.json']);
  await new Promise((ok, fail) => { ws.once('open', ok); ws.once('error', fail); });
  let answered: ((status: number) => void) | undefined;
  ws.on('message', (d: Buffer) => {
    const f = JSON.parse(String(d)) as { op: string; status?: number };
    if (f.op === 'ack') answered?.(f.status ?? 0);
  });
  let id = 0;
  return {
    async ping() {
      const t0 = performance.now();
      const status = await new Promise<number>((ok) => {
        answered = ok;
        ws.send(JSON.stringify({ op: 'ping', id: ++id }));
      });
      if (status !== 1) throw new Error('the bystander\'s ping was refused');
      return performance.now() - t0;
    },
    close: () => ws.close(),
  };
}

async function spell(ping: () => Promise<number>, seconds: number): Promise<number[]> {
  const out: number[] = [];
  for (const end = Date.now() + seconds * 1000; Date.now() < end; await sleep(25)) out.push(await ping());
  return out;
}

/** The subscribe of the original report: 50 of the service's markets named, 3,475 in since.seqs, about 60 KB. */
function bigSubscribe(mids: string[]): Buffer {
  const seqs: Record<string, number> = {};
  for (let i = 0; i < 3475; i++) seqs[`1.${100000 + i}`] = 10000 + i;
  return Buffer.from(JSON.stringify({ op: 'subscribe', id: 1, mids, since: { epoch: 'x', seqs } }));
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)];

async function main(): Promise<void> {
  const pinning = pinLoadGenerator();
  log(pinning.note);
  const db = await prepareDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const dir = mkdtempSync(join(tmpdir(), 'bench-flood-'));
  const svc = await startServer({ name: 'service', args: ['dist/src/main.js'], pinning, env: { DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', AUTH: 'on', SIMULATOR: 'off', LOG_LEVEL: 'warn', METRICS_PORT: '0' } });
  try {
    const [flooder, calmKey] = [await createKey(pool, 'flooder', 'subscriber'), await createKey(pool, 'bystander', 'subscriber')];
    // The keys reach the service by NOTIFY: the bystander connects once its key is served.
    let by: Awaited<ReturnType<typeof bystander>> | undefined;
    for (const end = Date.now() + 10_000; !by; await sleep(50)) {
      by = await bystander(svc.url, calmKey.token).catch((err: Error) => {
        if (Date.now() > end) throw err;
        return undefined;
      });
    }
    const calm = await spell(by.ping, SETTINGS.seconds);
    const file = join(dir, 'frame.json');
    const markets = await pool.query<{ mid: string }>('SELECT mid FROM markets ORDER BY mid LIMIT 50');
    writeFileSync(file, bigSubscribe(markets.rows.map((r) => r.mid)));
    const child = spawn(process.execPath, [new URL('./flood/flooder.js', import.meta.url).pathname], {
      env: { ...process.env, URL: svc.url, KEY: flooder.token, SOCKETS: String(SETTINGS.sockets), FRAME: file }, stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((ok) => child.stdout!.on('data', (d: Buffer) => d.includes('flooding') && ok()));
    const during = await spell(by.ping, SETTINGS.seconds);
    child.kill();
    by.close();
    const base = median(calm);
    const slow = (xs: number[]) => (100 * xs.filter((ms) => ms > base + 5).length) / xs.length;
    const rows = [['calm', calm, slow(calm)], ['during the flood', during, slow(during)]] as const;
    const md = mdTable(['bystander\'s pings', 'pings', 'median ms', 'p99 ms', `slower than ${fmt(base + 5, 1)} ms`],
      rows.map(([what, xs, share]) => [what, xs.length, fmt(median(xs), 2), fmt(p99(xs), 2), `${fmt(share, 0)}%`]));
    process.stdout.write(`${md}\n\n${pinning.note}; ${db.where}\n`);
    writeResults('flood', { benchmark: 'flood', at: new Date().toISOString(), pinning: pinning.note, calm, during, settings: SETTINGS }, md);
  } finally {
    await svc.stop();
    await pool.end();
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

runMain('bench:flood', main);
