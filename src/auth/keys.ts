import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';

export const ROLES = ['subscriber', 'publisher', 'admin'] as const;
export type Role = (typeof ROLES)[number];

interface KeyRow {
  id: string;
  client: string;
  role: Role;
  hash: Buffer;
  name: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** `ok_<12 hex id>_<43 base64url chars of secret>`: the id finds the row, the secret proves possession. */
const TOKEN = /^ok_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;

export function parseToken(token: string): { id: string; secret: string } | undefined {
  const m = TOKEN.exec(token);
  return m ? { id: m[1], secret: m[2] } : undefined;
}

export const hashSecret = (secret: string): Buffer => createHash('sha256').update(secret).digest();

/** Creates a key for a client (created too if new) and returns the token: the only time it is ever shown. */
export async function createKey(pool: Pick<pg.Pool, 'query'>, client: string, role: Role, name = ''): Promise<{ id: string; token: string }> {
  const id = randomBytes(6).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  await pool.query('INSERT INTO clients (id) VALUES ($1) ON CONFLICT DO NOTHING', [client]);
  await pool.query('INSERT INTO api_keys (id, client_id, role, hash, name) VALUES ($1, $2, $3, $4, $5)', [id, client, role, hashSecret(secret), name]);
  return { id, token: `ok_${id}_${secret}` };
}

export async function revokeKey(pool: Pick<pg.Pool, 'query'>, id: string): Promise<boolean> {
  const r = await pool.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [id]);
  return (r.rowCount ?? 0) > 0;
}

export async function loadKeys(pool: Pick<pg.Pool, 'query'>, ids?: string[]): Promise<KeyRow[]> {
  const { rows } = await pool.query(
    `SELECT id, client_id AS client, role, hash, name, created_at AS "createdAt", revoked_at AS "revokedAt"
       FROM api_keys${ids ? ' WHERE id = ANY($1)' : ''} ORDER BY created_at, id`,
    ids ? [ids] : [],
  );
  return rows as KeyRow[];
}
