/**
 * `npx tsx bench/page-cpu.ts --store FILE… [--root DIR]… [--page PATH]… [--requests N] [--warm N] [--rounds N]
 *  [--port P] [--profile DIR] [--node-args ARGS]…`
 *
 * What one request of a page costs the dashboard's server in CPU, the figure to decide by on a shared machine,
 * where latency under load mostly measures the neighbours. One `next start` per --root (a checkout with a
 * production build; this one when none is given), each on the SQLite store FILE (bench:dashboard's --store
 * file) on its own port from --port (3460) up, all started before the first measurement, and each --page
 * (`/`, `/?tag=rare`, `/claims` by default) of each asked --warm times (5). Then --rounds rounds (3) of
 * --requests requests (30) of each page of each server, one request at a time and interleaved (A's pages, B's
 * pages, then back in the opposite order), so that the machine's other work falls on A and B alike. A request's
 * CPU is what the server process and all its threads ran from before it was sent until its answer was read
 * (/proc/<pid>/task/<tid>/schedstat's nanoseconds, children included).
 *
 * Printed per round, server and page: CPU ms a request (the round's mean), the median wall time of a request,
 * the page's HTML bytes and its RSC payload's (the same URL asked with `RSC: 1`, what a router.refresh()
 * fetches), and the load average before the round; then the median of the rounds' means (`med`). Servers are
 * labelled A, B… in the order of --root. Reads a page shares for a second (the cards, the stall facts) are paid
 * by the requests of that second, so pages measured together share them too.
 *
 * --profile DIR starts each server under `node --cpu-prof --cpu-prof-dir DIR`; the profiles are written when
 * the servers stop, at the end (open them in Chrome's DevTools, or sum their self time by file).
 *
 * --node-args=ARGS gives a server's node its own flags, one --node-args per --root in the same order (`=` joins a
 * value that starts with `--`; an empty one for none), so that a runtime flag is measured against its absence on
 * one build: `--root . --root . --node-args= --node-args=--max-semi-space-size=32`.
 *
 * One --store for every server, or one per --root in the same order: the pages measured write nothing, so
 * builds of the same migrations share one file, but a build with a newer migration migrates the file when it
 * opens it, and an older build then refuses it. Give that one a copy (`cp FILE COPY`, with its -wal and -shm).
 *
 * Linux only (/proc).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { answers } from './dashboard-server';

const HERE = resolve(new URL('..', import.meta.url).pathname);

const USAGE =
  'npx tsx bench/page-cpu.ts --store FILE… [--root DIR]… [--page PATH]… [--requests N] [--warm N] [--rounds N] ' +
  '[--port P] [--profile DIR] [--node-args ARGS]…';
const log = (line: string) => process.stderr.write(`${line}\n`);
function usage(message: string): never {
  log(`page-cpu: ${message}\nusage: ${USAGE}`);
  process.exit(2);
}

const { values } = parseFlags();

function parseFlags() {
  try {
    return parseArgs({
      options: {
        store: { type: 'string', multiple: true },
        root: { type: 'string', multiple: true },
        page: { type: 'string', multiple: true },
        requests: { type: 'string', default: '30' },
        warm: { type: 'string', default: '5' },
        rounds: { type: 'string', default: '3' },
        port: { type: 'string', default: '3460' },
        profile: { type: 'string' },
        'node-args': { type: 'string', multiple: true },
      },
      strict: true,
    });
  } catch (error) {
    // parseArgs names the flag it refused (an unknown one, or a value missing).
    usage((error as Error).message);
  }
}

const roots = (values.root?.length ? values.root : [HERE]).map((root) => resolve(root));
const stores = (values.store ?? []).map((file) => resolve(file));
if (stores.length === 0) usage('--store FILE is required (a seeded SQLite store)');
if (stores.length !== 1 && stores.length !== roots.length) usage('give one --store, or one per --root');
for (const file of stores) {
  if (!existsSync(file)) usage(`no store at ${file}: seed one with npm run bench:dashboard -- --store ${file}`);
}
const nodeArgs = (values['node-args'] ?? []).map((args) => args.split(/\s+/).filter(Boolean));
if (nodeArgs.length > roots.length) usage('give at most one --node-args per --root, in the same order');
const pages = values.page?.length ? values.page : ['/', '/?tag=rare', '/claims'];
const whole = (name: string, text: string) => {
  if (!/^[0-9]+$/.test(text)) usage(`--${name} needs a whole number`);
  return Number(text);
};
const requests = whole('requests', values.requests);
const warm = whole('warm', values.warm);
const rounds = whole('rounds', values.rounds);
const firstPort = whole('port', values.port);

/** Nanoseconds a process and its descendants have run, every thread counted. */
function treeCpuNs(pid: number): number {
  let total = 0;
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const tid of tasks) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/)) {
        if (child) total += treeCpuNs(Number(child));
      }
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return total;
}

interface Server {
  label: string;
  root: string;
  url: string;
  child: ChildProcess;
  output: string;
}

