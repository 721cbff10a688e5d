/**
 * What every command gets: output, configuration, the operator's name, the workflow registry and a way to
 * open the store that always closes it. The registry is a seam: bin/waybill.mjs passes nothing and gets the
 * built-in workflows; tests start the same CLI with their own.
 */
import { userInfo } from 'node:os';
import { config, type Config } from '../config';
import type { WorkflowRegistry } from '../engine/workflow';
import { WaybillError } from '../errors';
import { openStore } from '../store/index';
import type { RunStore, Store } from '../store/types';

export interface CliDeps {
  registry?: () => WorkflowRegistry | Promise<WorkflowRegistry>;
}

export interface Cli {
  /** The command name, for error lines. */
  readonly command: string;
  out(line: string): void;
  err(line: string): void;
  /** The one JSON document a --json command prints. */
  json(document: unknown): void;
  /** Progress bars only on a terminal; elsewhere a line every few seconds. */
  readonly tty: boolean;
  readonly stderr: NodeJS.WriteStream;
  config(): Config;
  /** Who operator actions are recorded as. */
  readonly actor: string;
  registry(): Promise<WorkflowRegistry>;
}

export function createCli(command: string, deps: CliDeps): Cli {
  return {
    command,
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    json: (document) => process.stdout.write(`${JSON.stringify(document)}\n`),
    tty: Boolean(process.stderr.isTTY),
    stderr: process.stderr,
    config,
    actor: operatorName(),
    registry: async () => (deps.registry ? deps.registry() : builtinRegistry()),
  };
}

async function builtinRegistry(): Promise<WorkflowRegistry> {
  const workflows = await import('../engine/workflows/index');
  // A configured model endpoint replaces the simulated model in agent-batch.
  return workflows.builtinRegistry({ model: workflows.modelFromEnv(config()) });
}

function operatorName(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

/** Opens the store `--db` names (else DATABASE_URL), runs fn, and closes the store whatever happens. */
export async function withStore<T>(cli: Cli, db: string | undefined, fn: (store: Store) => Promise<T>): Promise<T> {
  const cfg = cli.config();
  const store = await openStore(db ?? cfg.DATABASE_URL, { synchronous: cfg.WAYBILL_SQLITE_SYNC });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

const RUN_METHODS = [
  'createRun', 'getRun', 'listRuns', 'claimRun', 'renewRunLease', 'finishRun', 'releaseRun', 'actOnRun',
  'registerWorker', 'heartbeatWorker', 'stopWorker', 'listWorkers', 'markWorkerDead', 'holdLiveness', 'livenessOf',
] as const satisfies readonly (keyof RunStore)[];

/** The run commands need the RunStore half; a backend that lacks it says so instead of failing midway. */
export function runStore(store: Store): Store & RunStore {
  const missing = RUN_METHODS.filter((m) => typeof (store as Partial<RunStore>)[m] !== 'function');
  if (missing.length > 0) {
    throw new WaybillError('UNSUPPORTED', `the ${store.dialect} store does not support runs yet (missing ${missing.join(', ')})`);
  }
  return store as Store & RunStore;
}
