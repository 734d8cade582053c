/**
 * A user with the bus rights of the service itself (a compromised or buggy
 * peer) publishes forged and malformed messages on every subject a pod reads:
 * live images (`odds.img.<mid>`), stored images (`odds.raw.<mid>`, the
 * stream), and client changes (`odds.ctl.client`). None reaches a
 * subscriber, each is counted, the link stays up, and real traffic flows
 * through the bus right after.
 */
import t, { type Test } from 'tap';
import { connect } from 'nats';
import { postJson, startTestService, type TestService } from '../helpers/service.js';
import { freshDatabase } from '../helpers/db.js';
import { eventually } from '../helpers/wait.js';
import { Client, image } from '../helpers/ws.js';
import { NATS_BINARY, USERS, authorizedNats } from '../helpers/nats.js';
import { scrape, value, type Scrape } from '../helpers/metrics.js';
import { encodeProto } from '../../src/odds/codec.js';
import type { OddsMessage } from '../../src/odds/messages.js';
import { envelope } from '../../src/bus/nats/stream.js';

if (!NATS_BINARY) {
  t.test('bus messages are checked', { skip: 'nats-server is not installed here (.ci/run installs Debian\'s nats-server)' }, () => undefined);
} else {
  const nats = await authorizedNats(t);
  const db = await freshDatabase(t);
  const env = { BUS: 'nats', NATS_URL: nats.url, NATS_USER: 'odds', NATS_PASSWORD: USERS.odds };
  const [a, b] = [await startTestService(t, env, db), await startTestService(t, env, db)];
  const peer = await connect({ servers: nats.url, user: 'peer', pass: USERS.peer });
  t.teardown(() => peer.close());
  const jsm = await peer.jetstreamManager();
  const M = '1.200001001';
  const M2 = '1.200001002';
  const enc = new TextEncoder();
  const ingest = (pod: TestService, ...items: Record<string, unknown>[]) => postJson(pod.url, '/api/v1/ingest', { data: items });
  /** What would show a forgery to a subscriber: odds and detach frames (heartbeats and feed status come and go). */
  const visible = (from: number) => sub.frames.slice(from).filter((f) => f.op === 'odds' || f.op === 'unsubscribed');
  const rejected = (s: Scrape) => [...s].filter(([k]) => k.startsWith('odds_bus_rejected_total{')).reduce((n, [, v]) => n + v, 0);
  const lastStored = async (mid: string) => jsm.streams.getMessage('ODDS_ODDS', { last_by_subj: `odds.raw.${mid}` });

  /** A frame as a pod stores it, with whatever a forger changes. */
  const frame = (over: Partial<OddsMessage> & { mid: string }) => encodeProto({
    op: 'odds', epoch: a.book.get(M)!.epoch, seq: 1, ts: Date.now(), pt: Date.now(), st: 'OPEN', ip: true, con: false, cf: false,
    r: [{ rid: 1, st: 'ACTIVE', b: [[500, 100000]], l: [] }], ...over,
  });

  /** Publishes as the peer and waits until pod B has counted every one as refused. */
  async function forge(t: Test, messages: [subject: string, data: Uint8Array][]): Promise<Scrape> {
    const before = rejected(await scrape(b.url));
    for (const [subject, data] of messages) peer.publish(subject, data);
    await peer.flush();
    const after = await eventually(() => scrape(b.url), (s) => rejected(s) >= before + messages.length, 10000);
    t.equal(rejected(after) - before, messages.length, 'pod B counted each forged message as refused');
    t.equal(value(after, 'odds_bus_connected'), 1, 'and its link is up');
    return after;
  }

  const sub = await Client.connect(b.url);
  t.teardown(() => sub.close());
  await sub.request({ op: 'subscribe', mids: [M, M2] });
  await ingest(a, image(M, 2), image(M2, 3));
  await sub.next((f) => f.op === 'odds' && f.mid === M2);

  t.test('forged and malformed images on odds.img reach no subscriber', async (t) => {
    const held = b.book.get(M)!;
    const ss = (await lastStored(M)).seq;
    const from = sub.frames.length;
    const after = await forge(t, [
      [`odds.img.${M}`, enc.encode('not json{')],
      [`odds.img.${M}`, envelope(ss + 1, enc.encode('\xff\xff\xff garbage'))],
      // The forgery seen in the field: a seq far past the numbering, a price no one quoted.
      [`odds.img.${M}`, envelope(ss + 1, frame({ mid: M, seq: 1e12 }))],
      [`odds.img.${M}`, envelope(2 ** 40, frame({ mid: M, seq: held.seq + 5 }))],
      [`odds.img.${M}`, envelope(ss + 1, frame({ mid: M2, seq: held.seq + 1 }))],
      [`odds.img.${M}`, envelope(ss + 1, frame({ mid: M, seq: held.seq + 1, epoch: 'sforged' }))],
      [`odds.img.${M}`, envelope(ss + 1, frame({ mid: M, seq: held.seq + 1, epoch: '../../etc' }))],
      [`odds.img.${M}`, envelope(ss + 1, frame({ mid: M, seq: held.seq + 1, r: [{ rid: 1, st: 'ACTIVE', b: [], l: [] }, { rid: 1, st: 'ACTIVE', b: [], l: [] }] }))],
      [`odds.img.${M}`, envelope(ss + 1, frame({ mid: M, seq: held.seq + 1, con: true }))],
      [`odds.img.${M}`, envelope(ss + 1, encodeProto({ op: 'unsubscribed', mids: [M] }))],
      [`odds.img.${M}`, envelope(ss + 1, new Uint8Array(600 * 1024))],
    ]);
    for (const reason of ['seq', 'forged', 'subject', 'epoch', 'invalid', 'shape', 'undecodable', 'too_large']) {
      t.ok(value(after, 'odds_bus_rejected_total', 'subject_kind="image"', `reason="${reason}"`) >= 1, `counted under reason ${reason}`);
    }
    await sub.settled();
    t.same(visible(from), [], 'the subscriber saw nothing of them');
    t.same(b.book.get(M), held, 'the book still holds the real image');
    t.equal(a.book.get(M)!.seq, held.seq, 'on both pods');

    await ingest(a, image(M, 2.5));
    const f = await sub.next((x) => x.op === 'odds' && x.mid === M && x.r[0].b[0][0] === 2.5, 5000, from);
    t.match(f, { epoch: held.epoch, seq: held.seq + 1 }, 'the next real image goes through the bus, next in the real numbering');
  });

  t.test('forged and malformed client changes on odds.ctl.client detach no socket', async (t) => {
    const from = sub.frames.length;
    const pod = '0b5e1e6a-5c1d-4f64-9d1c-6a1d7c1e2f30';
    const change = (o: unknown) => enc.encode(JSON.stringify(o));
    await forge(t, [
      ['odds.ctl.client', enc.encode('not json{')],
      ['odds.ctl.client', change({ op: 'detach', client: 'public', mids: [M] })],
      ['odds.ctl.client', change({ from: pod, op: 'drop', client: 'public', mids: [M] })],
      ['odds.ctl.client', change({ from: pod, op: 'detach', client: 'pub lic', mids: [M] })],
      ['odds.ctl.client', change({ from: pod, op: 'detach', client: 'public', mids: ['1.2 3'] })],
      ['odds.ctl.client', change({ from: pod, op: 'detach', client: 'public', mids: Array.from({ length: 51 }, (_, i) => `1.${i}`) })],
      ['odds.ctl.client', change({ from: pod, op: 'detach', client: 'public', mids: [M], extra: 1 })],
      ['odds.ctl.client', change([pod, 'detach', 'public', [M]])],
      ['odds.ctl.client', enc.encode(`{"from":"${pod}","op":"detach","client":"public","mids":["${M}"],"pad":"${'x'.repeat(20000)}"}`)],
      ['odds.ctl.client', new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])],
    ]);
    await sub.settled();
    t.same(visible(from), [], 'no unsubscribed, no odds');

    const r = await postJson(a.url, '/api/v1/unsubscribe', { data: [M2] });
    t.equal(r.status, 200);
    t.same(await sub.next((f) => f.op === 'unsubscribed', 5000, from), { op: 'unsubscribed', mids: [M2] }, 'a real client change still crosses the bus');
    await sub.request({ op: 'subscribe', mids: [M2] });
  });

  t.test('a malformed image written into the stream is refused, and ingest stores over it', async (t) => {
    const js = peer.jetstream();
    const before = value(await scrape(a.url), 'odds_bus_rejected_total', 'subject_kind="stream"');
    const ss = (await lastStored(M)).seq;
    await js.publish(`odds.raw.${M}`, enc.encode('not a frame'), { expect: { lastSubjectSequence: ss } });
    const held = a.book.get(M)!;
    t.equal((await ingest(a, image(M, 2.7))).status, 200, 'ingest on A still answers 200');
    const f = await sub.next((x) => x.op === 'odds' && x.mid === M && x.r[0].b[0][0] === 2.7);
    t.match(f, { epoch: held.epoch, seq: held.seq + 1 }, 'the image reaches B\'s subscriber, next in the numbering');
    t.ok(value(await scrape(a.url), 'odds_bus_rejected_total', 'subject_kind="stream"') > before, 'A counted the bad stored message');
    t.not((await lastStored(M)).seq, ss + 1, 'and the stream holds the real image after it');
  });

  t.test('a pod that syncs over a malformed stored message refuses it and joins', async (t) => {
    await peer.jetstream().publish('odds.raw.1.200001009', enc.encode('\x12\x05junk'));
    const late = await startTestService(t, env, db);
    const s = await eventually(() => scrape(late.url), (x) => value(x, 'odds_bus_connected') === 1, 15000);
    t.equal(value(s, 'odds_bus_connected'), 1, 'in sync');
    t.ok(value(s, 'odds_bus_rejected_total', 'subject_kind="stream"') >= 1, 'the stored junk was counted');
    t.equal(late.book.get('1.200001009'), undefined, 'and never reached its book');
    t.equal(late.book.get(M)!.seq, a.book.get(M)!.seq, 'while the real images did');
  });

  t.test('the shipped permissions were enough: the server refused the service user nothing', async (t) => {
    const log = await nats.log();
    t.notMatch(log, /Violation.*User "odds"/, 'no permissions violation for the service user');
  });
}
