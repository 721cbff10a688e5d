/**
 * `npm start`: Waybill in one command on a fresh clone. Builds the dashboard when there is no production
 * build (saying what it is doing while it does), opens the store (which migrates it), queues a demo run when
 * the store has no runs at all and queues it again each time it completes until the user starts a run of
 * their own (./demo.ts), then runs the dashboard (./dashboard.ts says which: the checkout's own build or the
 * installed waybill-dashboard, in a cluster of WAYBILL_WEB_PROCESSES, bin/web.mjs) and one `waybill worker`
 * as child processes until Ctrl-C or SIGTERM.
 *
 * Stopping: the first signal sends SIGTERM to each child and waits — the worker finishes the step in hand
 * and hands its runs back — then exits 0. A child that dies on its own stops the other and exits 1. Its parent
 * gone (npx's npm killed), it stops as on SIGTERM (follow-parent.ts), and so does each child if it is killed.
 *
 * Over ~300 lines because it is one sequence a reader follows top to bottom (build, open, demo, children,
 * stop); the pieces that stand alone are beside it (demo.ts, children.ts, web-cluster.ts).
 */
import { existsSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { authEnabled, isLoopback } from '../auth/principal';
import { packageVersion } from '../cli/version';
import { type Config, config, dataDir, storeOptions } from '../config';
import { ConfigError } from '../errors';
import { packagePath } from '../package-root';
import { openStore } from '../store/index';
import { type Child, describeExit, spawnChild, stopAll } from './children';
import { buildNeeded, type Dashboard, findDashboard, webArgs } from './dashboard';
import { DEMO_INPUT, demoTick } from './demo';
import { followParent, stopAsOnSigterm } from './follow-parent';
import { programUrl } from './program-url';

// The package's own files, wherever it is (a checkout, or node_modules/waybill); the dashboard is found by
// ./dashboard.ts. The user's files (a relative DATABASE_URL, a workflows module) stay relative to their cwd.
const WAYBILL_BIN = packagePath('bin', 'waybill.mjs');
const WEB_BIN = packagePath('bin', 'web.mjs');

/** How often npm start looks whether the demo run completed, to queue it again. */
const DEMO_POLL_MS = 5000;
/** How often a build that says nothing is announced as still going. */
const BUILD_NOTICE_MS = 20_000;
/**
 * Next.js asks every first start to read its telemetry notice; a newcomer's terminal is not the place. The
 * children get this in their environment (next build, next start).
 */
const CHILD_ENV = { NEXT_TELEMETRY_DISABLED: '1' };
/**
 * The worker's slots (`--concurrency`): the demo's long run holds one for minutes, and a newcomer's next runs (the
 * approval demo, one started from the form) must start beside it, not queue behind it.
 */
export const START_SLOTS = 4;

/** How long the worker may take to stop after SIGTERM: it finishes the step it holds. */
const WORKER_GRACE_MS = 30_000;
/**
 * How long next start may take. It waits for its open connections to finish, and a browser tab left open
 * can keep one busy; the dashboard holds nothing that needs saving (every write is a store transaction), so
 * after this it is killed and that is not a failure.
 */
const WEB_GRACE_MS = 5000;
/** Idle kept-alive connections close after this, shorter than the pages' two-second refresh. */
const WEB_KEEP_ALIVE_MS = 1000;
/** npm forwards the terminal's Ctrl-C, so one keypress can arrive twice; only a later one means "now". */
const REPEAT_WINDOW_MS = 1000;

const USAGE = `usage: npm start [-- [--no-worker] [--no-demo]]

Builds the dashboard if needed (once, two to three minutes), migrates the store (DATABASE_URL), queues a
demo run when there are no runs (again each time it completes, until you start a run of your own), and
runs the dashboard (next start on HOST:PORT, default 127.0.0.1:3000) and one worker. Ctrl-C stops both.

  --no-worker  run the dashboard only (start workers yourself: npx waybill worker)
  --no-demo    never queue the demo run`;

const say = (line: string) => process.stdout.write(`${line}\n`);
const complain = (line: string) => process.stderr.write(`waybill: ${line}\n`);

/** How the launcher was invoked: `npm start` in a checkout, or `waybill up` / `waybill dashboard` from the package. */
export interface LaunchAs {
  /** What the user typed, for messages: "npm start", "waybill up". */
  command: string;
  usage: string;
  /** What runs without a flag: `waybill dashboard` runs no worker and queues no demo unless told otherwise. */
  defaults?: { worker: boolean; demo: boolean };
}

const NPM_START: LaunchAs = { command: 'npm start', usage: USAGE };

/** The flags as given, over the command's defaults; `noWorker` says why no worker runs, for the announcement. */
export interface LaunchFlags {
  worker: boolean;
  demo: boolean;
  help: boolean;
  noWorker: string;
}

/** Parses the launcher's flags; throws the parser's error on an unknown one. */
export function launchFlags(argv: string[], as: LaunchAs): LaunchFlags {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      'no-worker': { type: 'boolean' },
      'no-demo': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const defaults = as.defaults ?? { worker: true, demo: true };
  return {
    worker: values['no-worker'] ? false : defaults.worker,
    demo: values['no-demo'] ? false : defaults.demo,
    help: Boolean(values.help),
    noWorker: values['no-worker'] ? '--no-worker' : `${as.command} runs none`,
  };
}

/** The announcement's worker line once the dashboard listens. */
export function workerLine(flags: LaunchFlags, worker: { pid: number | undefined } | null, workflows: string | null) {
  return worker
    ? `  worker     waybill worker${workflows ? ` --workflows ${workflows}` : ''}, pid ${worker.pid}, ${START_SLOTS} runs at once (--concurrency; more: npx waybill worker)`
    : `  worker     none (${flags.noWorker}); start one with: npx waybill worker`;
}

export async function launch(argv: string[], as: LaunchAs = NPM_START): Promise<number> {
  let flags: LaunchFlags;
  try {
    flags = launchFlags(argv, as);
  } catch (error) {
    complain(`${(error as Error).message.split('. To specify')[0]}\n${as.usage}`);
    return 2;
  }
  if (flags.help) {
    say(as.usage);
    return 0;
  }
  let cfg: Config;
  try {
    cfg = config();
  } catch (error) {
    if (error instanceof ConfigError) {
      complain(error.message);
      return 2;
    }
    throw error;
  }
  if (!isLoopback(cfg.HOST) && !authEnabled(cfg)) {
    complain(
      `HOST=${cfg.HOST} would open the dashboard beyond this machine with no sign-in: ` +
        'anyone who reached it could cancel runs and resolve claims. Set WAYBILL_OPERATOR_TOKEN (and ' +
        'WAYBILL_VIEWER_TOKEN for read-only users), or listen on 127.0.0.1 (or ::1) and reach it through an SSH tunnel.',
    );
    return 2;
  }

  const dashboard = findDashboard(packageVersion());
  if ('problem' in dashboard) {
    complain(dashboard.problem);
    return dashboard.exitCode;
  }

  // `npm start | tee log` and a Ctrl-C: the pipe may close before we finish stopping the children.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
  const signals = watchSignals();
  const unfollow = followParent(cfg.WAYBILL_FOLLOW_PARENT === 'on', stopAsOnSigterm(as.command));
  try {
    return await startAll({ ...cfg, DATABASE_URL: anchorDatabaseUrl(cfg.DATABASE_URL) }, dashboard, flags, signals, as);
  } finally {
    unfollow();
    signals.dispose();
  }
}

async function startAll(
  cfg: Config,
  dashboard: Dashboard,
  flags: LaunchFlags,
  signals: Signals,
  as: LaunchAs,
): Promise<number> {
  const url = `http://${cfg.HOST.includes(':') ? `[${cfg.HOST}]` : cfg.HOST}:${cfg.PORT}`;
  // The user's module is named relative to where they ran the command; the worker runs from the package.
  const workflows = cfg.WAYBILL_WORKFLOWS === undefined ? null : resolve(cfg.WAYBILL_WORKFLOWS);
  if (workflows && flags.worker && !existsSync(workflows)) {
    complain(`WAYBILL_WORKFLOWS: ${cfg.WAYBILL_WORKFLOWS}: no such file (looked for ${workflows})`);
    return 2;
  }
  const taken = await portTaken(cfg.HOST, cfg.PORT);
  if (taken) {
    complain(
      `cannot listen on ${cfg.HOST}:${cfg.PORT}: ${taken}. Is Waybill already running? Choose another port: PORT=${cfg.PORT + 1} ${as.command}`,
    );
    return 1;
  }
  // The real pid, once there is something to stop: under npx, $! is npm's.
  say(`waybill: ${as.command} pid ${process.pid}`);

  const needed = dashboard.kind === 'checkout' ? buildNeeded(dashboard.root) : null;
  if (dashboard.kind === 'checkout' && needed !== null) {
    const { nextBin, root, buildId } = dashboard;
    say(`waybill: building the dashboard with next build (${needed}).`);
    say(
      'waybill: this takes two to three minutes on a laptop (longer on a busy machine); its output follows under [build].',
    );
    const build = spawnChild('the build (next build)', process.execPath, [nextBin, 'build'], {
      cwd: root,
      label: '[build]',
      env: CHILD_ENV,
    });
    signals.track(build);
    const startedAt = Date.now();
    // next build is silent for a minute or more while it compiles: say that it is still going, and for how long.
    const notice = setInterval(() => {
      say(`waybill: still building the dashboard (${Math.round((Date.now() - startedAt) / 1000)} s so far)…`);
    }, BUILD_NOTICE_MS);
    const ended = await Promise.race([build.exited, signals.requested.then(() => null)]).finally(() =>
      clearInterval(notice),
    );
    if (ended === null) {
      await stopAll([build], () => WEB_GRACE_MS);
      // next build writes BUILD_ID before its last phases: an interrupted build must not pass for a finished one.
      rmSync(buildId, { force: true });
      say('waybill: stopped before the build finished; the next npm start builds again');
      return 0;
    }
    if (ended.code !== 0) {
      rmSync(buildId, { force: true });
      complain(`next build failed (${describeExit(ended)}); the errors are above`);
      return 1;
    }
    say(`waybill: build done in ${Math.round((Date.now() - startedAt) / 1000)} s`);
  }

  let demo: string | null;
  try {
    demo = await prepareStore(cfg, flags.demo);
  } catch (error) {
    complain(`cannot open the store at ${redact(cfg.DATABASE_URL)}: ${(error as Error).message}`);
    return 1;
  }
  if (signals.received()) return 0;

  // next start waits for open connections before it exits, and a page left open refreshes itself every two
  // seconds on a kept-alive connection that would otherwise never go idle long enough to be closed.
  // bin/web.mjs runs next start in a cluster (one process per core, see lib/launch/web-cluster.ts) and stops
  // like next start: SIGTERM, the workers drain, exit.
  // The children see the store this process opened, whatever their cwd: a relative file: URL is anchored here.
  const env = { ...process.env, ...CHILD_ENV, DATABASE_URL: cfg.DATABASE_URL };
  const server = dashboard.kind === 'checkout' ? 'next start' : 'waybill-dashboard';
  const web = spawnChild(
    `the dashboard (${server})`,
    process.execPath,
    [WEB_BIN, ...webArgs(dashboard, cfg.HOST, cfg.PORT, WEB_KEEP_ALIVE_MS)],
    { cwd: dashboard.root, label: '[web]', env },
  );
  signals.track(web);
  const worker = flags.worker
    ? // One line per step drowns everything else; the worker's progress line every few seconds says enough here.
      spawnChild(
        'the worker (waybill worker)',
        process.execPath,
        [
          WAYBILL_BIN,
          'worker',
          '--concurrency',
          String(START_SLOTS),
          ...(workflows ? ['--workflows', workflows] : []),
          // The dashboard's own address for the programs of command workflows (the python-agent demo among
          // them), unless the user's WAYBILL_URL says otherwise: the worker reads that itself.
          ...(cfg.WAYBILL_URL ? [] : ['--url', programUrl(cfg.HOST, cfg.PORT)]),
        ],
        // The user's cwd: a module path or file: URL they name is relative to where they are.
        { cwd: process.cwd(), label: '[worker]', omit: /"msg":"step executed"/, env },
      )
    : null;
  if (worker) signals.track(worker);
  const children = worker ? [web, worker] : [web];

  const settled = new AbortController();
  const replays = flags.demo && !cfg.WAYBILL_MODEL_URL ? keepDemo(cfg, settled.signal) : Promise.resolve();
  void listening(cfg.HOST, cfg.PORT, settled.signal).then((up) => {
    if (!up) return;
    say('');
    say(`Waybill is running at ${url}`);
    say(
      `  dashboard  ${server}, pid ${web.pid} (${cfg.WAYBILL_WEB_PROCESSES} process${cfg.WAYBILL_WEB_PROCESSES === 1 ? '' : 'es'}: WAYBILL_WEB_PROCESSES)`,
    );
    say(workerLine(flags, worker, workflows));
    if (demo) say(`  demo run   ${url}/runs/${encodeURIComponent(demo)}`);
    say('Ctrl-C stops them.');
    say('');
  });

  const first = await Promise.race([
    ...children.map((child) => child.exited.then(() => ({ died: child }))),
    signals.requested.then((signal) => ({ signal })),
  ]);
  settled.abort();
  await replays;
  const grace = (child: Child) => (child === web ? WEB_GRACE_MS : WORKER_GRACE_MS);
  if ('signal' in first) {
    say(`waybill: ${first.signal}: stopping ${children.map((c) => c.what).join(' and ')}`);
    const killed = await stopAll(children, grace);
    if (killed.includes(web)) {
      say(
        `waybill: the dashboard was still closing connections (an open browser tab) after ${WEB_GRACE_MS / 1000} s; killed it, which loses nothing`,
      );
    }
    if (worker && killed.includes(worker)) {
      complain(
        `the worker did not stop within ${WORKER_GRACE_MS / 1000} s and was killed; its step in hand is an orphaned claim now (see /claims)`,
      );
      return 1;
    }
    say('waybill: stopped');
    return 0;
  }
  const others = children.filter((c) => c !== first.died);
  complain(
    `${first.died.what} exited unexpectedly (${describeExit(first.died.exit()!)})` +
      (others.length ? `; stopping ${others.map((c) => c.what).join(' and ')}` : ''),
  );
  await stopAll(others, grace);
  return 1;
}

/** Opens (and so migrates) the store; queues the demo run into an empty one. Returns the demo run's id. */
async function prepareStore(cfg: Config, demoWanted: boolean): Promise<string | null> {
  const store = await openStore(cfg.DATABASE_URL, storeOptions(cfg));
  try {
    say(`waybill: store ${redact(cfg.DATABASE_URL)} is open and up to date`);
    if (!demoWanted) return null;
    const runs = store;
    if (cfg.WAYBILL_MODEL_URL) {
      // Outside clients' runs count too: a store with any run in it is not a newcomer's.
      if ((await runs.listRuns({ limit: 1, claimTtlMs: cfg.WAYBILL_CLAIM_TTL_MS })).length === 0) {
        say(
          `waybill: no runs yet, but no demo run either: a model endpoint is configured (WAYBILL_MODEL_URL) and the demo would call it ${DEMO_INPUT.count} times`,
        );
      }
      return null;
    }
    const decision = await demoTick(runs, await demoRegistry(cfg), cfg.WAYBILL_CLAIM_TTL_MS);
    if (!('queue' in decision)) return null;
    say(
      `waybill: no runs yet: queued the demo run ${decision.queue} (agent-batch, ${DEMO_INPUT.count} steps of ` +
        `${DEMO_INPUT.latencyMs} ms, ${DEMO_INPUT.failureRate * 100}% simulated failures, retried; it replays until you start a run of your own)`,
    );
    return decision.queue;
  } finally {
    await store.close();
  }
}

/**
 * While npm start runs: each time the demo run completes and the user has started nothing of their own,
 * queue it again, so whoever comes back to the dashboard sees something move. Stops for good once the store
 * has another run (or the demo was cancelled), and when `stop` aborts.
 */
async function keepDemo(cfg: Config, stop: AbortSignal): Promise<void> {
  let store: Awaited<ReturnType<typeof openStore>> | null = null;
  try {
    store = await openStore(cfg.DATABASE_URL, storeOptions(cfg));
    const registry = await demoRegistry(cfg);
    while (!stop.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, DEMO_POLL_MS);
        stop.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            resolve();
          },
          { once: true },
        );
      });
      if (stop.aborted) break;
      const decision = await demoTick(store, registry, cfg.WAYBILL_CLAIM_TTL_MS);
      if ('queue' in decision)
        say(
          `waybill: the demo run completed; queued it again as ${decision.queue} (until you start a run of your own)`,
        );
      else if (decision.done) break;
    }
  } catch (error) {
    // The demo is a courtesy: a store that went away is the worker's and the dashboard's to report.
    complain(`stopped replaying the demo run: ${(error as Error).message}`);
  } finally {
    await store?.close().catch(() => {});
  }
}

