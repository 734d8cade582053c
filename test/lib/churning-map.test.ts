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
