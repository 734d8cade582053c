import t from 'tap';
import { Catalogue } from '../../src/exchange/catalogue.js';
import type { MarketDefinition } from '../../src/exchange/stream.js';
import { Translator } from '../../src/exchange/translate.js';
import { expectedImages } from './reference-book.js';
import { matchOdds, race, tennis } from './fixtures.js';

type Obj = Record<string, unknown>;

const DEF: MarketDefinition = {
  eventTypeId: '1', eventId: '34000001', marketType: 'MATCH_ODDS', status: 'OPEN', inPlay: false, betDelay: 0,
  marketTime: '2026-05-01T14:00:00.000Z', openDate: '2026-05-01T14:00:00.000Z', name: 'Match Odds', eventName: 'Harbour Town v Mill Rovers',
  runners: [{ id: 12, status: 'ACTIVE', sortPriority: 2, name: 'Mill Rovers' }, { id: 11, status: 'ACTIVE', sortPriority: 1, name: 'Harbour Town' }],
  numberOfWinners: 1, bettingType: 'ODDS', complete: true, version: 1, timezone: 'Europe/London',
};
const def = (over: Partial<MarketDefinition> = {}): MarketDefinition => ({ ...DEF, ...over });
const mcm = (pt: number, mc: Obj[]) => ({ op: 'mcm', pt, mc });
const kinds = (items: Obj[]) => items.map((i) => `${i.kind as string}${i.kind === 'market' && 'go' in i && Object.keys(i).length === 3 ? ' go' : ''}`);

t.test('a new definition: sport, league, event and market, then the image', async (t) => {
  const { items, problems, images } = new Translator().translate(mcm(5, [{ id: '1.5', marketDefinition: def() }]), 'f:1');
  t.same(problems, []);
  t.equal(images, 1);
  t.same(items, [
    { kind: 'sport', si: 1, na: 'Soccer', a: true },
    { kind: 'league', li: 1_000_000_001, si: 1, na: 'Soccer (Betfair)' },
    { kind: 'event', eid: 34000001, na: 'Harbour Town v Mill Rovers', le: 'Soccer (Betfair)', st: '2026-05-01T14:00:00.000Z', go: false, ip: false, si: 1, li: 1_000_000_001, tv: null },
    { kind: 'market', mid: '1.5', eid: 34000001, na: 'Match Odds', si: 1, ty: 'match-odd', s: true, rt: false, r: [{ rid: 11, na: 'Harbour Town' }, { rid: 12, na: 'Mill Rovers' }], go: false },
    { kind: 'terms', mid: '1.5', bd: 0, bt: 'ODDS', nw: 1, r: [{ rid: 11, st: 'ACTIVE' }, { rid: 12, st: 'ACTIVE' }] },
    { kind: 'odds', mid: '1.5', ts: 5, st: 'OPEN', ip: false, r: [{ rid: 11, st: 'ACTIVE', b: [], l: [] }, { rid: 12, st: 'ACTIVE', b: [], l: [] }] },
  ]);
});

t.test('sports by eventTypeId: named ones, then the catalogue, then "Sport N"', async (t) => {
  const names = [['1', 'Soccer'], ['2', 'Tennis'], ['4', 'Cricket'], ['7', 'Horse Racing'], ['4339', 'Greyhound Racing'], ['998917', 'Sport 998917']];
  for (const [id, na] of names) {
    const { items } = new Translator().translate(mcm(1, [{ id: '1.5', marketDefinition: def({ eventTypeId: id }) }]), 'f:1');
    t.same(items[0], { kind: 'sport', si: Number(id), na, a: true }, na);
  }
  const catalogue = Catalogue.parse([{ marketId: '1.5', eventType: { id: '998917', name: 'Volleyball' } }]) as Catalogue;
  const { items } = new Translator({ catalogue }).translate(mcm(1, [{ id: '1.5', marketDefinition: def({ eventTypeId: '998917' }) }]), 'f:1');
  t.same(items[0], { kind: 'sport', si: 998917, na: 'Volleyball', a: true });
});

