/**
 * What the gateway serves: a route per API call, each with where it goes upstream, what it sends there in
 * place of the sandbox's credentials, and how its usage is read (usage.ts). openai.ts and anthropic.ts
 * declare them; this is the shape they share.
 */
import type { Config } from '../config';
import type { ModelApi } from '../store/contract';
import type { SseEvent } from './sse';

export type GatewaySettings = Pick<
  Config,
  | 'WAYBILL_GATEWAY_OPENAI_URL'
  | 'WAYBILL_GATEWAY_OPENAI_KEY'
  | 'WAYBILL_GATEWAY_ANTHROPIC_URL'
  | 'WAYBILL_GATEWAY_ANTHROPIC_KEY'
  | 'WAYBILL_GATEWAY_TIMEOUT_MS'
  | 'WAYBILL_GATEWAY_LEASE_MS'
  // What lib/control's pause is handed when a run's budget is reached (budget.ts).
  | 'WAYBILL_CLAIM_TTL_MS'
  | 'WAYBILL_MAX_BODY_BYTES'
>;

export type Json = Record<string, unknown>;

/**
 * A model request with images in it is large, but not without bound. The dashboard's guard in front of Next
 * (lib/launch/http-guard.mjs) lets a /v1 body this large through to the gateway's own check.
 */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;

export interface GatewayRoute {
  /** The path a client posts to, as its SDK makes it from `baseURL`. */
  path: string;
  api: ModelApi;
  upstreamUrl(settings: GatewaySettings): string;
  /** The provider's key and the headers its API reads, from the client's request minus its credentials. */
  upstreamHeaders(settings: GatewaySettings, incoming: Headers): Record<string, string>;
  /** The body sent upstream: the client's, with what the ledger needs to count a stream. */
  upstreamBody(body: Json): Json;
  /**
   * Which events of a stream the client is given, by its own request (record.ts, live and replayed): null, or
   * no such rule, for all of them. What upstreamBody added for the ledger, the client did not ask for.
   */
  clientEvents?(body: Json): ((event: SseEvent) => boolean) | null;
}

/** The headers of an answer kept with it and given back on a replay: what a client reads. */
export const KEPT_HEADERS = ['content-type', 'x-request-id', 'request-id', 'openai-model'];
