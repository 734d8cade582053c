import t from 'tap';
import { decodeServerJson, decodeServerProto, encodeJson, encodeProto } from '../../src/odds/codec.js';
import { decodeClient, encodeClientProto } from '../../src/odds/client-codec.js';
import { decodeIngestProto, encodeIngestProto } from '../../src/odds/ingest-codec.js';
import { odds as pb } from '../../src/odds/gen/odds.js';
import { validateOddsItem, validateSuspend } from '../../src/ingest/validate-odds.js';
import { validateReference } from '../../src/ingest/validate.js';
import type { ClientMessage, OddsMessage, ServerMessage } from '../../src/odds/messages.js';

/** uWS hands messages over as an ArrayBuffer of exactly the frame's bytes. */
const ab = (u8: Uint8Array): ArrayBuffer =>
  u8.buffer.slice(u8.byteOffset, u8.byteOffset + u8.byteLength) as ArrayBuffer;
const text = (s: string) => ab(new TextEncoder().encode(s));

const odds: OddsMessage = {
  op: 'odds', mid: '1.234', epoch: 'm1abc', seq: 7, ts: 1700000000000, pt: 1700000000005, st: 'OPEN', ip: true,
  con: false, cf: false, r: [
    { rid: 101, st: 'ACTIVE', b: [[1.95, 120.5], [1.94, 300]], l: [[1.97, 80]] },
    { rid: Number.MAX_SAFE_INTEGER, st: 'REMOVED', b: [], l: [] },
  ],
};

/** The same image with what was last traded and how much, on the runners and the market. */
const traded: OddsMessage = { ...odds, tv: 1520.75, r: [{ ...odds.r[0], ltp: 1.96, tv: 1000.5 }, { ...odds.r[1], tv: 0 }] };

const serverMessages: ServerMessage[] = [
  odds,
  traded,
  { ...odds, seq: 2 ** 40, st: 'BALL_RUNNING', con: true },
  { ...odds, cf: true },
  { op: 'delta', mid: '1.234', epoch: 'm1abc', seq: 8, from: 7, ts: 1700000000001, pt: 1700000000006, st: 'OPEN', ip: true, r: [
    { rid: 101, b: [[0, 1.96, 10], [2, 0, 0]], ltp: 1.96 },
    { rid: Number.MAX_SAFE_INTEGER, st: 'ACTIVE', l: [[0, 2.5, 4]], tv: 0 },
  ], tv: 1600 },
  { op: 'delta', mid: '1.234', epoch: 'm1abc', seq: 2 ** 40, from: 5, ts: 1, pt: 2, st: 'SUSPENDED', ip: false, r: [] },
  { op: 'delta', mid: '1.234', epoch: 'm1abc', seq: 9, from: 8, ts: 1, pt: 2, st: 'SUSPENDED', sr: 'goal', ip: true, r: [] },
  { ...odds, st: 'BALL_RUNNING', sr: 'ball running' },
  { op: 'ack', id: 9, status: 1, message: 'Subscribed from market 1.1', current: 1 },
  { op: 'ack', id: 4294967295, status: 1, message: 'Subscribed from market 1.1,1.2' },
  { op: 'ack', id: 0, status: 0, message: 'over 50 IDs' },
  { op: 'market', mid: '1.1', s: true, go: false, rt: true },
  { op: 'result', mid: '1.1', mt: 'match-odd', res: '101', rt: false, ia: true },
  { op: 'market', mid: '1.1', s: true, go: false, rt: false, terms: {
    bd: 5, tip: true, sus: 1795313378336, bt: 'ODDS', nw: 3, ewd: 4, bsp: true, cc: 'GB', ven: 'Ascot', race: 'Flat', mbr: 5, reg: ['GBR', 'IRL'],
    r: [{ rid: 1, st: 'ACTIVE', af: 26.285 }, { rid: 2, st: 'REMOVED', af: 13.613, rd: 1795313000000 }, { rid: 3, st: 'PLACED', hc: -1.5 }, { rid: 4, st: 'HIDDEN' }],
  } },
  { op: 'market', mid: '1.2', s: false, go: false, rt: false, terms: { bd: 0, tip: false, bt: 'LINE', lmin: 0, lmax: 300, lint: 0.5 } },
  { op: 'market', mid: '1.3', s: true, go: false, rt: false, terms: {} },
  { op: 'result', mid: '1.1', mt: 'winner-market', res: '1,2', rt: true, ia: false, cert: 'confirmed', at: 1795313378336,
    rs: [{ rid: 1, st: 'WINNER', dh: 0.5 }, { rid: 2, st: 'WINNER', dh: 0.5 }, { rid: 3, st: 'LOSER' }, { rid: 4, st: 'REMOVED', vf: 1 }, { rid: 5, st: 'PLACED' }] },
  { op: 'result', mid: '1.1', mt: 'match-odd', res: 'Abandoned', rt: false, ia: true, cert: 'provisional' },
  { op: 'unsubscribed', mids: ['1.1', '1.2'] },
  { op: 'hb', ts: 1700000000123 },
  { op: 'feed', status: 'STALE' },
  { op: 'feed', status: 'OK' },
  { op: 'freshness', mid: '1.1', live: false, why: 'publisher', at: 1795313378336 },
  { op: 'freshness', mid: '1.1', live: false, why: 'late', at: 1 },
  { op: 'freshness', mid: '1.1', live: false, why: 'unreliable', at: 2 },
  { op: 'freshness', mid: '1.1', live: false, why: 'bus', at: 3 },
  { op: 'freshness', mid: '1.1', live: true, at: 1795313379336 },
  { op: 'ack', id: 7, status: 1, message: 'Ingested 1 item; refused 2', refused: [{ i: 0, mid: '1.2', message: 'item 0 (odds 1.2): market 1.2 is not known' }, { i: 4, mid: '', message: 'item 4: mid must match' }] },
  { op: 'notice', status: 0, message: 'markets 1.1,1.2 did not fit: a socket holds at most 2 markets' },
];