t.test('names and league from a catalogue when the definition has none; fallbacks without either', async (t) => {
  const bare = def({ name: undefined, eventName: undefined, runners: DEF.runners.map((r) => ({ ...r, name: undefined })) });
  const catalogue = Catalogue.parse({ result: [{
    marketId: '1.5', marketName: 'Match Odds', competition: { id: '10932509', name: 'English Premier League' },
    event: { id: '34000001', name: 'Harbour Town v Mill Rovers' }, runners: [{ selectionId: 11, runnerName: 'Harbour Town' }],
  }] }) as Catalogue;
  const { items } = new Translator({ catalogue }).translate(mcm(1, [{ id: '1.5', marketDefinition: bare }]), 'f:1');
  t.match(items[1], { kind: 'league', li: 10932509, si: 1, na: 'English Premier League' });
  t.match(items[2], { kind: 'event', na: 'Harbour Town v Mill Rovers', le: 'English Premier League', li: 10932509 });
  t.match(items[3], { kind: 'market', na: 'Match Odds', r: [{ rid: 11, na: 'Harbour Town' }, { rid: 12, na: 'Selection 12' }] });
  const plain = new Translator().translate(mcm(1, [{ id: '1.6', marketDefinition: { ...bare, marketType: 'OVER_UNDER_25' } }]), 'f:1').items;
  t.match(plain[2], { kind: 'event', na: 'Event 34000001' });
  t.match(plain[3], { kind: 'market', na: 'Over Under 25', ty: 'goals' });
});

t.test('a definition that moves a market to another event, or gives it another type, is not applied: the market is unreliable, no batch is refused', async (t) => {
  for (const [over, to] of [[{ eventId: '34000002' }, 'event 34000002 (match-odd)'], [{ marketType: 'OVER_UNDER_25' }, 'event 34000001 (goals)']] as const) {
    const tr = new Translator();
    tr.translate(mcm(1, [{ id: '1.5', marketDefinition: def() }]), 'f:1');
    const { items, problems } = tr.translate(mcm(2, [{ id: '1.5', marketDefinition: def(over) }]), 'f:2');
    t.same(problems, [`f:2: market 1.5's definition moves it from event 34000001 (match-odd) to ${to}; a market keeps its event and type, so the change is not applied`]);
    t.same(items, [{ kind: 'stale', mid: '1.5', why: 'unreliable' }], 'no market, event or terms item the service would refuse with its batch');
  }
});

t.test('a later definition without names keeps the names the earlier one gave', async (t) => {
  const tr = new Translator();
  tr.translate(mcm(1, [{ id: '1.5', marketDefinition: def() }]), 'f:1');
  const { items } = tr.translate(mcm(2, [{ id: '1.5', marketDefinition: def({ name: undefined, status: 'SUSPENDED', runners: DEF.runners.map((r) => ({ ...r, name: undefined })) }) }]), 'f:2');
  t.same(items.filter((i) => i.kind === 'market'), [{ kind: 'market', mid: '1.5', s: false }], 'only the suspension moved');
});

t.test('market types', async (t) => {
  const cases: [string, string, string][] = [
    ['MATCH_ODDS', 'ODDS', 'match-odd'], ['COMPLETED_MATCH', 'ODDS', 'completed-match'], ['TIED_MATCH', 'ODDS', 'tied-match'],
    ['OVER_UNDER_25', 'ODDS', 'goals'], ['OVER_UNDER_05', 'ODDS', 'goals'], ['WIN', 'ODDS', 'winner-market'], ['ODD_OR_EVEN', 'ODDS', 'odd-even'],
    ['TOTAL_RUNS', 'LINE', 'line-market'], ['PLACE', 'ODDS', 'other-market'], ['CORRECT_SCORE', 'ODDS', 'other-market'],
  ];
  for (const [marketType, bettingType, ty] of cases) {
    const { items } = new Translator().translate(mcm(1, [{ id: '1.5', marketDefinition: def({ marketType, bettingType }) }]), 'f:1');
    t.equal(items.find((i) => i.kind === 'market')!.ty, ty, marketType);
  }
});

