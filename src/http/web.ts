import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { extname } from 'node:path';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { HostPolicy } from './host.js';
import { endHead, endPaced, sendError } from './request.js';
import { framingError, refuseFraming } from './framing.js';

/** dist/web/, which `npm run build` writes; this file runs from dist/src/http/. */
const WEB = new URL('../../web/', import.meta.url);

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * The page loads nothing but its own files and talks to nothing but this
 * origin. 'wasm-unsafe-eval' (WebAssembly only, never script text): the
 * protobuf runtime's 64-bit integers (the `long` package) compile a tiny
 * WebAssembly module at load; refused, they fall back to plain JavaScript,
 * but some browsers log the refusal as a console error.
 */
const POLICY = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

type Headers = readonly (readonly [string, string])[];

/** `head`: the headers a GET would have, its body's length, no body. */
function reply(res: HttpResponse, status: string, headers: Headers, body: Buffer | undefined, head: boolean): void {
  res.cork(() => {
    res.writeStatus(status);
    for (const [name, value] of headers) res.writeHeader(name, value);
    if (head && body) endHead(res, body.byteLength, false);
    else if (body) endPaced(res, body, false);
    else res.end();
  });
}

function read(path: string): Buffer {
  try {
    return readFileSync(new URL(path, WEB));
  } catch {
    throw new Error(`dist/web/${path} is missing: build the board with npm run build`);
  }
}

/**
 * The odds board: `GET /` and its assets, read from dist/web/ once, here, and
 * answered from memory. Asset names carry a hash of their content, so they are
 * cached for good; the page itself is revalidated (its ETag makes that a 304).
 * Anything else under /assets/ is left to the router's 404. The page needs no
 * key: it holds no data, and asks for it with the key it is given. Like every
 * route it answers only to the service's own names (`hosts`).
 */
export function registerWeb(app: TemplatedApp, hosts: HostPolicy): void {
  /** True when answered: a request framed two ways gets the 400, a Host the service does not answer to the 421. */
  const refused = (res: HttpResponse, req: HttpRequest, head: boolean): boolean => {
    const bad = framingError(req);
    if (bad) refuseFraming(res, bad);
    const no = bad ? undefined : hosts.refusal(req.getHeader('host'));
    if (no) sendError(res, no, false, head);
    return bad !== undefined || no !== undefined;
  };
  /** GET and HEAD alike. */
  const both = (path: string, handler: (res: HttpResponse, req: HttpRequest, head: boolean) => void): void => {
    app.get(path, (res, req) => handler(res, req, false));
    app.head(path, (res, req) => handler(res, req, true));
  };
  const page = read('index.html');
  const etag = `"${createHash('sha256').update(page).digest('base64url').slice(0, 27)}"`;
  const pageHeaders: Headers = [
    ['content-type', TYPES['.html']], ['cache-control', 'no-cache'], ['etag', etag], ['content-security-policy', POLICY],
    // The page's address may carry ?key=.
    ['referrer-policy', 'no-referrer'], ['x-content-type-options', 'nosniff'],
  ];
  both('/', (res, req, head) => {
    if (refused(res, req, head)) return;
    if (req.getHeader('if-none-match') === etag) reply(res, '304 Not Modified', pageHeaders, undefined, head);
    else reply(res, '200 OK', pageHeaders, page, head);
  });
  for (const name of readdirSync(new URL('assets/', WEB))) {
    const body = read(`assets/${name}`);
    const headers: Headers = [
      ['content-type', TYPES[extname(name)] ?? 'application/octet-stream'],
      ['cache-control', 'public, max-age=31536000, immutable'], ['x-content-type-options', 'nosniff'],
    ];
    both(`/assets/${name}`, (res, req, head) => {
      if (!refused(res, req, head)) reply(res, '200 OK', headers, body, head);
    });
  }
}
