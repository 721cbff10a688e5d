/**
 * A synthetic history for trying the dashboard at scale (`waybill seed-demo`): what rows it holds, generated
 * here once for both backends, which only differ in how they insert them (sqlite.ts, postgres.ts beside this).
 *
 * Everything is derived from the run's index with a seeded generator, so a given plan always writes the
 * same rows and tests can assert exact counts. Runs use the workflow `seed-demo`, which no worker
 * registers: workers never pick them up, and their orphaned claims stay for an operator to look at. The
 * seeded workers live on host `seed-host`, so no real worker's pid check ever declares them dead.
 */
import { seededRandom } from '../../random';

export interface SeedOptions {
  runs: number;
  steps: number;
  /** One more run, completed, with this many committed steps (0: none). */
  bigRunSteps?: number;
  /** Run ids are `${prefix}-000001`…, the big run `${prefix}-big`, workers `${prefix}-worker-1`…. */
  prefix?: string;
}

export interface SeedReport {
  runs: number;
  byStatus: { completed: number; running: number; failed: number; paused: number };
  committed: number;
  events: number;
  claims: number;
  orphanedClaims: number;
  progress: number;
  workers: number;
}

export const SEED_WORKFLOW = 'seed-demo';
export const SEED_WORKERS = 4;
/** How far back the finished runs are spread: a week of history. */
const SPAN_S = 7 * 86_400;

type Status = keyof SeedReport['byStatus'];

/** Rows in insert order, each a tuple in the column order of the INSERTs in the two seed files. */
export interface SeedBatch {
  runs: [
    string,
    string,
    string,
    Status,
    number,
    string | null,
    number | null,
    number,
    string | null,
    number,
    number,
    number,
    number | null,
  ][];
  progress: [string, number, string, number, number, number, number, number][];
  committed: [string, string, string, number, number, string, number][];
  events: [string, string | null, number | null, string, number, number | null, string | null, string | null, number][];
  claims: [string, string, number, string, string, number, number, number, number][];
}

export const RUN_COLUMNS =
  'id, workflow, input_json, status, total_steps, owner, lease_expires_at, attempts, error, created_at, updated_at, started_at, finished_at';
export const PROGRESS_COLUMNS = 'run_id, step, state_json, updated_at, executed, skipped, awaited, save_ms';
export const COMMITTED_COLUMNS = 'idem_key, run_id, result_json, committed_at, step, worker_id, duration_ms';
export const EVENT_COLUMNS = 'run_id, idem_key, step, outcome, count, duration_ms, worker_id, detail, at';
export const CLAIM_COLUMNS =
  'idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, heartbeat_at, step, attempt';

interface RunShape {
  id: string;
  index: number;
  status: Status;
  steps: number;
  committed: number;
  /** A finished run that crashed once and was resumed: one skipped step, a run-lease takeover. */
  resumed: boolean;
  orphaned: boolean;
}

function shape(options: SeedOptions, index: number): RunShape {
  const prefix = options.prefix ?? 'seed';
  if (index === options.runs) {
    const steps = options.bigRunSteps ?? 0;
    return {
      id: `${prefix}-big`,
      index,
      status: 'completed',
      steps,
      committed: steps,
      resumed: false,
      orphaned: false,
    };
  }
  // One run in ten each running, failed and paused; the rest completed.
  const status: Status = (['running', 'failed', 'paused'] as const)[index % 10] ?? 'completed';
  const m = options.steps;
  const committed = {
    completed: m,
    running: Math.floor(m / 2),
    failed: Math.floor((3 * m) / 4),
    paused: Math.floor(m / 3),
  }[status];
  return {
    id: `${prefix}-${String(index + 1).padStart(6, '0')}`,
    index,
    status,
    steps: m,
    committed,
    resumed: status === 'completed' && index % 7 === 3 && committed > 1,
    // Every other running run's worker died mid-step: its claim's lease has passed.
    orphaned: status === 'running' && Math.floor(index / 10) % 2 === 0,
  };
}

/** Every 25th step failed once before it succeeded: a `failed` event each. */
const retriedSteps = (committed: number) => Math.floor(committed / 25);

function count(s: RunShape): { events: number; claims: number } {
  const events =
    retriedSteps(s.committed) + (s.status === 'failed' ? 3 : 0) + (s.status === 'paused' ? 1 : 0) + (s.resumed ? 2 : 0);
  return { events, claims: s.status === 'running' ? 1 : 0 };
}

/** The exact counts a plan writes, without writing it. */
export function seedPlan(options: SeedOptions): SeedReport {
  const report: SeedReport = {
    runs: 0,
    byStatus: { completed: 0, running: 0, failed: 0, paused: 0 },
    committed: 0,
    events: 0,
    claims: 0,
    orphanedClaims: 0,
    progress: 0,
    workers: SEED_WORKERS,
  };
  const total = options.runs + (options.bigRunSteps ? 1 : 0);
  for (let i = 0; i < total; i++) {
    const s = shape(options, i);
    const c = count(s);
    report.runs++;
    report.byStatus[s.status]++;
    report.committed += s.committed;
    report.events += c.events;
    report.claims += c.claims;
    report.orphanedClaims += s.orphaned ? 1 : 0;
    report.progress++;
  }
  return report;
}

/** The run ids a plan writes first and last, to refuse a second seed with the same prefix. */
export function seedRunIds(options: SeedOptions): string[] {
  const ids = [shape(options, 0).id, shape(options, options.runs - 1).id];
  return options.bigRunSteps ? [...ids, shape(options, options.runs).id] : ids;
}

