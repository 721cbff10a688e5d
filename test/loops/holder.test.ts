/**
 * Claim tokens that name their process: which holders count as gone. Real pids: this process, a child that
 * is alive, and one that has exited.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { holderGone, mintToken } from '../../lib/checkpoint/holder';
import { machineId, pidAlive } from '../../lib/machine';

const withPid = (token: string, pid: number) => token.replace(/^(wb1_[0-9a-f]{16}_)\d+_/, `$1${pid}_`);

describe('claim tokens', () => {
  it('are unguessable, valid HTTP client tokens, and name this machine and process', () => {
    const a = mintToken();
    expect(a).toMatch(/^wb1_[0-9a-f]{16}_\d+_[0-9a-f]{8}_[0-9a-f]{24}$/);
    expect(a).toMatch(/^[A-Za-z0-9_-]{16,128}$/);
    expect(a).not.toBe(mintToken());
    expect(a.split('_')[2]).toBe(String(process.pid));
    expect(machineId()).toBe(machineId());
  });

  it('judge a holder gone only with proof: its pid exited here, or our pid in an earlier incarnation', async () => {
    const mine = mintToken();
    expect(holderGone(mine)).toBe(false);
    // Our own pid, another incarnation: a restarted process that was given the same pid (pid 1 in a container).
    expect(
      holderGone(mine.replace(/^(wb1_[0-9a-f]{16}_\d+_)[0-9a-f]{8}_/, (_, head: string) => `${head}00000000_`)),
    ).toBe(true);

    const child = spawn('sleep', ['30']);
    try {
      expect(pidAlive(child.pid!)).toBe(true);
      expect(holderGone(withPid(mine, child.pid!))).toBe(false);
    } finally {
      child.kill('SIGKILL');
      await once(child, 'close');
    }
    expect(pidAlive(child.pid!)).toBe(false);
    expect(holderGone(withPid(mine, child.pid!))).toBe(true);
    // The same dead pid on another machine proves nothing here.
    expect(holderGone(withPid(mine, child.pid!).replace(/^wb1_[0-9a-f]{16}_/, 'wb1_ffffffffffffffff_'))).toBe(false);
    // Tokens we did not mint: a server-made UUID, an outside client's claim (none), garbage.
    for (const other of ['6f1c2b9e-8d5a-4c1e-9f0a-1b2c3d4e5f60', null, 'wb1_x', ''])
      expect(holderGone(other)).toBe(false);
    // pid 0 and negative pids name process groups: never proof.
    expect(pidAlive(0)).toBe(true);
    expect(pidAlive(-1)).toBe(true);
  });
});
