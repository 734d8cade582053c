import { runsAsTool } from './fresh.js';
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { ROLES, createKey, loadKeys, revokeKey, type Role } from '../auth/keys.js';
import { changeKey } from '../auth/key-change.js';
import { UsageError, parseCommandLine, refuseStart } from './args.js';
import { openDatabase } from './database.js';

/** How long create and revoke wait for the running services to confirm that they hold the change. */
const CONFIRM_MS = 10_000;

const USAGE = `usage: npm run key -- create --client NAME --role ${ROLES.join('|')} [--name TEXT]
       npm run key -- list
       npm run key -- revoke KEY_ID

Manages the API keys used with AUTH=on, in DATABASE_URL's database. When that is unset:
the embedded Postgres in EMBEDDED_PG_DIR (default .data/pg) that the running service holds,
or, with no service running, one started for the command and stopped after it (list and
revoke make none where there is none). Each command names the database on stderr. A new key
is printed once: only a hash of it is stored. create and revoke return once every running
service has confirmed the change (a new key works, a revoked one is refused, on every pod);
exit 1 if one did not confirm within ${CONFIRM_MS / 1000} s, naming how many.`;

type Command = { op: 'create'; client: string; role: Role; name: string } | { op: 'list' } | { op: 'revoke'; id: string } | { op: 'help' };

function parseCommand(argv: string[]): Command {
  const parsed = parseCommandLine(argv, ['client', 'role', 'name']);
  if (parsed.help) return { op: 'help' };
  const [op, ...rest] = parsed.positionals;
  const { client, role, name } = parsed.options;
  if (op === 'create' && rest.length === 0) {
    if (!client || !/^[A-Za-z0-9._-]{1,64}$/.test(client)) throw new UsageError('--client must be 1 to 64 letters, digits, . _ or -');
    if (!(ROLES as readonly string[]).includes(role ?? '')) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
    return { op, client, role: role as Role, name: name ?? '' };
  }
  if (op === 'list' && rest.length === 0) return { op };
  if (op === 'revoke' && rest.length === 1 && /^[0-9a-f]{12}$/.test(rest[0])) return { op, id: rest[0] };
  throw new UsageError(op === 'revoke' ? 'revoke takes one key ID (12 hex digits, as `list` shows)' : 'expected create, list or revoke');
}

async function main(argv: string[]): Promise<number> {
  const out = (line: string) => process.stdout.write(line + '\n');
  const err = (line: string) => process.stderr.write(line + '\n');
  let cmd: Command;
  let config;
  try {
    cmd = parseCommand(argv);
    if (cmd.op === 'help') {
      out(USAGE);
      return 0;
    }
    config = loadConfig();
  } catch (e) {
    return refuseStart('key', USAGE, e);
  }
  const log = createLogger('warn', config.logPretty, (l) => process.stderr.write(l));
  let db;
  try {
    db = await openDatabase(config, log, 'key', cmd.op === 'create');
  } catch (e) {
    err(`key: ${(e as Error).message}`);
    return 1;
  }
  err(`key: database: ${db.where}`);
  /** 1 when a running service has not confirmed the change yet: it applies it once it reloads its keys. */
  const confirmed = (unconfirmed: number): number => {
    if (!unconfirmed) return 0;
    err(`key: ${unconfirmed} running service${unconfirmed > 1 ? 's' : ''} did not confirm the change within ${CONFIRM_MS / 1000} s; each applies it once it reloads its keys (at the latest when its database listener reconnects)`);
    return 1;
  };
  try {
    if (cmd.op === 'create') {
      const { client, role, name } = cmd;
      const { result: { id, token }, unconfirmed } = await changeKey(db.pool, (c) => createKey(c, client, role, name), (k) => k.id, CONFIRM_MS);
      err(`created key ${id} for client ${client} with role ${role}; it is shown only this once:`);
      out(token);
      return confirmed(unconfirmed);
    }
    if (cmd.op === 'list') {
      out(['id', 'client', 'role', 'created', 'revoked', 'name'].join('\t'));
      for (const k of await loadKeys(db.pool)) {
        out([k.id, k.client, k.role, k.createdAt.toISOString(), k.revokedAt?.toISOString() ?? '-', k.name].join('\t'));
      }
      return 0;
    }
    const { id } = cmd;
    const { result: revoked, unconfirmed } = await changeKey(db.pool, (c) => revokeKey(c, id), (done) => (done ? id : undefined), CONFIRM_MS);
    if (!revoked) {
      err(`key: no live key ${id}`);
      return 1;
    }
    out(`revoked key ${id}`);
    return confirmed(unconfirmed);
  } finally {
    await db.close();
  }
}

if (runsAsTool(import.meta.url)) {
  process.exit(await main(process.argv.slice(2)));
}
