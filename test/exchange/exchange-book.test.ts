import t from 'tap';
import { ExchangeBook } from '../../src/exchange/exchange-book.js';
import type { MarketChange } from '../../src/exchange/stream.js';

const change = (rc: MarketChange['rc'], extra: Partial<MarketChange> = {}): MarketChange => ({ id: '1.1', rc, ...extra });

t.test('atb and atl: levels by price, best first; size 0 removes a price; a removed price can come back', async (t) => {
  const book = new ExchangeBook();
  book.apply(change([{ id: 7, atb: [[1.98, 10], [2, 5], [1.99, 7]], atl: [[2.04, 3], [2.02, 8]] }]));
  t.same(book.back(7, 10), [[2, 5], [1.99, 7], [1.98, 10]]);
  t.same(book.lay(7, 10), [[2.02, 8], [2.04, 3]]);
  book.apply(change([{ id: 7, atb: [[2, 0], [1.99, 9.5]] }]));
  t.same(book.back(7, 10), [[1.99, 9.5], [1.98, 10]], 'size 0 removed 2, 1.99 replaced');
  book.apply(change([{ id: 7, atb: [[2, 12.25]] }]));
  t.same(book.back(7, 10), [[2, 12.25], [1.99, 9.5], [1.98, 10]], '2 is back at its new size');
  t.same(book.lay(7, 10), [[2.02, 8], [2.04, 3]], 'the other side untouched');
});

t.test('at most the asked depth, from the best', async (t) => {
  const book = new ExchangeBook();
  const prices = Array.from({ length: 15 }, (_, i) => 1.5 + i / 100);
  book.apply(change([{ id: 7, atb: prices.map((p) => [p, 1]) }]));
  t.same(book.back(7, 10).map(([p]) => p), [...prices].reverse().slice(0, 10));
});

for (const [back, lay] of [['batb', 'batl'], ['bdatb', 'bdatl']] as const) {
  t.test(`${back} and ${lay}: levels by position; size 0 removes a position`, async (t) => {
    const book = new ExchangeBook();
    book.apply(change([{ id: 7, [back]: [[1, 1.99, 4], [0, 2, 5], [2, 1.98, 3]], [lay]: [[0, 2.02, 6]] }]));
    t.same(book.back(7, 10), [[2, 5], [1.99, 4], [1.98, 3]]);
    t.same(book.lay(7, 10), [[2.02, 6]]);
    book.apply(change([{ id: 7, [back]: [[0, 2.02, 1], [2, 0, 0]] }]));
    t.same(book.back(7, 10), [[2.02, 1], [1.99, 4]], 'position 0 replaced, position 2 removed');
    book.apply(change([{ id: 7, [back]: [[2, 1.98, 8]] }]));
    t.same(book.back(7, 10), [[2.02, 1], [1.99, 4], [1.98, 8]], 'position 2 filled again');
  });
}

t.test('one ladder kind is published: full depth over best offers over best offers with virtual bets', async (t) => {
  const book = new ExchangeBook();
  book.apply(change([{ id: 7, bdatb: [[0, 2.1, 1]] }]));
  t.same(book.back(7, 10), [[2.1, 1]], 'only the virtual ladder so far');
  book.apply(change([{ id: 7, batb: [[0, 2, 2]] }]));
  t.same(book.back(7, 10), [[2, 2]], 'best offers seen: published from now on');
  book.apply(change([{ id: 7, atl: [[2.5, 3]] }]));
  t.same([book.back(7, 10), book.lay(7, 10)], [[], [[2.5, 3]]], 'full depth seen: published from now on');
});

t.test('img starts the market afresh', async (t) => {
  const book = new ExchangeBook();
  book.apply(change([{ id: 7, atb: [[2, 5]], atl: [[2.02, 1]], trd: [[2, 30]], ltp: 2, tv: 30 }, { id: 8, atb: [[3, 1]] }], { tv: 31 }));
  book.apply(change([{ id: 7, atb: [[1.9, 4]] }], { img: true }));
  t.same(book.back(7, 10), [[1.9, 4]]);
  t.same(book.lay(7, 10), []);
  t.same(book.back(8, 10), [], 'a runner the image leaves out holds nothing');
  t.same([book.lastTraded(7), book.tradedVolume(7), book.marketTradedVolume()], [undefined, undefined, undefined]);
});

t.test('trd, ltp and tv: volume as given, else summed from traded volume by price', async (t) => {
  const book = new ExchangeBook();
  book.apply(change([{ id: 7, trd: [[2, 10.1], [2.02, 0.2]], ltp: 2.02 }, { id: 8, trd: [[3, 5]] }]));
  t.equal(book.lastTraded(7), 2.02);
  t.equal(book.tradedVolume(7), 10.3, 'sum of trd');
  t.equal(book.marketTradedVolume(), 15.3, 'sum over runners');
  book.apply(change([{ id: 7, trd: [[2.02, 0]] }]));
  t.equal(book.tradedVolume(7), 10.1, 'size 0 removes a traded price');
  book.apply(change([{ id: 8, tv: 6 }], { tv: 100 }));
  t.equal(book.tradedVolume(8), 6, 'tv given wins');
  t.equal(book.marketTradedVolume(), 100, 'market tv given wins');
  t.equal(book.tradedVolume(9), undefined, 'a runner never traded has none');
});

t.test('a change of a SUB_IMAGE starts the market afresh without img', async (t) => {
  const book = new ExchangeBook();
  book.apply(change([{ id: 7, atb: [[2, 10]], atl: [[2.1, 5]] }]));
  book.apply(change([{ id: 7, atl: [[2.2, 3]] }]), true);
  t.same([book.back(7, 10), book.lay(7, 10)], [[], [[2.2, 3]]], 'only what the fresh change holds');
});
