/**
 * The CLI's help comes from its one command table: every command's help names its arguments, options and an
 * example within 100 columns, `waybill help <command>` and `<command> --help` print the same, and a mistyped
 * command is answered with the nearest one.
 */
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../lib/cli/commands';
import { commandReference, usage } from '../../lib/cli/main';
import { runCli } from './support';

describe('waybill help', () => {
  it("shows each command's arguments, options and an example, within 100 columns", () => {
    const reference = commandReference();
    expect(reference.map((c) => c.name)).toEqual(Object.keys(COMMANDS));
    for (const { name, help } of reference) {
      const spec = COMMANDS[name]!;
      expect(help.startsWith(`usage: waybill ${name}`), name).toBe(true);
      for (const [flag] of spec.flags ?? []) expect(help, `${name} ${flag}`).toContain(flag);
      for (const [arg] of spec.args ?? []) expect(help, `${name} ${arg}`).toContain(arg);
      expect(spec.examples.length, `${name} has an example`).toBeGreaterThan(0);
      expect(help).toContain('examples:');
      const wide = help.split('\n').filter((line) => line.length > 100);
      expect(wide, name).toEqual([]);
      // Every flag the usage line shows is explained below it.
      const shown = [...spec.usage.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]);
      for (const flag of shown) {
        if (flag === '--all-matching') continue;
        expect(help.split('options:')[1] ?? '', `${name}: ${flag} explained`).toContain(flag);
      }
    }
    expect(
      usage()
        .split('\n')
        .filter((line) => line.length > 100),
    ).toEqual([]);
  });

  it('answers `help <command>` and `<command> --help` alike, and suggests the nearest command', async () => {
    const viaHelp = await runCli(['help', 'rerun']);
    const viaFlag = await runCli(['rerun', '--help']);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toBe(viaFlag.stdout);
    expect(viaHelp.stdout).toContain('--from-step N|NAME  the first step to run again (required)');
    expect(viaHelp.stdout).toContain('waybill rerun nightly-7 --from-step 12');

    const typo = await runCli(['rnus']);
    expect([typo.code, typo.stdout, typo.stderr.trim()]).toEqual([
      2,
      '',
      'waybill: unknown command "rnus": did you mean `waybill runs`? (waybill --help lists them)',
    ]);
    const unknown = await runCli(['help', 'frobnicate']);
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      2,
      'waybill: unknown command "frobnicate" (waybill --help lists them)',
    ]);
  });
});