t.test('the service\'s own types, as an export writes them: that type; a nameless runner carries a line market\'s prices, not listed in its row', async (t) => {
  for (const ty of ['session', 'other-market', 'ball-by-ball', 'line-market', 'bookmaker']) {
    const { items } = new Translator().translate(mcm(1, [{ id: '1.5', marketDefinition: def({ marketType: ty, bettingType: 'ODDS' }) }]), 'f:1');
    t.equal(items.find((i) => i.kind === 'market')!.ty, ty, `${ty}: not other-market`);
  }
  const line = def({ marketType: 'session', bettingType: 'LINE', betDelay: 3, lineMinUnit: 0, lineMaxUnit: 500, lineInterval: 1, runners: [{ id: 1, status: 'ACTIVE', sortPriority: 1 }] });
  const { items, problems } = new Translator().translate(mcm(1, [{ id: '1.9', marketDefinition: line, rc: [{ id: 1, atb: [[41, 100], [42, 100]], atl: [[40, 100], [39, 100]] }] }]), 'f:1');
  t.same(problems, []);
  const market = items.find((i) => i.kind === 'market')!;
  t.equal(market.ty, 'session');
  t.notOk('r' in market, 'its row lists no runners: a line market');
  t.same(items.find((i) => i.kind === 'terms'), { kind: 'terms', mid: '1.9', bd: 3, bt: 'LINE', nw: 1, lmin: 0, lmax: 500, lint: 1, r: [] }, 'the terms, the line\'s range with them');
  t.same(items.find((i) => i.kind === 'odds'), { kind: 'odds', mid: '1.9', ts: 1, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[41, 100], [42, 100]], l: [[40, 100], [39, 100]] }] },
    'its lines published, best first as lines are (the lowest Yes, the highest No), not withheld as crossed odds');
});

t.test('an exchange\'s line market (bettingType LINE, its runner named) is published as the exchange prices it: the runner listed, back the lines to sell, lay the lines to buy, sizes as stakes', async (t) => {
  const line = def({ marketType: 'TOTAL_RUNS', bettingType: 'LINE', lineMinUnit: 0.5, lineMaxUnit: 400.5, lineInterval: 1, runners: [{ id: 47973, name: 'Total Runs', status: 'ACTIVE', sortPriority: 1 } as MarketDefinition['runners'][0]] });
  const { items, problems } = new Translator().translate(mcm(1, [{ id: '1.9', marketDefinition: line, rc: [{ id: 47973, atb: [[150.5, 12.4], [149.5, 30]], atl: [[151.5, 8], [152.5, 20]], ltp: 151.5 }] }]), 'f:1');
  t.same(problems, []);
  const market = items.find((i) => i.kind === 'market')!;
  t.equal(market.ty, 'line-market');
  t.same((market as { r?: { rid: number }[] }).r?.map((r) => r.rid), [47973], 'its runner listed: priced per runner, not as a Yes/No book');
  t.match(items.find((i) => i.kind === 'terms'), { bt: 'LINE', lmin: 0.5, lmax: 400.5, lint: 1 }, 'bt LINE says how to read its prices (docs/protocol.md)');
  t.match(items.find((i) => i.kind === 'odds'), { r: [{ rid: 47973, b: [[150.5, 12.4], [149.5, 30]], l: [[151.5, 8], [152.5, 20]], ltp: 151.5 }] },
    'b the exchange\'s back (sell the line, wins below it), best the highest; l its lay (buy, wins above), best the lowest; not turned into Yes and No');
});

t.test('a line\'s bounds go with a line market\'s terms only: given to a market of another type, they are left out, not its batch refused', async (t) => {
  const line = { lineMinUnit: 0.5, lineMaxUnit: 300.5, lineInterval: 1 };
  const termsOf = (over: Partial<MarketDefinition>) => new Translator().translate(mcm(1, [{ id: '1.5', marketDefinition: def({ ...line, ...over }) }]), 'f:1').items.find((i) => i.kind === 'terms')!;
  t.match(termsOf({ marketType: 'TOTAL_RUNS', bettingType: 'LINE' }), { lmin: 0.5, lmax: 300.5, lint: 1 });
  const odds = termsOf({});
  t.same(['lmin', 'lmax', 'lint'].filter((k) => k in odds), [], 'a match-odds market\'s terms hold none of them');
});

t.test('market status and in play: the market row, the event and the frame', async (t) => {
  const tr = new Translator();
  tr.translate(mcm(1, [{ id: '1.5', marketDefinition: def({ status: 'INACTIVE' }) }]), 'f:1');
  let out = tr.translate(mcm(2, [{ id: '1.5', marketDefinition: def({ inPlay: true, betDelay: 5 }) }]), 'f:2').items;
  t.same(out.slice(0, 3), [{ kind: 'event', eid: 34000001, ip: true }, { kind: 'market', mid: '1.5', s: true }, { kind: 'terms', mid: '1.5', bd: 5 }],
    'INACTIVE read as suspended; now open and in play, its bet delay raised');
  t.match(out[3], { kind: 'odds', st: 'OPEN', ip: true });
  out = tr.translate(mcm(3, [{ id: '1.5', marketDefinition: def({ inPlay: true, betDelay: 5, status: 'SUSPENDED' }) }]), 'f:3').items;
  t.same(out[0], { kind: 'market', mid: '1.5', s: false });
  t.match(out[1], { kind: 'odds', st: 'SUSPENDED', ip: true });
  out = tr.translate(mcm(4, [{ id: '1.5', marketDefinition: def({ inPlay: true, betDelay: 5, status: 'SUSPENDED' }) }]), 'f:4').items;
  t.same(kinds(out), ['odds'], 'the same definition again: no rows');
});