t.test('server messages round-trip', async (t) => {
  for (const msg of serverMessages) {
    const label = `${msg.op} ${JSON.stringify(msg).slice(0, 60)}`;
    t.test(`protobuf: ${label}`, async (t) => {
      t.strictSame(decodeServerProto(encodeProto(msg)), msg);
    });
    t.test(`JSON: ${label}`, async (t) => {
      t.strictSame(decodeServerJson(encodeJson(msg)), msg);
    });
  }
});

t.test('JSON odds frame is the exact protocol text, keys in order', async (t) => {
  const scrambled = {
    r: [{ l: [[1.97, 80]], b: [[1.95, 120.5]], st: 'ACTIVE', rid: 101 }],
    cf: false, con: false, ip: true, st: 'OPEN', pt: 5, ts: 4, seq: 7, epoch: 'm1', mid: '1.234', op: 'odds',
  } as OddsMessage;
  t.equal(
    encodeJson(scrambled),
    '{"op":"odds","mid":"1.234","epoch":"m1","seq":7,"ts":4,"pt":5,"st":"OPEN","ip":true,"con":false,"cf":false,' +
      '"r":[{"rid":101,"st":"ACTIVE","b":[[1.95,120.5]],"l":[[1.97,80]]}]}',
  );
});

t.test('JSON odds frame puts ltp and tv after l, and the market tv after r', async (t) => {
  const scrambled = {
    tv: 900, r: [{ tv: 500, ltp: 1.96, l: [[1.97, 80]], b: [[1.95, 120.5]], st: 'ACTIVE', rid: 101 }],
    cf: false, con: false, ip: true, st: 'OPEN', pt: 5, ts: 4, seq: 7, epoch: 'm1', mid: '1.234', op: 'odds',
  } as OddsMessage;
  t.equal(
    encodeJson(scrambled),
    '{"op":"odds","mid":"1.234","epoch":"m1","seq":7,"ts":4,"pt":5,"st":"OPEN","ip":true,"con":false,"cf":false,' +
      '"r":[{"rid":101,"st":"ACTIVE","b":[[1.95,120.5]],"l":[[1.97,80]],"ltp":1.96,"tv":500}],"tv":900}',
  );
});

