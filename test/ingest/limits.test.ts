/**
 * The bounds a publisher connection keeps, as the /ingest handshake announces them and a
 * publisher reads them back: every bound or none, positive whole numbers only.
 */
import t from 'tap';
import { LIMIT_HEADERS, limitHeaders, readLimits, type IngestLimits } from '../../src/ingest/limits.js';

const LIMITS: IngestLimits = { maxInFlight: 128, queueBytes: 8 << 20, keyQueueBytes: 32 << 20, maxItems: 5000, maxMessageBytes: 1 << 20 };

t.test('announced and read back the same', async (t) => {
  const headers = new Map(limitHeaders(LIMITS));
  t.same([...headers.keys()], Object.values(LIMIT_HEADERS), 'one header a bound');
  t.same(readLimits((name) => headers.get(name)), LIMITS);
});

t.test('a service that says nothing, or says it badly, announced no bounds: one missing or bad spoils them all', async (t) => {
  t.equal(readLimits(() => undefined), undefined);
  for (const bad of ['0', '-1', '1.5', '01', 'x', '', '1e3', '9'.repeat(16)]) {
    const headers = new Map(limitHeaders(LIMITS));
    headers.set(LIMIT_HEADERS.maxItems, bad);
    t.equal(readLimits((name) => headers.get(name)), undefined, JSON.stringify(bad));
  }
  const partial = new Map(limitHeaders(LIMITS));
  partial.delete(LIMIT_HEADERS.queueBytes);
  t.equal(readLimits((name) => partial.get(name)), undefined, 'a bound missing');
});
