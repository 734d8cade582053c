/**
 * What a REST request's query and body mean, read without a server: a strict query (a parameter
 * given twice or badly encoded is an error, not a guess), ID lists checked and bounded with the
 * answer cache's key, and JSON bodies that must be UTF-8.
 */
import t from 'tap';
import { MAX_IDS, MARKET_ID_AT, POSITIVE_ID, isMarketId, isPositiveId, type IdRule } from '../../src/refdata/ids.js';

/** A rule that reads a string out, as a route needing the ID itself would write one. */
const MARKET_ID: IdRule<string> = (text, start, end) => (MARKET_ID_AT(text, start, end) ? text.slice(start, end) : undefined);
import { parseJson, parseQuery, queryIdPlaces, queryIds } from '../../src/http/request.js';

t.test('a query: each parameter once, decoded when encoded, an empty value kept', async (t) => {
  t.same([...parseQuery('mid=1.2,1.3&depth=3')], [['mid', '1.2,1.3'], ['depth', '3']]);
  t.same([...parseQuery('q=a%20b+c&flag')], [['q', 'a b c'], ['flag', '']]);
  t.same([...parseQuery(undefined)], []);
  t.same([...parseQuery('&&a=1&')], [['a', '1']], 'empty parts are nothing');
  t.throws(() => parseQuery('a=1&a=2'), { code: 'BAD_PARAM', message: /a is given more than once/ });
  t.throws(() => parseQuery('a=%zz'), { code: 'BAD_PARAM', message: /not valid percent-encoding/ });
});

t.test('ID lists: checked by their rule, duplicates collapsed in first order, bounded, with the cache key', async (t) => {
  const raw = 'eid=3,1,3,2';
  const q = parseQuery(raw);
  t.same(queryIds(q, raw, 'eid', POSITIVE_ID, 'positive whole numbers', true), { list: [3, 1, 2], key: 'eid=3,1,2' });
  const both = 'mid=1.5&depth=2';
  t.same(queryIds(parseQuery(both), both, 'mid', MARKET_ID, 'market IDs', true), { list: ['1.5'], key: 'mid=1.5' });
  t.equal(queryIds(parseQuery(''), '', 'eid', POSITIVE_ID, 'positive whole numbers', false), undefined, 'optional and absent');
  t.throws(() => queryIds(parseQuery(''), '', 'eid', POSITIVE_ID, 'positive whole numbers', true), { message: /eid is required/ });
  t.throws(() => queryIds(parseQuery('eid=1,x,2'), 'eid=1,x,2', 'eid', POSITIVE_ID, 'positive whole numbers', true), { message: /has "x"/ });
  const many = `eid=${Array.from({ length: MAX_IDS + 1 }, (_, i) => i + 1).join(',')}`;
  t.throws(() => queryIds(parseQuery(many), many, 'eid', POSITIVE_ID, 'positive whole numbers', true), { message: new RegExp(`lists ${MAX_IDS + 1} IDs; at most ${MAX_IDS}`) });
});

t.test('ID lists read in place: each distinct ID visited where the query writes it, with the cache key', async (t) => {
  const raw = 'mid=1.5,a:b,1.5,1.55';
  const places = queryIdPlaces(parseQuery(raw), raw, 'mid', MARKET_ID_AT, 'market IDs');
  const seen: string[] = [];
  places.each((text, start, end) => {
    if (text !== raw) t.fail('read from the raw query itself when it is the list alone');
    seen.push(text.slice(start, end));
  });
  t.same(seen, ['1.5', 'a:b', '1.55'], 'in first order, the repeat once, a longer ID apart from its prefix');
  t.equal(places.key, 'mid=1.5,a:b,1.55', 'the key as if the repeat were not there');
  const mixed = 'depth=2&mid=x,y';
  const other = queryIdPlaces(parseQuery(mixed), mixed, 'mid', MARKET_ID_AT, 'market IDs');
  const inOther: string[] = [];
  other.each((text, start, end) => inOther.push(text.slice(start, end)));
  t.same({ ids: inOther, key: other.key }, { ids: ['x', 'y'], key: 'mid=x,y' }, 'beside other parameters: the key is the list alone');
  t.throws(() => queryIdPlaces(parseQuery('mid=1.5,1%206'), 'mid=1.5,1%206', 'mid', MARKET_ID_AT, 'market IDs'), { code: 'BAD_PARAM', message: /has "1 6"/ });
});

