/**
 * Shared by the board tests: Debian's Chromium driven by playwright-core, a
 * tab that records its console errors and sockets and is reloaded rather than
 * replaced between tests, and the board read back as plain data. Not a test
 * file itself: tap only runs `*.test.js`.
 */
import { existsSync } from 'node:fs';
import type { Test } from 'tap';
import { chromium, type Browser, type Page, type WebSocket } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = (): boolean => existsSync(CHROMIUM);

/** Everything Chromium would fetch on its own (updates, sync, field trials) is off: nothing may load from the internet. `args`: more switches. */
export function launch(args: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', ...args],
  });
}

export interface Opened {
  page: Page;
  /** Console errors and uncaught exceptions since the last load, as text. */
  errors: string[];
  /** Every socket the page opened since its last load. */
  sockets: WebSocket[];
  /** Every URL the page requested since its last load. */
  requests: string[];
}

/** A blank page in a context of its own, closed when `t` ends; `visit` loads it. */
export async function newPage(t: Test, browser: Browser): Promise<Opened> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // A bound, not a pace: chromium starved on a busy CI machine once took more than Playwright's 30 s to answer a textContent.
  context.setDefaultTimeout(120_000);
  t.teardown(() => context.close());
  const page = await context.newPage();
  const opened: Opened = { page, errors: [], sockets: [], requests: [] };
  page.on('console', (m) => {
    if (m.type() === 'error') opened.errors.push(m.text());
  });
  page.on('pageerror', (err) => opened.errors.push(err.message));
  page.on('websocket', (ws) => opened.sockets.push(ws));
  page.on('request', (r) => opened.requests.push(r.url()));
  return opened;
}

/**
 * Loads `url` afresh in the page, as a user's reload would: its errors, sockets and requests are
 * emptied first, so they are this load's. A new page costs Chromium a renderer; a reload does not.
 */
export async function visit(opened: Opened, url: string): Promise<Opened> {
  for (const list of [opened.errors, opened.sockets, opened.requests]) list.length = 0;
  await opened.page.goto(url);
  return opened;
}

/** Loads `url` unless the page already shows it: for tests that only read a live board. */
export async function showing(opened: Opened, url: string): Promise<Opened> {
  return opened.page.url() === url ? opened : visit(opened, url);
}

export interface ShownBook {
  mid: string;
  state: string;
  badge: string;
  /** Each runner's row: its name, then each cell's price and size as shown. */
  rows: string[][];
}

/** The books on the board, in screen order, as the reader sees them. */
export function board(page: Page): Promise<ShownBook[]> {
  return page.$$eval('.book', (books) => books.map((b) => ({
    mid: (b as HTMLElement).dataset.mid ?? '',
    state: (b as HTMLElement).dataset.state ?? '',
    badge: b.querySelector('.badge')?.textContent ?? '',
    rows: [...b.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((c) => [...c.childNodes].map((n) => n.textContent).join(' ').trim())),
  })));
}

/** Waits until the book of `mid` is in `state` (its `data-state`). */
export async function bookState(page: Page, mid: string, state: string, timeout = 30_000): Promise<void> {
  await page.waitForSelector(`.book[data-mid="${mid}"][data-state="${state}"]`, { timeout });
}
