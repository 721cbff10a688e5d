/**
 * What a workflow may declare about how its runs are picked: at most N running at once per key, at most M
 * starts per period per key, and a priority (higher is picked first). One rule for defineWorkflow, what its
 * workers publish, the pick (lib/store/shared/run-limits-sql.ts) and the reason a held run gives
 * (lib/control/queued.ts).
 *
 * A key is a path into the run's input (`customer`, `provider.name`), or absent: the workflow's runs share
 * one key. A path rather than a function, as Inngest's and Hatchet's key expressions are: the control plane
 * and the store must be able to compute it without the workflow's code. An input without the path, or with
 * `null` there, has the key `""`, so such runs share one. An object or an array there has no key a reader would
 * recognise (the store reads it as `""` too), so a new start giving one is refused: limitKeyProblem.
 */
import { z } from 'zod';

export const PRIORITY_MIN = -1000;
export const PRIORITY_MAX = 1000;
export const LIMIT_MAX = 100_000;
/** A period as Inngest's throttle takes it: from a second to a day. */
export const PERIOD_MIN_MS = 1000;
export const PERIOD_MAX_MS = 86_400_000;

const KEY_PATH = /^[A-Za-z_][A-Za-z0-9_]{0,63}(\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,7}$/;

export const limitKeyPath = z
  .string({ error: 'must be a path into the input, like "customer" or "provider.name"' })
  .regex(KEY_PATH, 'must be a path into the input: names of letters, digits and _, joined by dots (at most 8)');

export const prioritySchema = z
  .number({ error: 'must be a whole number' })
  .int('must be a whole number')
  .min(PRIORITY_MIN, `must be at least ${PRIORITY_MIN}`)
  .max(PRIORITY_MAX, `must be at most ${PRIORITY_MAX}`);

const limitCount = z
  .number({ error: 'must be a whole number' })
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(LIMIT_MAX, `must be at most ${LIMIT_MAX}`);

const PERIODS = { second: 1000, minute: 60_000, hour: 3_600_000 } as const;

export const runLimitsSchema = z.strictObject({
  /** At most `limit` runs of the workflow running at once per key. A parked (waiting) run holds no place. */
  concurrency: z.strictObject({ limit: limitCount, key: limitKeyPath.optional() }).optional(),
  /** At most `limit` runs of the workflow started per `period` per key, in any window of that length. */
  rateLimit: z
    .strictObject({
      limit: limitCount,
      period: z.union([
        z.enum(Object.keys(PERIODS) as [keyof typeof PERIODS], { error: 'must be second, minute or hour' }),
        z
          .number({ error: 'must be second, minute, hour or milliseconds' })
          .int('must be whole milliseconds')
          .min(PERIOD_MIN_MS, `must be at least ${PERIOD_MIN_MS} ms`)
          .max(PERIOD_MAX_MS, `must be at most ${PERIOD_MAX_MS} ms`),
      ]),
      key: limitKeyPath.optional(),
    })
    .optional(),
  /** The priority of runs started without one of their own. */
  priority: prioritySchema.optional(),
});

export type RunLimitsDeclaration = z.input<typeof runLimitsSchema>;

/** A workflow's limits as the pick and the reasons read them: periods in ms, keys as paths or null. */
export interface RunLimits {
  concurrency?: { limit: number; key: string | null };
  rateLimit?: { limit: number; periodMs: number; key: string | null };
  priority?: number;
}

export function resolveLimits(declared: z.output<typeof runLimitsSchema>): RunLimits {
  const { concurrency, rateLimit, priority } = declared;
  return {
    ...(concurrency ? { concurrency: { limit: concurrency.limit, key: concurrency.key ?? null } } : {}),
    ...(rateLimit
      ? {
          rateLimit: {
            limit: rateLimit.limit,
            periodMs: typeof rateLimit.period === 'number' ? rateLimit.period : PERIODS[rateLimit.period],
            key: rateLimit.key ?? null,
          },
        }
      : {}),
    ...(priority === undefined ? {} : { priority }),
  };
}

/** Whether the pick has anything to hold back for these limits (a priority alone holds nothing). */
export function limitsHold(limits: RunLimits | undefined): boolean {
  return limits?.concurrency !== undefined || limits?.rateLimit !== undefined;
}

/**
 * A run's key under a path, from its stored input, as the store computes it: a string is itself, a number or a
 * boolean its JSON text, anything else (absent, null, an object, an array) `""`. Old runs may hold an object or an
 * array there (limitKeyProblem refuses only new starts), so this reads them as the pick always has.
 */
