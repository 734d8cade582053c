/** The REST read model's table of results: a Map that can also be asked with a stretch of a longer string. */
import t from 'tap';
import { TextTable } from '../../src/lib/text-table.js';
import { seeded } from '../helpers/random.js';

t.test('sets, replacements and deletions read as in a plain Map, through growth, clusters and wrap-around', async (t) => {
  // A few names in a small table collide and wrap round its end often; each seed places them differently.
  const names = Array.from({ length: 30 }, (_, i) => `1.${1000 + i * 37}`);
  for (const seed of [1, 2, 3, 4, 5]) {
    const table = new TextTable<number>(seed);
    const plain = new Map<string, number>();
    const rand = seeded(seed);
    let mismatches = 0;
    for (let op = 0; op < 20_000; op++) {
      const name = names[Math.floor(rand() * names.length)];
      if (rand() < 0.45) {
        if (table.delete(name) !== plain.delete(name)) mismatches++;
      } else {
        table.set(name, op);
        plain.set(name, op);
      }
      for (const n of names) if (table.get(n) !== plain.get(n) || table.has(n) !== plain.has(n)) mismatches++;
      if (table.size !== plain.size) mismatches++;
    }
    t.equal(mismatches, 0, `seed ${seed}: every deletion said what the Map's did, and every key read as the Map read it, after every operation`);
    t.same(new Map(table), plain, `seed ${seed}: iterating gives every entry once`);
  }
});

t.test('a key is found where a longer string writes it, with nothing cut out', async (t) => {
  const table = new TextTable<string>(7);
  for (let i = 0; i < 1000; i++) table.set(`1.${200000 + i}`, `result ${i}`);
  const query = 'mid=1.200007,1.200999,1.2000,9.200001,1.2000070';
  const found: (string | undefined)[] = [];
  for (let start = 4; start < query.length;) {
    let end = query.indexOf(',', start);
    if (end < 0) end = query.length;
    const slot = table.slotOf(query, start, end);
    found.push(slot < 0 ? undefined : table.valueAt(slot));
    start = end + 1;
  }
  t.same(found, ['result 7', 'result 999', undefined, undefined, undefined], 'known IDs found; a prefix, another ID and a longer one not');
  t.equal(table.size, 1000);
});
