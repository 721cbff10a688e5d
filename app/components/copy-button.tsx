'use client';
/** Copies a text (a step's result as pretty JSON) to the clipboard, and says so in a live region. */
import { useState } from 'react';
import { buttonClass } from './ui';

export function CopyButton({
  text,
  label = 'Copy',
  testId = 'copy',
}: {
  text: string;
  label?: string;
  testId?: string;
}) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <span className="inline-flex items-center gap-2">
      <button
        type="button"
        data-testid={testId}
        className={buttonClass()}
        onClick={() =>
          navigator.clipboard.writeText(text).then(
            () => setState('copied'),
            () => setState('failed'),
          )
        }
      >
        {label}
      </button>
      <span role="status" className="text-xs text-zinc-600 dark:text-zinc-400">
        {state === 'copied'
          ? 'copied'
          : state === 'failed'
            ? 'the browser refused the clipboard: select the text instead'
            : ''}
      </span>
    </span>
  );
}