export function limitKeyOf(inputJson: string, path: string | null): string {
  if (path === null) return '';
  let input: unknown;
  try {
    input = JSON.parse(inputJson);
  } catch {
    return '';
  }
  const value = valueAt(input, path);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
  return '';
}

/** What the input holds at a key path, walking objects only, as the store's JSON path does; undefined: nothing. */
function valueAt(input: unknown, path: string): unknown {
  let value = input;
  for (const name of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = Object.hasOwn(value, name) ? (value as Record<string, unknown>)[name] : undefined;
  }
  return value;
}

const isObject = (value: unknown): value is object => value !== null && typeof value === 'object';

/** The value at the path of the input as it is stored, its JSON: a Date there is its text, which keys as text does. */
function storedAt(input: unknown, path: string): unknown {
  try {
    return valueAt(JSON.parse(JSON.stringify(input) ?? 'null'), path);
  } catch {
    return undefined;
  }
}

/** A start's input whose value at a limit's key path can be no key: `message` names all, `field` is its form. */
export interface LimitKeyProblem {
  limit: 'concurrency' | 'rate';
  /** The key path, as declared (`customer`). */
  path: string;
  found: 'an object' | 'an array';
  /** `is an object; limited's concurrency key must be …`, for a refusal filed under `input.<path>`. */
  field: string;
  /** `input.customer is an object; limited's concurrency key must be a string, a number or a boolean`. */
  message: string;
}

/**
 * Whether a new run's input gives an object or an array where one of its workflow's limits reads its key. The
 * store would key it `""` with every run lacking the path, so a workflow keyed `customer` started with
 * `{ customer: { id } }` would put all its customers under one key, and unrelated runs would hold each other
 * back with nothing said. Every start calls this through its workflows' check (lib/engine/workflow.ts), and a
 * worker for the schedules its workflows declare. `null` is no problem: JSON writers (Python's None, Go's nil, an
 * optional field left unset) send it for "none", so it keys as the missing path does.
 */
export function limitKeyProblem(
  workflow: string,
  limits: RunLimits | undefined,
  input: unknown,
): LimitKeyProblem | undefined {
  const keyed: [LimitKeyProblem['limit'], string | null | undefined][] = [
    ['concurrency', limits?.concurrency?.key],
    ['rate', limits?.rateLimit?.key],
  ];
  for (const [limit, path] of keyed) {
    if (!path) continue;
    if (!isObject(valueAt(input, path))) continue;
    const stored = storedAt(input, path);
    if (!isObject(stored)) continue;
    const found = Array.isArray(stored) ? 'an array' : 'an object';
    const field = `is ${found}; ${workflow}'s ${limit === 'rate' ? 'rate limit' : 'concurrency'} key must be a string, a number or a boolean`;
    return { limit, path, found, field, message: `input.${path} ${field}` };
  }
  return undefined;
}

/**
 * How many runs ahead of a held run in its rate key's line are counted at most: each costs the key read from its
 * input, and a list of held runs asks once per run. A run further back is told so ("101st or later"), with the
 * earliest its slot can open.
 */
export const LINE_COUNTED = 100;

/**
 * Which stored start the `place`-th run in line for a first start under a rate key waits on (1: the next run the
 * pick would start there), with `started` starts of the key in the window now. A start may be taken while fewer
 * than `limit` starts lie within the period before it, and the runs ahead take the slots first, each as soon as it
 * may: so the place-th slot from now opens when the window's (started − limit + place)-th oldest start leaves it,
 * and a place past `limit` a whole period after the slot `limit` places ahead of it. `nth`: that start (1: the
 * oldest in the window), null when its slot is open now; `periods`: the whole periods after it. Exact while
 * `place` ≤ `limit` (it waits on a start that is stored); past that, the earliest the slot can open, as the
 * starts it waits on are yet to come.
 */
export function rateSlot(limit: number, started: number, place: number): { nth: number | null; periods: number } {
  const periods = Math.floor((place - 1) / limit);
  const nth = started - limit + place - periods * limit;
  return { nth: nth >= 1 ? nth : null, periods };
}

/** How a period reads in a reason: "second", "10 s", "minute". */
export function periodText(ms: number): string {
  for (const [name, length] of Object.entries(PERIODS)) if (length === ms) return name;
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;
}
