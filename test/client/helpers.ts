/**
 * Shared by the client tests: a client on the `ws` package, waiting for its
 * events, and a TCP relay whose connections a test can cut, as a network
 * would. Not a test file itself: tap only runs `*.test.js`.
 */
import { createServer, connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import type { Test } from 'tap';
import { OddsClient } from '../../src/client/index.js';
import type { ClientEvents, ClientOptions } from '../../src/client/index.js';
import type { SocketLike } from '../../src/client/types.js';
import type { ServerMessage } from '../../src/odds/messages.js';

export const wsUrl = (httpUrl: string): string => httpUrl.replace(/^http/, 'ws') + '/ws';

export interface Watched {
  client: OddsClient;
  /** Every frame received, in order, across connections. */
  frames: ServerMessage[];
  /** Stops failing the test on the client's `error` events, for a test that provokes them. */
  allowErrors(): void;
}

/** A client with fast reconnects, closed when the test ends; connected unless told otherwise. */
export function startClient(t: Test, options: Omit<ClientOptions, 'WebSocket'>, connectNow = true): Watched {
  const client = new OddsClient({ backoff: { minMs: 50, maxMs: 400 }, ...options, WebSocket });
  const frames: ServerMessage[] = [];
  client.on('message', (m) => frames.push(m));
  const allowErrors = client.on('error', (err) => t.fail(`undecodable frame: ${err.message}`));
  t.teardown(() => client.close());
  if (connectNow) client.connect();
  return { client, frames, allowErrors };
}

/** The next time `name` is emitted with arguments that `match`, within `ms`. */
export function next<K extends keyof ClientEvents>(client: OddsClient, name: K, match: (...args: ClientEvents[K]) => boolean = () => true, ms = 10_000): Promise<ClientEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no ${String(name)} event within ${ms} ms`));
    }, ms);
    const off = client.on(name, (...args) => {
      if (!match(...args)) return;
      clearTimeout(timer);
      off();
      resolve(args);
    });
  });
}

/** Polls until `ok` holds or `ms` pass; returns whether it held. */
export async function until(ok: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

export interface Relay {
  url: string;
  /** Drops every connection through it at once, as a broken network would, and refuses new ones until up(). */
  down(): void;
  up(): void;
  /** Relays new connections to this port from now on, as a load balancer does when a pod is replaced. */
  retarget(port: number): void;
  /** Connections it relayed. */
  readonly connections: number;
}

/** A TCP relay to `port` on this machine; either side closing closes the other. */
export async function relay(t: Test, port: number): Promise<Relay> {
  const open = new Set<Socket>();
  let connections = 0;
  let refusing = false;
  const server = createServer((inbound) => {
    if (refusing) return inbound.destroy();
    connections++;
    const outbound = connect(port, '127.0.0.1');
    for (const s of [inbound, outbound]) {
      open.add(s);
      s.on('error', () => undefined).on('close', () => open.delete(s));
    }
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => {
    for (const s of open) s.destroy();
    return new Promise((ok) => server.close(() => ok(undefined)));
  });
  const { port: own } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${own}`,
    down: () => {
      refusing = true;
      for (const s of open) s.destroy();
    },
    up: () => {
      refusing = false;
    },
    retarget: (to: number) => {
      port = to;
    },
    get connections() {
      return connections;
    },
  };
}

/** A socket the test plays the server on, without a network: `FakeSocket.last` is the one the client made last. */
export class FakeSocket implements SocketLike {
  static last: FakeSocket;
  readonly protocol = 'odds.v1.json';
  binaryType = 'arraybuffer';
  readonly sent: string[] = [];
  private readonly listeners = new Map<string, ((e: any) => void)[]>();
  constructor() {
    FakeSocket.last = this;
  }
  send(data: string | Uint8Array): void {
    this.sent.push(String(data));
  }
  close(): void {}
  addEventListener(type: string, listener: (e: any) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  emit(type: string, e: unknown): void {
    for (const l of this.listeners.get(type) ?? []) l(e);
  }
  frame(msg: unknown): void {
    this.emit('message', { data: JSON.stringify(msg) });
  }
}
