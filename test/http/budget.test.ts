// test-runner: alone. It judges a bystander's latency under a flood: other files' load beside it would read as the flood's.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKey } from '../../src/auth/keys.js';
import { CLOSE } from '../../src/errors.js';
import { http, keyLive, startTestService } from '../helpers/service.js';
import { scrape, value } from '../helpers/metrics.js';
import { eventually } from '../helpers/wait.js';
import { Client, image } from '../helpers/ws.js';

/**
 * What one API key's `/ws` messages may cost, all its sockets together, and
 * that the cost is paid before a message is read.
 */
const svc = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '10000' });

async function liveKey(client: string): Promise<string> {
  const { token } = await createKey(svc.pool, client, 'subscriber');
  await keyLive(svc.url, token);
  return token;
}

/** 50 markets with a price each, so a subscribe to them (without a matching since) sends 50 images. */
async function pricedMarkets(): Promise<string[]> {
  const { rows } = await svc.pool.query<{ mid: string; rids: string[] }>(
    'SELECT mid, array_agg(rid::text ORDER BY pos) AS rids FROM runners GROUP BY mid ORDER BY mid LIMIT 50');
  const publisher = await createKey(svc.pool, 'pricer', 'publisher');
  await keyLive(svc.url, publisher.token);
  const post = () => http(svc.url, '/api/v1/ingest', {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': publisher.token },
    body: JSON.stringify({ data: rows.map((r) => image(r.mid, 2, r.rids.map(Number))) }),
  });
  await eventually(post, (r) => r.status === 200);
  return rows.map((r) => r.mid);
}

/** The 64 KiB subscribe of the report: 50 priced markets named, 3,475 in since.seqs. */
function bigSubscribe(mids: string[]): Buffer {
  const seqs: Record<string, number> = {};
  for (let i = 0; i < 3475; i++) seqs[`1.${100000 + i}`] = 10000 + i;
  return Buffer.from(JSON.stringify({ op: 'subscribe', id: 1, mids, since: { epoch: 'x', seqs } }));
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Round trips of pings for `ms`, in ms: one every 25 ms, within the default rate of a socket (50/s). */
async function pings(c: Client, ms: number): Promise<number[]> {
  const out: number[] = [];
  for (const end = Date.now() + ms; Date.now() < end; await sleep(25)) {
    const t0 = performance.now();
    const ack = await c.request({ op: 'ping' });
    if (ack.status !== 1) throw new Error(`ping refused: ${ack.message}`);
    out.push(performance.now() - t0);
  }
  return out;
}

t.test('a flood from one key (4 sockets, 64 KiB subscribes, past every limit) does not slow another client', async (t) => {
  const flooder = await liveKey('flooder');
  const other = await Client.connect(svc.url, { query: `key=${await liveKey('bystander')}` });
  t.teardown(() => other.close());
  const calm = await pings(other, 1500);
  const baseline = median(calm);

  const frame = bigSubscribe(await pricedMarkets());
  t.ok(frame.length <= 64 * 1024 && frame.length > 55000, `the subscribe is ${frame.length} bytes`);
  const dir = mkdtempSync(join(tmpdir(), 'flood-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'frame.json');
  writeFileSync(file, frame);
  const child = spawn(process.execPath, [new URL('./flooder.js', import.meta.url).pathname], {
    env: { ...process.env, URL: svc.url, KEY: flooder, SOCKETS: '4', FRAME: file }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => void child.kill());
  await new Promise<void>((ok) => child.stdout!.on('data', (d: Buffer) => d.includes('flooding') && ok()));
  // From the moment every socket is open: the frames refused unread, the sockets closed (4029) for
  // sending on regardless, and the reconnects refused while the key cools down.
  const during = await pings(other, 2000);
  t.ok(value(await scrape(svc.url), 'odds_rate_limited_total', 'scope="key"') > 100, 'the flood met the key\'s budget');

  // Before the fix every frame of the flood was parsed whole (about 0.2 ms each here), keeping the
  // service busy much of the time: on this test's machine the bystander's median went from 0.5 ms to
  // 5 to 9 ms, and 40 to 60% of its pings took 5 ms longer than its usual (94 ms median in the original
  // report, on a machine where the flood saturated the core). Now a refused frame costs a bucket check
  // and a small ack, and a socket that sends on is closed and its key cools down: the median stays
  // within a tenth of a millisecond and slow pings are rare. A share rather than an average, so one
  // stall of a busy 2-core machine (other processes, the flooder's process, garbage collection) does
  // not fail it; 10% is four times below what the old behaviour gives. Other engineers' tests on the
  // same cores slow some pings with no flood at all, so the share the calm pings already had is
  // allowed on top: the flood is judged by what it adds.
  const slowShare = (xs: number[]) => xs.filter((ms) => ms > baseline + 5).length / xs.length;
  t.ok(slowShare(during) <= slowShare(calm) + 0.1,
    `${(100 * slowShare(during)).toFixed(0)}% of ${during.length} pings over ${(baseline + 5).toFixed(2)} ms during the flood, ${(100 * slowShare(calm)).toFixed(0)}% before; median ${median(during).toFixed(2)} ms, ${baseline.toFixed(2)} ms before`);
});

t.test('the key\'s message budget holds across its sockets: a fresh socket gets no more', async (t) => {
  const small = await startTestService(t, { AUTH: 'on', WS_KEY_MESSAGES_PER_SECOND: '1', WS_MESSAGES_PER_SECOND: '50' });
  const { token } = await createKey(small.pool, 'frugal', 'subscriber');
  await keyLive(small.url, token);
  const a = await Client.connect(small.url, { query: `key=${token}` });
  const b = await Client.connect(small.url, { query: `key=${token}` });
  t.teardown(() => { a.close(); b.close(); });
  // Sent together, so the one-second refill cannot come between them.
  const first = a.send({ op: 'ping' });
  const second = b.send({ op: 'ping' });
  t.match(await a.next((f) => f.op === 'ack' && f.id === first), { status: 1 });
  t.match(await b.next((f) => f.op === 'ack' && f.id === second), {
    status: 0, message: 'rate limit: at most 1 messages per second per API key, all its sockets together',
  }, 'refused on a socket that had sent nothing, with its id though it was never read');
});

t.test('a socket that goes on sending while refused is closed with 4029', async (t) => {
  const small = await startTestService(t, { AUTH: 'on', WS_MESSAGES_PER_SECOND: '1' });
  const { token } = await createKey(small.pool, 'pushy', 'subscriber');
  await keyLive(small.url, token);
  const c = await Client.connect(small.url, { query: `key=${token}` });
  for (let i = 0; i < 150; i++) c.send({ op: 'ping' });
  t.same(await c.closed, CLOSE.RATE);
  const acks = c.frames.filter((f) => f.op === 'ack');
  t.equal(acks.length, 101, 'one read, then 100 refusals, then the close');
});