t.test('absent ltp and tv stay absent through protobuf, and a tv of 0 stays 0', async (t) => {
  const plain = decodeServerProto(encodeProto(odds)) as OddsMessage;
  t.notOk('tv' in plain || plain.r.some((r) => 'ltp' in r || 'tv' in r), 'no keys appear');
  const back = decodeServerProto(encodeProto(traded)) as OddsMessage;
  t.equal(back.r[1].tv, 0);
  t.notOk('ltp' in back.r[1]);
});

t.test('decodeServerProto rejects a frame with an odd ladder length', async (t) => {
  const bytes = pb.v1.ServerMessage.encode({ odds: { mid: 'x', r: [{ rid: 1, b: [1.5] }] } }).finish();
  t.throws(() => decodeServerProto(bytes), /odd number/);
});

t.test('JSON delta frame is the exact protocol text, keys in order', async (t) => {
  const scrambled = {
    r: [{ tv: 5, ltp: 2, l: [[0, 2.1, 3]], b: [[1, 0, 0]], st: 'SUSPENDED', rid: 1 }],
    ip: false, st: 'OPEN', pt: 5, ts: 4, from: 6, seq: 7, epoch: 'm1', mid: '1.234', op: 'delta',
  } as ServerMessage;
  t.equal(
    encodeJson(scrambled),
    '{"op":"delta","mid":"1.234","epoch":"m1","seq":7,"from":6,"ts":4,"pt":5,"st":"OPEN","ip":false,' +
      '"r":[{"rid":1,"st":"SUSPENDED","b":[[1,0,0]],"l":[[0,2.1,3]],"ltp":2,"tv":5}]}',
  );
});

t.test('decodeServerProto rejects a delta ladder that is not [i, price, size] triples', async (t) => {
  const bytes = pb.v1.ServerMessage.encode({ delta: { mid: '1.1', epoch: 'm1', seq: 2, from: 1, r: [{ rid: 1, b: [0, 2] }] } }).finish();
  t.throws(() => decodeServerProto(bytes), /r\[0\]\.b must hold \[i,price,size\] triples/);
});

t.test('JSON freshness and ingest ack frames are the exact protocol text, keys in order', async (t) => {
  t.equal(encodeJson({ at: 5, why: 'late', live: false, mid: '1.1', op: 'freshness' } as ServerMessage), '{"op":"freshness","mid":"1.1","live":false,"why":"late","at":5}');
  t.equal(encodeJson({ op: 'freshness', mid: '1.1', live: true, at: 6 }), '{"op":"freshness","mid":"1.1","live":true,"at":6}');
  t.equal(encodeJson({ op: 'ack', id: 7, status: 1, message: 'Ingested 0 items', refused: [] }), '{"op":"ack","id":7,"status":1,"message":"Ingested 0 items"}', 'no refused key when none was');
});

t.test('decodeServerProto rejects a freshness frame whose live and reason disagree', async (t) => {
  t.throws(() => decodeServerProto(pb.v1.ServerMessage.encode({ freshness: { mid: '1.1', live: true, why: 2, at: 1 } }).finish()), /live exactly when it gives no reason/);
  t.throws(() => decodeServerProto(pb.v1.ServerMessage.encode({ freshness: { mid: '1.1', live: false, why: 0, at: 1 } }).finish()), /live exactly when it gives no reason/);
  t.throws(() => decodeServerProto(pb.v1.ServerMessage.encode({ freshness: { mid: '1.1', live: false, why: 9 as never, at: 1 } }).finish()), /unknown freshness why 9/);
});

t.test('decodeServerJson rejects JSON that is not a server message', async (t) => {
  t.throws(() => decodeServerJson('{"op":"subscribe","id":1}'), /not a server message/);
});

