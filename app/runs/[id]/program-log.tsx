/**
 * The last lines of a command workflow's program (its stdout and stderr, and the worker's notes on starting,
 * stopping and retrying it), oldest first, read from the store: the worker may be on another machine. The
 * page's live refresh brings new lines; the list stays at its newest line unless the reader scrolled up.
 * Shown only for runs whose program printed something.
 */
import { Card } from '@/app/components/ui';
import { getRunLog, RUN_PAGE_LOG_LINES } from '@/lib/data/run-log';
import { LogLines } from './log-lines';

export async function ProgramLog({ runId }: { runId: string }) {
  const lines = await getRunLog(runId);
  if (lines.length === 0) return null;
  const printed = lines.at(-1)!.seq;
  return (
    <Card title="Program output" testId="program-log">
      <LogLines
        lines={lines.map((l) => ({
          seq: l.seq,
          at: new Date(l.at * 1000).toISOString().slice(11, 19),
          stream: l.stream,
          line: l.line,
        }))}
      />
      {printed > lines.length && (
        <p data-testid="program-log-more" className="mt-2 text-xs text-zinc-600 dark:text-zinc-400">
          The last {lines.length.toLocaleString('en-US')} of {printed.toLocaleString('en-US')} lines (at most{' '}
          {RUN_PAGE_LOG_LINES} here); <code>waybill logs {runId}</code> reads every line the store kept.
        </p>
      )}
    </Card>
  );
}
