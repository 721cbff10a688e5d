/**
 * examples/loop.mjs and examples/openai-agent.mjs: a loop in the user's own process (Checkpoint and
 * runAgent, no worker), SIGKILLed mid-run and run again. The openai agent's model is a stand-in of ours on a
 * local port speaking POST /v1/chat/completions, which deduplicates on the Idempotency-Key header as a
 * gateway would; the official openai package talks to it through OPENAI_BASE_URL.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Child } from '../support/child';
import { counts, exampleProject, type Project, succeeds, until } from './project';

interface Run {
  workflow: string;
  status: string;
  total_steps: number | null;
}
const runOf = (project: Project, id: string) =>
  project.row<Run>('SELECT workflow, status, total_steps FROM runs WHERE id = ?', id);
const committedOf = (project: Project, id: string) =>
  project.row<{ n: number }>('SELECT count(*) AS n FROM committed WHERE run_id = ?', id)?.n ?? 0;
const keys = (run: string, n: number) => Array.from({ length: n }, (_, i) => `${run}:step:${i}`);

describe('examples/loop.mjs', () => {
  it('killed with SIGKILL mid-run and run again: it resumes, each step committed once, at most the one in flight called twice', async () => {
    const project = exampleProject('loop.mjs');
    const first = project.node('loop.mjs');
    await until('three steps', () => project.lines('effects.log').length >= 3);
    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const calledAtKill = project.lines('effects.log').length;
    const committedAtKill = committedOf(project, 'nightly-1');
    // The one step in flight may have made its call (then it is called again) or not.
    expect(calledAtKill - committedAtKill).toBeGreaterThanOrEqual(0);
    expect(calledAtKill - committedAtKill).toBeLessThanOrEqual(1);

    const report = JSON.parse((await succeeds(project.node('loop.mjs'))).at(-1)!);
    expect(report).toEqual({ processed: 8, executed: 8 - committedAtKill, skipped: 0, awaited: 0 });
    const called = project.lines('effects.log');
    expect(called).toHaveLength(calledAtKill + 8 - committedAtKill);
    expect(Object.keys(counts(called)).sort()).toEqual(keys('nightly-1', 8).sort());
    expect(committedOf(project, 'nightly-1')).toBe(8);
    expect(runOf(project, 'nightly-1')).toEqual({ workflow: 'nightly-notes', status: 'completed', total_steps: 8 });
  });
});

interface Seen {
  key: string | undefined;
  prompt: string;
}

/** The stand-in model: answers each key's completion once and replays it for the key's repeats. */
function standInModel() {
  const seen: Seen[] = [];
  const answered = new Map<string, unknown>();
  const replayed: string[] = [];
  let onRequest: (seen: Seen, response: ServerResponse) => boolean = () => false;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
        response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such route"}}');
        return;
      }
      const { messages, model } = JSON.parse(body) as { model: string; messages: { content: string }[] };
      const key = request.headers['idempotency-key'] as string | undefined;
      const call = { key, prompt: messages[0]!.content };
      seen.push(call);
      let answer = key === undefined ? undefined : answered.get(key);
      if (answer !== undefined) replayed.push(key!);
      else {
        answer = {
          id: `chatcmpl-${seen.length}`,
          object: 'chat.completion',
          created: 1_767_225_600,
          model,
          choices: [
            { index: 0, finish_reason: 'stop', message: { role: 'assistant', content: `summary: ${call.prompt}` } },
          ],
          usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
        };
        // Answered: the model's work is done (and billed) whether or not the caller lives to read it.
        if (key !== undefined) answered.set(key, answer);
      }
      if (onRequest(call, response)) return;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  return {
    seen,
    replayed,
    /** Return true to leave the request unanswered. */
    intercept(fn: typeof onRequest) {
      onRequest = fn;
    },
    async listen(): Promise<string> {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('examples/openai-agent.mjs', () => {
  let model: ReturnType<typeof standInModel> | undefined;
  afterEach(async () => {
    await model?.close();
  });

  it("each step's call carries its idempotency key; SIGKILLed inside step 3's call and resumed, only step 3's key is answered twice", async () => {
    const project = exampleProject('openai-agent.mjs');
    model = standInModel();
    const env = { OPENAI_BASE_URL: await model.listen(), OPENAI_API_KEY: 'sk-stand-in', RUN_ID: 'openai-1' };
    let first: Child | undefined;
    let killed = false;
    // The worst moment: the model has answered step 3 and the agent dies before it reads the answer.
    model.intercept((call, response) => {
      if (killed || call.key !== 'openai-1:step:3') return false;
      killed = true;
      first!.kill('SIGKILL');
      response.destroy();
      return true;
    });
    first = project.node('openai-agent.mjs', env);
    expect((await first.exited).signal).toBe('SIGKILL');
    expect(committedOf(project, 'openai-1')).toBe(3);

    const lines = await succeeds(project.node('openai-agent.mjs', env));
    expect(lines).toEqual([
      'in doubt: openai-1:step:3 (attempt 2)',
      JSON.stringify({ processed: 6, executed: 3, skipped: 0, awaited: 0 }),
    ]);

    // One request per step, each with its own step's key, and step 3's twice: the call the kill cut off, then
    // its redo, which the model answered from what it had done rather than doing it again.
    const expected = [0, 1, 2, 3, 3, 4, 5].map((n) => ({
      key: `openai-1:step:${n}`,
      prompt: `Summarize document ${n}.`,
    }));
    expect(model.seen).toEqual(expected);
    expect(model.replayed).toEqual(['openai-1:step:3']);
    expect(committedOf(project, 'openai-1')).toBe(6);
    const stored = project.row<{ result_json: string }>(
      'SELECT result_json FROM committed WHERE idem_key = ?',
      'openai-1:step:3',
    );
    expect(JSON.parse(stored!.result_json)).toEqual({ summary: 'summary: Summarize document 3.' });
    expect(runOf(project, 'openai-1')).toEqual({ workflow: 'openai-summaries', status: 'completed', total_steps: 6 });
  });
});
