/**
 * The CLI's operator actions go into the audit log like the dashboard's, so `/audit` and a run's timeline
 * show who cancelled or expired from a terminal, with the `--reason` given. The CLI holds the store itself,
 * so its role is `local`; the actor is `cli:<OS user>`.
 */
import { reasonSchema } from '../reason';
import type { Store } from '../store/types';
import { check } from './args';
import type { Cli } from './context';

export async function recordCliAudit(cli: Cli, store: Store, entry: { action: string; target: string; runId: string | null; detail: string | null }): Promise<void> {
  await store.recordAudit({ actor: cli.actor, role: 'local', ...entry });
}

/** `--reason` checked as the dashboard checks it: trimmed, at most 500 characters, no control characters. */
export function reasonArg(value: string | undefined): string | undefined {
  return value === undefined ? undefined : check(reasonSchema, value, '--reason');
}
