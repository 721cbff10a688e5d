/**
 * `npx tsx bench/step-instructions.ts [--from N] [--to N] [--steps N]`
 *
 * What a lone SQLite step costs in CPU instructions, the product (runAgent over the built package, as the lone
 * run of `npm run bench` drives it) beside the one-commit floor (bench/sqlite.ts), at synchronous NORMAL. Counted
 * by valgrind's callgrind, which counts instructions, not time: the same binary and inputs give the same count
 * whatever else the machine is doing, where the timed ratios of `npm run bench` move with the neighbours and with
 * the disk's flush (bench/RESULTS.md).
 *
 * Each side runs in its own process under callgrind twice, --from rounds (4) and --to rounds (12) of --steps steps
 * (1,000), and a step's count is the difference over the extra rounds: the process's start, the first rounds'
 * compilation and the store's creation cancel out. Only the main thread is counted: V8 compiles and marks on
 * threads of its own, as much as the machine's timing lets them, so their share is not the same twice. Printed
 * per step: the main thread's instructions, and those inside better-sqlite3's Statement run and get (SQLite's
 * statements, their binding and their results; a transaction's BEGIN and COMMIT are statements too), the rest
 * being the JavaScript around them. Takes about five minutes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadProduct } from './product';
import { openFloor } from './sqlite';
import { inputs, productRound } from './workload';

type Side = 'product' | 'floor';
const SIDES: readonly Side[] = ['product', 'floor'];
const SELF = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** better-sqlite3's entry points for a statement's run and get, as callgrind names them. */
const STATEMENT_CALLS = ['Statement::JS_run(', 'Statement::JS_get('];

const { values } = parseArgs({
  options: {
    from: { type: 'string', default: '4' },
    to: { type: 'string', default: '12' },
    steps: { type: 'string', default: '1000' },
    child: { type: 'string' },
    rounds: { type: 'string' },
  },
});

function whole(name: string, text: string | undefined, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(`step-instructions: --${name} needs a whole number of at least ${min}, got ${text}\n`);
    process.exit(2);
  }
  return n;
}

const steps = whole('steps', values.steps, 1);

/** One side's loop, inside callgrind: `rounds` rounds of `steps` steps on a store of its own. */
async function child(side: Side, rounds: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-instructions-'));
  try {
    const items = inputs(steps);
    if (side === 'floor') {
      const floor = await openFloor(join(dir, 'floor.db'), 'normal');
      for (let r = 0; r < rounds; r++) floor.runOneCommit(`floor-${r}`, items);
      floor.close();
      return;
    }
    const product = await loadProduct(false);
    const store = await product.openStore(`file:${join(dir, 'product.db')}`, { synchronous: 'normal' });
    for (let r = 0; r < rounds; r++) await productRound(product, store, `product-${r}`, items);
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Count {
  total: number;
  statements: number;
}

/** Runs one side for `rounds` rounds under callgrind; its main thread's count and its statements' inclusive count. */
async function counted(side: Side, rounds: number, dir: string): Promise<Count> {
  const out = join(dir, `${side}-${rounds}.callgrind`);
  const args = [
    '--tool=callgrind',
    '--separate-threads=yes',
    `--callgrind-out-file=${out}`,
    process.execPath,
    '--import',
    'tsx',
    SELF,
    `--child=${side}`,
    `--rounds=${rounds}`,
    `--steps=${steps}`,
  ];
  const child = spawn('valgrind', args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', resolve);
  });
  if (code !== 0) throw new Error(`callgrind of the ${side} exited ${code}: ${stderr}`);
  // With --separate-threads, thread n's profile is the file's name with -0n after it; the main thread is the first.
  const annotated = spawnSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', `${out}-01`], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  const count: Count = { total: 0, statements: 0 };
  for (const line of annotated.stdout.split('\n')) {
    const match = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (!match) continue;
    const n = Number(match[1]!.replaceAll(',', ''));
    if (match[2]!.includes('PROGRAM TOTALS')) count.total = n;
    else if (STATEMENT_CALLS.some((call) => match[2]!.includes(`:${call}`))) count.statements += n;
  }
  if (count.total === 0) throw new Error(`callgrind_annotate read no totals from ${out}-01`);
  return count;
}

async function main(): Promise<void> {
  if (values.child !== undefined) {
    if (!SIDES.includes(values.child as Side)) throw new Error(`--child is product or floor, got ${values.child}`);
    return child(values.child as Side, whole('rounds', values.rounds, 0));
  }
  const from = whole('from', values.from, 1);
  const to = whole('to', values.to, from + 1);
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    process.stderr.write('step-instructions: needs valgrind (Debian: apt-get install valgrind)\n');
    process.exit(2);
  }
  // The product is built first, and tsx's cache is warmed, so neither lands in one count and not the other.
  await loadProduct(false);
  spawnSync(process.execPath, ['--import', 'tsx', SELF, '--child=floor', '--rounds=0'], { cwd: ROOT });
  const dir = mkdtempSync(join(tmpdir(), 'waybill-callgrind-'));
  try {
    const perStep: Record<Side, Count> = { product: { total: 0, statements: 0 }, floor: { total: 0, statements: 0 } };
    for (const side of SIDES) {
      process.stderr.write(`step-instructions: ${side}, ${from} and ${to} rounds of ${steps} steps under callgrind\n`);
      const [low, high] = await Promise.all([counted(side, from, dir), counted(side, to, dir)]);
      const n = (to - from) * steps;
      perStep[side] = { total: (high.total - low.total) / n, statements: (high.statements - low.statements) / n };
    }
    const k = (n: number) => `${(n / 1000).toFixed(1)}k`;
    console.log('instructions a lone SQLite step (NORMAL, main thread)   product     floor     ratio');
    for (const [label, of] of [
      ['all', (c: Count) => c.total],
      ['in statements', (c: Count) => c.statements],
      ['around them', (c: Count) => c.total - c.statements],
    ] as const) {
      const [p, f] = [of(perStep.product), of(perStep.floor)];
      console.log(`${label.padEnd(55)}${k(p).padStart(8)}${k(f).padStart(10)}${(p / f).toFixed(3).padStart(10)}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