t.test('an ID list read over by the next is not visited: it throws rather than hand out the other list\'s IDs', async (t) => {
  const first = 'mid=a,b';
  const places = queryIdPlaces(parseQuery(first), first, 'mid', MARKET_ID_AT, 'market IDs');
  const second = 'mid=x,y,z';
  queryIdPlaces(parseQuery(second), second, 'mid', MARKET_ID_AT, 'market IDs');
  const seen: string[] = [];
  t.throws(() => places.each((text, start, end) => seen.push(text.slice(start, end))), /read over by another list/);
  t.same(seen, [], 'none of the second list\'s places read against the first list\'s text');
});

t.test('each ID of a list is read by its rule once', async (t) => {
  let reads = 0;
  const counting: typeof POSITIVE_ID = (text, start, end) => {
    reads++;
    return POSITIVE_ID(text, start, end);
  };
  const raw = 'eid=3,1,3,2';
  t.same(queryIds(parseQuery(raw), raw, 'eid', counting, 'positive whole numbers', true), { list: [3, 1, 2], key: 'eid=3,1,2' });
  t.equal(reads, 4, 'once for each ID written, the repeat included, and not again for its value');
});

t.test('repeats are found among IDs alike in length and ending without comparing each with all before', async (t) => {
  // The characters read are counted, not the time taken: 50 IDs of 64 characters that differ only
  // before their last eight would, hashed by their length and ending, all land in one slot, and
  // each would be compared with every one before it, most of its characters each time.
  const ids = Array.from({ length: MAX_IDS }, (_, i) => `${'A'.repeat(54)}${String.fromCharCode(65 + (i % 26))}${i < 26 ? 'a' : 'b'}XXXXXXXX`);
  const raw = `mid=${ids.join(',')}`;
  let reads = 0;
  const counted = Object.assign(new String(raw), {
    charCodeAt(i: number) {
      reads++;
      return raw.charCodeAt(i);
    },
  }) as unknown as string;
  const places = queryIdPlaces(parseQuery(raw), counted, 'mid', MARKET_ID_AT, 'market IDs');
  t.equal(places.count, MAX_IDS, 'all distinct');
  t.ok(reads < 10 * raw.length, `${reads} characters read for a list of ${raw.length}: checking and hashing each once, and a few comparisons`);
});

t.test('the ID rules: positive whole numbers without a leading zero, market IDs of their own characters', async (t) => {
  t.ok(isPositiveId(1) && isPositiveId(Number.MAX_SAFE_INTEGER));
  t.notOk(isPositiveId(0) || isPositiveId(-1) || isPositiveId(1.5) || isPositiveId('1'));
  t.equal(POSITIVE_ID('007', 0, 3), undefined, 'a leading zero');
  t.equal(POSITIVE_ID('42', 0, 2), 42);
  t.ok(isMarketId('1.234567') && isMarketId('fz.hidden-1:a_b'));
  t.notOk(isMarketId('') || isMarketId('a b') || isMarketId('x'.repeat(65)) || isMarketId('é'), 'empty, a space, too long, not ASCII');
});

t.test('a JSON body: parsed, a BOM ignored; not JSON or not UTF-8 is a 400 saying which', async (t) => {
  t.same(parseJson(Buffer.from('{"a":[1,"é"]}')), { a: [1, 'é'] });
  t.same(parseJson(Buffer.from('\uFEFF[1]')), [1]);
  t.throws(() => parseJson(Buffer.from('{"a":')), { code: 'BAD_BODY', message: /is not valid JSON/ });
  t.throws(() => parseJson(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])), { message: 'a is not valid UTF-8 (byte 6 of the body)' }, 'bytes that are not UTF-8, naming the field they are in');
});
