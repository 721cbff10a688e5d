/**
 * `waybill approve|reject <runId> [<name>] [--note TEXT]` and `waybill signal <runId> <name> --payload JSON`:
 * decisions on a run's durable waits. Thin: lib/control/waits decides once, audits as `--as NAME` or
 * `cli:<OS user>`; a second decision exits 1 with CONFLICT. Without a name, approve/reject take the run's one
 * open approval.
 */
import { parseArgs } from 'node:util';
import { waits } from '../control';
import { UsageError } from '../errors';
import { check, flags, GLOBAL_OPTIONS, jsonArg, lookupId } from './args';
import { type Cli, callerOf, withControl } from './context';

export async function decide(cli: Cli, approve: boolean, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: { ...GLOBAL_OPTIONS, note: { type: 'string' } },
    }),
  );
  if (given.length < 1) throw new UsageError('missing <runId>');
  if (given.length > 2) throw new UsageError(`unexpected argument ${JSON.stringify(given[2])}`);
  const runId = check(lookupId, given[0]!, 'run id');
  const caller = callerOf(cli, values.as);
  const wait = await withControl(cli, values.db, (deps) =>
    waits.decide(deps, caller, { runId, name: given[1], approve, note: values.note }),
  );
  if (values.json) cli.json(waits.waitView(wait));
  else
    cli.out(
      `${approve ? 'approved' : 'rejected'} ${wait.name} of ${wait.runId}${wait.note ? `: ${wait.note}` : ''}; the run goes on`,
    );
  return 0;
}

export async function signal(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: { ...GLOBAL_OPTIONS, payload: { type: 'string' } },
    }),
  );
  if (given.length !== 2)
    throw new UsageError(
      given.length < 2 ? 'missing <runId> <name>' : `unexpected argument ${JSON.stringify(given[2])}`,
    );
  const runId = check(lookupId, given[0]!, 'run id');
  const payload =
    values.payload === undefined ? null : jsonArg(values.payload, '--payload', cli.config().WAYBILL_MAX_BODY_BYTES);
  const caller = callerOf(cli, values.as);
  const wait = await withControl(cli, values.db, (deps) =>
    waits.signal(deps, caller, { runId, name: given[1]!, payload }),
  );
  if (values.json) cli.json(waits.waitView(wait));
  else cli.out(`signalled ${wait.name} to ${wait.runId}`);
  return 0;
}
