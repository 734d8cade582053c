import { createServer } from 'node:net';

/** A loopback port that was free a moment ago: for a server to take, or for a connection to be refused. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  const { port } = srv.address() as { port: number };
  await new Promise((ok) => srv.close(ok));
  return port;
}
