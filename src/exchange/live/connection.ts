/**
 * One TLS connection to the stream: bytes in, whole messages out, and one
 * `closed` call with the reason when it ends for any reason (the socket
 * failed or closed, a line was too long or not JSON). A connection that read
 * a bad line is closed, not skipped past: a lost delta would leave the books
 * wrong, and the resume after a reconnect puts them right.
 */
import { isIP } from 'node:net';
import tls from 'node:tls';
import { StreamError } from './errors.js';
import { LineSplitter } from './lines.js';
import { parseLine, type ExchangeMessage } from './protocol.js';

interface ConnectionOptions {
  host: string;
  port: number;
  /** Extra trusted CA certificates (PEM), for a private stream server; the system's are used otherwise. */
  ca?: string | Buffer;
  maxLineBytes: number;
}

interface ConnectionHandlers {
  /** One message, and the bytes of its line. */
  message(msg: ExchangeMessage, bytes: number): void;
  closed(reason: StreamError): void;
}

export class StreamConnection {
  private readonly socket: tls.TLSSocket;
  private readonly lines: LineSplitter;
  private ended = false;

  constructor(opts: ConnectionOptions, private readonly handlers: ConnectionHandlers) {
    this.lines = new LineSplitter(opts.maxLineBytes);
    const where = `${opts.host}:${opts.port}`;
    this.socket = tls.connect({
      host: opts.host,
      port: opts.port,
      // SNI takes host names only; an IP address is checked against the certificate without it.
      servername: isIP(opts.host) ? undefined : opts.host,
      ca: opts.ca === undefined ? undefined : [...tls.rootCertificates, opts.ca.toString()],
    });
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.read(chunk));
    this.socket.on('error', (err: NodeJS.ErrnoException) => this.close(new StreamError('SOCKET', `connection to ${where} failed: ${err.code ? `${err.code} ` : ''}${err.message}`)));
    this.socket.on('close', () => this.close(new StreamError('SOCKET', `the stream server at ${where} closed the connection`)));
  }

  /** Sends one request as a CRLF-ended JSON line. */
  send(request: object): void {
    if (!this.ended) this.socket.write(JSON.stringify(request) + '\r\n');
  }

  /**
   * Stops reading the socket: what the server sends waits in its buffers and the kernel's, and
   * once those are full the server sees this client as slow (the exchange conflates for it).
   */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** Ends the connection now; `closed` is told this reason (unless it was already told another). */
  close(reason: StreamError): void {
    if (this.ended) return;
    this.ended = true;
    this.socket.destroy();
    this.handlers.closed(reason);
  }

  private read(chunk: Buffer): void {
    try {
      this.lines.push(chunk, (line) => {
        if (this.ended) return;
        const msg = parseLine(line);
        if (msg) this.handlers.message(msg, line.length);
      });
    } catch (err) {
      // Only what the server sent is a reason to reconnect; anything else is a bug, and stays loud.
      if (!(err instanceof StreamError)) throw err;
      this.close(err);
    }
  }
}
