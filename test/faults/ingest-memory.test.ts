import t from 'tap';
import { spawn } from 'node:child_process';
import { startTestService } from '../helpers/service.js';

/**
 * What one `/ingest` connection can make the process hold is bounded in bytes
 * (INGEST_QUEUE_BYTES, 8 MiB by default), whatever it pipelines: 256 batches of
 * 1 MiB sent without waiting for acks once took the process from 327 MB to
 * 2.7 GB. The publisher runs in its own process, so the RSS measured here is
 * the service's (with this test's small harness).
 */
const BATCHES = Number(process.env.PIPELINE_BATCHES ?? 256);
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
