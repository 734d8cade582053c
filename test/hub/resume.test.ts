import t from 'tap';
import { freshDatabase } from '../helpers/db.js';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import type { OddsMessage } from '../../src/odds/messages.js';

const M1 = '1.200001001';
const M2 = '1.200001002';

/** The client rule docs/protocol.md states: a different epoch replaces what is held; within one, the higher seq wins. */
function keep(book: Map<string, OddsMessage>, f: OddsMessage): void {
  const held = book.get(f.mid);
  if (!held || held.epoch !== f.epoch || f.seq > held.seq) book.set(f.mid, f);
}

t.test('resume with an up-to-date set: no images, and the ack says how many were current', async (t) => {
  const svc = await startTestService(t);
  const ingest = (...data: Record<string, unknown>[]) => postJson(svc.url, '/api/v1/ingest', { data });
  await ingest(image(M1, 2), image(M2, 3));
  const first = await Client.connect(svc.url);
  await first.request({ op: 'subscribe', mids: [M1, M2] });
  await first.settled();
  const held = new Map<string, OddsMessage>();
  for (const f of first.frames) if (f.op === 'odds') keep(held, f);
  first.close();
  const epoch = held.get(M1)!.epoch;
  t.equal(held.get(M2)!.epoch, epoch, 'one epoch for every market of a process');

  for (const format of ['json', 'proto'] as const) {
    const again = await Client.connect(svc.url, { format });
    t.teardown(() => again.close());
    const ack = await again.request({ op: 'subscribe', mids: [M1, M2], since: { epoch, seqs: { [M1]: held.get(M1)!.seq, [M2]: held.get(M2)!.seq } } });
    t.same(ack, { op: 'ack', id: ack.id, status: 1, message: `Subscribed from market ${M1},${M2}`, current: 2 }, `${format}: both current`);
    await again.settled();
    t.equal(again.frames.filter((f) => f.op === 'odds').length, 0, `${format}: no image was sent again`);
  }

  await ingest(image(M2, 3.5));
  const moved = await Client.connect(svc.url);
  t.teardown(() => moved.close());
  const ack = await moved.request({ op: 'subscribe', mids: [M1, M2], since: { epoch, seqs: { [M1]: held.get(M1)!.seq, [M2]: held.get(M2)!.seq } } });
  t.equal(ack.current, 1, 'one still current');
  await moved.settled();
  t.same(moved.frames.filter((f) => f.op === 'odds').map((f) => (f as OddsMessage).mid), [M2], 'only the market that moved gets its newest image');
  t.equal(moved.oddsOf(M2)[0].r[0].b[0][0], 3.5);
});

t.test('a restart in memory mode: a client that kept its old book takes the new epoch and ends on the newest image', async (t) => {
  const db = await freshDatabase(t);
  const before = await startTestService(t, {}, db);
  await postJson(before.url, '/api/v1/ingest', { data: [image(M1, 2), image(M1, 2.1), image(M1, 2.2)] });
  const c = await Client.connect(before.url);
  await c.request({ op: 'subscribe', mids: [M1] });
  await c.settled();
  const book = new Map<string, OddsMessage>();
  for (const f of c.frames) if (f.op === 'odds') keep(book, f);
  const old = book.get(M1)!;
  t.equal(old.seq, 3);
  c.close();
  await before.close();

  const after = await startTestService(t, {}, db);
  await postJson(after.url, '/api/v1/ingest', { data: [image(M1, 1.9)] });
  const back = await Client.connect(after.url, { format: 'proto' });
  t.teardown(() => back.close());
  const ack = await back.request({ op: 'subscribe', mids: [M1], since: { epoch: old.epoch, seqs: { [M1]: old.seq } } });
  t.equal(ack.current, 0, 'nothing is current across a restart');
  await postJson(after.url, '/api/v1/ingest', { data: [image(M1, 1.8)] });
  await back.next((f) => f.op === 'odds' && f.r[0].b[0][0] === 1.8);
  const fresh = back.oddsOf(M1);
  t.not(fresh[0].epoch, old.epoch, 'the restarted process numbers in a new epoch');
  t.ok(fresh[0].seq < old.seq, `its seq starts again (${fresh[0].seq} after ${old.seq}): a seq-only client would ignore it`);
  for (const f of fresh) keep(book, f);
  t.equal(book.get(M1)!.r[0].b[0][0], 1.8, 'by the epoch rule the kept book ends on the newest image');
});
