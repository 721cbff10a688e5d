/**
 * What the gateway's handler is given, built once for each place that serves it: `waybill gateway` (its own
 * process, lib/cli/gateway.ts) and the dashboard's /v1 routes (app/v1/[...path]/route.ts), so the two answer
 * alike from the same settings. The upstreams, their keys and the limits are the WAYBILL_GATEWAY_* settings;
 * who may call is the operator token and run tokens (auth.ts). The provider keys never leave the server.
 */
import type { Config } from '../config';
import type { Store } from '../store/contract';
import type { GatewayDeps } from './handler';
import type { PriceTable } from './prices';

export function gatewayDeps(store: Store, cfg: Config, prices: PriceTable, warn: GatewayDeps['warn']): GatewayDeps {
  return { store, settings: cfg, prices, auth: cfg, warn };
}
