import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { Test } from 'tap';

/** A loopback port that was free a moment ago: for a server to take, or for a connection to be refused. */
export { freePort } from '../../src/lib/free-port.js';

/** A loopback connection by its ports, as seen from the test's end. */
export interface Ports {
  local: number;
  remote: number;
}

export const portsOf = (sock: Socket): Ports => ({ local: sock.localPort ?? 0, remote: sock.remotePort ?? 0 });

/** What the kernel lists of one end of a connection (/proc/net/tcp): its state and its queues in bytes. */
interface End {
  state: number;
  /** Sent and not yet acknowledged by the other end's kernel. */
  unacked: number;
  /** Received and not yet read by the process that owns the end. */
  unread: number;
}

/** Both ends of an IPv4 loopback connection; an end the kernel no longer lists is undefined. */
function ends({ local, remote }: Ports): { mine?: End; theirs?: End } {
  const hex = (port: number) => `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const found: { mine?: End; theirs?: End } = {};
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    // sl local_address rem_address st tx_queue:rx_queue ...
    const [, from, to, st, queues] = line.trim().split(/\s+/);
    if (!queues) continue;
    const [unacked, unread] = queues.split(':').map((q) => parseInt(q, 16));
    const end = { state: parseInt(st, 16), unacked, unread };
    if (from.endsWith(hex(local)) && to.endsWith(hex(remote))) found.mine = end;
    if (from.endsWith(hex(remote)) && to.endsWith(hex(local))) found.theirs = end;
  }
  return found;
}

/**
 * Whether the server at the other end of `sock` has read every byte `sock` wrote: nothing left in
 * this process's buffer, nothing unacknowledged, nothing unread in the server's receive queue. The
 * kernel's own count (Linux), so a test waits for "the server has it" instead of sleeping.
 */
export function readByPeer(sock: Socket): boolean {
  if (sock.writableLength > 0) return false;
  const { mine, theirs } = ends(portsOf(sock));
  return mine?.unacked === 0 && theirs?.unread === 0;
}

const ESTABLISHED = 0x01;
const CLOSE_WAIT = 0x08;

/**
 * Whether the server has closed its end of a connection the test's end closed first: its end is
 * gone, or past CLOSE_WAIT (the state it holds from the test's FIN until the server closes it).
 */
export function closedByPeer(ports: Ports): boolean {
  const { theirs } = ends(ports);
  return theirs === undefined || (theirs.state !== ESTABLISHED && theirs.state !== CLOSE_WAIT);
}

/** A port whose program accepts connections and never answers (another program, a hung proxy); closed when the test ends. */
export async function silentPort(t: Test): Promise<number> {
  const held: Socket[] = [];
  const silent = createServer((s) => held.push(s));
  t.teardown(() => {
    for (const s of held) s.destroy();
    silent.close();
  });
  await new Promise<void>((ok) => silent.listen(0, '127.0.0.1', ok));
  return (silent.address() as AddressInfo).port;
}
