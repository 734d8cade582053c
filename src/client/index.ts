/**
 * The odds feed client for browsers and Node, exported as `odds-service/client` and built
 * on its own as the package `odds-service-client` (client/). It uses
 * no Node-only API; in Node 20, pass the `ws` package's WebSocket:
 *
 *   import WebSocket from 'ws';
 *   import { OddsClient } from 'odds-service/client';
 *   const client = new OddsClient({ url: 'ws://127.0.0.1:8080/ws', WebSocket });
 *   client.on('odds', (frame) => console.log(frame.mid, frame.seq));
 *   client.connect();
 *   await client.subscribe({ mids: ['1.200001001'] });
 */
export { MAX_FRAME_BYTES, MAX_MARKETS, OddsClient } from './client.js';
export type { ClientEvents, ClientOptions, CloseInfo, SocketConstructor, SocketLike } from './types.js';
export { MarketBook, PAST_EPOCHS, type ReceiptDelay } from './market-book.js';
export { RESYNC } from './resyncs.js';
export type { FreshnessReason, MarketFreshness } from './freshness.js';
export { Emitter } from './emitter.js';
export { AGE_SINCE_MS, formatAge, formatVolume } from './format.js';
export { TermsBook, settlementOf, type RunnerRemoval, type Settlement, type Voided, type Winner } from './terms.js';
export { reduce, WIN_MINIMUM_FACTOR, type Reduced } from './reduction.js';
export { checkBet, type BetAnswer, type Side } from './bet-check.js';
export { RefusedError, type Removal, type Subscription } from './subscribes.js';
export type {
  AckMessage, DeltaMessage, FeedMessage, FeedStatus, FreshnessMessage, HeartbeatMessage, Level, MarketStateMessage, MarketStatus, OddsMessage, PriceSize,
  ResultMessage, RunnerDelta, RunnerOdds, RunnerStatus, ServerMessage, Since, StaleReason, UnsubscribedMessage, WireRunnerSettlement, WireRunnerTerms,
  WireSettlement, WireTerms,
} from '../odds/messages.js';
