/**
 * OpenTelemetry traces from real worker processes into a real OTLP/HTTP receiver (test/support/otlp-receiver.ts),
 * on every backend. A run started with a traceparent is SIGKILLed mid-step and resumed on another worker: one
 * trace, every step once per attempt that ended, with its outcome. The span of the attempt in flight at the kill
 * never ended, so it was never exported: the takeover's attempt (a higher waybill.attempt) stands for that step.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/support';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver';
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { writeModule } from '../workflows/user-module';
import { startWorker, until } from './support';

const kinds = await targetKinds('tracing across worker processes');

/** Five steps; step 2 holds (its side effect still running) until the marker file exists. */
const TRACED = `
import { existsSync, writeFileSync } from 'node:fs';
export const traced = defineWorkflow({
  name: 'traced',
  input: z.object({ marker: z.string() }),
  async run(ctx, input) {
    for (let n = 0; n < 5; n++) {
      await ctx.step(\`s\${n}\`, async () => {
        if (n === 2 && !existsSync(input.marker)) {
          writeFileSync(input.marker + '.holding', '');
          while (!existsSync(input.marker)) await sleep(50);
        }
        return n;
      }, { step: n });
    }
    await ctx.sleep(1500, 'nap');
    return 'done';
  },
});
`;

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

async function cli(target: Target, args: string[], env: Record<string, string> = {}) {
  const result = await runCli(args, { env: { DATABASE_URL: target.url, WAYBILL_SQLITE_SYNC: 'normal', ...env } });
  return result;
}

const steps = (spans: ReceivedSpan[]) =>
  spans
    .filter((s) => s.name === 'step')
    .map(
      (s) => `${s.attributes['waybill.key']} ${s.attributes['waybill.outcome']} #${s.attributes['waybill.attempt']}`,
    );