t.test('runner statuses', async (t) => {
  const statuses = [['ACTIVE', 'ACTIVE'], ['WINNER', 'WINNER'], ['LOSER', 'LOSER'], ['PLACED', 'WINNER'], ['REMOVED', 'REMOVED'], ['REMOVED_VACANT', 'REMOVED'], ['HIDDEN', 'SUSPENDED']] as const;
  const runners = statuses.map(([status], i) => ({ id: i + 1, status, sortPriority: i + 1 }));
  const { items } = new Translator().translate(mcm(1, [{ id: '1.5', marketDefinition: def({ runners }) }]), 'f:1');
  const image = items.find((i) => i.kind === 'odds') as unknown as { r: { st: string }[] };
  t.same(image.r.map((r) => r.st), statuses.map(([, st]) => st));
});

t.test('settlement: the last image, then go and the result; the event ends with its last open market', async (t) => {
  const tr = new Translator();
  const two = def({ marketType: 'PLACE', inPlay: true, numberOfWinners: 2, runners: [1, 2, 3].map((id) => ({ id, status: 'ACTIVE' as const, sortPriority: id })) });
  tr.translate(mcm(1, [{ id: '1.5', marketDefinition: def({ inPlay: true }) }, { id: '1.6', marketDefinition: two }]), 'f:1');
  const one = tr.translate(mcm(2, [{ id: '1.5', marketDefinition: def({ inPlay: true, status: 'CLOSED', runners: [{ ...DEF.runners[0], status: 'LOSER' }, { ...DEF.runners[1], status: 'WINNER' }] }) }]), 'f:2').items;
  t.same(kinds(one), ['market', 'terms', 'odds', 'market go', 'result']);
  t.same(one.slice(3), [
    { kind: 'market', mid: '1.5', go: true },
    { kind: 'result', mid: '1.5', res: '11', rt: false, ia: false, cert: 'confirmed', rs: [{ rid: 11, st: 'WINNER' }, { rid: 12, st: 'LOSER' }] },
  ], 'each runner settled, in display order; confirmed: the exchange settled it');
  const closed = { ...two, status: 'CLOSED' as const, runners: [{ id: 1, status: 'PLACED' as const, sortPriority: 1 }, { id: 2, status: 'LOSER' as const, sortPriority: 2 }, { id: 3, status: 'WINNER' as const, sortPriority: 3 }] };
  const last = tr.translate(mcm(3, [{ id: '1.6', marketDefinition: closed }]), 'f:3').items;
  t.same(kinds(last), ['market', 'terms', 'odds', 'event', 'market go', 'result']);
  t.same(last[3], { kind: 'event', eid: 34000001, go: true, ip: false }, 'no open market left: the event is over, no longer in play');
  t.same(last[5], { kind: 'result', mid: '1.6', res: '1,3', rt: false, ia: false, cert: 'confirmed', rs: [{ rid: 1, st: 'PLACED' }, { rid: 2, st: 'LOSER' }, { rid: 3, st: 'WINNER' }] },
    'several winners, comma-joined; no dead heat in a market of two places');
});

