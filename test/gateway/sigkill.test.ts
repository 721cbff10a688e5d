/**
 * The window no store closes without the gateway: a worker SIGKILLed after the model answered and before its
 * step committed. Real `waybill worker` processes run a workflow whose steps call the model through the
 * official openai SDK with the step's idempotency key, then wait on a gate file, so each kill lands in that
 * window; a fresh worker resumes the run. Through a real `waybill gateway` process the stand-in upstream
 * answers once per step however many kills; called directly, it answers once more per kill: what the
 * gateway saved. Streamed and not, on every backend.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { BIN, ROOT } from '../cli/support';
import { startWorker, until } from '../engine/support';
import { startModelUpstream } from '../support/model-upstream';
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { writeModule } from '../workflows/user-module';

const kinds = await targetKinds('model calls across worker kills');

/** Steps per run, and kills per run: one in each of the first KILLS steps' windows. */
const STEPS = 6;
const KILLS = 5;

const OPENAI_URL = pathToFileURL(join(ROOT, 'node_modules/openai/index.mjs')).href;

const ASK = `
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from ${JSON.stringify(OPENAI_URL)};

export const ask = defineWorkflow({
  name: 'ask-model',
  input: z.object({ steps: z.number().int(), baseURL: z.string(), dir: z.string(), stream: z.boolean() }),
  totalSteps: (input) => input.steps,
  async run(ctx, input) {
    const client = new OpenAI({ baseURL: input.baseURL, apiKey: 'sandbox-has-no-provider-key', maxRetries: 0 });
    const { step } = await ctx.load();
    for (let n = step; n < input.steps; n++) {
      await ctx.runOnce(\`\${ctx.runId}:step:\${n}\`, async ({ idempotencyKey }) => {
        const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: \`\${ctx.runId} step \${n}\` }] };
        const options = { headers: { 'Idempotency-Key': idempotencyKey } };
        let text = '';
        if (input.stream) {
          const stream = await client.chat.completions.create({ ...body, stream: true }, options);
          for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
        } else {
          text = (await client.chat.completions.create(body, options)).choices[0].message.content;
        }
        appendFileSync(join(input.dir, 'answered.log'), idempotencyKey + '\\n');
        // The window: answered, not committed. The test kills the worker here, then opens the gate.
        while (existsSync(join(input.dir, 'gate-' + n))) await sleep(10);
        return text;
      }, { step: n });
      await ctx.saveProgress(n + 1, {});
    }
    return 'done';
  },
});
`;

const ENV = {
  WAYBILL_HEARTBEAT_MS: '100',
  WAYBILL_RUN_LEASE_MS: '1000',
  WAYBILL_LEASE_MS: '1000',
  WAYBILL_POLL_MS: '100',
  WAYBILL_IDLE_POLL_MS: '100',
};

/** A `waybill gateway` process on a free port; its URL from its first log line. */
async function startGateway(target: Target, upstreamUrl: string): Promise<string> {
  const child: ChildProcess = spawn(process.execPath, [BIN, 'gateway', '--port', '0'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: target.url,
      WAYBILL_SQLITE_SYNC: 'normal',
      WAYBILL_GATEWAY_OPENAI_URL: `${upstreamUrl}/v1`,
      WAYBILL_GATEWAY_OPENAI_KEY: 'sk-provider',
    },
  });
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  let seen = '';
  return new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      seen += chunk;
      const url = /"url":"(http:\/\/[^"]+)"/.exec(seen)?.[1];
      if (url) resolve(url);
    });
    child.once('exit', (code) => reject(new Error(`waybill gateway exited ${code}: ${seen}`)));
  });
}

const answered = (dir: string) =>
  existsSync(join(dir, 'answered.log'))
    ? readFileSync(join(dir, 'answered.log'), 'utf8').split('\n').filter(Boolean)
    : [];

/** One run of STEPS model steps, its worker SIGKILLed in each of the first KILLS windows: kills and upstream calls. */
async function trial(kind: Target['kind'], options: { gateway: boolean; stream: boolean }) {
  const target = await makeTarget(kind);
  const upstream = await startModelUpstream();
  onTestFinished(() => upstream.close());
  const dir = tempDir('waybill-gateway-kill-');
  const module = writeModule(dir.path, 'ask.mjs', ASK);
  const baseURL = options.gateway ? `${await startGateway(target, upstream.url)}/v1` : `${upstream.url}/v1`;
  const runId = `ask-${options.gateway ? 'gw' : 'direct'}-${options.stream ? 'sse' : 'json'}`;
  for (let n = 0; n < KILLS; n++) writeFileSync(join(dir.path, `gate-${n}`), '');
  const store = await target.store();
  await store.createRun({
    id: runId,
    workflow: 'ask-model',
    inputJson: JSON.stringify({ steps: STEPS, baseURL, dir: dir.path, stream: options.stream }),
    totalSteps: STEPS,
  });
  let kills = 0;
  for (let n = 0; n < KILLS; n++) {
    const worker = startWorker(target, ['--workflows', module, '--id', `w-${n}`], ENV);
    const key = `${runId}:step:${n}`;
    await until(`step ${n} to be answered`, async () => answered(dir.path).includes(key), { timeoutMs: 60_000 }).catch(
      (error) => {
        throw new Error(`${error.message}; the worker said: ${worker.logs.map((l) => JSON.stringify(l)).join('\n')}`);
      },
    );
    // Answered and not committed: the step is held at its gate.
    expect(await store.getCommitted(key)).toBeNull();
    worker.child.kill('SIGKILL');
    await once(worker.child, 'exit');
    kills++;
    rmSync(join(dir.path, `gate-${n}`));
  }
  startWorker(target, ['--workflows', module, '--id', 'w-last'], ENV);
  await until('the run to complete', async () => (await store.getRun(runId))?.status === 'completed', {
    timeoutMs: 120_000,
  });
  const keys = answered(dir.path);
  return { kills, upstreamCalls: upstream.calls.length, executions: keys.length, store, runId };
}

describe.each(kinds)('a worker SIGKILLed between the model answer and the commit, on %s', (kind) => {
  for (const stream of [false, true]) {
    const framing = stream ? 'streamed' : 'not streamed';
    it(`through the gateway (${framing}): ${KILLS} kills, the upstream answers each of ${STEPS} steps once`, async () => {
      const { kills, upstreamCalls, executions, store, runId } = await trial(kind, { gateway: true, stream });
      expect(kills).toBe(KILLS);
      // Each killed step ran twice in the worker, and was paid for once.
      expect(executions).toBe(STEPS + KILLS);
      expect(upstreamCalls).toBe(STEPS);
      const calls = await store.listModelCalls({ runId });
      expect(calls.map((c) => [c.step, c.state])).toEqual(Array.from({ length: STEPS }, (_, n) => [n, 'complete']));
    });

    it(`without it (${framing}): the same ${KILLS} kills pay for ${KILLS} answers twice`, async () => {
      const { kills, upstreamCalls, executions } = await trial(kind, { gateway: false, stream });
      expect(kills).toBe(KILLS);
      expect(executions).toBe(STEPS + KILLS);
      expect(upstreamCalls).toBe(STEPS + KILLS);
    });
  }
});
