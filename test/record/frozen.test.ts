/**
 * A slow recorder never slows publishing: the record's own Postgres (the test's, see
 * test/faults/own-postgres.ts) is frozen with SIGSTOP while a publisher keeps publishing, until
 * the recorder's lag shows it holds a batch it cannot write and for 20 images after. Every batch
 * is acked and a subscriber gets every image meanwhile; once Postgres thaws the record catches
 * up, every image once.
 */
import t from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { scrape, value } from '../helpers/metrics.js';
import { Client, image } from '../helpers/ws.js';
import { waitFor } from '../helpers/wait.js';
import { ownPostgres } from '../faults/own-postgres.js';

/** Images published once the recorder is stuck on the frozen Postgres: each one acked and delivered while it is. */
const STUCK_IMAGES = 20;
const own = await ownPostgres(t);
const svc = await startTestService(t, { RECORD: 'on', RECORD_DATABASE_URL: own.url });
const MID = '5.57000001';
const ingest = (...data: Record<string, unknown>[]) => postJson<{ status: number; message: string }>(svc.url, '/api/v1/ingest', { data });
await ingest(
  { kind: 'sport', si: 57, na: 'Pool', a: true },
  { kind: 'league', li: 5701, si: 57, na: 'Mosconi' },
  { kind: 'event', eid: 57000001, na: 'A v B', st: '2030-01-01T19:00:00.000Z', go: false, ip: false, si: 57, li: 5701, tv: null },
  { kind: 'market', mid: MID, eid: 57000001, na: 'Match Odds', ty: 'match-odd', s: true, go: false, rt: false, r: [{ rid: 1, na: 'A' }, { rid: 2, na: 'B' }] },
);
const sql = await sqlClient(t, own.url);
const recorded = async () => (await sql.query<{ seq: string }>('SELECT seq FROM record_odds WHERE mid = $1 ORDER BY pt, seq', [MID])).rows.map((r) => Number(r.seq));

t.test('publishing goes on at full pace while the record\'s Postgres is frozen, and the record catches up', async (t) => {
  const sub = await Client.connect(svc.url);
  t.teardown(() => sub.close());
  await sub.request({ op: 'subscribe', mids: [MID] });
  let published = 0;
  const refused: string[] = [];
  const publish = async () => {
    const price = 2 + (++published % 50) / 100;
    const r = await ingest(image(MID, price));
    if (r.body.status !== 1) refused.push(r.body.message);
    await sub.next((f) => f.op === 'odds' && f.seq === published, 10_000);
  };
  for (let i = 0; i < 20; i++) await publish();
  await waitFor(async () => (await recorded()).length === 20, 'the first 20 images recorded');

  own.freeze();
  let during = 0;
  try {
    const lag = async () => value(await scrape(svc.url), 'odds_record_lag_seconds');
    // The lag counts from the first entry of a batch taken and not yet written: with Postgres frozen, it cannot be.
    await waitFor(async () => {
      await publish();
      during++;
      return (await lag()) > 0;
    }, 'the recorder\'s lag showing the stall', 30_000, 0);
    for (let i = 0; i < STUCK_IMAGES; i++, during++) await publish();
    const stuck = await lag();
    t.ok(stuck > 0, `the recorder's lag shows the stall (${stuck} s) after ${STUCK_IMAGES} images more`);
  } finally {
    own.thaw();
  }
  t.same(refused, [], 'every batch acked');
  t.ok(during > STUCK_IMAGES, `${during} images published, acked and delivered while the record was frozen`);
  const odds = sub.frames.filter((f) => f.op === 'odds').map((f) => (f.op === 'odds' ? f.seq : 0));
  t.same(odds, Array.from({ length: published }, (_, i) => i + 1), 'the subscriber got every image, in order');

  await waitFor(async () => (await recorded()).length >= published, () => `the record caught up to ${published} images`, 60_000);
  t.same(await recorded(), Array.from({ length: published }, (_, i) => i + 1), 'every image recorded once, in order');
  t.equal(value(await scrape(svc.url), 'odds_record_lost_total', 'where="log"'), 0, 'nothing dropped');
});