t.test('bad input: a problem naming where and why; a bad market change costs only its market', async (t) => {
  const tr = new Translator();
  tr.translate(mcm(1, [{ id: '1.5', marketDefinition: def(), rc: [{ id: 11, atb: [[2, 5]] }] }, { id: '1.6', marketDefinition: def() }]), 'f:1');
  const whole: [unknown, RegExp][] = [
    [{ op: 'mcm', mc: [{ id: '1.5' }] }, /^f:9: pt must be/],
    [{ op: 'mcm', pt: 1, mc: {} }, /^f:9: mc must be an array/],
    ['text', /^f:9: must be an object/],
  ];
  for (const [msg, why] of whole) {
    const out = tr.translate(msg, 'f:9');
    t.same([out.items, out.images], [[], 0]);
    t.match(out.problems, [why]);
  }
  const unknown = tr.translate(mcm(2, [{ id: '1.7', rc: [{ id: 11, atb: [[2, 1]] }] }, { id: '1.6' }]), 'f:10');
  t.match(unknown.problems, [/^f:10: market 1\.7 has no definition yet$/]);
  t.same(kinds(unknown.items), ['odds'], 'the other market of the message is published');
  const shapes: [Obj, RegExp][] = [
    [{ id: '1.5', rc: [{ id: 11, atb: [[2, 'x']] }] }, /^f:11: mc\[0\]\.rc\[0\]\.atb\[0\] must be \[price, size\]$/],
    [{ id: '1.5', rc: [{ id: 11, batb: [[0, 2]] }] }, /batb\[0\] must be \[position, price, size\]/],
    [{ id: '1.5', marketDefinition: def({ status: 'GONE' as never }) }, /marketDefinition\.status must be one of/],
    [{ id: '1.5', marketDefinition: def({ runners: [DEF.runners[0], { ...DEF.runners[0], hc: 1 }] }) }, /repeat a selection ID/],
  ];
  for (const [change, why] of shapes) {
    const out = tr.translate(mcm(3, [change, { id: '1.6', rc: [{ id: 11, atb: [[3, 1]] }] }]), 'f:11');
    t.match(out.problems, [why]);
    t.same(out.items.map((i) => `${i.kind} ${String(i.mid)}`).filter((k) => k.includes('1.6')), ['odds 1.6'], '1.6 is published');
  }
  const first = tr.translate(mcm(3, [{ id: '1.5', rc: [{ id: 11, atb: [[2, 'x']] }] }]), 'f:12');
  t.same(first.items, [], 'the market was told it is unreliable once; nothing more until a fresh image');
  const later = tr.translate(mcm(4, [{ id: '1.5', rc: [{ id: 11, atb: [[2.2, 9]] }] }]), 'f:13');
  t.same(later.items, [], 'an ordinary change of an unreliable market publishes nothing');
});

t.test('the stream\'s connection and status messages, other ops, and heartbeats yield nothing', async (t) => {
  const tr = new Translator();
  for (const msg of [{ op: 'connection', connectionId: '1' }, { op: 'status', statusCode: 'SUCCESS' }, { op: 'rcm', pt: 1, rc: [] }, { op: 'ocm', pt: 1 }, { op: 'mcm', pt: 1, ct: 'HEARTBEAT' }]) {
    t.same(tr.translate(msg, 'f:1'), { items: [], problems: [], images: 0 });
  }
  t.same([...tr.skipped], [['connection', 1], ['status', 1], ['rcm', 1], ['ocm', 1]], 'counted as skipped');
});

t.test('markets held are bounded: the one closed longest ago is forgotten; with none closed, new ones are refused', async (t) => {
  const tr = new Translator({ maxMarkets: 2 });
  tr.translate(mcm(1, [{ id: '1.1', marketDefinition: def({ status: 'CLOSED' }) }, { id: '1.2', marketDefinition: def() }]), 'f:1');
  t.same(tr.translate(mcm(2, [{ id: '1.3', marketDefinition: def() }]), 'f:2').problems, []);
  t.match(tr.translate(mcm(3, [{ id: '1.1' }]), 'f:3').problems[0], /market 1\.1 has no definition yet/, 'the closed market was forgotten');
  t.match(tr.translate(mcm(4, [{ id: '1.4', marketDefinition: def() }]), 'f:4').problems[0], /more than 2 markets are open at once/);
});

t.test('every image equals the independently computed book at its message, on all generated recordings', async (t) => {
  for (const [name, messages] of [['match odds', matchOdds(400)], ['race', race(300)], ['tennis', tennis(300)]] as const) {
    const tr = new Translator();
    const got = new Map<string, Obj[]>();
    const problems: string[] = [];
    for (const [i, msg] of messages.entries()) {
      const out = tr.translate(msg, `x:${i + 1}`);
      problems.push(...out.problems);
      for (const item of out.items.filter((x) => x.kind === 'odds')) {
        const { kind: _, ...image } = item;
        got.set(image.mid as string, [...(got.get(image.mid as string) ?? []), image]);
      }
    }
    t.same(problems, [], `${name}: every message translated`);
    const want = expectedImages(messages);
    t.same([...got.keys()], [...want.keys()], `${name}: markets`);
    for (const [mid, images] of want) t.strictSame(got.get(mid), images, `${name} ${mid}: ${images.length} images`);
  }
});
