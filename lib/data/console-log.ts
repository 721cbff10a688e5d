import 'server-only';
/**
 * Next.js reports what it catches (a page that failed to render, a route handler that threw) with
 * console.error(error): a multi-line dump with the stack, beside our one-JSON-line logs. Routed through the
 * server's logger, each such report is one line like ours: level, the message, the error and its stack as
 * fields. Installed once per server process by instrumentation.ts.
 */
import { format } from 'node:util';
import { errorFields, serverLog } from './log';

const installed = globalThis as { waybillConsoleRouted?: boolean };

export function routeConsoleToLog(): void {
  if (installed.waybillConsoleRouted) return;
  installed.waybillConsoleRouted = true;
  console.error = (...args: unknown[]) => report('error', args);
  console.warn = (...args: unknown[]) => report('warn', args);
}

function report(level: 'error' | 'warn', args: unknown[]): void {
  const error = args.find((a): a is Error => a instanceof Error);
  const words = args.filter((a) => !(a instanceof Error));
  // Next's own marks ("⨯ ", "⚠ ") and colour codes say nothing a level does not.
  const text = format(...words)
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character is what is being removed
    .replace(/\x1b\[[0-9;]*m/g, '')
    .replace(/^\s*[⨯⚠]\s*/, '')
    .trim();
  const message = text || (error ? (error.name ? `${error.name}: ${error.message}` : error.message) : '');
  const fields: Record<string, unknown> = error ? errorFields(error) : {};
  const digest = (error as { digest?: unknown } | undefined)?.digest;
  if (typeof digest === 'string') fields.digest = digest;
  serverLog()[level](message.split('\n')[0] ?? '', {
    source: 'next',
    ...fields,
    ...(message.includes('\n') ? { detail: message } : {}),
  });
}
