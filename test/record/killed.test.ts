/**
 * A recorder killed mid-stream loses nothing and writes nothing twice. Two pods share NATS and
 * one database: B (its own process) takes the recorder's lease first; A takes the publisher's
 * images. B is killed with SIGKILL while images flow, A takes the lease over and goes on from
 * where B's last acknowledged batch ended, and B is started again. Every image is in the record
 * exactly once.
 */
import t from 'tap';
import { http, postJson, startTestService } from '../helpers/service.js';
import { demoDatabase, sqlClient } from '../helpers/db.js';
import { NATS_BINARY, NatsServer } from '../helpers/nats.js';
import { scrape, value } from '../helpers/metrics.js';
import { image } from '../helpers/ws.js';
import { waitFor } from '../helpers/wait.js';
import { startMain, type Running } from '../cli/processes.js';

if (!NATS_BINARY) {
  t.pass('nats-server is not installed (.ci/run installs it): skipped');
} else {
  const nats = await NatsServer.start(t);
  const url = await demoDatabase(t);
  const env = { DATABASE_URL: url, BUS: 'nats', NATS_URL: nats.url, RECORD: 'on', RECORD_BATCH: '20', DEMO_DATA: 'on', SIMULATOR: 'off' };
  const pods: Running[] = [];
  t.teardown(() => pods.forEach((p) => p.child.kill('SIGKILL')));
  const startB = async () => {
    const b = await startMain(env);
    pods.push(b);
    return b;
  };
  const leads = async (metricsUrl: string) => value(await scrape(metricsUrl), 'odds_record_leader') === 1;

  const b = await startB();
  await waitFor(() => leads(b.metricsUrl), 'B took the recorder\'s lease');
  const a = await startTestService(t, { BUS: 'nats', NATS_URL: nats.url, RECORD: 'on', RECORD_BATCH: '20' }, url);
  const MID = '1.200001007';
  const sql = await sqlClient(t, url);
  const recorded = async () => (await sql.query<{ seq: string; n: string }>('SELECT seq, count(*) AS n FROM record_odds WHERE mid = $1 GROUP BY seq ORDER BY seq', [MID])).rows;

  t.test('killed mid-stream and started again: every image recorded once', async (t) => {
    let published = 0;
    const publish = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const r = await postJson<{ status: number }>(a.url, '/api/v1/ingest', { data: [image(MID, 2 + (published % 90) / 100)] });
        if (r.body.status === 1) published++;
      }
    };
    // A reader at the live end all along, following `next` through A's route: B's batch written
    // late by A (below) holds times it has passed, unless the pages wait for the record's mark.
    const read: number[] = [];
    let reading = true;
    const from = Date.now();
    // A `to` ahead of now follows the live end: `next` on every page while the range reaches past the mark.
    const follow = Date.now() + 3_600_000;
    const reader = (async () => {
      let after = '';
      while (reading) {
        const r = await http<{ changes: { kind: string; seq: number }[]; next: string | null }>(a.url, `/api/v1/record/changes?mid=${MID}&from=${from}&to=${follow}&limit=50${after}`);
        for (const c of r.body.changes ?? []) if (c.kind === 'odds') read.push(c.seq);
        if (r.body.next) after = `&after=${r.body.next}`;
        // Short of a page: it has all the record holds complete; it asks again a moment later.
        if ((r.body.changes ?? []).length < 50) await new Promise((ok) => setTimeout(ok, 100));
      }
    })();
    t.teardown(() => { reading = false; });
    await publish(100);
    await waitFor(async () => (await recorded()).length > 0, 'B recording');
    b.child.kill('SIGKILL');
    await b.exited;
    await publish(100);
    await waitFor(() => leads(a.metricsUrl), 'A took the lease over', 60_000);
    await startB();
    await publish(100);
    t.equal(published, 300, 'every image acked');
    // B died holding a batch unacknowledged: NATS delivers it again after its ack wait (30 s), so
    // the wait is long. Each look is one query; A's record metrics are read only to say why it failed.
    let rows = await recorded();
    const missing = () => { const got = new Set(rows.map((r) => Number(r.seq))); return Array.from({ length: published }, (_, i) => i + 1).filter((q) => !got.has(q)); };
    const recordMetrics = async () => [...(await scrape(a.metricsUrl))].filter(([k]) => k.startsWith('odds_record')).map(([k, v]) => `${k}=${v}`).join(' ');
    await waitFor(async () => (rows = await recorded()).length >= published, () => `recorded ${rows.length} of ${published}, missing ${missing().join(',')}`, 90_000, 250)
      .catch(async (err: Error) => { throw new Error(`${err.message}; A: ${await recordMetrics()}`); });
    rows = await recorded();
    t.same(rows.map((r) => Number(r.seq)), Array.from({ length: published }, (_, i) => i + 1), 'nothing missing');
    t.same(rows.filter((r) => Number(r.n) !== 1), [], 'nothing twice');
    t.equal(value(await scrape(a.metricsUrl), 'odds_record_lost_total'), 0, 'nothing lost, as the recorder counts');
    await waitFor(() => read.length >= published, () => `the live reader read ${read.length} of ${published}`, 60_000, 100);
    reading = false;
    await reader;
    t.same(read, Array.from({ length: published }, (_, i) => i + 1), 'the reader at the live end read every image once, in order');
  });
}
