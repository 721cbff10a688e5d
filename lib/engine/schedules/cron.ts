/**
 * The one reader of schedules' cron expressions (croner: five fields, or six with seconds first, in an IANA time
 * zone; its seventh, the year, is refused). Ticks are epoch seconds, as the store keeps them.
 */
import { Cron } from 'croner';

function cron(expression: string, timeZone: string): Cron {
  return new Cron(expression, { timezone: timeZone, paused: true });
}

/** Why the time zone is not one this runtime knows, or undefined. */
export function timeZoneProblem(timeZone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return undefined;
  } catch {
    return `unknown time zone ${JSON.stringify(timeZone)} (an IANA name, e.g. Europe/Berlin or UTC)`;
  }
}

/**
 * Why the expression cannot be read, or has no tick to come, or undefined. A schedule takes five fields, or six
 * with seconds first, as the docs and --help say; croner also reads a seventh, the year, and says so when it counts
 * too few or too many. So the fields are counted here first, and every wrong count is told the one rule. A nickname
 * (`@daily`) is croner's to read.
 */
export function cronProblem(expression: string, timeZone: string): string | undefined {
  const text = expression.trim();
  const fields = text === '' ? 0 : text.split(/\s+/).length;
  if (fields !== 5 && fields !== 6 && !text.startsWith('@'))
    return `must have five fields (minute hour day month weekday), or six with seconds first; this has ${fields}`;
  try {
    if (cron(expression, timeZone).nextRun() === null) return 'has no tick to come';
    return undefined;
  } catch (error) {
    // croner's messages begin with its class's name ("CronPattern: …"): what follows is the reason.
    return (error instanceof Error ? error.message : String(error)).replace(/^Cron\w*: /, '');
  }
}

/** The first tick strictly after `after` (epoch seconds); null when none is to come. */
export function nextTick(expression: string, timeZone: string, after: number): number | null {
  const next = cron(expression, timeZone).nextRun(new Date(after * 1000));
  return next ? next.getTime() / 1000 : null;
}

/** The ticks in [from, upTo], oldest first, at most the `limit` latest of them. */
export function ticksBetween(
  expression: string,
  timeZone: string,
  from: number,
  upTo: number,
  limit: number,
): number[] {
  if (limit <= 0 || from > upTo) return [];
  // previousRuns counts back from strictly before the date it is given: 1 ms past upTo takes upTo in.
  const back = cron(expression, timeZone).previousRuns(limit, new Date(upTo * 1000 + 1));
  return back
    .map((d) => d.getTime() / 1000)
    .filter((t) => t >= from)
    .reverse();
}
