import t from 'tap';
import { fork, type ChildProcess } from 'node:child_process';
import { postJson, startTestService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { Publisher } from '../faults/publisher-socket.js';
import type { Shown } from './slow-reader.js';

/**
 * What a screen on a slow link is told, over real sockets and the kernel's buffers: a raw client
 * reading 40 KB/s, and the TypeScript client behind a link of 40 KB/s, each in a process of its
 * own, while twenty markets move far faster than they read (each batch sent once the one before
 * is acked, until both are told). The screens are told they are behind, and once they read fast
 * they show the newest image, live.
 *
 * How old what they show gets is a figure of this machine's speed, not a test's to judge: the
 * rule is judged at its default, on a clock the test moves, in hub/subscriber.test.ts; the age on
 * real links is measured by `npm run bench:age`.
 */

const BOUND = 4000;
const svc = await startTestService(t, { DEMO_DATA: 'off', WS_MAX_AGE_MS: String(BOUND), WS_CLOCK_MS: '1000', WS_SLOW_CLOSE_MS: '3600000' });
const MIDS = Array.from({ length: 20 }, (_, i) => `7.77${String(i).padStart(3, '0')}`);
const RUNNERS = [1, 2, 3];

t.equal((await postJson(svc.url, '/api/v1/ingest', { data: [
  { kind: 'sport', si: 77, na: 'Age', a: true },
  { kind: 'league', li: 7701, si: 77, na: 'Age League' },
  { kind: 'event', eid: 77000001, na: 'Slow v Fast', st: '2030-01-01T00:00:00.000Z', go: false, ip: true, si: 77, li: 7701, tv: null },
  ...MIDS.map((mid) => ({ kind: 'market', mid, eid: 77000001, na: `Market ${mid}`, ty: 'match-odd', s: true, go: false, rt: false, r: RUNNERS.map((rid) => ({ rid, na: `R${rid}` })) })),
] })).status, 200);

/** An image with ten levels a side per runner: about a kilobyte. */
const image = (mid: string, k: number) => ({
  kind: 'odds', mid, ts: Date.now(), st: 'OPEN', ip: true,
  r: RUNNERS.map((rid) => {
    const p = 2 + rid + (k % 50) / 100;
    return { rid, st: 'ACTIVE', b: Array.from({ length: 10 }, (_, i) => [Math.round((p - i / 100) * 100) / 100, 10 + k % 7]), l: Array.from({ length: 10 }, (_, i) => [Math.round((p + 0.01 + i / 100) * 100) / 100, 11]) };
  }),
});

t.test('twenty markets moving faster than a raw client and the TypeScript client read, each on a 40 KB/s link', async (t) => {
  const pub = await Publisher.open(svc.url, {}, 'live=60000');
  t.teardown(() => pub.close());
  let batches = 0;
  const publish = async () => {
    const id = ++batches;
    pub.send(id, MIDS.map((mid) => image(mid, id)));
    const ack = await pub.ack(id);
    if (ack.status !== 1) throw new Error(`batch ${id} refused: ${ack.message}`);
  };
  await publish();

  function reader(mode: 'raw' | 'client'): Promise<ChildProcess> {
    const child = fork(new URL('./slow-reader.js', import.meta.url).pathname, [mode, String(svc.port), '40000', MIDS.join(',')], { env: { ...process.env, MAX_AGE_MS: String(BOUND) } });
    t.teardown(() => child.kill('SIGKILL'));
    return new Promise((ok) => child.once('message', () => ok(child)));
  }
  const report = (child: ChildProcess): Promise<Record<string, Shown[]>> => new Promise((ok) => {
    child.once('message', (m: { screens: Record<string, Shown[]> }) => ok(m.screens));
    child.send({ report: true });
  });

  /** How many times each screen was told a market is behind. */
  const toldBehind = (screens: Record<string, Shown[]>) =>
    MIDS.reduce((n, mid) => n + screens[mid].filter((s, i, shown) => s.why === 'behind' && (i === 0 || shown[i - 1].why !== 'behind')).length, 0);

  const readers = { raw: await reader('raw'), client: await reader('client') };
  await waitFor(() => [...svc.hub.subscribers()].filter((s) => s.size === MIDS.length).length === 2, 'both readers subscribed', 30_000);

  // Batches of 20 images of a kilobyte, until both screens were told they are behind, for up to
  // a minute: the rule tells a screen once it has been behind maxAge/4, which on a busy machine
  // may be many batches after a quiet one would tell it (the service skips what it cannot send,
  // so the batches' count says nothing of what reached the link).
  let slow = { raw: {} as Record<string, Shown[]>, client: {} as Record<string, Shown[]> };
  const until = Date.now() + 60_000;
  for (let i = 1; Date.now() < until; i++) {
    await publish();
    if (i % 25) continue;
    slow = { raw: await report(readers.raw), client: await report(readers.client) };
    if (toldBehind(slow.raw) && toldBehind(slow.client)) break;
  }
  for (const r of Object.values(readers)) r.send({ fast: true });
  for (let i = 0; i < 50; i++) await publish();

  for (const mode of ['raw', 'client'] as const) {
    await t.test(`${mode}: while it reads at 40 KB/s`, async (t) => {
      const told = toldBehind(slow[mode]);
      t.ok(told > 0, `told its markets are behind (${told} times): it cannot keep up`);
    });
    await t.test(`${mode}: once it reads fast, every market live with the newest image`, async (t) => {
      const newest = () => MIDS.map((mid) => svc.book.get(mid)!.seq);
      let screens: Record<string, Shown[]> = {};
      await waitFor(async () => {
        screens = await report(readers[mode]);
        return MIDS.every((mid, i) => screens[mid].at(-1)?.seq === newest()[i] && screens[mid].at(-1)?.live === true);
      }, () => `every market live with its newest image: ${JSON.stringify(MIDS.map((mid) => screens[mid]?.at(-1)))}`, 30_000, 200);
      t.pass('caught up');
    });
  }
});