async function demoRegistry(cfg: Config) {
  const { builtinRegistry } = await import('../engine/workflows/index');
  return builtinRegistry({ dataDir: dataDir(cfg) });
}

interface Signals {
  /** Resolves with the first SIGINT or SIGTERM. */
  requested: Promise<NodeJS.Signals>;
  received(): boolean;
  /** Children to SIGKILL if the user insists (a second Ctrl-C). */
  track(child: Child): void;
  dispose(): void;
}

function watchSignals(): Signals {
  let first: { at: number } | null = null;
  let resolve!: (signal: NodeJS.Signals) => void;
  const requested = new Promise<NodeJS.Signals>((r) => (resolve = r));
  const children: Child[] = [];
  const onSignal = (signal: NodeJS.Signals) => {
    if (first === null) {
      first = { at: Date.now() };
      resolve(signal);
    } else if (Date.now() - first.at > REPEAT_WINDOW_MS) {
      complain(
        `${signal} again: killing ${
          children
            .filter((c) => c.exit() === null)
            .map((c) => c.what)
            .join(' and ') || 'nothing'
        } now`,
      );
      for (const child of children) child.kill('SIGKILL');
      process.exit(130);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Detached children outlive us unless told: if this process ends any other way (an uncaught error),
  // they are asked to stop. After a SIGKILL of this process they see their parent gone and stop themselves.
  process.on('exit', () => {
    for (const child of children) child.kill('SIGTERM');
  });
  return {
    requested,
    received: () => first !== null,
    track: (child) => children.push(child),
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** Why the address cannot be listened on, or null when it can (checked before a build, so it fails fast). */
function portTaken(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      resolve(error.code === 'EADDRINUSE' ? 'the port is in use' : error.message),
    );
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/** Resolves true once something accepts connections on host:port, false if aborted first. */
async function listening(host: string, port: number, signal: AbortSignal): Promise<boolean> {
  while (!signal.aborted) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return !signal.aborted;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/**
 * `file:./data/waybill.db` means the file under the directory the user ran the command in. The dashboard runs
 * from the dashboard's own directory (its server serves the build found there), so it is handed the absolute path.
 */
function anchorDatabaseUrl(url: string): string {
  if (!url.startsWith('file:')) return url;
  const path = url.slice('file:'.length);
  return path === '' || isAbsolute(path) || path.startsWith('//') ? url : `file:${resolve(path)}`;
}

/** A database URL fit to print: no password. */
function redact(url: string): string {
  if (!/^postgres(ql)?:\/\//.test(url)) return url;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://…';
  }
}
