import t from 'tap';
import { spawn } from 'node:child_process';
import { keyLive, startTestService } from '../helpers/service.js';
import { createKey } from '../../src/auth/keys.js';

/**
 * What one `/ingest` connection can make the process hold is bounded in bytes
 * (INGEST_QUEUE_BYTES, 8 MiB by default), whatever it pipelines (counted as read): 256 batches of
 * 1 MiB sent without waiting for acks once took the process from 327 MB to
 * 2.7 GB. The publisher runs in its own process, so the RSS measured here is
 * the service's (with this test's small harness). 128 are sent: with both caps raised to 1 GiB,
 * 96 took it 541 MB up, past the bound below, so the flood still tells a bound from none.
 */
// Three floods of tens of megabytes each: about 30 s alone, and three times that beside other busy files.
t.setTimeout(300_000);

const BATCHES = Number(process.env.PIPELINE_BATCHES ?? 128);
/**
 * The bound stated for the service's growth: 8 MiB of batches queued, decoded (about 20 MB of
 * objects a MiB of these images), the one running, and what uWS and V8 hold meanwhile; measured
 * at about 300 MB. Past its bound a batch is refused unread, so the refused cost nothing.
 */
const BOUND_MB = 400;

t.test(`one connection pipelining ${BATCHES} batches of 1 MiB keeps the process within ${BOUND_MB} MB of where it started, and is told why past its bound`, async (t) => {
  const svc = await startTestService(t);
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  t.teardown(() => clearInterval(sampler));
  const child = spawn(process.execPath, [new URL('./pipeliner.js', import.meta.url).pathname], {
    env: { ...process.env, URL: svc.url, BATCHES: String(BATCHES), MID: '1.200001007', RUNNERS: '150' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => void child.kill());
  const line = await new Promise<string>((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`the ${BATCHES} batches were not all answered within 120 s`)), 120_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) {
        clearTimeout(timer);
        ok(out.trim());
      }
    });
  });
  clearInterval(sampler);
  const counts = JSON.parse(line) as { acked: number; refused: Record<string, number>; bytes: number };
  t.ok(counts.bytes > 960 * 1024, `each batch about 1 MiB: ${counts.bytes} bytes`);
  t.ok(counts.acked > 0, `${counts.acked} batches applied`);
  const queueFull = Object.entries(counts.refused).filter(([why]) => why.includes('bytes of batches are already queued on this connection')).map(([, n]) => n);
  t.ok(queueFull.length && queueFull[0] > 0, `refused past the connection's bytes: ${JSON.stringify(counts.refused)}`);
  const grewMb = (peak - before) / 1024 / 1024;
  t.ok(grewMb < BOUND_MB, `the process grew ${grewMb.toFixed(0)} MB at its peak (bound ${BOUND_MB} MB)`);
});

/** Runs `script` (a file beside this one) with `env` until it prints its one line, sampling this process's RSS meanwhile. */
async function peakWhile(script: string, env: Record<string, string>, ms: number): Promise<{ line: string; grewMb: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const child = spawn(process.execPath, [new URL(script, import.meta.url).pathname], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const line = await new Promise<string>((ok, fail) => {
      let out = '';
      const timer = setTimeout(() => fail(new Error(`${script} did not finish within ${ms / 1000} s`)), ms);
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) {
          clearTimeout(timer);
          ok(out.trim());
        }
      });
    });
    return { line, grewMb: (peak - before) / 1024 / 1024 };
  } finally {
    clearInterval(sampler);
    child.kill();
  }
}

/**
 * The queues count what a batch holds once read (its items, decoded), not its size on the wire:
 * a MiB of JSON odds reads into about 6 MiB. Counted on the wire, 4 to 6 connections of one key,
 * each queuing a slow batch of 5,000 markets and then odds batches of 1 MiB, took the process
 * from 107 to 339 MB within a 32 MiB cap, and three keys to 955 MB. The bound stated
 * (docs/limits.md): the process grows by at most four times what the keys' caps allow
 * (INGEST_KEY_QUEUE_BYTES each), plus 64 MB for uWS's buffers and the batch being read.
 * Each connection's reference batch holds MARKETS markets, enough that the odds batches arrive
 * while it is written (the connections write the same rows, one after the other), and sends
 * ODDS of them: 36 MiB a key, over twice its cap even counted on the wire.
 */
const KEY_CAP_MIB = 16;
const MARKETS = 300;
const ODDS = 6;
for (const keys of [1, 3]) {
  const bound = 4 * keys * KEY_CAP_MIB + 64;
  t.test(`${keys} key${keys > 1 ? 's' : ''}, 6 connections each, a slow ${MARKETS.toLocaleString('en')}-market batch then 1 MiB odds batches: the process grows less than ${bound} MB`, async (t) => {
    const svc = await startTestService(t, { AUTH: 'on', INGEST_KEY_QUEUE_BYTES: String(KEY_CAP_MIB * 1024 * 1024), INGEST_QUEUE_BYTES: String(8 * 1024 * 1024), REST_RATE_LIMIT: '100000' });
    const tokens: string[] = [];
    for (let k = 0; k < keys; k++) tokens.push((await createKey(svc.pool, `attacker${k}`, 'publisher')).token);
    for (const token of tokens) await keyLive(svc.url, token);
    const { line, grewMb } = await peakWhile('./ingest-attacker.js', { URL: svc.url, KEYS: tokens.join(','), CONNS: '6', ODDS: String(ODDS), MARKETS: String(MARKETS) }, 240_000);
    const counts = JSON.parse(line) as { acked: number; refused: Record<string, number>; closed: number };
    t.ok(counts.acked > 0, `batches applied: ${counts.acked}`);
    t.ok(Object.keys(counts.refused).some((why) => /already queued/.test(why)), `past the caps, refused: ${JSON.stringify(counts.refused)}`);
    t.ok(grewMb < bound, `the process grew ${grewMb.toFixed(0)} MB at its peak (bound ${bound} MB)`);
  });
}
