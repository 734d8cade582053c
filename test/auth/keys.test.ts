/**
 * API keys over a fake of the pool's `query`: a token is `ok_<id>_<secret>`, shown once; only its
 * secret's hash is stored; a token of any other form is not a key; revoking says whether there
 * was a live key to revoke.
 */
import t from 'tap';
import { createKey, hashSecret, parseToken, revokeKey } from '../../src/auth/keys.js';

/** What a pool was asked, and the row count it answers. */
function fakePool(rowCount = 1) {
  const asked: { sql: string; params: unknown[] }[] = [];
  return { asked, query: async (sql: string, params: unknown[] = []) => (asked.push({ sql, params }), { rows: [], rowCount }) };
}

t.test('a new key: a token of the known form, its secret stored only as a hash, the client made if new', async (t) => {
  const pool = fakePool();
  const { id, token } = await createKey(pool as never, 'acme', 'publisher', 'feed 1');
  const parsed = parseToken(token);
  t.ok(parsed, token);
  t.equal(parsed!.id, id);
  t.match(pool.asked[0], { sql: /INSERT INTO clients .* ON CONFLICT DO NOTHING/, params: ['acme'] });
  const stored = pool.asked[1].params;
  t.same(stored.slice(0, 3), [id, 'acme', 'publisher']);
  t.same(stored[3], hashSecret(parsed!.secret), 'the hash of the secret');
  t.notOk(JSON.stringify(pool.asked).includes(parsed!.secret), 'never the secret itself');
  t.not((await createKey(pool as never, 'acme', 'publisher')).token, token, 'each key its own');
});

t.test('anything not of the form ok_<12 hex>_<43 base64url> is not a token', async (t) => {
  const secret = 'a'.repeat(43);
  t.same(parseToken(`ok_0123456789ab_${secret}`), { id: '0123456789ab', secret });
  for (const bad of [`ok_0123456789AB_${secret}`, `ok_0123456789a_${secret}`, `ok_0123456789ab_${secret}x`, `xx_0123456789ab_${secret}`, `ok_0123456789ab_${'a'.repeat(42)}+`, '']) t.equal(parseToken(bad), undefined, bad);
});

t.test('revoking says whether a live key was revoked', async (t) => {
  t.equal(await revokeKey(fakePool(1) as never, 'k'), true);
  t.equal(await revokeKey(fakePool(0) as never, 'k'), false, 'none, or revoked already');
});