/** The seeded workers: silent for five minutes, never stopped, on a host no real worker shares. */
export function seedWorkers(options: SeedOptions, now: number): [string, string, number, number, number][] {
  const prefix = options.prefix ?? 'seed';
  return Array.from({ length: SEED_WORKERS }, (_, k) => [
    `${prefix}-worker-${k + 1}`,
    'seed-host',
    1000 + k,
    now - SPAN_S,
    now - 300,
  ]);
}

/**
 * The rows, a batch at a time of about `rowsPerBatch` committed rows (a run is never split: its rows
 * go in one transaction). `now` is epoch seconds by the store's clock.
 */
export function* seedBatches(options: SeedOptions, now: number, rowsPerBatch = 20_000): Generator<SeedBatch> {
  const total = options.runs + (options.bigRunSteps ? 1 : 0);
  let batch = emptyBatch();
  for (let i = 0; i < total; i++) {
    addRun(batch, shape(options, i), options, now);
    if (batch.committed.length >= rowsPerBatch) {
      yield batch;
      batch = emptyBatch();
    }
  }
  if (batch.runs.length > 0) yield batch;
}

const emptyBatch = (): SeedBatch => ({ runs: [], progress: [], committed: [], events: [], claims: [] });

function addRun(b: SeedBatch, s: RunShape, options: SeedOptions, now: number): void {
  const random = seededRandom(s.index + 1);
  const prefix = options.prefix ?? 'seed';
  const worker = `${prefix}-worker-${(s.index % SEED_WORKERS) + 1}`;
  // Step durations around 400 ms, log-normal, with the occasional slow call a model endpoint has.
  const durations = Array.from(
    { length: s.committed },
    () => Math.round(400 * Math.exp(0.5 * gaussian(random)) * 100) / 100,
  );
  const busy = durations.reduce((sum, d) => sum + d + 5, 0) / 1000;
  const runs = options.runs + (options.bigRunSteps ? 1 : 0);
  // Finished runs are spread over the past week, oldest first; unfinished ones were active minutes ago.
  const start =
    s.status === 'completed' || s.status === 'failed'
      ? now - SPAN_S + (s.index / runs) * (SPAN_S - 3600) - (s.steps > 10_000 ? busy : 0)
      : now - busy - 120 - (s.index % 100) * 3;
  let t = start;
  const retried = new Set<number>();
  for (let step = 24; step < s.committed; step += 25) retried.add(step);
  for (let step = 0; step < s.committed; step++) {
    const d = durations[step]!;
    const key = `${s.id}:step:${step}`;
    if (retried.has(step)) {
      b.events.push([s.id, key, step, 'failed', 1, d, worker, 'simulated model error (HTTP 503); retrying', t]);
      t += d / 1000 + 0.5;
    }
    t += (d + 5) / 1000;
    const tokens = 50 + Math.floor(random() * 400);
    b.committed.push([key, s.id, `{"item":${step},"ok":true,"tokens":${tokens}}`, t, step, worker, d]);
  }
  const last = t;
  if (s.resumed) {
    const mid = Math.floor(s.committed / 2);
    b.events.push([
      s.id,
      null,
      null,
      'expired',
      1,
      null,
      worker,
      `run lease of ${prefix}-worker-0 passed or its worker died; resumed by ${worker}`,
      start + (last - start) / 2,
    ]);
    b.events.push([s.id, null, mid, 'skipped', 1, null, null, null, start + (last - start) / 2 + 0.01]);
  }
  let error: string | null = null;
  if (s.status === 'failed') {
    error = `step ${s.committed} failed 3 times: simulated model error (HTTP 503)`;
    for (let k = 0; k < 3; k++)
      b.events.push([
        s.id,
        `${s.id}:step:${s.committed}`,
        s.committed,
        'failed',
        1,
        30_000,
        worker,
        'simulated model error (HTTP 503)',
        last + 30 * (k + 1),
      ]);
  }
  if (s.status === 'paused')
    b.events.push([s.id, null, null, 'operator', 1, null, null, 'pause by seed: running → paused', last + 1]);
  const finished = s.status === 'completed' ? last + 0.01 : s.status === 'failed' ? last + 95 : null;
  const updated = finished ?? (s.status === 'paused' ? last + 1 : last);
  const running = s.status === 'running';
  // A dead worker's run lease passed with its claim; a live one is renewed every second.
  const runLease = running ? (s.orphaned ? last + 30 : now + 30) : null;
  b.runs.push([
    s.id,
    SEED_WORKFLOW,
    `{"count":${s.steps}}`,
    s.status,
    s.steps,
    running ? worker : null,
    runLease,
    s.resumed ? 2 : 1,
    error,
    start - 1,
    updated,
    start,
    finished,
  ]);
  b.progress.push([
    s.id,
    s.committed,
    `{"done":${s.committed}}`,
    last,
    s.committed,
    s.resumed ? 1 : 0,
    0,
    Math.round((0.2 + random() * 0.4) * 1000) / 1000,
  ]);
  if (running) {
    const token = Math.floor(random() * 2 ** 48)
      .toString(16)
      .padStart(12, '0');
    b.claims.push([
      `${s.id}:step:${s.committed}`,
      s.id,
      last,
      token,
      worker,
      s.orphaned ? last + 30 : now + 600,
      s.orphaned ? last + 20 : now,
      s.committed,
      1,
    ]);
  }
}

function gaussian(random: () => number): number {
  const u = Math.max(random(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}