t.test('client decode accepts', async (t) => {
  const sub: ClientMessage = { op: 'subscribe', id: 1, mids: ['1.1', '1.2'], eids: [], sis: [] };
  const full: ClientMessage = {
    op: 'subscribe', id: 2, mids: ['1.1'], eids: [30000001], sis: [4, 7], depth: 3, conflate: 1000,
    since: { epoch: 'm1abc', seqs: { '1.1': 42, '1.2': 2 ** 40 } }, delta: true,
  };
  t.test('JSON subscribe', async (t) => {
    t.strictSame(decodeClient(text(JSON.stringify(sub)), false, 2000), sub);
  });
  t.test('protobuf subscribe', async (t) => {
    t.strictSame(decodeClient(ab(encodeClientProto(sub)), true, 2000), sub);
  });
  t.test('JSON subscribe with filters, depth, conflation, since and deltas', async (t) => {
    t.same(decodeClient(text(JSON.stringify(full)), false, 2000), full);
  });
  t.test('protobuf subscribe with filters, depth, conflation, since and deltas', async (t) => {
    t.same(decodeClient(ab(encodeClientProto(full)), true, 2000), full);
  });
  t.test('duplicates collapse, conflate 0 means every update', async (t) => {
    t.strictSame(decodeClient(text('{"op":"subscribe","id":1,"mids":["1.1","1.1"],"conflate":0}'), false, 2000), { op: 'subscribe', id: 1, mids: ['1.1'], eids: [], sis: [] });
  });
  const narrowed: ClientMessage = { op: 'subscribe', id: 3, mids: [], eids: [], sis: [7], tys: ['winner-market', 'other-market'], ccs: ['GB', 'IE'], bts: ['ODDS'], tip: false };
  t.test('JSON subscribe narrowed by market type, country, betting type and turning in play', async (t) => {
    t.strictSame(decodeClient(text(JSON.stringify(narrowed)), false, 2000), narrowed);
  });
  t.test('protobuf subscribe narrowed by market type, country, betting type and turning in play', async (t) => {
    t.strictSame(decodeClient(ab(encodeClientProto(narrowed)), true, 2000), narrowed);
    t.strictSame(decodeClient(ab(encodeClientProto({ op: 'subscribe', id: 4, eids: [5], tip: true })), true, 2000), { op: 'subscribe', id: 4, mids: [], eids: [5], sis: [], tip: true }, 'tip alone');
  });
  t.test('an event filter alone', async (t) => {
    t.strictSame(decodeClient(text('{"op":"unsubscribe","id":1,"eids":[5]}'), false, 2000), { op: 'unsubscribe', id: 1, mids: [], eids: [5], sis: [] });
  });
  t.test('JSON ping, dropping mids', async (t) => {
    t.strictSame(decodeClient(text('{"op":"ping","id":3,"mids":["a"]}'), false, 2000), { op: 'ping', id: 3 });
  });
  t.test('protobuf ping', async (t) => {
    t.strictSame(decodeClient(ab(encodeClientProto({ op: 'ping', id: 3 })), true, 2000), { op: 'ping', id: 3 });
  });
});

