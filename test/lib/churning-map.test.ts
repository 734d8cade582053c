/** A cache's map, copied into a fresh Map now and then: it answers as one Map would, through every copy. */
import t from 'tap';
import { ChurningMap } from '../../src/lib/churning-map.js';

t.test('keys set, replaced and deleted across many copies read as in a plain Map', async (t) => {
  const churning = new ChurningMap<string, number>();
  const plain = new Map<string, number>();
  // A cache's pattern: a new key each time, the oldest dropped once 100 are held, some replaced.
  for (let i = 0; i < 5000; i++) {
    for (const m of [churning, plain]) {
      m.set(`k${i}`, i);
      if (i % 7 === 0) m.set(`k${i - 3}`, -i);
      if (i >= 100) m.delete(`k${i - 100}`);
    }
  }
  t.equal(churning.size, plain.size);
  for (let i = 0; i < 5000; i++) {
    t.equal(churning.get(`k${i}`), plain.get(`k${i}`), `k${i}`);
    t.equal(churning.has(`k${i}`), plain.has(`k${i}`));
  }
  t.equal(churning.delete('k4999'), true);
  t.equal(churning.delete('k4999'), false);
  churning.clear();
  t.equal(churning.size, 0);
  t.equal(churning.get('k4998'), undefined);
});

t.test('its table is a fresh Map from the 1,024th set on, never sooner: what it is for', async (t) => {
  const m = new ChurningMap<number, number>();
  const table = () => (m as unknown as { map: Map<number, number> }).map;
  const first = table();
  for (let i = 0; i < 1023; i++) m.set(i % 10, i);
  t.equal(table(), first, 'the same table through 1,023 sets');
  m.set(10, 1023);
  t.not(table(), first, 'a new one at the 1,024th');
  t.same([...Array(11).keys()].map((k) => m.get(k)), [1020, 1021, 1022, 1013, 1014, 1015, 1016, 1017, 1018, 1019, 1023], 'holding what the old one did');
});
