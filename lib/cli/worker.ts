/**
 * `waybill worker`: one Worker from lib/engine over the store, until SIGTERM or SIGINT. The first signal
 * drains — the step in hand finishes, runs are handed back — and the process exits 0 once the worker has
 * stopped and the store is closed; a second signal exits at once (130).
 *
 * It serves the built-ins and the workflows of `--workflows <module>` (or WAYBILL_WORKFLOWS), and publishes
 * them in the store once registered. The module is loaded and its schemas turned into JSON Schema before
 * the store is opened: a bad module exits 2 with one line naming the file, having written nothing.
 *
 * `--url <address>` (else WAYBILL_URL) is the control plane's address as the programs of command workflows
 * reach it (defineCommandWorkflow hands it to each with a token for its run); without one, the worker does not
 * serve the python-agent demo. A value that is not an http(s) URL exits 2 before anything is opened.
 *
 * `--health-port <n>` (else WAYBILL_HEALTH_PORT) serves /livez, /readyz and /metrics on a port of the worker's
 * own (lib/engine/worker/health.ts), for Kubernetes' probes and a Prometheus scrape of the pod.
 *
 * `--drill <run>` is how `waybill drill` starts its workers: they serve the drill's workflow and that one run,
 * nothing else, so a drill on a shared store never touches the user's runs.
 */

import { parseArgs } from 'node:util';
import { controlPlaneUrl, dataDir, sqliteFile, tcpPort } from '../config';
import { stallSettings } from '../control/stalled';
import * as webhooks from '../control/webhooks';
import { drillWorkflow } from '../engine/drill';
import { createLogger } from '../engine/log';
import { keepStoreFrom, programUser } from '../engine/program-user';
import { publicationsOf } from '../engine/publish';
import { declaredSchedules } from '../engine/schedules/declared';
import { Worker } from '../engine/worker';
import { serveHealth } from '../engine/worker/health';
import { WorkerMetrics } from '../engine/worker/metrics';
import { WorkflowRegistry } from '../engine/workflow';
import { loadPriceTable } from '../gateway/prices';
import { followParent, stopAsOnSigterm } from '../launch/follow-parent';
import { check, count, flags, GLOBAL_OPTIONS, lookupId } from './args';
import { type Cli, withStoreMigrating } from './context';
import { watchWorker } from './follow';
import { LiveBlock } from './format';

