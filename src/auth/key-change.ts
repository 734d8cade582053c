import type pg from 'pg';
import { LISTENER_NAME } from '../db/listen.js';
import { holdClient } from '../db/pool.js';

/**
 * Where a running service says that its auth holds a key's change: sent from
 * its LISTEN connection once the reload the change's NOTIFY asked for is done,
 * with the key ID as payload.
 */
export const KEY_APPLIED = 'key_applied';

/** How often the services still awaited are looked up again, to stop waiting for one that went away. */
const POLL_MS = 100;

export interface KeyChange<T> {
  result: T;
  /** Running services that had not confirmed the change when the wait ended. */
  unconfirmed: number;
}

/** The backend pids of the services' LISTEN connections on this database. */
async function services(db: pg.PoolClient): Promise<number[]> {
  const { rows } = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()', [LISTENER_NAME]);
  return rows.map((r) => r.pid);
}

/**
 * Makes a change to an API key (`change`, committed when it resolves) and
 * waits, up to `timeoutMs`, until every service running on the database holds
 * it: each answers on KEY_APPLIED from its LISTEN connection, whose backend
 * pid Postgres puts on the notification. The services are those connections
 * as they stand after the commit; one that goes away meanwhile is waited for
 * no more (it reloads every key when it reconnects). So a key command that
 * says it succeeded has been applied by every service it could reach: a new
 * key works, a revoked one is refused, on every pod, from then on.
 */
export async function changeKey<T>(pool: pg.Pool, change: (db: pg.PoolClient) => Promise<T>, idOf: (result: T) => string | undefined, timeoutMs: number): Promise<KeyChange<T>> {
  const db = await pool.connect();
  // Held: a connection lost while waiting fails the statement under way, and is not reused.
  const held = holdClient(db);
  /** Pids that confirmed, by key ID: a confirmation may arrive before the change's own answer is read. */
  const confirmed = new Map<string, Set<number>>();
  let wake = (): void => undefined;
  const heard = (n: pg.Notification): void => {
    if (n.channel !== KEY_APPLIED || !n.payload) return;
    let pids = confirmed.get(n.payload);
    if (!pids) confirmed.set(n.payload, (pids = new Set()));
    pids.add(n.processId);
    wake();
  };
  db.on('notification', heard);
  try {
    await db.query(`LISTEN ${KEY_APPLIED}`);
    const result = await change(db);
    const id = idOf(result);
    if (id === undefined) return { result, unconfirmed: 0 };
    let awaited = await services(db);
    const end = Date.now() + timeoutMs;
    for (;;) {
      awaited = awaited.filter((pid) => !confirmed.get(id)?.has(pid));
      const left = end - Date.now();
      if (!awaited.length || left <= 0) return { result, unconfirmed: awaited.length };
      await new Promise<void>((ok) => {
        const timer = setTimeout(ok, Math.min(left, POLL_MS));
        wake = () => {
          clearTimeout(timer);
          ok();
        };
      });
      const running = new Set(await services(db));
      awaited = awaited.filter((pid) => running.has(pid));
    }
  } finally {
    db.off('notification', heard);
    if (!held.lost) await db.query('UNLISTEN *').catch(() => undefined);
    held.release();
  }
}
