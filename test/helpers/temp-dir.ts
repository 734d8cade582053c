import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';

/** A temporary folder the `postgres` user can enter (the embedded server runs as it when tests run as root), removed when the test ends. */
export async function tempDir(t: Test, mode = 0o755): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'odds-cli-'));
  await chmod(dir, mode);
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