describe.each(kinds)('traces on %s', (kind) => {
  function env(receiver: OtlpReceiver, dir: string): Record<string, string> {
    return {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      WAYBILL_HEARTBEAT_MS: '200',
      WAYBILL_RUN_LEASE_MS: '10000',
      WAYBILL_LEASE_MS: '2000',
      WAYBILL_DATA_DIR: dir,
    };
  }

  it('a run SIGKILLed mid-step and resumed on another worker is one trace: each step once per attempt, with its outcome', async () => {
    const target = await makeTarget(kind);
    const receiver = await startOtlpReceiver();
    const dir = tempDir('waybill-trace-');
    const module = writeModule(dir.path, 'traced.mjs', TRACED);
    const marker = dir.file('release');
    const w1 = startWorker(target, ['--workflows', module, '--id', 'w-tr-1'], env(receiver, dir.path));
    const store = await target.store();
    await until('w-tr-1 serving traced', async () =>
      (await store.listPublishedWorkflows({ liveWithinMs: 60_000 })).some((w) => w.name === 'traced'),
    );
    const started = await cli(target, [
      'start',
      'traced',
      '--id',
      'tr-1',
      '--traceparent',
      PARENT,
      '--input',
      JSON.stringify({ marker }),
    ]);
    expect(started.code, started.stderr).toBe(0);
    expect((await store.getRun('tr-1'))?.traceparent).toBe(PARENT);

    // The kill lands inside step 2's side effect, once the two steps before it have been exported.
    await until('step 2 holding', () => existsSync(`${marker}.holding`));
    await until('steps 0 and 1 exported', () => steps(receiver.spans).length === 2);
    w1.child.kill('SIGKILL');
    await new Promise((resolve) => w1.child.once('exit', resolve));
    writeFileSync(marker, '');

    const w2 = startWorker(target, ['--workflows', module, '--id', 'w-tr-2'], env(receiver, dir.path));
    await until('tr-1 completed', async () => (await store.getRun('tr-1'))?.status === 'completed');
    w2.child.kill('SIGTERM');
    await new Promise((resolve) => w2.child.once('exit', resolve));

    const spans = receiver.spans;
    // One trace, the one the start was given; every span is the worker's service.
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([TRACE_ID]));
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['waybill-worker']));
    expect(steps(spans).sort()).toEqual(
      [
        // The first worker's: the two steps it committed (step 2's attempt died with it, never ended).
        'tr-1:s0 executed #1',
        'tr-1:s1 executed #1',
        // The second's: the committed steps skipped; step 2 taken over (its peer expired the dead worker's claim on
        // proof of death), so its attempt 2, in doubt; the rest executed.
        'tr-1:s0 skipped #1',
        'tr-1:s1 skipped #1',
        'tr-1:s2 executed #2',
        'tr-1:s3 executed #1',
        'tr-1:s4 executed #1',
        // After the nap the run replays from the top: every step skipped once more.
        'tr-1:s0 skipped #1',
        'tr-1:s1 skipped #1',
        'tr-1:s2 skipped #1',
        'tr-1:s3 skipped #1',
        'tr-1:s4 skipped #1',
      ].sort(),
    );
    // The run spans: the second worker's two executions (parked at the nap, then completed), children of the
    // start's context; the first's never ended. Each step span is a child of its execution's run span.
    const runs = spans.filter((s) => s.name === 'run');
    expect(runs.map((s) => s.attributes['waybill.run.outcome']).sort()).toEqual(['completed', 'waiting']);
    expect(runs.every((s) => s.parentSpanId === '00f067aa0ba902b7')).toBe(true);
    const second = new Set(runs.map((s) => s.spanId));
    const stepSpans = spans.filter((s) => s.name === 'step');
    expect(stepSpans.filter((s) => second.has(s.parentSpanId))).toHaveLength(10);
    // The first worker's steps hang under its run span, which died with it: same trace, a parent never exported.
    expect(stepSpans.filter((s) => !second.has(s.parentSpanId)).map((s) => s.parentSpanId)).toHaveLength(2);
    // The nap: parked once, decided once.
    const waits = spans.filter((s) => s.name === 'wait');
    expect(waits.map((s) => `${s.attributes['waybill.wait']} ${s.attributes['waybill.outcome']}`).sort()).toEqual([
      'nap decided',
      'nap parked',
    ]);
    expect(spans.filter((s) => s.status === 2)).toEqual([]);
    expect(receiver.requests.refused).toBe(0);
    // The second worker's log lines of the run name its trace.
    const ended = w2.logs.filter((l) => l.runId === 'tr-1' && l.msg === 'run completed');
    expect(ended.map((l) => l.traceId)).toEqual([TRACE_ID]);
  });

  it('a run started without a traceparent keeps its first execution’s: every later one continues that trace', async () => {
    const target = await makeTarget(kind);
    const receiver = await startOtlpReceiver();
    const dir = tempDir('waybill-trace-');
    const module = writeModule(dir.path, 'traced.mjs', TRACED);
    const marker = dir.file('release');
    writeFileSync(marker, '');
    const store = await target.store();
    await store.createRun({ id: 'tr-2', workflow: 'traced', inputJson: JSON.stringify({ marker }), totalSteps: null });
    const w = startWorker(target, ['--workflows', module, '--id', 'w-tr-3'], env(receiver, dir.path));
    await until('tr-2 completed', async () => (await store.getRun('tr-2'))?.status === 'completed');
    w.child.kill('SIGTERM');
    await new Promise((resolve) => w.child.once('exit', resolve));
    const kept = (await store.getRun('tr-2'))!.traceparent!;
    expect(kept).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, spanId] = kept.split('-');
    const runs = receiver.spans.filter((s) => s.name === 'run');
    expect(runs).toHaveLength(2);
    // The first execution is the trace's root and the kept context; the second (after the nap) its child.
    expect(runs.find((s) => s.attributes['waybill.run.outcome'] === 'waiting')).toMatchObject({
      spanId,
      parentSpanId: '',
    });
    expect(runs.find((s) => s.attributes['waybill.run.outcome'] === 'completed')?.parentSpanId).toBe(spanId);
    expect(new Set(receiver.spans.map((s) => s.traceId))).toEqual(new Set([traceId]));
    expect(steps(receiver.spans)).toHaveLength(10);
  });

  it('a worker without OTEL_* exports nothing and keeps no trace context', async () => {
    const target = await makeTarget(kind);
    const receiver = await startOtlpReceiver();
    const dir = tempDir('waybill-trace-');
    const module = writeModule(dir.path, 'traced.mjs', TRACED);
    const marker = dir.file('release');
    writeFileSync(marker, '');
    const store = await target.store();
    await store.createRun({ id: 'tr-3', workflow: 'traced', inputJson: JSON.stringify({ marker }), totalSteps: null });
    const { OTEL_EXPORTER_OTLP_ENDPOINT: _, ...quiet } = env(receiver, dir.path);
    const w = startWorker(target, ['--workflows', module, '--id', 'w-tr-4'], quiet);
    await until('tr-3 completed', async () => (await store.getRun('tr-3'))?.status === 'completed');
    w.child.kill('SIGTERM');
    await new Promise((resolve) => w.child.once('exit', resolve));
    expect(receiver.requests).toEqual({ ok: 0, refused: 0 });
    expect((await store.getRun('tr-3'))?.traceparent).toBeNull();
  });
});
