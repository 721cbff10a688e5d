/**
 * `waybill emit <name> --id ID [--data JSON|@file]`: sends an event. Thin: lib/control/events validates (a bad
 * field exits 2 naming it, having written nothing), records it once, starts each subscribed workflow's run and
 * wakes the runs waiting for it, audited as `--as NAME` or `cli:<OS user>`. A re-send says so and changes nothing.
 */
import { parseArgs } from 'node:util';
import { events } from '../control';
import { UsageError } from '../errors';
import { flags, GLOBAL_OPTIONS, jsonArg, positionals } from './args';
import { type Cli, callerOf, withControl } from './context';

export async function emit(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: { ...GLOBAL_OPTIONS, id: { type: 'string' }, data: { type: 'string' } },
    }),
  );
  const [name] = positionals(given, ['name']) as [string];
  if (values.id === undefined)
    throw new UsageError('missing --id ID (the event id: a re-send under it changes nothing)');
  const data =
    values.data === undefined ? undefined : jsonArg(values.data, '--data', cli.config().WAYBILL_MAX_BODY_BYTES);
  const caller = callerOf(cli, values.as);
  const sent = await withControl(cli, values.db, (deps) => events.emit(deps, caller, { id: values.id!, name, data }));
  if (values.json) {
    cli.json(sent);
    return 0;
  }
  cli.out(
    sent.recorded
      ? `recorded event ${sent.event.name} ${sent.event.id}`
      : `event ${sent.event.id} was recorded before; nothing new was written`,
  );
  for (const run of sent.runs) cli.out(`  ${run.existed ? 'run' : 'started'} ${run.runId}`);
  for (const refusal of sent.refused) cli.out(`  not started: ${refusal.workflow}: ${refusal.message}`);
  for (const runId of sent.woke) cli.out(`  woke ${runId}`);
  return 0;
}
