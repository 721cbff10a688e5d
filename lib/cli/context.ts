/**
 * What every command gets: output, configuration, the operator's name, the workflows and a way to open the
 * store that always closes it. Workflows come two ways: a worker runs the real code (the built-ins plus the
 * user's module, registry()); start checks against what workers published (catalog()), as the control
 * plane does. The built-ins are a seam: bin/waybill.mjs passes nothing and gets the real ones; tests start
 * the same CLI with their own.
 */
import { userInfo } from 'node:os';
import { type Config, config, dataDir, storeOptions } from '../config';
import type { Caller, ControlDeps } from '../control';
import type { WorkflowCatalog } from '../engine/catalog';
import type { WorkflowRegistry } from '../engine/workflow';
import type { RunStore, Store } from '../store/contract';
import { openStore } from '../store/index';
import { actorName, check } from './args';

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
  /** Who operator actions are recorded as when no --as is given: `cli:<OS user>`. */
  readonly actor: string;
  /**
   * The built-ins and, given a module path, the user's workflows from it (WorkflowModuleError when it is bad).
   * `db`: the store `--db` named, whose directory is the data directory unless WAYBILL_DATA_DIR says otherwise.
   * `url`: the control plane's address the worker hands its programs (`--url`, else WAYBILL_URL).
   */
  registry(modulePath?: string, db?: string, url?: string): Promise<WorkflowRegistry>;
  /** What a start may name: the built-ins and every published workflow, with who serves each. */
  catalog(store: RunStore, db?: string): Promise<WorkflowCatalog>;
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
    registry: async (modulePath, db, url) => {
      const builtins = deps.registry ? await deps.registry() : await builtinRegistry(db, url);
      if (modulePath === undefined) return builtins;
      const { loadWorkflowModule, workerRegistry } = await import('../engine/publish');
      return workerRegistry(modulePath, builtins.definitions(), await loadWorkflowModule(modulePath));
    },
    catalog: async (store, db) => {
      const { WorkflowCatalog } = await import('../engine/catalog');
      const { liveWithinMs } = await import('../domain/liveness');
      const builtins = deps.registry ? await deps.registry() : await builtinRegistry(db);
      return WorkflowCatalog.load(store, builtins, liveWithinMs(config().WAYBILL_HEARTBEAT_MS));
    },
  };
}

async function builtinRegistry(db: string | undefined, url?: string): Promise<WorkflowRegistry> {
  const workflows = await import('../engine/workflows/index');
  const cfg = config();
  // A configured model endpoint replaces the simulated model in agent-batch.
  return workflows.builtinRegistry({
    model: workflows.modelFromEnv(cfg),
    dataDir: dataDir({ ...cfg, DATABASE_URL: db ?? cfg.DATABASE_URL }),
    // A worker that can hand a program the control plane's address serves the Python demo too.
    pythonAgent: (url ?? cfg.WAYBILL_URL) !== undefined,
  });
}

function operatorName(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

/**
 * The CLI as lib/control's caller: the name `--as` gives, else `cli:<OS user>`. The CLI holds the store
 * itself, with no token between it and the tables, so its role is `local` — as the dashboard's is on a
 * machine with no tokens configured.
 */
export function callerOf(cli: Cli, as: string | undefined): Caller {
  return { actor: as === undefined ? cli.actor : check(actorName, as, '--as'), role: 'local', channel: 'cli' };
}

/**
 * What lib/control needs, for the store `--db` names: opened only when the operation asks for it (after
 * the caller and the input passed), and closed whatever happens. Never migrated: an operator's command
 * against no store, or one that is behind, is refused with the fix (`waybill migrate`).
 */
export async function withControl<T>(
  cli: Cli,
  db: string | undefined,
  fn: (deps: ControlDeps) => Promise<T>,
): Promise<T> {
  const cfg = cli.config();
  let opened: Promise<Store> | undefined;
  const deps: ControlDeps = {
    store: () => (opened ??= openStore(db ?? cfg.DATABASE_URL, { ...storeOptions(cfg), migrate: false })),
    claimTtlMs: cfg.WAYBILL_CLAIM_TTL_MS,
    maxBytes: cfg.WAYBILL_MAX_BODY_BYTES,
    maxWaitsPerRun: cfg.WAYBILL_MAX_WAITS_PER_RUN,
    workflows: (store) => cli.catalog(store, db),
  };
  try {
    return await fn(deps);
  } finally {
    const store = await opened?.catch(() => undefined);
    await store?.close();
  }
}

/**
 * Opens the store `--db` names (else DATABASE_URL), runs fn, and closes the store whatever happens. A read never
 * writes: only a command that runs the store (`migrating`: a worker, the drill) creates or upgrades it, and
 * then only while WAYBILL_MIGRATE is on.
 */
export async function withStore<T>(
  cli: Cli,
  db: string | undefined,
  fn: (store: Store) => Promise<T>,
  { migrating = false }: { migrating?: boolean } = {},
): Promise<T> {
  const cfg = cli.config();
  const options = storeOptions(cfg);
  const store = await openStore(db ?? cfg.DATABASE_URL, { ...options, migrate: migrating && options.migrate });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** withStore for a command that runs the store (a worker, the drill): it creates or upgrades it (WAYBILL_MIGRATE). */
export function withStoreMigrating<T>(cli: Cli, db: string | undefined, fn: (store: Store) => Promise<T>): Promise<T> {
  return withStore(cli, db, fn, { migrating: true });
}
