/**
 * The commands the pages' test files run (./page.ts), by page and by the command's exact text, each with what
 * the page says it does. A page's commands run in the page's order, sharing the page's store and its background
 * processes; a handler waits only for what a reader would (a run to finish before it is rerun).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Context, Handler } from './context';
import { ROOT } from './fences';
import { guideCrawlModule } from './guide-module';
import { httpApi } from './http-api-commands';
import { background, ok, type Running, sh } from './shell';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Until the worker says it serves these workflows. */
async function serving(context: Context, worker: Running, ...workflows: string[]): Promise<void> {
  await context.until(`a worker serving ${workflows.join(', ')}`, () => {
    if (worker.gone()) throw new Error(`the worker stopped:\n${worker.output()}`);
    return worker
      .output()
      .split('\n')
      .some((line) => line.includes('"msg":"serving workflows"') && workflows.every((w) => line.includes(`"${w}"`)));
  });
}

async function settled(context: Context, runId: string, status = 'completed'): Promise<void> {
  await context.until(`run ${runId} ${status}`, () => context.store.status(runId) === status);
}

const guide: Record<string, Handler> = {
  'npx waybill --help': async (command, { terminal }) => {
    const out = await ok(terminal, command);
    for (const name of ['start', 'worker', 'rerun', 'fork', 'audit', 'token', 'logs'])
      expect(out.stdout).toMatch(new RegExp(`^ {2}${name} `, 'm'));
  },
  'npx waybill worker': async (command, context) => {
    await serving(context, background(context.terminal, command), 'agent-batch', 'review-and-send');
  },
  'npx waybill migrate --check': async (command, { terminal }) => {
    expect((await ok(terminal, command)).stdout).toMatch(/is up to date/);
  },
  [`npx waybill start agent-batch --input '{"count": 50}' --follow`]: async (command, { terminal }) => {
    expect((await ok(terminal, command)).stdout).toMatch(/^run agent-batch-\S+ completed$/m);
  },
  [`npx waybill start agent-batch --input '{"count": 50}' --id nightly-7`]: async (command, context) => {
    expect((await ok(context.terminal, command)).stdout).toBe('queued nightly-7 (agent-batch, 50 steps)\n');
    // "again": the same run, nothing queued.
    const again = await ok(context.terminal, command);
    expect(again.stdout).toBe('exists nightly-7 (agent-batch, 50 steps)\n');
    const other = await sh(context.terminal, command.replace('"count": 50', '"count": 60'));
    expect([other.code, other.stderr]).toEqual([1, expect.stringContaining('exists with another input') as string]);
    await settled(context, 'nightly-7');
  },
  'npx waybill claims --orphaned': async (command, { terminal }) => {
    expect((await ok(terminal, command)).stdout).toBe('no orphaned claims\n');
  },
  [`npx waybill start review-and-send --id review-1 --input '{}'`]: async (command, context) => {
    expect((await ok(context.terminal, command)).stdout).toBe('queued review-1 (review-and-send, 2 steps)\n');
    await settled(context, 'review-1', 'waiting');
  },
  [`npx waybill signal review-1 settled --payload '{"id": "evt_1"}'`]: async (command, { terminal }) => {
    expect((await ok(terminal, command)).stdout).toBe('signalled settled to review-1\n');
  },
  [`npx waybill approve review-1 --note 'looks right'`]: async (command, context) => {
    expect((await ok(context.terminal, command)).stdout).toMatch(/^approved review of review-1: looks right/);
    await settled(context, 'review-1');
  },
  'npx waybill prune --older-than 30d --dry-run': async (command, { terminal }) => {
    expect((await ok(terminal, command)).stdout).toMatch(/^would prune 0 finished run\(s\) older than 30d/);
  },
  'npx waybill audit --actor cli:ann --since 2026-12-01': async (command, { terminal }) => {
    await ok(terminal, command);
  },
  'npx waybill runs --status queued': async (command, { terminal }) => {
    await ok(terminal, command);
  },
  'npx waybill cancel --all-matching --workflow crawl --status queued': async (command, { terminal }) => {
    const out = await sh(terminal, command);
    expect([out.code, out.stderr]).toEqual([2, expect.stringContaining('Nothing changed') as string]);
  },
  'npx waybill cancel --all-matching --workflow crawl --status queued --yes --reason "bad deploy"': async (
    command,
    { terminal },
  ) => {
    expect((await ok(terminal, command)).stdout).toMatch(/^cancel: 0 matched, 0 done, 0 skipped/);
  },
  'npx waybill rerun --all-matching --workflow crawl --status failed --from-step fetch-3 --yes': async (
    command,
    { terminal },
  ) => {
    expect((await ok(terminal, command)).stdout).toMatch(/^rerun: 0 matched, 0 done, 0 skipped/);
  },
  'npx waybill token --run nightly-7 --ttl 24h': async (command, { terminal }) => {
    const out = await ok(terminal, command);
    expect(out.stdout).toMatch(/^\S{40,}\n$/);
  },
  'npx waybill worker --url http://127.0.0.1:3000': async (command, context) => {
    await serving(context, background(context.terminal, command), 'python-agent');
  },
  [`npx waybill start python-agent --id py-1 --input '{"steps": 5}'`]: async (command, { terminal }) => {
    expect((await ok(terminal, command)).stdout).toBe('queued py-1 (python-agent)\n');
  },
  'npx waybill logs py-1 --follow': async (command, context) => {
    const out = await ok(context.terminal, command);
    expect(out.stdout).toContain('step 4 executed');
    expect(context.store.status('py-1')).toBe('completed');
  },
  'npx waybill --version': async (command, { terminal }) => {
    expect((await ok(terminal, command)).stdout).toBe(`${VERSION}\n`);
  },

  'npx waybill step nightly-7 37 --json': async (command, { terminal }) => {
    const step = JSON.parse((await ok(terminal, command)).stdout) as { key: string; status: string };
    expect(step).toMatchObject({ key: 'nightly-7:step:37', status: 'committed' });
  },
  'npx waybill rerun nightly-7 --from-step 37 --dry-run': async (command, context) => {
    // The demo's steps call no model; nothing is changed (the rerun after it is the run's first).
    expect((await ok(context.terminal, command)).stdout).toBe(
      'no model calls recorded for steps 37–49\n' +
        'dry run: rerun of nightly-7 from step 37 would move the results of steps 37–49 to history and queue the run to run them again; nothing changed\n',
    );
  },
  'npx waybill rerun nightly-7 --from-step 37 --reason "model answer was wrong"': async (command, context) => {
    expect((await ok(context.terminal, command)).stdout).toMatch(
      /^no model calls recorded for steps 37–49\nrerun 1 of nightly-7 from step 37: 13 results/,
    );
    await settled(context, 'nightly-7');
  },
  'npx waybill rerun nightly-7 --from-step 37 --input @edited.json': async (command, context) => {
    // The reader's edit of the run's input.
    writeFileSync(join(context.terminal.cwd, 'edited.json'), JSON.stringify({ count: 50, latencyMs: 10 }));
    expect((await ok(context.terminal, command)).stdout).toMatch(/\nrerun 2 of nightly-7 from step 37/);
    await settled(context, 'nightly-7');
  },
  'npx waybill rerun nightly-7 --from-step step:3': async (command, context) => {
    expect((await ok(context.terminal, command)).stdout).toMatch(/\nrerun 3 of nightly-7 from step 3 /);
    await settled(context, 'nightly-7');
  },
  'npx waybill fork nightly-7 --from-step 10 --id nightly-7-b': async (command, context) => {
    expect((await ok(context.terminal, command)).stdout).toMatch(/nightly-7-b/);
    await settled(context, 'nightly-7-b');
  },

  'npx waybill worker --workflows ./workflows.mjs': async (command, context) => {
    writeFileSync(join(context.terminal.cwd, 'workflows.mjs'), guideCrawlModule());
    await serving(context, background(context.terminal, command), 'crawl');
  },
  [`npx waybill start crawl --input '{"pages": 40}'`]: async (command, context) => {
    const id = /^queued (crawl-\S+) \(crawl\)$/m.exec((await ok(context.terminal, command)).stdout)?.[1];
    expect(id).toBeDefined();
    await settled(context, id!);
  },
  'npx waybill workflows': async (command, { terminal }) => {
    const row = (await ok(terminal, command)).stdout.split('\n').find((l) => l.startsWith('crawl '));
    expect(row).toBeDefined();
    expect(row).not.toContain('no live worker');
  },
};

const gateway: Record<string, Handler> = {
  // The port is the page's test file's (WAYBILL_GATEWAY_PORT): the default, 4010, may be taken here.
  'WAYBILL_GATEWAY_OPENAI_KEY=sk-… WAYBILL_GATEWAY_ANTHROPIC_KEY=sk-ant-… npx waybill gateway': async (
    command,
    context,
  ) => {
    const url = `http://127.0.0.1:${context.terminal.env.WAYBILL_GATEWAY_PORT}`;
    const running = background(context.terminal, command);
    await context.until('the gateway listening', () => {
      if (running.gone()) throw new Error(`the gateway stopped:\n${running.output()}`);
      return running.output().includes(`gateway listening on ${url}`);
    });
    await running.stop('SIGTERM');
    expect(running.output()).not.toMatch(/"level":"(error|fatal)"/);
  },
};

export const HERE: Record<string, Record<string, Handler>> = {
  'docs/gateway.md': gateway,
  'docs/guide.md': guide,
  'docs/reference/http-api.md': httpApi,
};
