/**
 * Claim tokens that say which process made them, so that a loop restarted after a crash recognises its
 * dead predecessor's claim and takes it over at once instead of waiting out the lease (about 26 s left of
 * 30 on average). The token is the fencing token all the same — random, unguessable — with the machine,
 * the pid and this process's incarnation in front:
 *
 *   wb1_<machine: 16 hex>_<pid>_<incarnation: 8 hex>_<random: 24 hex>
 *
 * Only letters, digits and `_`, so it is also a valid client token of the HTTP protocol. A holder is judged
 * gone only with proof: same machine and pid namespace (lib/machine.ts), and its pid is not alive —
 * or it is our own pid but another incarnation (a restarted process that got the same pid, as pid 1 in a
 * container does). Any other token (another machine, an outside client's, a server-made UUID) is never
 * judged gone: its lease is the only evidence.
 */
import { createHash, randomBytes } from 'node:crypto';
import { machineId, pidAlive } from '../machine';

const FORMAT = /^wb1_([0-9a-f]{16})_(\d{1,10})_([0-9a-f]{8})_[0-9a-f]{24}$/;
const incarnation = randomBytes(4).toString('hex');
let machine: string | undefined;

function machineTag(): string {
  // A machine that cannot be told gets a tag of this process alone: no other process's token is judged by it.
  machine ??= createHash('sha256')
    .update(machineId() ?? `unknown:${randomBytes(16).toString('hex')}`)
    .digest('hex')
    .slice(0, 16);
  return machine;
}

/**
 * Random bytes for tokens, drawn from the kernel 256 tokens at a time: one getrandom call a token was a
 * visible share of a step's CPU (bench/RESULTS.md, "Why the code is shaped so"; crypto.randomUUID keeps a
 * pool the same way).
 */
const TOKEN_BYTES = 12;
let pool = Buffer.alloc(0);
let poolAt = 0;

function tokenRandom(): string {
  if (poolAt >= pool.length) {
    pool = randomBytes(TOKEN_BYTES * 256);
    poolAt = 0;
  }
  poolAt += TOKEN_BYTES;
  return pool.toString('hex', poolAt - TOKEN_BYTES, poolAt);
}

/** A fresh fencing token naming this process. */
export function mintToken(): string {
  return `wb1_${machineTag()}_${process.pid}_${incarnation}_${tokenRandom()}`;
}

/** True only with proof that the process that minted this token has exited. */
export function holderGone(token: string | null): boolean {
  const parts = token === null ? null : FORMAT.exec(token);
  if (!parts || parts[1] !== machineTag()) return false;
  const pid = Number(parts[2]);
  if (pid === process.pid) return parts[3] !== incarnation;
  return !pidAlive(pid);
}