t.test('client decode returns an error, never throws, for', async (t) => {
  const bad: Array<[string, ArrayBuffer, boolean, RegExp]> = [
    ['bad JSON', text('{"op":'), false, /malformed JSON/],
    ['invalid UTF-8', ab(new Uint8Array([0x7b, 0xff, 0x7d])), false, /malformed JSON/],
    ['a JSON array', text('[1]'), false, /JSON object/],
    ['JSON null', text('null'), false, /JSON object/],
    ['unknown JSON op', text('{"op":"sub","id":1}'), false, /op must be/],
    ['negative id', text('{"op":"ping","id":-1}'), false, /id must be/],
    ['fractional id', text('{"op":"ping","id":1.5}'), false, /id must be/],
    ['string id', text('{"op":"ping","id":"1"}'), false, /id must be/],
    ['id over uint32', text('{"op":"ping","id":4294967296}'), false, /id must be/],
    ['missing id', text('{"op":"ping"}'), false, /id must be/],
    ['mids not an array', text('{"op":"subscribe","id":1,"mids":"1.1"}'), false, /mids must be/],
    ['mids with a number', text('{"op":"subscribe","id":1,"mids":["1.1",2]}'), false, /mids\[1\] must be a market ID/],
    ['an unsubscribe naming nothing', text('{"op":"unsubscribe","id":2}'), false, /mids must list 1 to 50 market IDs, got 0/],
    ['51 market IDs', text(JSON.stringify({ op: 'subscribe', id: 1, mids: Array.from({ length: 51 }, (_, i) => `1.${i}`) })), false, /mids must list 1 to 50/],
    ['an event ID that is not a positive integer', text('{"op":"subscribe","id":1,"eids":[0]}'), false, /eids\[0\] must be a positive integer/],
    ['51 sport IDs', text(JSON.stringify({ op: 'subscribe', id: 1, sis: Array.from({ length: 51 }, (_, i) => i + 1) })), false, /sis must list 1 to 50/],
    ['depth 0', text('{"op":"subscribe","id":1,"mids":["1.1"],"depth":0}'), false, /depth must be a whole number from 1 to 10/],
    ['depth 11', text('{"op":"subscribe","id":1,"mids":["1.1"],"depth":11}'), false, /depth must be/],
    ['conflate 50', text('{"op":"subscribe","id":1,"mids":["1.1"],"conflate":50}'), false, /conflate must be 0 or a whole number of milliseconds from 100 to 60000/],
    ['conflate over a minute', text('{"op":"subscribe","id":1,"mids":["1.1"],"conflate":60001}'), false, /conflate must be/],
    ['since without seqs', text('{"op":"subscribe","id":1,"mids":["1.1"],"since":{"epoch":"x"}}'), false, /since.seqs must be/],
    ['since with a negative seq', text('{"op":"subscribe","id":1,"mids":["1.1"],"since":{"epoch":"x","seqs":{"1.1":-1}}}'), false, /since.seqs\["1.1"\] must be a whole number/],
    ['since with a bad market ID', text('{"op":"subscribe","id":1,"mids":["1.1"],"since":{"epoch":"x","seqs":{"a b":1}}}'), false, /keys must be market IDs/],
    ['delta not a boolean', text('{"op":"subscribe","id":1,"mids":["1.1"],"delta":1}'), false, /delta must be true or false/],
    ['unknown protobuf op', ab(encodeClientProto({ op: 'bogus' as 'ping', id: 1 })), true, /op must be/],
    ['empty protobuf', new ArrayBuffer(0), true, /op must be/],
    ['truncated protobuf', ab(encodeClientProto({ op: 'subscribe', id: 1, mids: ['1.1'] }).subarray(0, 12)), true,
      /malformed protobuf/],
  ];
  for (const [name, data, binary, re] of bad) {
    t.test(name, async (t) => {
      const r = decodeClient(data, binary, 2000);
      t.ok('error' in r, 'is an error');
      if ('error' in r) t.match(r.error, re);
    });
  }
  t.test('random bytes', async (t) => {
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) & 0xff;
    for (let i = 0; i < 500; i++) {
      const bytes = Uint8Array.from({ length: 1 + (i % 40) }, rand);
      t.ok('error' in decodeClient(ab(bytes), true, 2000), `sample ${i}`);
    }
  });
});

t.test('client decode reports a valid id along with the error', async (t) => {
  t.strictSame(decodeClient(text('{"op":"nope","id":9}'), false, 2000), {
    error: 'op must be one of subscribe, unsubscribe, ping', id: 9,
  });
});

const roundTrip = (items: Array<Record<string, unknown>>) => decodeIngestProto(encodeIngestProto(items), 5000);
/** Items as their encoded messages, to mix with hand-made ones. */
const encodedItems = (items: Array<Record<string, unknown>>) => pb.v1.IngestBatch.decode(encodeIngestProto(items)).data;

