import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Where ports are picked when the kernel's own range leaves room below it: above the usual development servers' ports. */
const LOWEST = 20_000;
const TRIES = 20;

/**
 * The first port of the kernel's range for the local ends of outgoing connections
 * (`net.ipv4.ip_local_port_range`); 32768, the kernel's default, where it cannot be read.
 */
export function outgoingPortsFrom(path = '/proc/sys/net/ipv4/ip_local_port_range'): number {
  try {
    const first = Number(readFileSync(path, 'utf8').trim().split(/\s+/)[0]);
    return Number.isSafeInteger(first) && first > 0 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

/** One bind of `host:port`, at once let go: the port taken (0 asks the kernel for one), or why not. */
function tryBind(host: string, port: number): Promise<{ port: number } | { refused: string }> {
  return new Promise((ok) => {
    const srv = createServer();
    srv.once('error', (err: NodeJS.ErrnoException) => ok({ refused: err.code ?? err.message }));
    srv.listen(port, host, () => {
      const taken = (srv.address() as { port: number }).port;
      srv.close(() => ok({ port: taken }));
    });
  });
}

/** Whether a server could take this loopback port just now (0: any, and which). */
export async function bindable(port: number): Promise<number | undefined> {
  const r = await tryBind('127.0.0.1', port);
  return 'port' in r ? r.port : undefined;
}

/**
 * Why a server could not take `host:port` just now: the bind's error code (EADDRINUSE: another
 * process holds it; EADDRNOTAVAIL: no such address here; EACCES), or undefined when it could.
 */
export async function bindRefusal(host: string, port: number): Promise<string | undefined> {
  const r = await tryBind(host, port);
  return 'refused' in r ? r.refused : undefined;
}

/**
 * A loopback port that was free a moment ago, for a server (Postgres, NATS) to take. It is picked
 * at random below the kernel's range for outgoing connections: a port the kernel handed out
 * (listening on port 0) lies in that range, where any connection opened meanwhile on the machine
 * may take it before the server binds it (seen on a busy test run: Postgres refused to start,
 * "Address already in use"). Random, so two processes picking at once rarely agree. The kernel's
 * own pick where its range leaves no room below.
 */
export async function freePort(random: () => number = Math.random, from = outgoingPortsFrom(), canBind = bindable): Promise<number> {
  for (let i = 0; from > LOWEST + TRIES && i < TRIES; i++) {
    const port = LOWEST + Math.floor(random() * (from - LOWEST));
    if (await canBind(port)) return port;
  }
  const any = await canBind(0);
  if (any === undefined) throw new Error('no loopback port could be bound');
  return any;
}
