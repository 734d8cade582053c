/**
 * What the kernel lets a TCP socket hold unsent, read from /proc (the service says so when it
 * starts): a bound in bytes, or 0 when unbounded, unreadable or not a number.
 */
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { notsentLowat } from '../../src/lib/kernel.js';

t.test('a bound, or 0 for none', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kernel-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'tcp_notsent_lowat');
  const read = (text: string) => (writeFileSync(file, text), notsentLowat(file));
  t.equal(read('131072\n'), 131072);
  t.equal(read('4294967295\n'), 0, 'the kernel\'s default: unbounded');
  t.equal(read('0\n'), 0);
  t.equal(read('garbage'), 0);
  t.equal(notsentLowat(join(dir, 'missing')), 0, 'not Linux, or no /proc');
});
