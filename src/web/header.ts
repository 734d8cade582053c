import type { CloseInfo, FeedStatus } from '../client/index.js';
import { ApiError } from './api.js';
import type { Delay } from './delay.js';
import { byId } from './dom.js';
import type { Format } from '../lib/encodings.js';

const FORMAT_NAMES: Record<Format, string> = { proto: 'protobuf', json: 'JSON' };
/** The server's close code for a revoked API key. */
const REVOKED = 4003;
const DELAY_EVERY_MS = 500;

const why = (err: unknown) => (err instanceof Error ? err.message : String(err));

function pill(el: HTMLElement, state: string, text: string): void {
  el.dataset.state = state;
  el.textContent = text;
}

/** The header's pills (socket, feed, delay) and the notice line under it. */
export class Header {
  private readonly conn = byId('conn');
  private readonly feedPill = byId('feed');
  private readonly delayPill = byId('delay');
  private readonly notice = byId('notice');

  /** Shows the delay's median every DELAY_EVERY_MS rather than per frame. */
  constructor(delay: Delay) {
    setInterval(() => {
      const p50 = delay.p50();
      this.delayPill.textContent = p50 === undefined ? 'delay –' : `delay ${Math.round(p50)} ms`;
    }, DELAY_EVERY_MS);
  }

  connecting(): void {
    pill(this.conn, 'connecting', 'connecting');
  }

  live(format: Format): void {
    pill(this.conn, 'live', `live · ${FORMAT_NAMES[format]}`);
  }

  closed(info: CloseInfo): void {
    if (info.code === REVOKED) pill(this.conn, 'closed', 'key revoked');
    else if (info.reconnectInMs === undefined) pill(this.conn, 'closed', 'closed');
    else pill(this.conn, 'reconnecting', `reconnecting in ${Math.ceil(info.reconnectInMs / 1000)} s`);
  }

  feed(status: FeedStatus): void {
    pill(this.feedPill, status.toLowerCase(), `feed ${status}`);
  }

  say(text: string | undefined): void {
    this.notice.textContent = text ?? '';
    this.notice.hidden = !text;
  }

  /** An error in words; a missing key says how to give one. */
  failed(err: unknown, what = ''): void {
    if (err instanceof ApiError && err.status === 401) this.say(`${err.message}. Open the board with ?key=YOUR_API_KEY in its address.`);
    else this.say(`${what}${why(err)}`);
  }
}
