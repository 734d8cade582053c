/**
 * The record's own Postgres frozen with SIGSTOP (a hung host, a stalled disk) while clients read
 * the record: no read hangs. Each is refused with why within its bound, more readers than the
 * record's share included, a client that hangs up meanwhile too; once Postgres thaws, reads are
 * answered again, as many as before: no turn of the share was lost to a read that never ended.
 */
import t from 'tap';
import { http, startTestService } from '../helpers/service.js';
import { ownPostgres } from '../faults/own-postgres.js';
import { sqlClient } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { readByPeer } from '../helpers/net.js';
import { connect } from 'node:net';

const own = await ownPostgres(t);
// Twenty seconds a statement, two to connect: a frozen read is refused after these, and the reads held by a lock below
// have the twenty seconds to be seen waiting, on a machine however busy.
const svc = await startTestService(t, { RECORD: 'on', RECORD_DATABASE_URL: own.url, PG_STATEMENT_TIMEOUT_MS: '20000', PG_CONNECT_TIMEOUT_MS: '2000' });
const MID = '1.9901';
const path = `/api/v1/record/changes?mid=${MID}&from=${Date.now() - 60_000}&to=${Date.now()}`;
/** The record's share of its own pool: reads at once. */
const SHARE = 4;
/** More than the share: some wait for a turn, some read. */
const READERS = 6;

const read = async () => {
  const r = await http<{ status?: number; message?: string; changes?: unknown[] }>(svc.url, path);
  return { status: r.status, message: r.body.message };
};

t.test('reads while the record\'s Postgres is frozen are refused with why, none hangs, and all are answered once it thaws', async (t) => {
  t.equal((await read()).status, 200, 'a read is answered before the freeze');
  own.freeze();
  // A client that asks and hangs up once its read is under way (the server has read its request): its turn must come back.
  const { port } = new URL(svc.url);
  const sock = connect(Number(port), '127.0.0.1');
  sock.on('error', () => undefined);
  await new Promise((resolve) => sock.once('connect', resolve));
  sock.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
  await waitFor(() => readByPeer(sock), 'the server read the request of the client that hangs up');
  sock.destroy();
  const frozen = Array.from({ length: READERS }, () => read());
  // Bounded by the runner's file timeout, not here: a read that hung would fail the file by name.
  const answers = await Promise.all(frozen);
  t.same(answers.filter((a) => a.status !== 503), [], `every one of ${READERS} reads refused 503 while frozen: ${JSON.stringify(answers)}`);
  t.ok(answers.every((a) => typeof a.message === 'string' && a.message.length > 0), 'each saying why');
  own.thaw();
  // The complete mark's table held, which every read reads first: each read waits on it holding its turn, so the turns in use can be counted.
  const locker = await sqlClient(t, own.url);
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE record_complete IN ACCESS EXCLUSIVE MODE');
  // Asked on a connection of its own: inside the locker's transaction pg_stat_activity would show the moment it was first read.
  const watcher = await sqlClient(t, own.url);
  const waiting = async () => Number((await watcher.query<{ n: number }>(
    `SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE 'select at from record_complete%'`)).rows[0].n);
  const held = Array.from({ length: SHARE }, () => read());
  await waitFor(async () => (await waiting()) === SHARE, `all ${SHARE} turns of the share reading: none kept by a read that never ended`);
  await locker.query('ROLLBACK');
  const after = await Promise.all(held);
  t.same(after.map((a) => a.status), Array(SHARE).fill(200), `every read answered after the thaw: ${JSON.stringify(after)}`);
});