async function start(label: string, root: string, store: string, port: number, args: string[]): Promise<Server> {
  if (!existsSync(`${root}/.next/BUILD_ID`)) usage(`${root} has no production build (npx next build there)`);
  const nextBin = createRequire(`${root}/package.json`).resolve('next/dist/bin/next');
  const profile = values.profile ? ['--cpu-prof', '--cpu-prof-dir', resolve(values.profile)] : [];
  const child = spawn(
    process.execPath,
    [...profile, ...args, nextBin, 'start', '-p', String(port), '-H', '127.0.0.1'],
    {
      cwd: root,
      env: { ...process.env, DATABASE_URL: `file:${store}`, NEXT_TELEMETRY_DISABLED: '1', NODE_ENV: 'production' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const server: Server = { label, root, url: `http://127.0.0.1:${port}`, child, output: '' };
  const keep = (chunk: Buffer) => {
    server.output = (server.output + chunk.toString()).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  if (await answers(server.url, () => child.exitCode !== null, 120_000)) return server;
  if (child.exitCode !== null) throw new Error(`${label} (${root}) exited:\n${server.output}`);
  throw new Error(`${label} (${root}) did not answer within 120 s:\n${server.output}`);
}

async function stop(server: Server): Promise<void> {
  if (server.child.exitCode !== null) return;
  const exited = new Promise<void>((done) => server.child.once('close', () => done()));
  server.child.kill('SIGTERM');
  if (!(await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]))) {
    server.child.kill('SIGKILL');
    await exited;
  }
}

/**
 * Uncompressed, as autocannon asks in bench:dashboard: fetch would ask for gzip, and compressing the page
 * would be counted as the page's cost.
 */
async function get(url: string, rsc = false): Promise<number> {
  const response = await fetch(url, { headers: { 'accept-encoding': 'identity', ...(rsc ? { RSC: '1' } : {}) } });
  const bytes = (await response.arrayBuffer()).byteLength;
  // A 404 page is a page too (the framework's floor); an error is not a figure.
  if (response.status >= 500) throw new Error(`${url}${rsc ? ' (RSC)' : ''}: ${response.status}`);
  return bytes;
}

/** One server's page: what its requests cost so far in the round, and its sizes. */
interface Cell {
  server: Server;
  page: string;
  url: string;
  cpuNs: number;
  walls: number[];
  html: number;
  rsc: number;
}

/** One request, and the server's CPU (all its threads) around it. */
async function once(cell: Cell): Promise<void> {
  const pid = cell.server.child.pid!;
  const before = treeCpuNs(pid);
  const started = performance.now();
  cell.html = await get(cell.url);
  cell.walls.push(performance.now() - started);
  cell.cpuNs += treeCpuNs(pid) - before;
}

const servers: Server[] = [];
let stopping = false;
const stopAll = async () => {
  stopping = true;
  await Promise.all(servers.map(stop));
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void stopAll().finally(() => process.exit(130)));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  for (const [i, root] of roots.entries()) {
    const label = String.fromCharCode(65 + i);
    log(`page-cpu: starting ${label} = ${root} on port ${firstPort + i}`);
    servers.push(await start(label, root, stores[i] ?? stores[0]!, firstPort + i, nodeArgs[i] ?? []));
  }
  const pairs = servers.flatMap((server) => pages.map((page) => ({ server, page, url: `${server.url}${page}` })));
  for (const { url } of pairs) for (let i = 0; i < warm; i++) await get(url);
  const pad = (text: string | number, width: number) => String(text).padStart(width);
  const row = (round: string, load: string, cell: Cell, cpuMs: number, wallMs: number) =>
    `${round.padEnd(6)}${load.padEnd(6)}${cell.server.label.padEnd(7)}${cell.page.slice(0, 33).padEnd(34)}` +
    `${pad(cpuMs.toFixed(1), 8)}${pad(wallMs.toFixed(1), 10)}${pad(cell.html, 9)}${pad(cell.rsc, 9)}\n`;
  process.stdout.write(
    `store ${stores.join(', ')}; ${requests} requests of each page a round, interleaved, after ${warm}\n`,
  );
  process.stdout.write(`${'round'.padEnd(6)}${'load'.padEnd(6)}${'server'.padEnd(7)}${'page'.padEnd(34)}`);
  process.stdout.write(`${pad('CPU ms', 8)}${pad('wall p50', 10)}${pad('HTML B', 9)}${pad('RSC B', 9)}\n`);
  const byRound: Cell[][] = [];
  for (let round = 1; round <= rounds && !stopping; round++) {
    const load = loadavg()[0]!.toFixed(1);
    const cells: Cell[] = pairs.map((pair) => ({ ...pair, cpuNs: 0, walls: [], html: 0, rsc: 0 }));
    // Every page of every server once, then again in the opposite order: what the machine does meanwhile, and
    // what a request leaves running after its answer (GC), falls on each alike.
    for (let i = 0; i < requests && !stopping; i++) {
      for (const cell of i % 2 === 0 ? cells : [...cells].reverse()) await once(cell);
    }
    for (const cell of cells) {
      cell.rsc = await get(cell.url, true);
      process.stdout.write(row(String(round), load, cell, cell.cpuNs / 1e6 / requests, median(cell.walls)));
    }
    byRound.push(cells);
  }
  if (byRound.length > 1) {
    const load = loadavg()[0]!.toFixed(1);
    for (const [i, cell] of byRound[0]!.entries()) {
      const cpu = median(byRound.map((cells) => cells[i]!.cpuNs / 1e6 / requests));
      process.stdout.write(row('med', load, cell, cpu, median(byRound.flatMap((cells) => cells[i]!.walls))));
    }
  }
} finally {
  await stopAll();
}
