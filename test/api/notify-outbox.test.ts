/**
 * The HTTP API's start of a notify run: an outbox path outside the data directory is INVALID_INPUT naming
 * `input.outbox`, and no run is created (the same schema refuses it on the dashboard's form).
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../lib/api/errors';
import { start } from '../../lib/api/runs';
import { builtinRegistry } from '../../lib/engine/workflows';
import { openTestStore } from '../workflows/harness';

describe('POST /api/v1/runs with a notify outbox', () => {
  it.each(['/etc/passwd', '../../etc/cron.d/x', 'a/../../x.jsonl'])('refuses %j naming input.outbox, creating nothing', async (outbox) => {
    const { store, dir } = openTestStore();
    const error = await start(store, builtinRegistry({ dataDir: dir.path }), { workflow: 'notify', input: { count: 1, outbox }, id: 'n1' }, 'api')
      .then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('INVALID_INPUT');
    expect(Object.keys((error as ApiError).fields!)).toEqual(['input.outbox']);
    expect(await store.getRun('n1')).toBeNull();
    expect(await store.listRuns({ claimTtlMs: 30_000 })).toEqual([]);
  });

  it('accepts a path inside the data directory', async () => {
    const { store, dir } = openTestStore();
    const run = await start(store, builtinRegistry({ dataDir: dir.path }), { workflow: 'notify', input: { count: 1, outbox: 'out/n.jsonl' }, id: 'n2' }, 'api');
    expect(run).toMatchObject({ id: 'n2', status: 'queued' });
  });
});
