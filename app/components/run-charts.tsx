'use client';
/**
 * The run page's two charts. The server has already sampled each series down to a few hundred points; these
 * only draw what they are given. Colours read on light and dark backgrounds alike; axes and grid take the
 * surrounding text colour, so they follow dark mode through Tailwind classes on the wrapper.
 */
import type { ReactNode } from 'react';
import type { TooltipContentProps } from 'recharts';
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { axisWidth, formatMs } from './chart-format';

const COLOR = { executed: '#3b82f6', skipped: '#10b981', awaited: '#f59e0b', duration: '#8b5cf6' };
const HEIGHT = 240;

function ChartFigure({
  testId,
  title,
  description,
  empty,
  children,
}: {
  testId: string;
  title: string;
  description: string;
  empty: boolean;
  children: ReactNode;
}) {
  const titleId = `${testId}-title`;
  const descId = `${testId}-desc`;
  return (
    <figure
      data-testid={testId}
      aria-labelledby={titleId}
      aria-describedby={descId}
      className="min-w-0 rounded-lg border border-zinc-200 bg-white p-4 shadow-sm dark:border-zinc-800 dark:bg-zinc-900"
    >
      <figcaption>
        <h2 id={titleId} className="text-sm font-semibold text-zinc-700 dark:text-zinc-300">
          {title}
        </h2>
        <p id={descId} className="mt-0.5 text-xs text-zinc-600 dark:text-zinc-400">
          {description}
        </p>
      </figcaption>
      {empty ? (
        <div
          className="mt-3 flex items-center justify-center rounded-md border border-dashed border-zinc-300 text-sm text-zinc-600 dark:border-zinc-700 dark:text-zinc-400"
          style={{ height: HEIGHT }}
        >
          No steps yet
        </div>
      ) : (
        <div className="mt-3 text-zinc-500 dark:text-zinc-400">{children}</div>
      )}
    </figure>
  );
}

const axis = { stroke: 'currentColor', tick: { fill: 'currentColor', fontSize: 11 }, tickLine: false } as const;

function ChartTooltip({
  active,
  payload,
  label,
  labelFormatter,
  format,
}: TooltipContentProps & { format?: (value: number) => string }) {
  if (!active || !payload?.length) return null;
  return (
    <div className="rounded-md border border-zinc-200 bg-white px-3 py-2 text-xs shadow-md dark:border-zinc-700 dark:bg-zinc-900">
      <div className="mb-1 font-medium text-zinc-800 dark:text-zinc-100">
        {labelFormatter ? labelFormatter(label, payload) : label}
      </div>
      {payload.map((item) => (
        <div key={String(item.dataKey)} className="flex items-center gap-2 text-zinc-700 dark:text-zinc-300">
          <span className="h-2 w-2 rounded-full" style={{ background: item.color }} aria-hidden />
          <span>{item.name}</span>
          <span className="ml-auto pl-3 font-medium tabular-nums">
            {format ? format(Number(item.value)) : Number(item.value).toLocaleString('en-US')}
          </span>
        </div>
      ))}
    </div>
  );
}

/**
 * A series as columns of numbers: 400 points sent as objects repeat each key 400 times in the page's RSC
 * payload, which the server writes and the browser parses on every two-second refresh.
 */
export interface DurationSeries {
  step: number[];
  ms: number[];
}
export interface CumulativeSeries {
  t: number[];
  executed: number[];
  skipped: number[];
  awaited: number[];
}