export async function worker(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: {
        ...GLOBAL_OPTIONS,
        concurrency: { type: 'string' },
        id: { type: 'string' },
        workflows: { type: 'string' },
        drill: { type: 'string' },
        url: { type: 'string' },
        'health-port': { type: 'string' },
      },
    }),
  );
  const concurrency = values.concurrency === undefined ? 1 : check(count(1000), values.concurrency, '--concurrency');
  const id = values.id === undefined ? undefined : check(lookupId, values.id, '--id');
  const drillRun = values.drill === undefined ? undefined : check(lookupId, values.drill, '--drill');
  const cfg = cli.config();
  const url = values.url === undefined ? cfg.WAYBILL_URL : check(controlPlaneUrl, values.url, '--url');
  // A drill starts several workers from one environment: one port for all would refuse the second.
  const healthPort =
    values['health-port'] !== undefined
      ? check(tcpPort, values['health-port'], '--health-port')
      : drillRun === undefined
        ? cfg.WAYBILL_HEALTH_PORT
        : undefined;
  const modulePath = drillRun === undefined ? (values.workflows ?? cfg.WAYBILL_WORKFLOWS) : undefined;
  const registry =
    drillRun === undefined
      ? await cli.registry(modulePath, values.db, url)
      : new WorkflowRegistry([drillWorkflow(dataDir({ ...cfg, DATABASE_URL: values.db ?? cfg.DATABASE_URL }))]);
  const publications = publicationsOf(registry, modulePath);
  // Checked before the store is opened (a bad input exits having written nothing); each tick taken at publication.
  declaredSchedules(registry, Date.now() / 1000);
  // Before the store is opened: a user that cannot be had exits 2 having touched nothing.
  const user = programUser(cfg.WAYBILL_PROGRAM_USER, process.getuid?.());
  const storeFile = sqliteFile(values.db ?? cfg.DATABASE_URL);
  // What ctx.recordUsage prices a report without a cost by: the gateway's table, read before the store opens.
  const prices = loadPriceTable(cfg.WAYBILL_GATEWAY_PRICES);

  return withStoreMigrating(cli, values.db, async (store) => {
    // On a terminal, log lines go through the bar block so the two never tear each other.
    const live = cli.tty ? new LiveBlock(cli.stderr) : null;
    const root = createLogger({}, live ? (line) => live.write(line) : undefined, {
      colour: !cfg.NO_COLOR,
      level: cfg.LOG_LEVEL,
    });
    const w = new Worker({
      store: store,
      registry,
      id,
      concurrency,
      log: root,
      // The process's own metrics (CPU, memory, event loop) only where they are served.
      metrics: healthPort === undefined ? undefined : new WorkerMetrics(),
      claimLeaseMs: cfg.WAYBILL_LEASE_MS,
      claimTtlMs: cfg.WAYBILL_CLAIM_TTL_MS,
      runLeaseMs: cfg.WAYBILL_RUN_LEASE_MS,
      heartbeatMs: cfg.WAYBILL_HEARTBEAT_MS,
      runLogLines: cfg.WAYBILL_RUN_LOG_LINES,
      programUrl: url,
      prices,
      pollMs: cfg.WAYBILL_POLL_MS,
      idlePollMs: cfg.WAYBILL_IDLE_POLL_MS,
      webhooks: {
        everyMs: cfg.WAYBILL_WEBHOOK_POLL_MS,
        timeoutMs: cfg.WAYBILL_WEBHOOK_TIMEOUT_MS,
        retryMs: cfg.WAYBILL_WEBHOOK_RETRY_MS,
        maxRetryMs: cfg.WAYBILL_WEBHOOK_MAX_RETRY_MS,
        maxAttempts: cfg.WAYBILL_WEBHOOK_ATTEMPTS,
        scan: () =>
          webhooks.scanAlerts(store, { ...stallSettings(cfg, Date.now()), claimTtlMs: cfg.WAYBILL_CLAIM_TTL_MS }),
      },
      workerRetentionMs: cfg.WAYBILL_WORKER_RETENTION,
      prune:
        cfg.WAYBILL_PRUNE_OLDER_THAN === undefined || drillRun !== undefined
          ? undefined
          : { olderThanMs: cfg.WAYBILL_PRUNE_OLDER_THAN },
      onlyRun: drillRun,
      // A drill's worker publishes nothing: its workflow is the drill's own, never to be started by a user.
      onRegistered:
        drillRun !== undefined
          ? undefined
          : async (workerId) => {
              await store.publishWorkflows(workerId, publications);
              await store.upsertDefinedSchedules(registry.names(), declaredSchedules(registry, Date.now() / 1000));
              w.log.info('serving workflows', { workflows: registry.names(), module: modulePath ?? null });
            },
    });
    // The worker's own logger from here on: every line names it.
    const log = w.log;
    if (user && user.uid !== process.getuid?.() && storeFile) {
      const shut = keepStoreFrom(user, storeFile);
      if (shut.length > 0) log.info("closed the store's files to the programs' user", { user: user.name, files: shut });
    }
    // Before the worker registers: a probe that comes early is told "not ready", never refused. A port taken
    // exits here, before the worker has registered.
    const health =
      healthPort === undefined
        ? null
        : await serveHealth(w, { store, host: cfg.WAYBILL_HEALTH_HOST, port: healthPort });
    if (health) log.info(`health and metrics on ${health.url}`, { url: health.url });
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      if (++signals > 1) process.exit(130);
      log.info('draining: the steps in hand finish, runs are handed back (signal again to exit now)', { signal });
      w.stop();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    const follows = cfg.WAYBILL_FOLLOW_PARENT === 'on';
    // The real pid: `npx waybill worker &` makes $! npm's.
    log.info(`worker pid ${process.pid}`, { pid: process.pid, parentPid: process.ppid, follows });
    const unfollow = followParent(follows, stopAsOnSigterm('waybill worker'));
    const unwatch = watchWorker(cli, store, w.id, log, live);
    try {
      await w.run();
    } finally {
      await health?.close();
      unfollow();
      await unwatch();
      live?.done();
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    }
    return 0;
  });
}
