/**
 * The dashboard on every core: a Node cluster whose primary forks WAYBILL_WEB_PROCESSES workers, each running
 * `next start`'s own CLI (a checkout) or the waybill-dashboard package's standalone server.js (installed,
 * `--server <server.js>`; ./dashboard.ts). Workers listen on the same port; on Node 20 the primary holds the socket and hands
 * connections out in turn, so ten browsers refreshing at once are rendered on two cores instead of queuing on
 * one. Each worker has its own store connection and its own per-process caches.
 *
 * Stopping, seen from outside, is what `next start` alone did: SIGTERM (or SIGINT) is passed to each worker,
 * which stops accepting, finishes the requests in hand and exits; then the primary exits 0.
 *
 * A worker that dies on its own stops the rest, and the primary exits 1. Not replaced, because a crash that
 * repeats (a broken build, a store that cannot open, memory exhausted by a page) would become a restart loop
 * that hides it, while half the cores kept serving as if nothing were wrong. It is npm start's rule for its
 * children; whoever runs Waybill (a terminal, systemd, a container's restart policy) restarts it whole.
 *
 * If the primary itself is killed, the workers lose their channel to it and Node exits them: none is left
 * holding the port.
 */
import cluster, { type Worker } from 'node:cluster';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { config } from '../config';
import { ConfigError } from '../errors';
import { MAX_REQUEST_BYTES } from '../gateway/routes';
import { followParent, stopAsOnSigterm } from './follow-parent';

/** Refuses what Next would answer with a 500 or not at all (TRACE, broken encoding, huge bodies): see the file. */
const HTTP_GUARD = new URL('./http-guard.mjs', import.meta.url).href;
/** What the default limit (1 MiB) lets a request carry: the least any limit does, for a form's small values. */
const LEAST_BODY_BYTES = 1.25 * 1024 * 1024;

/**
 * The most a request may carry with WAYBILL_MAX_BODY_BYTES at `maxBodyBytes`: a quarter more, for the form around
 * such a value (other fields, multipart framing). The guard holds every process to it; Next's own caps are set at
 * this for the largest limit there may be (next.config.js).
 */
export function guardBodyBytes(maxBodyBytes: number): number {
  return Math.ceil(Math.max(LEAST_BODY_BYTES, maxBodyBytes * 1.25));
}

/** How long a stop waits for each process to end on SIGTERM before it kills it. */
const STOP_GRACE_MS = 10_000;

const complain = (line: string) => process.stderr.write(`waybill web: ${line}\n`);

/**
 * next start's start-up banner ("▲ Next.js 16…", "- Local: …", "✓ Starting...", "✓ Ready in …"), which every
 * worker prints: the same lines once per process read as a server started twice. Only the first worker's
 * are shown; everything else every worker writes (warnings, errors) is passed through as it is.
 */
const BANNER = /^\s*(▲ Next\.js|- (Local|Network|Environments?):|✓ (Starting|Ready in|Running next\.config)|$)/;
/**
 * next start's warning that the build was made for the standalone server: a checkout builds once for both,
 * its own next start (npm start, the browser suite) and the waybill-dashboard package (scripts/build-dashboard.ts).
 */
const STANDALONE_WARNING = /"next start" does not work with "output: standalone"/;
/** next colours its banner when it thinks it writes to a terminal; the colour codes are not part of the text. */
const COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

function relay(worker: Worker, first: boolean): void {
  for (const [from, to] of [
    [worker.process.stdout, process.stdout],
    [worker.process.stderr, process.stderr],
  ] as const) {
    if (!from) continue;
    createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => {
      const text = line.replace(COLOUR, '');
      if ((!first && BANNER.test(text)) || STANDALONE_WARNING.test(text)) return;
      try {
        to.write(`${line}\n`);
      } catch {
        // Nowhere left to write: npm start's pipe closed while it stops us.
      }
    });
  }
}

/**
 * What each worker runs: next start with the flags as they are, or the standalone server, which reads the
 * same three settings from its environment instead of flags.
 */
