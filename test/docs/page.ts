/**
 * Runs one page's commands (./here.ts has them) in the page's order, as a reader pasting them would: in one
 * temp directory holding the store (a SQLite file), with the dashboard's API served by the real route
 * handlers (../support/route-server.ts), signed in with an operator token. Call it at the top of the page's
 * own test file: lib/config is read once a process, so each page's store is its own file's.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { makeTempDir } from '../support/tmp';
import { until } from '../support/until';
import { storeReader } from './context';
import { shellBlocks } from './fences';
import { linkPackages } from './guide-module';
import { HERE } from './here';

export const OPERATOR = 'docs-operator-token-0123456789abcdef';

export async function runPage(file: string, env: Record<string, string> = {}): Promise<void> {
  const dir = makeTempDir('waybill-docs-');
  Object.assign(process.env, env);
  process.env.DATABASE_URL = `file:${dir.file('waybill.db')}`;
  process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
  process.env.WAYBILL_SESSION_SECRET = 'docs-suite-session-secret-0123456789';
  const { startRouteServer } = await import('../support/route-server');
  let server: Awaited<ReturnType<typeof startRouteServer>>;

  beforeAll(async () => {
    server = await startRouteServer();
    linkPackages(dir.path);
    // The store exists before the first command, as after `npm start`: reads create none.
    await (await import('../../lib/data/store')).getStore();
  });
  afterAll(async () => {
    await server?.close();
    const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
    await cache.waybillStore?.then((store) => store.close()).catch(() => undefined);
    dir.remove();
  });

  describe(file, () => {
    it('its commands run, in order, and do what it says', async () => {
      const handlers = HERE[file];
      if (!handlers) throw new Error(`test/docs/here.ts runs no command of ${file}`);
      const context = {
        terminal: {
          cwd: dir.path,
          dashboard: server.url,
          env: { ...reader(), DATABASE_URL: process.env.DATABASE_URL!, NO_COLOR: '1' },
        },
        dir,
        store: storeReader(dir.file('waybill.db')),
        until,
      };
      for (const block of shellBlocks(file).filter((b) => b.noRun === null)) {
        for (const command of block.commands) {
          const handler = handlers[command.text];
          if (!handler) continue;
          const started = Date.now();
          try {
            await handler(command.text, context);
          } catch (error) {
            throw new Error(`${command.file}:${command.line}: ${command.text}\n${(error as Error).message}`, {
              cause: error,
            });
          }
          if (process.env.WAYBILL_DOCS_TIMES) process.stderr.write(`${Date.now() - started} ms ${command.text}\n`);
        }
      }
    }, 240_000);
  });
}

/** A reader's environment: this process's, without what vitest sets for itself. */
function reader(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(VITEST|NODE_OPTIONS$|TEST$)/.test(name)) env[name] = value;
  }
  return env;
}
