/**
 * The run's trace: a Gantt of a window of steps (at most TRACE_STEPS, so a 100,000-step run costs what a
 * 60-step one does), each attempt a bar from its start to its end — failed attempts red, takeovers and lost
 * leases amber, the committed one blue — on one time axis. Plain elements, no chart library: bars are
 * positioned by percentages computed here on the server, so the page sends no script for it.
 */
import Link from 'next/link';
import type { TraceBar } from '@/lib/store/contract';

export const TRACE_STEPS = 60;

const TONE: Record<TraceBar['outcome'], string> = {
  committed: 'bg-blue-500',
  failed: 'bg-red-500',
  expired: 'bg-amber-500',
  lease_lost: 'bg-amber-500',
};

export function Trace({
  runId,
  bars,
  from,
  lastStep,
}: {
  runId: string;
  bars: TraceBar[];
  from: number;
  lastStep: number;
}) {
  const spans = bars.map((b) => ({ ...b, start: b.endAt - (b.durationMs ?? 0) / 1000 }));
  if (spans.length === 0)
    return (
      <p className="text-sm text-zinc-600 dark:text-zinc-400">
        No attempts recorded in steps {from}–{from + TRACE_STEPS - 1}.
      </p>
    );
  const t0 = Math.min(...spans.map((s) => s.start));
  const t1 = Math.max(...spans.map((s) => s.endAt));
  const width = Math.max(t1 - t0, 1e-3);
  const steps = [...new Set(spans.map((s) => s.step))].sort((a, b) => a - b);
  const pct = (t: number) => `${(((t - t0) / width) * 100).toFixed(3)}%`;
  const href = (n: number) => `?trace=${Math.max(0, n)}#trace`;
  return (
    <div data-testid="trace" className="space-y-2 text-xs">
      <p className="text-zinc-600 dark:text-zinc-400">
        Steps {from}–{Math.min(from + TRACE_STEPS - 1, lastStep)} over{' '}
        {width < 1 ? `${Math.round(width * 1000)} ms` : `${width.toFixed(1)} s`}.{' '}
        {from > 0 && (
          <Link href={href(from - TRACE_STEPS)} className="text-blue-700 hover:underline dark:text-blue-400">
            earlier steps
          </Link>
        )}
        {from > 0 && from + TRACE_STEPS <= lastStep && ' · '}
        {from + TRACE_STEPS <= lastStep && (
          <Link href={href(from + TRACE_STEPS)} className="text-blue-700 hover:underline dark:text-blue-400">
            later steps
          </Link>
        )}
      </p>
      <ul className="space-y-0.5" aria-label="step attempts over time">
        {steps.map((step) => (
          <li key={step} data-testid="trace-row" className="flex items-center gap-2">
            <Link
              href={`/runs/${encodeURIComponent(runId)}/steps/${step}`}
              className="w-12 shrink-0 text-right tabular-nums text-blue-700 hover:underline dark:text-blue-400"
            >
              {step}
            </Link>
            <div className="relative h-3 flex-1 rounded bg-zinc-100 dark:bg-zinc-800">
              {spans
                .filter((s) => s.step === step)
                .map((s) => (
                  <span
                    key={`${s.outcome}-${s.endAt}`}
                    data-testid={`trace-${s.outcome}`}
                    title={`${s.outcome}${s.durationMs === null ? '' : `, ${Math.round(s.durationMs)} ms`}${s.workerId ? ` on ${s.workerId}` : ''}`}
                    className={`absolute top-0 h-3 min-w-[2px] rounded ${TONE[s.outcome]}`}
                    style={{ left: pct(s.start), width: `calc(${pct(s.endAt)} - ${pct(s.start)})` }}
                  />
                ))}
            </div>
          </li>
        ))}
      </ul>
      <p className="flex gap-3 text-zinc-600 dark:text-zinc-400">
        <span>
          <span className="mr-1 inline-block h-2 w-2 rounded bg-blue-500" />
          committed
        </span>
        <span>
          <span className="mr-1 inline-block h-2 w-2 rounded bg-red-500" />
          failed
        </span>
        <span>
          <span className="mr-1 inline-block h-2 w-2 rounded bg-amber-500" />
          taken over / lease lost
        </span>
      </p>
    </div>
  );
}