function serverOf(argv: string[]): { exec: string; args: string[]; env: Record<string, string> } {
  if (argv[0] !== '--server') {
    return { exec: createRequire(import.meta.url).resolve('next/dist/bin/next'), args: ['start', ...argv], env: {} };
  }
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      server: { type: 'string' },
      port: { type: 'string' },
      hostname: { type: 'string' },
      keepAliveTimeout: { type: 'string' },
    },
  });
  const env: Record<string, string> = {};
  if (values.port !== undefined) env.PORT = values.port;
  if (values.hostname !== undefined) env.HOSTNAME = values.hostname;
  if (values.keepAliveTimeout !== undefined) env.KEEP_ALIVE_TIMEOUT = values.keepAliveTimeout;
  return { exec: values.server!, args: [], env };
}

/**
 * Runs `next start <argv>` (or `--server <server.js> <flags>`: the standalone server) in WAYBILL_WEB_PROCESSES
 * workers until a signal or a worker's death. Returns the exit code.
 */
export async function runWebCluster(argv: string[]): Promise<number> {
  let processes: number;
  let maxBodyBytes: number;
  let follows: boolean;
  let server: ReturnType<typeof serverOf>;
  try {
    server = serverOf(argv);
    processes = config().WAYBILL_WEB_PROCESSES;
    follows = config().WAYBILL_FOLLOW_PARENT === 'on';
    maxBodyBytes = guardBodyBytes(config().WAYBILL_MAX_BODY_BYTES);
  } catch (error) {
    if (error instanceof ConfigError || String((error as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS_')) {
      complain((error as Error).message);
      return 2;
    }
    throw error;
  }

  // silent: each worker's output comes to us, to drop the repeated banner (see relay).
  cluster.setupPrimary({
    exec: server.exec,
    args: server.args,
    execArgv: [...process.execArgv, '--import', HTTP_GUARD],
    silent: true,
  });
  const workers = new Set<Worker>();
  let stopping = false;
  let failed = false;
  let resolve!: () => void;
  const allExited = new Promise<void>((r) => (resolve = r));

  let grace: NodeJS.Timeout | undefined;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const worker of workers) worker.process.kill('SIGTERM');
    // Next's graceful stop waits for the connections in hand, which a browser tab's live refresh can keep busy.
    grace = setTimeout(() => {
      for (const worker of workers) {
        complain(`process ${worker.process.pid} did not stop within ${STOP_GRACE_MS / 1000} s of SIGTERM; killing it`);
        worker.process.kill('SIGKILL');
      }
    }, STOP_GRACE_MS);
  };
  const onSignal = () => stop();
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Its workers follow it by their IPC channel (a cluster worker exits when it closes); it follows its parent.
  const unfollow = followParent(follows, stopAsOnSigterm('waybill web'));

  cluster.on('exit', (worker, code, signal) => {
    workers.delete(worker);
    if (!stopping) {
      failed = true;
      complain(
        `process ${worker.process.pid} exited unexpectedly (${signal ? `killed by ${signal}` : `exit code ${code}`}); ` +
          `stopping the other${workers.size === 1 ? '' : 's'}`,
      );
      stop();
    }
    if (workers.size === 0) resolve();
  });

  for (let i = 0; i < processes; i++) {
    const worker = cluster.fork({
      ...server.env,
      WAYBILL_GUARD_MAX_BODY_BYTES: String(maxBodyBytes),
      // What an API body must fit (lib/api/body.ts): the guard's 413 under /api names this limit, not its own.
      WAYBILL_GUARD_API_MAX_BODY_BYTES: String(config().WAYBILL_MAX_BODY_BYTES),
      WAYBILL_GUARD_GATEWAY_MAX_BODY_BYTES: String(MAX_REQUEST_BYTES),
    });
    relay(worker, i === 0);
    workers.add(worker);
  }
  process.stdout.write(
    `waybill web: ${processes} process${processes === 1 ? '' : 'es'}, pids ${[...workers].map((w) => w.process.pid).join(', ')}\n`,
  );
  // Next's banner is relayed once (see relay), so this line is what says that every process takes connections.
  let listening = 0;
  cluster.on('listening', () => {
    if (++listening === processes) process.stdout.write(`waybill web: all ${processes} listening\n`);
  });

  await allExited;
  clearTimeout(grace);
  unfollow();
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  return failed ? 1 : 0;
}