/** `sampledFrom`: how many steps the server averaged into `data`'s ranges, when it grouped them. */
export function DurationsChart({ series, sampledFrom }: { series: DurationSeries; sampledFrom?: number }) {
  const data = series.step.map((step, i) => ({ step, durationMs: series.ms[i]! }));
  const values = data.map((d) => d.durationMs).sort((a, b) => a - b);
  const median = values[Math.floor(values.length / 2)];
  const max = values[values.length - 1];
  const description =
    data.length === 0
      ? 'How long each executed step took. No step with a measured duration yet.'
      : sampledFrom
        ? `How long committed steps took on average, in ${data.length} ranges of the ${sampledFrom.toLocaleString('en-US')} steps: median ${formatMs(median!)}, slowest range ${formatMs(max!)}.`
        : `How long each committed step took, over ${data.length} step${data.length === 1 ? '' : 's'}: median ${formatMs(median!)}, slowest ${formatMs(max!)}.`;
  return (
    <ChartFigure
      testId="chart-durations"
      title="Step duration by step"
      description={description}
      empty={data.length === 0}
    >
      <ResponsiveContainer width="100%" height={HEIGHT}>
        <LineChart
          data={data}
          margin={{ top: 12, right: 12, bottom: 4, left: 0 }}
          title="Step duration by step"
          desc={description}
        >
          <CartesianGrid stroke="currentColor" strokeOpacity={0.15} vertical={false} />
          <XAxis
            dataKey="step"
            type="number"
            domain={['dataMin', 'dataMax']}
            allowDecimals={false}
            {...axis}
            label={{ value: 'step', position: 'insideBottomRight', offset: -2, fill: 'currentColor', fontSize: 11 }}
          />
          <YAxis width={axisWidth(values)} {...axis} tickFormatter={(v: number) => formatMs(v)} />
          <Tooltip
            content={(props) => <ChartTooltip {...props} format={formatMs} />}
            labelFormatter={(label) => `step ${label}`}
          />
          <Line
            type="monotone"
            dataKey="durationMs"
            name="duration"
            stroke={COLOR.duration}
            strokeWidth={1.5}
            dot={data.length <= 60 ? { r: 2 } : false}
            isAnimationActive={false}
          />
        </LineChart>
      </ResponsiveContainer>
    </ChartFigure>
  );
}

export function CumulativeChart({ series }: { series: CumulativeSeries }) {
  const data = series.t.map((t, i) => ({
    t,
    executed: series.executed[i]!,
    skipped: series.skipped[i]!,
    awaited: series.awaited[i]!,
  }));
  const last = data[data.length - 1];
  const description = !last
    ? 'Running totals of executed, skipped and awaited steps over time. Nothing has happened yet.'
    : `Running totals over time: ${last.executed} executed, ${last.skipped} skipped (replayed from the store), ${last.awaited} awaited (another worker held the key).`;
  return (
    <ChartFigure
      testId="chart-cumulative"
      title="Executed, skipped and awaited over time"
      description={description}
      empty={data.length === 0}
    >
      <ResponsiveContainer width="100%" height={HEIGHT}>
        <LineChart
          data={data}
          margin={{ top: 12, right: 12, bottom: 4, left: 0 }}
          title="Executed, skipped and awaited over time"
          desc={description}
        >
          <CartesianGrid stroke="currentColor" strokeOpacity={0.15} vertical={false} />
          <XAxis
            dataKey="t"
            type="number"
            domain={['dataMin', 'dataMax']}
            padding={{ left: 4, right: 8 }}
            {...axis}
            tickFormatter={clock}
            minTickGap={32}
          />
          <YAxis
            width={Math.max(
              40,
              Math.ceil(
                String(Math.max(last?.executed ?? 0, last?.skipped ?? 0, last?.awaited ?? 0)).length * 6.6 + 16,
              ),
            )}
            allowDecimals={false}
            {...axis}
          />
          <Tooltip content={(props) => <ChartTooltip {...props} />} labelFormatter={(label) => clock(Number(label))} />
          <Legend iconType="plainline" itemSorter={null} wrapperStyle={{ fontSize: 12 }} />
          <Line
            type="stepAfter"
            dataKey="executed"
            name="executed"
            stroke={COLOR.executed}
            strokeWidth={1.75}
            dot={false}
            isAnimationActive={false}
          />
          <Line
            type="stepAfter"
            dataKey="skipped"
            name="skipped"
            stroke={COLOR.skipped}
            strokeWidth={1.75}
            dot={false}
            isAnimationActive={false}
          />
          <Line
            type="stepAfter"
            dataKey="awaited"
            name="awaited"
            stroke={COLOR.awaited}
            strokeWidth={1.75}
            strokeDasharray="4 3"
            dot={false}
            isAnimationActive={false}
          />
        </LineChart>
      </ResponsiveContainer>
    </ChartFigure>
  );
}

/** Epoch seconds as the browser's wall-clock time, 24-hour. */
function clock(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toLocaleTimeString(undefined, {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hour12: false,
  });
}
