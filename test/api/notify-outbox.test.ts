/**
 * The HTTP API's start of a notify run: an outbox path outside the data directory is INVALID_INPUT naming
 * `input.outbox`, and no run is created (the same schema refuses it on the dashboard's form).
 */
import { describe, expect, it } from 'vitest';
import { runs } from '../../lib/control';
import { builtinRegistry } from '../../lib/engine/workflows';
import { ControlInputError } from '../../lib/errors';
import type { SqliteStore } from '../../lib/store/sqlite';
import { openTestStore } from '../workflows/harness';

/** The start every way in makes (lib/control), as the API's caller. */
const start = (
  store: SqliteStore,
  registry: ReturnType<typeof builtinRegistry>,
  input: { workflow: string; input: unknown; id: string },
) =>
  runs.start(
    { store: async () => store, claimTtlMs: 30_000, maxBytes: 1 << 20, workflows: async () => registry },
    { actor: 'api', role: 'operator', channel: 'api' },
    input,
  );

describe('POST /api/v1/runs with a notify outbox', () => {
  it.each(['/etc/passwd', '../../etc/cron.d/x', 'a/../../x.jsonl'])(
    'refuses %j naming input.outbox, creating nothing',
    async (outbox) => {
      const { store, dir } = openTestStore();
      const error = await start(store, builtinRegistry({ dataDir: dir.path }), {
        workflow: 'notify',
        input: { count: 1, outbox },
        id: 'n1',
      }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ControlInputError);
      expect((error as ControlInputError).code).toBe('INVALID_INPUT');
      expect(Object.keys((error as ControlInputError).fields!)).toEqual(['input.outbox']);
      expect(await store.getRun('n1')).toBeNull();
      expect(await store.listRuns({ claimTtlMs: 30_000 })).toEqual([]);
    },
  );

  it('accepts a path inside the data directory', async () => {
    const { store, dir } = openTestStore();
    const run = await start(store, builtinRegistry({ dataDir: dir.path }), {
      workflow: 'notify',
      input: { count: 1, outbox: 'out/n.jsonl' },
      id: 'n2',
    });
    expect(run).toMatchObject({ id: 'n2', status: 'queued' });
  });
});
