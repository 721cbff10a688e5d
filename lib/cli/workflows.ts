/**
 * `waybill workflows`: what may be started here — the built-ins and every workflow a worker published — with
 * its version, fixed total, and the live workers serving it (none: a run of it waits for one).
 */
import { parseArgs } from 'node:util';
import { flags, GLOBAL_OPTIONS, positionals } from './args';
import { type Cli, withStore } from './context';
import { table, truncate } from './format';

export async function workflows(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({ args, strict: true, allowPositionals: true, options: GLOBAL_OPTIONS }),
  );
  positionals(given, []);
  const catalog = await withStore(cli, values.db, async (store) => cli.catalog(store, values.db));
  const entries = catalog.entries();
  if (values.json) {
    cli.json(
      entries.map(
        ({ name, description, version, totalSteps, builtin, servedBy, publishedBy, updatedAt, inputSchema }) => ({
          name,
          description,
          version,
          totalSteps,
          builtin,
          servedBy,
          publishedBy,
          updatedAt,
          inputSchema,
        }),
      ),
    );
    return 0;
  }
  cli.out(
    table(
      ['NAME', 'VERSION', 'STEPS', 'SERVED BY', 'DESCRIPTION'],
      entries.map((w) => [
        w.name,
        w.version ?? (w.builtin ? 'built-in' : ''),
        w.totalSteps ?? '',
        w.servedBy.length ? w.servedBy.join(', ') : 'no live worker',
        truncate(w.description, 60),
      ]),
    ),
  );
  return 0;
}
