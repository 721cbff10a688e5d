/**
 * POST /api/v1/runs and the start form's server action for a workflow the control plane has no code of: it
 * was published by a worker (here written through the store as `waybill worker` does), and both check input
 * against the published JSON Schema, naming each wrong field (`input.count`), writing nothing when refused,
 * and storing the parsed input (defaults applied) when not. A workflow whose worker is gone is still started.
 */
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { publicationsOf } from '../../lib/engine/publish';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import type { SqliteStore } from '../../lib/store/sqlite';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-api-start-');
process.env.DATABASE_URL = `file:${dir.file('w.db')}`;
const operator = { actor: 'olga', role: 'operator' as const };
vi.mock('@/lib/auth/server', async (actual) => ({ ...(await actual<object>()), requireAction: async () => operator }));
vi.mock('next/cache', () => ({ revalidatePath: () => undefined }));
const { POST } = await import('../../app/api/v1/runs/route');
const { startRunAction } = await import('../../app/actions/runs');
const { getStore } = await import('../../lib/data/store');
const { getWorkflowChoices } = await import('../../lib/data/workflows');
const store = (await getStore()) as unknown as SqliteStore & Awaited<ReturnType<typeof getStore>>;

// Code the control plane never imports: only its publication reaches the store.
const survey = defineWorkflow({
  name: 'survey',
  description: 'Asks count people.',
  version: '2026.12.1',
  totalSteps: 4,
  input: z.strictObject({
    count: z.number().int().min(1).max(100),
    mode: z.enum(['fast', 'slow']).default('fast'),
    notes: z.string().optional(),
  }),
  async run() {},
});

afterAll(async () => {
  await store.close();
  dir.remove();
});

beforeEach(async () => {
  store.db.exec(
    'DELETE FROM runs; DELETE FROM step_events; DELETE FROM audit; DELETE FROM workflows; DELETE FROM workers',
  );
  await store.registerWorker({ id: 'w-survey', host: 'elsewhere', pid: 1 });
  await store.publishWorkflows('w-survey', publicationsOf(new WorkflowRegistry([survey])));
});

const post = (body: unknown) =>
  POST(
    new Request('http://127.0.0.1:3000/api/v1/runs', {
      method: 'POST',
      headers: { host: '127.0.0.1:3000', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
const form = (fields: Record<string, string>) => {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) data.set(k, v);
  return data;
};
const written = () => ({
  runs: store.db.prepare('SELECT id, workflow, input_json AS input, total_steps AS total FROM runs ORDER BY id').all(),
  events: store.db.prepare('SELECT count(*) AS n FROM step_events').get(),
  audit: store.db.prepare('SELECT action, target FROM audit ORDER BY id').all(),
});
const nothing = { runs: [], events: { n: 0 }, audit: [] };

describe('POST /api/v1/runs of a published workflow', () => {
  it('refuses each wrong field by name with 400 and writes nothing; starts a right one with its defaults and total', async () => {
    const bad = await post({ workflow: 'survey', input: { count: 'three', mode: 'medium', extra: 1 } });
    expect(bad.status).toBe(400);
    const body = await bad.json();
    expect(body.error).toMatchObject({
      code: 'INVALID_INPUT',
      message: "input does not match survey's schema: input.count: must be a number",
      fields: {
        'input.count': ['must be a number'],
        'input.mode': ['must be one of "fast", "slow"'],
        'input.extra': ['is not a known field'],
      },
    });
    expect((await (await post({ workflow: 'survey', input: {} })).json()).error.fields).toEqual({
      'input.count': ['is required'],
    });
    expect((await (await post({ workflow: 'survey', input: [] })).json()).error.fields).toEqual({
      input: ['must be an object'],
    });
    const unknown = await (await post({ workflow: 'surveys', input: {} })).json();
    expect(unknown.error.fields).toEqual({
      workflow: ['unknown workflow "surveys" (known: agent-batch, notify, review-and-send, survey)'],
    });
    expect(written()).toEqual(nothing);

    const created = await post({ workflow: 'survey', input: { count: 2 }, id: 's1' });
    expect(created.status).toBe(201);
    expect((await created.json()).run).toMatchObject({ id: 's1', workflow: 'survey', status: 'queued', totalSteps: 4 });
    expect(written()).toEqual({
      runs: [{ id: 's1', workflow: 'survey', input: JSON.stringify({ count: 2, mode: 'fast' }), total: 4 }],
      events: { n: 1 },
      audit: [{ action: 'start', target: 's1' }],
    });
  });

  it('still starts a workflow whose worker stopped, which the start form lists as served by nobody', async () => {
    expect((await getWorkflowChoices()).find((c) => c.name === 'survey')).toMatchObject({
      servedBy: ['w-survey'],
      builtin: false,
      version: '2026.12.1',
      totalSteps: 4,
      description: 'Asks count people.',
      example: JSON.stringify({ mode: 'fast' }, null, 2),
    });
    await store.stopWorker('w-survey');
    const choices = await getWorkflowChoices();
    expect(choices.map((c) => [c.name, c.servedBy])).toEqual([
      ['agent-batch', []],
      ['notify', []],
      ['review-and-send', []],
      ['survey', []],
    ]);
    expect((await post({ workflow: 'survey', input: { count: 1 }, id: 's2' })).status).toBe(201);
  });
});

describe('the start form action for a published workflow', () => {
  it('checks again on the server, naming each wrong field, and starts a right one', async () => {
    const refused = await startRunAction(
      null,
      form({ workflow: 'survey', input: JSON.stringify({ count: 0, notes: 5 }) }),
    );
    expect(refused).toEqual({
      ok: false,
      message: "the input does not match survey's schema",
      errors: { 'input.count': ['must be at least 1'], 'input.notes': ['must be a string'] },
    });
    expect(await startRunAction(null, form({ workflow: 'nope', input: '{}' }))).toMatchObject({
      ok: false,
      errors: { workflow: [expect.stringContaining('survey')] },
    });
    expect(written()).toEqual(nothing);

    const started = await startRunAction(
      null,
      form({ workflow: 'survey', input: JSON.stringify({ count: 3, mode: 'slow' }), id: 'f1' }),
    );
    expect(started).toEqual({ ok: true, message: 'started f1', data: { id: 'f1' } });
    expect(written().runs).toEqual([
      { id: 'f1', workflow: 'survey', input: JSON.stringify({ count: 3, mode: 'slow' }), total: 4 },
    ]);
  });
});
