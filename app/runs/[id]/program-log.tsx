/**
 * The last lines of a command workflow's program (its stdout and stderr, and the worker's notes on starting,
 * stopping and retrying it), oldest first. Shown only for runs whose program printed something.
 */
import { Card } from '@/app/components/ui';
import type { RunLogLine } from '@/lib/engine/run-log';

const STREAM_CLASS: Record<string, string> = {
  stdout: 'text-zinc-800 dark:text-zinc-200',
  stderr: 'text-red-700 dark:text-red-400',
  worker: 'text-zinc-500 dark:text-zinc-400 italic',
};

export function ProgramLog({ lines }: { lines: RunLogLine[] }) {
  if (lines.length === 0) return null;
  return (
    <Card title="Program output" testId="program-log">
      <ol className="max-h-80 overflow-y-auto font-mono text-xs leading-5" aria-label="last lines the program printed">
        {lines.map((line, i) => (
          // Lines have no identity of their own; their order is the key, and a refresh replaces them all.
          <li
            // biome-ignore lint/suspicious/noArrayIndexKey: see above
            key={i}
            data-stream={line.stream}
            className={`whitespace-pre-wrap break-all ${STREAM_CLASS[line.stream] ?? ''}`}
          >
            <span className="mr-2 text-zinc-400">{new Date(line.at * 1000).toISOString().slice(11, 19)}</span>
            {line.stream === 'stderr' ? '! ' : ''}
            {line.text}
          </li>
        ))}
      </ol>
    </Card>
  );
}
