/**
 * What every command gets: output, configuration, the operator's name, the workflows and a way to open the
 * store that always closes it. Workflows come two ways: a worker runs the real code (the built-ins plus the
 * user's module, registry()); start checks against what workers published (catalog()), as the control
 * plane does. The built-ins are a seam: bin/waybill.mjs passes nothing and gets the real ones; tests start
 * the same CLI with their own.
 */
import { userInfo } from 'node:os';
import { config, dataDir, storeOptions, type Config } from '../config';
import type { WorkflowCatalog } from '../engine/catalog';
import type { WorkflowRegistry } from '../engine/workflow';
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
  /**
   * The built-ins and, given a module path, the user's workflows from it (WorkflowModuleError when it is bad).
   * `db`: the store `--db` named, whose directory is the data directory unless WAYBILL_DATA_DIR says otherwise.
   */
  registry(modulePath?: string, db?: string): Promise<WorkflowRegistry>;
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
    registry: async (modulePath, db) => {
      const builtins = deps.registry ? await deps.registry() : await builtinRegistry(db);
      if (modulePath === undefined) return builtins;
      const { loadWorkflowModule, workerRegistry } = await import('../engine/publish');
      return workerRegistry(modulePath, builtins.definitions(), await loadWorkflowModule(modulePath));
    },
    catalog: async (store, db) => {
      const { WorkflowCatalog } = await import('../engine/catalog');
      return WorkflowCatalog.load(store, deps.registry ? await deps.registry() : await builtinRegistry(db));
    },
  };
}

async function builtinRegistry(db: string | undefined): Promise<WorkflowRegistry> {
  const workflows = await import('../engine/workflows/index');
  const cfg = config();
  // A configured model endpoint replaces the simulated model in agent-batch.
  return workflows.builtinRegistry({
    model: workflows.modelFromEnv(cfg), dataDir: dataDir({ ...cfg, DATABASE_URL: db ?? cfg.DATABASE_URL }),
  });
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
  const store = await openStore(db ?? cfg.DATABASE_URL, storeOptions(cfg));
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/**
 * Every store has the run methods now (Store is the full type), so this only hands the store back. Kept so
 * the commands that call it need no edit in this change; new code passes the store itself.
 */
export function runStore(store: Store): Store {
  return store;
}
