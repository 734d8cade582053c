import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { uwsBuild } from './uws.js';

const uws = uwsBuild.lib;

export function createApp(): TemplatedApp {
  return uws.App();
}

/**
 * Listens with an exclusive port: uWS otherwise sets SO_REUSEPORT, and a
 * second process on the same port would silently take half the connections.
 */
const EXCLUSIVE_PORT = (uws as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;
type ListenWithOptions = (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => void;

export function listen(app: TemplatedApp, host: string, port: number): Promise<{ socket: us_listen_socket; port: number }> {
  return new Promise((resolve, reject) => {
    // The published typings lack this overload; the native binding has it.
    (app.listen as unknown as ListenWithOptions).call(app, host, port, EXCLUSIVE_PORT, (socket) => {
      if (!socket) return reject(new Error(`cannot listen on ${host}:${port}: the port is taken or the address is not available`));
      resolve({ socket, port: uws.us_socket_local_port(socket as never) });
    });
  });
}

export function closeListen(socket: us_listen_socket): void {
  uws.us_listen_socket_close(socket);
}
