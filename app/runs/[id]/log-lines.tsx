'use client';
/**
 * A program's lines, kept scrolled to the newest as refreshes bring more, unless the reader scrolled up to
 * read: then the list stays where they are.
 */
import { useEffect, useLayoutEffect, useRef } from 'react';

export interface LogLine {
  seq: number;
  /** HH:MM:SS, UTC: formatted on the server so the two renders agree. */
  at: string;
  stream: 'stdout' | 'stderr' | 'worker';
  line: string;
}

const STREAM_CLASS: Record<LogLine['stream'], string> = {
  stdout: 'text-zinc-800 dark:text-zinc-200',
  stderr: 'text-red-700 dark:text-red-400',
  worker: 'text-zinc-500 dark:text-zinc-400 italic',
};

export function LogLines({ lines }: { lines: LogLine[] }) {
  const list = useRef<HTMLOListElement>(null);
  const pinned = useRef(true);
  const last = lines.at(-1)?.seq;
  useEffect(() => {
    const el = list.current;
    if (!el) return;
    const onScroll = () => {
      pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
    };
    el.addEventListener('scroll', onScroll, { passive: true });
    return () => el.removeEventListener('scroll', onScroll);
  }, []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new last line is what moves the list
  useLayoutEffect(() => {
    const el = list.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [last]);
  return (
    <ol
      ref={list}
      data-last-seq={last}
      className="max-h-80 overflow-y-auto font-mono text-xs leading-5"
      aria-label="last lines the program printed"
    >
      {lines.map((line) => (
        <li
          key={line.seq}
          data-seq={line.seq}
          data-stream={line.stream}
          className={`whitespace-pre-wrap break-all ${STREAM_CLASS[line.stream]}`}
        >
          <span className="mr-2 text-zinc-400">{line.at}</span>
          {line.stream === 'stderr' ? '! ' : ''}
          {line.line}
        </li>
      ))}
    </ol>
  );
}