t.test('ingest protobuf round trip keeps', async (t) => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['a full sport', { kind: 'sport', si: 4, na: 'Cricket', a: false }],
    ['a partial league', { kind: 'league', li: 12 }],
    ['a partial event with only ip', { kind: 'event', eid: 77, ip: false }],
    ['an event with tv null', { kind: 'event', eid: 77, tv: null }],
    ['a full event', {
      kind: 'event', eid: 77, na: 'A v B', le: 'IPL', st: '2025-04-01T14:00:00.000Z', go: true, ip: true,
      si: 4, li: 12, tv: 'https://tv.example/77',
    }],
    ['a market with if, di, bl and nested m', {
      kind: 'market', mid: '1.5', eid: 77, na: 'Session', si: 4, s: false, go: true, rt: false, ty: 'session',
      if: { over: 6, side: ['bat'] }, di: 3, bl: 0.5, r: [{ rid: 1, na: 'Yes' }],
      m: [{ mid: '1.5.1', s: true, go: false, r: [], if: null }, { mid: '1.5.2', s: false, go: true, r: [] }],
    }],
    ['a partial market with empty r and no m', { kind: 'market', mid: '1.6', s: true, r: [] }],
    ['a result', { kind: 'result', mid: '1.5', res: '1', rt: false, ia: true, mt: 'session' }],
    ['a result with its settlement', { kind: 'result', mid: '1.5', res: '1,2', cert: 'provisional', at: 1795313378336,
      rs: [{ rid: 1, st: 'WINNER', dh: 0.5 }, { rid: 2, st: 'WINNER', dh: 0.5 }, { rid: 3, st: 'REMOVED', vf: 1 }] }],
    ['a result clearing its settlement', { kind: 'result', mid: '1.5', rt: true, cert: null, at: null, rs: null }],
    ['a result with an empty rs', { kind: 'result', mid: '1.5', rs: [] }],
    ['terms', { kind: 'terms', mid: '1.5', bd: 5, tip: true, sus: 1795313378336, bt: 'ODDS', nw: 3, ewd: 4, bsp: true, cc: 'GB', ven: 'Ascot',
      race: 'Flat', mbr: 5, reg: ['GBR'], lmin: 0, lmax: 10, lint: 0.5, r: [{ rid: 1, st: 'REMOVED', af: 12.5, rd: 1795313000000, hc: 0 }, { rid: 2 }] }],
    ['terms clearing keys, a runner\'s too', { kind: 'terms', mid: '1.5', bd: 0, sus: null, reg: null, r: [{ rid: 1, af: null, rd: null }] }],
    ['terms of runners alone, none', { kind: 'terms', mid: '1.5', r: [] }],
    ['odds', { kind: 'odds', mid: '1.5', ts: 1700000000000, st: 'SUSPENDED', ip: true,
      r: [{ rid: 1, st: 'WINNER', b: [[2, 100]], l: [] }] }],
    ['odds with ltp and tv, a volume of 0 included', { kind: 'odds', mid: '1.5', ts: 1700000000000, st: 'OPEN', ip: false,
      r: [{ rid: 1, st: 'ACTIVE', b: [[2, 100]], l: [[2.02, 5]], ltp: 2.01, tv: 0 }], tv: 12345.5 }],
    ['odds the source says are late', { kind: 'odds', mid: '1.5', ts: 1, st: 'OPEN', ip: false, r: [], late: true }],
    ['odds suspended with a reason', { kind: 'odds', mid: '1.5', ts: 1, st: 'SUSPENDED', ip: true, r: [], sr: 'VAR' }],
    ['a bet stop of an event', { kind: 'suspend', eid: 77, sr: 'goal', ts: 1795313378336 }],
    ['a bet stop of a group of its markets', { kind: 'suspend', eid: 77, sr: 'wicket', ts: 1, tys: ['match-odd', 'session'] }],
    ['a stale item, late', { kind: 'stale', mid: '1.5', why: 'late' }],
    ['a stale item, unreliable', { kind: 'stale', mid: '1.5', why: 'unreliable' }],
  ];
  for (const [name, item] of cases) {
    t.test(name, async (t) => {
      t.strictSame(roundTrip([item]), { data: [item] });
    });
  }
  t.test('a whole batch in order', async (t) => {
    const items = cases.map(([, item]) => item);
    t.strictSame(roundTrip(items), { data: items });
  });
});

