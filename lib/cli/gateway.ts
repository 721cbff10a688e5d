/**
 * `waybill gateway`: the model gateway (lib/gateway/) on WAYBILL_GATEWAY_HOST:PORT until SIGTERM or SIGINT.
 * Flags only override the settings; the price table is read and the listen address checked before the store
 * is opened, so a bad one exits 2 having touched nothing. With no tokens configured it listens on loopback
 * only: anyone who reached it could spend the provider's key.
 */
import { parseArgs } from 'node:util';
import { authEnabled, isLoopback } from '../auth/principal';
import { tcpPort } from '../config';
import { createLogger } from '../engine/log';
import { InvalidInputError } from '../errors';
import { gatewayDeps } from '../gateway/deps';
import { loadPriceTable } from '../gateway/prices';
import { startGatewayServer } from '../gateway/server';
import { followParent, stopAsOnSigterm } from '../launch/follow-parent';
import { check, flags, GLOBAL_OPTIONS } from './args';
import { type Cli, withStore } from './context';

export async function gateway(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: { ...GLOBAL_OPTIONS, host: { type: 'string' }, port: { type: 'string' }, prices: { type: 'string' } },
    }),
  );
  const cfg = cli.config();
  const host = values.host ?? cfg.WAYBILL_GATEWAY_HOST;
  const port = values.port === undefined ? cfg.WAYBILL_GATEWAY_PORT : check(tcpPort, values.port, '--port');
  if (!isLoopback(host) && !authEnabled(cfg))
    throw new InvalidInputError(
      `--host ${host} would let anyone who reaches it spend the provider's key: set WAYBILL_OPERATOR_TOKEN ` +
        '(sandboxes send their run tokens), or listen on 127.0.0.1',
    );
  const prices = loadPriceTable(values.prices ?? cfg.WAYBILL_GATEWAY_PRICES);
  const log = createLogger({ component: 'gateway' }, undefined, { colour: !cfg.NO_COLOR, level: cfg.LOG_LEVEL });

  return withStore(cli, values.db, async (store) => {
    const deps = gatewayDeps(store, cfg, prices, (message, fields) => log.warn(message, fields));
    const server = await startGatewayServer(deps, host, port);
    log.info(`gateway listening on ${server.url}`, {
      url: server.url,
      pid: process.pid,
      prices: prices.dated,
      openai: cfg.WAYBILL_GATEWAY_OPENAI_URL,
      anthropic: cfg.WAYBILL_GATEWAY_ANTHROPIC_URL,
    });
    const stopped = new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });
    const unfollow = followParent(cfg.WAYBILL_FOLLOW_PARENT === 'on', stopAsOnSigterm('waybill gateway'));
    await stopped;
    unfollow();
    await server.close();
    return 0;
  });
}