t.test('ingest decode returns an error, never throws, for', async (t) => {
  t.test('bad if_json, naming the item index', async (t) => {
    const bytes = pb.v1.IngestBatch.encode({
      data: [{ sport: { si: 1 } }, { market: { mid: '1.1', if_json: '{nope' } }],
    }).finish();
    t.strictSame(decodeIngestProto(bytes, 5000), { error: 'data[1]: if_json is not valid JSON' });
  });
  t.test('an item without a kind', async (t) => {
    const bytes = pb.v1.IngestBatch.encode({ data: [{}] }).finish();
    t.strictSame(decodeIngestProto(bytes, 5000), { error: 'data[0]: item carries no kind' });
  });
  t.test('an int64 beyond the safe integer range: read as the number, for ingest to refuse as it refuses the same JSON (by item, naming the field)', async (t) => {
    const bytes = pb.v1.IngestBatch.encode({ data: [{ sport: { si: '9007199254740993' as never } }, { suspend: { eid: '-9007199254740993' as never, sr: 'goal', ts: 1 } }] }).finish();
    const decoded = decodeIngestProto(bytes, 5000);
    if (!('data' in decoded)) return t.fail(decoded.error);
    t.same(decoded.data.map((item) => [item.kind, Number.isSafeInteger(item.si ?? item.eid)]), [['sport', false], ['suspend', false]]);
    t.same(validateReference(decoded.data[0]), { error: 'si must be a positive integer' });
    t.same(validateSuspend(decoded.data[1]), { error: 'eid must be a positive integer event ID' });
  });
  t.test('a stale item without a reason: read without one, for ingest to refuse', async (t) => {
    const bytes = pb.v1.IngestBatch.encode({ data: [{ stale: { mid: '1.1' } }, { stale: { mid: '1.2', why: 9 as never } }] }).finish();
    t.strictSame(decodeIngestProto(bytes, 5000), { data: [{ kind: 'stale', mid: '1.1' }, { kind: 'stale', mid: '1.2' }] });
  });
  t.test('an odds item it cannot convert: kept in its place with its problem, for ingest to refuse alone', async (t) => {
    const good = { kind: 'odds', mid: '1.1', ts: 1, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[2, 10]], l: [] }] };
    const bytes = pb.v1.IngestBatch.encode({ data: [
      ...encodedItems([{ kind: 'sport', si: 1, na: 'Soccer' }, good]),
      { odds: { mid: '1.2', ts: 1, r: [{ rid: 1, st: 99 as never }] } },
      { odds: { mid: '1.3', ts: 1, r: [{ rid: 1, b: [2, 10, 3] }] } },
      { odds: { mid: '1.4', ts: 1, st: 42 as never } },
    ] }).finish();
    const decoded = decodeIngestProto(bytes, 5000);
    if (!('data' in decoded)) return t.fail(decoded.error);
    t.strictSame(decoded.data.slice(0, 2), [{ kind: 'sport', si: 1, na: 'Soccer' }, good], 'the items around it decoded as ever');
    t.same(decoded.data.slice(2).map((item) => [item.kind, item.mid, validateOddsItem(item)]), [
      ['odds', '1.2', { error: 'unknown r[0].st 99' }],
      ['odds', '1.3', { error: 'r[0].b has an odd number of values' }],
      ['odds', '1.4', { error: 'unknown st 42' }],
    ]);
  });
  t.test('an empty batch, a heartbeat', async (t) => {
    t.strictSame(decodeIngestProto(encodeIngestProto([]), 5000), { data: [] });
  });
  t.test('truncated protobuf', async (t) => {
    const bytes = encodeIngestProto([{ kind: 'sport', si: 1, na: 'Soccer' }]);
    t.match(decodeIngestProto(bytes.subarray(0, bytes.length - 2), 5000), { error: /malformed protobuf IngestBatch/ });
  });
});

t.test('ingest encode refuses an unknown kind', async (t) => {
  t.throws(() => encodeIngestProto([{ kind: 'horse' }]), /unknown ingest kind horse/);
});
