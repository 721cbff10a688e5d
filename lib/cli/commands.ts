/**
 * Every `waybill` command in one table: how it is called, what it does, its arguments and options with their
 * defaults, examples, and the module that runs it. The router (main.ts), the help (help.ts) and the CLI
 * reference page (docs/reference/cli.md, generated) all read this table.
 */
import type { RunAction } from '../store/contract';
import type { Cli } from './context';

export type Command = (cli: Cli, args: string[]) => Promise<number>;

export interface CommandSpec {
  usage: string;
  summary: string;
  /** More than the summary says, when a user needs it to call the command right. */
  details?: string;
  args?: [string, string][];
  flags?: [string, string][];
  /** Takes `--all-matching` and the runs filters instead of a run id. */
  bulk?: boolean;
  examples: string[];
  run: Command;
}

// Each command's module is loaded only when it runs: `waybill runs` need not load the worker and workflows.
const lazy =
  <M>(load: () => Promise<M>, pick: (m: M) => Command): Command =>
  async (cli, args) =>
    pick(await load())(cli, args);
const action = (name: RunAction): Command =>
  lazy(
    () => import('./control'),
    (m) => (cli, args) => m.act(cli, name, args),
  );
const RUN_ID: [string, string] = ['<runId>', 'the run'];
const REASON: [string, string] = ['--reason TEXT', 'why, recorded in the audit log'];
const DRY_RUN: [string, string] = [
  '--dry-run',
  'say what the steps to be redone cost last time and what would be redone, and change nothing (exit 0)',
];

export const COMMANDS: Record<string, CommandSpec> = {
  start: {
    usage:
      'start <workflow> [--input JSON|@file] [--id ID] [--budget USD] [--priority N] [--tag T]… [--meta K=V]… [--traceparent TP] [--follow]',
    summary: 'queue a run',
    args: [['<workflow>', 'a built-in or published workflow (`waybill workflows` lists them)']],
    flags: [
      ['--input JSON|@file', "the run's input: JSON text, @path for a file, @- for standard input (default {})"],
      [
        '--id ID',
        'the run id (default: generated); an id that exists with this workflow and input answers with that run (exit 0, nothing queued), with another is refused (CONFLICT)',
      ],
      ['--budget USD', "the run's budget for model calls through the gateway, over its workflow's default"],
      ['--priority N', "higher is picked first (-1000 to 1000), over its workflow's default of 0"],
      ['--tag T', 'a tag on the run (repeatable; letters, digits and . _ : / @ -, at most 64 characters)'],
      ['--meta K=V', 'a metadata key and value on the run (repeatable; the key letters, digits and . _ -)'],
      [
        '--traceparent TP',
        "the W3C trace context the run's spans continue (default: TRACEPARENT, if set); see docs/operations.md, Tracing",
      ],
      ['--follow', 'stay and show progress until the run ends'],
    ],
    examples: ['waybill start agent-batch --input \'{"items": 20}\' --id nightly-7 --follow'],
    run: lazy(
      () => import('./control'),
      (m) => m.start,
    ),
  },
  workflows: {
    usage: 'workflows',
    summary: 'what can be started: built-ins and published workflows, and who serves each',
    examples: ['waybill workflows --json'],
    run: lazy(
      () => import('./workflows'),
      (m) => m.workflows,
    ),
  },
  runs: {
    usage:
      'runs [--status S] [--waiting approval|signal|sleep|child|event] [--workflow W] [--search Q] [--parent ID] [--tag T]… [--meta K=V]… [--limit N]',
    summary: "list runs, outside clients' included",
    flags: [
      ['--status S', 'queued, running, waiting, paused, completed, failed, cancelled, rejected or idle'],
      ['--waiting KIND', 'runs parked on an approval, a signal or a sleep'],
      ['--workflow W', "one workflow's runs"],
      ['--search Q', 'run ids containing Q'],
      ['--parent ID', "one run's children"],
      ['--tag T', 'runs with this tag (repeatable: runs with every one)'],
      ['--meta K=V', 'runs whose metadata K is V (repeatable: runs with every one)'],
      ['--limit N', 'at most N runs (default 50, at most 10000)'],
    ],
    examples: [
      'waybill runs --status failed',
      'waybill runs --waiting approval --json',
      'waybill runs --tag env/prod --meta customer=acme',
    ],
    run: lazy(
      () => import('./runs'),
      (m) => m.runs,
    ),
  },
  inspect: {
    usage: 'inspect <runId>',
    summary: 'one run: progress, claims, committed steps, events',
    args: [RUN_ID],
    examples: ['waybill inspect nightly-7'],
    run: lazy(
      () => import('./runs'),
      (m) => m.inspect,
    ),
  },
  logs: {
    usage: 'logs <runId> [--follow] [--limit N] [--after SEQ]',
    summary: "what a command workflow's program printed (the newest lines)",
    args: [RUN_ID],
    flags: [
      ['--follow, -f', 'keep printing new lines until the run ends'],
      ['--limit N', 'the newest N lines (default 100)'],
      ['--after SEQ', 'the lines after line SEQ (to page on)'],
    ],
    examples: ['waybill logs nightly-7 --follow'],
    run: lazy(
      () => import('./logs'),
      (m) => m.logs,
    ),
  },
  claims: {
    usage: 'claims [--orphaned] [--run ID]',
    summary: 'list claims (in-flight side effects)',
    flags: [
      ['--orphaned', 'only claims whose lease ran out: their side effect may or may not have happened'],
      ['--run ID', "one run's claims"],
    ],
    examples: ['waybill claims --orphaned'],
    run: lazy(
      () => import('./claims'),
      (m) => m.claims,
    ),
  },
  expire: {
    usage: 'expire <key…> | --all-orphaned [--force] [--reason TEXT]',
    summary: 'give up on claims: their steps run again',
    args: [['<key…>', 'the claims, by idempotency key']],
    flags: [
      ['--all-orphaned', 'every claim whose lease ran out'],
      ['--force', 'expire a claim whose lease is still live'],
      REASON,
    ],
    examples: ['waybill expire nightly-7:step:12 --reason "worker host lost"'],
    run: lazy(
      () => import('./claims'),
      (m) => m.expire,
    ),
  },
  resolve: {
    usage: 'resolve <key> --result JSON|@file [--note TEXT] [--force]',
    summary: "commit a claim's result by hand",
    details: 'For a side effect you know happened: the step is then skipped with this result.',
    args: [['<key>', 'the claim, by idempotency key']],
    flags: [
      ['--result JSON|@file', 'the result to commit (required)'],
      ['--note TEXT', 'recorded with the result and in the audit log'],
      ['--force', 'resolve a claim whose lease is still live'],
    ],
    examples: ['waybill resolve nightly-7:step:12 --result \'{"sent": true}\' --note "seen in the mail log"'],
    run: lazy(
      () => import('./claims'),
      (m) => m.resolve,
    ),
  },
  pause: {
    usage: 'pause <runId> | --all-matching …',
    summary: 'pause a queued or running run (the step in hand finishes first)',
    args: [RUN_ID],
    bulk: true,
    examples: ['waybill pause nightly-7', 'waybill pause --all-matching --workflow agent-batch --yes'],
    run: action('pause'),
  },
  resume: {
    usage: 'resume <runId> | --all-matching …',
    summary: 'queue a paused run again',
    args: [RUN_ID],
    bulk: true,
    examples: ['waybill resume nightly-7'],
    run: action('resume'),
  },
  cancel: {
    usage: 'cancel <runId> [--reason TEXT] | --all-matching …',
    summary: 'cancel a run (the step in hand finishes first)',
    args: [RUN_ID],
    flags: [REASON],
    bulk: true,
    examples: ['waybill cancel nightly-7 --reason "wrong input"'],
    run: action('cancel'),
  },
  budget: {
    usage: 'budget <runId> <usd> [--reason TEXT]',
    summary: "set a run's budget for model calls through the gateway (a run paused at its budget: raise, then resume)",
    args: [RUN_ID, ['<usd>', 'US dollars, above 0 and at most 1000000 (2.50)']],
    flags: [REASON],
    examples: ['waybill budget nightly-7 5 --reason "worth finishing"', 'waybill resume nightly-7'],
    run: lazy(
      () => import('./control'),
      (m) => m.budget,
    ),
  },
  retry: {
    usage: 'retry <runId> | --all-matching …',
    summary: 'queue a failed or cancelled run again, from where it stopped',
    args: [RUN_ID],
    bulk: true,
    examples: ['waybill retry --all-matching --status failed --yes'],
    run: action('retry'),
  },
  step: {
    usage: 'step <runId> <n>',
    summary: 'one step: its key, every attempt, its result, and results a rerun replaced',
    args: [RUN_ID, ['<n>', 'the step number']],
    examples: ['waybill step nightly-7 12'],
    run: lazy(
      () => import('./rewind'),
      (m) => m.step,
    ),
  },
  rerun: {
    usage: 'rerun <runId> --from-step N|NAME [--input JSON|@file] [--reason TEXT] [--dry-run] | --all-matching …',
    summary: 'run a run again from step N (or a named step); the results it replaces move to history',
    details:
      "For a finished, failed, cancelled or paused run. First says what the steps it redoes cost last time and the child runs it lets go, those the steps it moves started (`--json`: the answer's lastCost; a dry run's letGo too).",
    args: [RUN_ID],
    flags: [
      ['--from-step N|NAME', 'the first step to run again (required)'],
      ['--input JSON|@file', 'continue with an edited input'],
      REASON,
      DRY_RUN,
    ],
    bulk: true,
    examples: ['waybill rerun nightly-7 --from-step 12', 'waybill rerun nightly-7 --from-step 12 --dry-run'],
    run: lazy(
      () => import('./rewind'),
      (m) => m.rerun,
    ),
  },
  fork: {
    usage: 'fork <runId> --from-step N|NAME [--id NEW] [--input JSON|@file] [--reason TEXT] [--dry-run]',
    summary: 'a new run with the steps before N copied from this one, the rest run anew',
    details: "First says what the steps it runs anew cost last time (`--json`: the answer's lastCost).",
    args: [RUN_ID],
    flags: [
      ['--from-step N|NAME', 'the first step the new run executes (required)'],
      ['--id NEW', "the new run's id (default: generated)"],
      ['--input JSON|@file', 'the new run gets an edited input'],
      REASON,
      DRY_RUN,
    ],
    examples: ['waybill fork nightly-7 --from-step 12 --id nightly-7b'],
    run: lazy(
      () => import('./rewind'),
      (m) => m.fork,
    ),
  },
  schedules: {
    usage: 'schedules',
    summary: 'list the schedules: cron, time zone, next fire time, last run, policies',
    examples: ['waybill schedules', 'waybill schedules --json'],
    run: lazy(
      () => import('./schedules'),
      (m) => m.list,
    ),
  },
  schedule: {
    usage: 'schedule add <name> <workflow> --cron EXPR [options] | schedule pause|resume|delete <name>',
    summary: 'add, pause, resume or delete a schedule that starts a workflow on a cron expression',
    details:
      'A tick fires one run, named <name>:<tick ISO time>, however many workers run. Resuming takes the next tick after now: a pause is never caught up. Deleting leaves the runs it started.',
    args: [
      ['add|pause|resume|delete', 'what to do'],
      ['<name>', 'the schedule: letters, digits and . _ -, at most 64'],
      ['<workflow>', 'with add: a built-in or published workflow'],
    ],
    flags: [
      ['--cron EXPR', 'five fields, or six with seconds first (`*/10 * * * * *`)'],
      ['--tz ZONE', 'an IANA time zone (default UTC)'],
      ['--input JSON|@file', "each run's input (default {})"],
      [
        '--overlap skip|queue|cancel',
        'while the previous run goes: skip the tick, hold it until the run ends (one run at a time), or cancel the run (default skip)',
      ],
      [
        '--catch-up none|latest|all',
        'ticks missed while no worker ran (with queue, while the run went): none, the latest, or all up to the cap (default latest)',
      ],
      ['--catch-up-cap N', 'with --catch-up all: at most N runs (default 10, at most 1000)'],
      ['--paused', 'add it paused'],
      REASON,
    ],
    examples: [
      "waybill schedule add nightly notify --cron '0 0 2 * * *' --tz Europe/Berlin",
      'waybill schedule pause nightly --reason "holiday"',
      'waybill schedule delete nightly',
    ],
    run: lazy(
      () => import('./schedules'),
      (m) => m.schedule,
    ),
  },
  webhooks: {
    usage: 'webhooks',
    summary: 'list the alert webhooks: URL, events, paused or not, the end of each secret',
    examples: ['waybill webhooks', 'waybill webhooks --json'],
    run: lazy(
      () => import('./webhooks'),
      (m) => m.list,
    ),
  },
  webhook: {
    usage:
      'webhook add <url> --event NAME… | webhook pause|resume|delete <id> | webhook deliveries [options] | webhook resend <deliveryId>',
    summary: 'subscribe a URL to run events, pause, resume or delete it; list deliveries, send one again',
    details:
      'Events: run.failed, run.completed, run.stalled, run.waiting_approval, run.budget_reached, claim.in_doubt. Each delivery is POSTed signed (Waybill-Signature: t=…,v1=HMAC-SHA256 of "t.body"), with its id in Waybill-Delivery to deduplicate on, by the workers, retried with backoff until delivered or failed. add prints the secret once.',
    args: [
      ['add|pause|resume|delete|deliveries|resend', 'what to do'],
      ['<url>', 'with add: where deliveries are POSTed (http:// or https://)'],
      ['<id>', 'a webhook id (wh_…), as add printed it'],
    ],
    flags: [
      ['--event NAME', 'with add: an event to send; repeat for more (at least one)'],
      ['--secret TEXT', 'with add: the signing secret, 16+ characters (default: one is made)'],
      ['--in-doubt-seconds N', 'with add: how long a claim is in doubt before claim.in_doubt (default 300)'],
      ['--webhook ID', 'with deliveries: only this webhook'],
      ['--status pending|delivered|failed', 'with deliveries: only these'],
      ['--limit N', 'with deliveries: at most N, newest first (default 100, at most 500)'],
      REASON,
    ],
    examples: [
      'waybill webhook add https://ops.example.com/hooks --event run.failed --event run.completed',
      'waybill webhook deliveries --status failed',
      'waybill webhook resend wh_3f2a9c1b7d4e:run.failed:nightly-7:1',
    ],
    run: lazy(
      () => import('./webhooks'),
      (m) => m.webhook,
    ),
  },
  approve: {
    usage: 'approve <runId> [<name>] [--note TEXT]',
    summary: "approve a run's waitForApproval",
    args: [RUN_ID, ['<name>', "the approval (default: the run's one open approval)"]],
    flags: [['--note TEXT', 'handed to the run with the decision']],
    examples: ['waybill approve nightly-7 send --note "looks right"'],
    run: lazy(
      () => import('./waits'),
      (m) => (cli, args) => m.decide(cli, true, args),
    ),
  },
  reject: {
    usage: 'reject <runId> [<name>] --note TEXT',
    summary: "reject a run's waitForApproval: the run decides what that means",
    args: [RUN_ID, ['<name>', "the approval (default: the run's one open approval)"]],
    flags: [['--note TEXT', 'why (required)']],
    examples: ['waybill reject nightly-7 send --note "wrong recipient"'],
    run: lazy(
      () => import('./waits'),
      (m) => (cli, args) => m.decide(cli, false, args),
    ),
  },
  signal: {
    usage: 'signal <runId> <name> [--payload JSON|@file]',
    summary: 'send a run a signal (kept if it is not waiting for it yet)',
    args: [RUN_ID, ['<name>', 'the signal the run waits for (ctx.waitForSignal)']],
    flags: [['--payload JSON|@file', 'what waitForSignal returns (default null)']],
    examples: ['waybill signal nightly-7 payment-received --payload \'{"amount": 12}\''],
    run: lazy(
      () => import('./waits'),
      (m) => m.signal,
    ),
  },
  emit: {
    usage: 'emit <name> --id ID [--data JSON|@file]',
    summary: 'send an event: each subscribed workflow starts one run, waiting runs wake',
    details:
      'Each workflow whose defineWorkflow `on` names the event starts one run, <workflow>:event:<id>, with the data as input; runs in ctx.waitForEvent(name) whose match fits the data wake. A re-send under the same id changes nothing; with other data it is refused.',
    args: [['<name>', 'the event, e.g. order.created']],
    flags: [
      ['--id ID', "the event's id: one run per subscribed workflow per id"],
      ['--data JSON|@file', "the event data, the subscribed runs' input (default {})"],
    ],
    examples: ['waybill emit order.created --id order-7 --data \'{"order": 7}\''],
    run: lazy(
      () => import('./events'),
      (m) => m.emit,
    ),
  },
  token: {
    usage: 'token --run ID [--ttl 24h]',
    summary: 'print a token that may use the checkpoint protocol for that run only',
    flags: [
      ['--run ID', 'the run the token is for (required)'],
      ['--ttl DURATION', 'how long it is valid (default 24h)'],
    ],
    examples: ['waybill token --run nightly-7 --ttl 1h'],
    run: lazy(
      () => import('./token'),
      (m) => m.token,
    ),
  },
  sweep: {
    usage: 'sweep [--reason TEXT]',
    summary: 'expire every orphaned claim',
    flags: [REASON],
    examples: ['waybill sweep --reason "after the outage"'],
    run: lazy(
      () => import('./claims'),
      (m) => m.sweep,
    ),
  },
  audit: {
    usage: 'audit [--actor A] [--action X] [--run ID] [--since T] [--until T] [--limit N] [--before ID]',
    summary: "the operators' log, newest first: the dashboard's, the API's and the CLI's actions",
    flags: [
      ['--actor A', "one actor's actions"],
      ['--action X', 'one kind of action (cancel, expire, resolve, …)'],
      ['--run ID', "one run's actions"],
      ['--since T, --until T', 'a time range: ISO 8601, or a duration back from now (2h, 7d)'],
      ['--limit N', 'at most N lines'],
      ['--before ID', 'the lines before entry ID (to page on)'],
    ],
    examples: ['waybill audit --since 24h --action cancel'],
    run: lazy(
      () => import('./audit'),
      (m) => m.audit,
    ),
  },
  worker: {
    usage: 'worker [--workflows MODULE] [--concurrency N] [--id NAME] [--url URL] [--health-port N]',
    summary: 'execute runs (the built-ins and your workflows) until SIGTERM',
    flags: [
      ['--workflows MODULE', 'your workflow module (default WAYBILL_WORKFLOWS)'],
      ['--concurrency N', 'runs executed at once (default 1)'],
      ['--id NAME', "the worker's id (default: generated from host and pid)"],
      ['--url URL', "the dashboard's address for command workflows' programs (default WAYBILL_URL)"],
      [
        '--health-port N',
        '/livez, /readyz and /metrics on this port, for probes and Prometheus (default WAYBILL_HEALTH_PORT)',
      ],
    ],
    examples: ['waybill worker --workflows ./workflows.mjs --concurrency 4'],
    run: lazy(
      () => import('./worker'),
      (m) => m.worker,
    ),
  },
  gateway: {
    usage: 'gateway [--host H] [--port N] [--prices FILE]',
    summary: 'the model gateway: OpenAI and Anthropic calls recorded under their idempotency keys, until SIGTERM',
    details:
      "Point the SDK's baseURL at it (OpenAI: http://HOST:PORT/v1, Anthropic: http://HOST:PORT) with the run token " +
      "as the API key and the step's key as the Idempotency-Key header: a repeated request is answered from the " +
      'store, never paid twice. The provider keys are WAYBILL_GATEWAY_OPENAI_KEY and WAYBILL_GATEWAY_ANTHROPIC_KEY. ' +
      'The dashboard (waybill up, npm start) serves the same routes on its own address, with the same settings.',
    flags: [
      ['--host H', 'listen address (default WAYBILL_GATEWAY_HOST, 127.0.0.1)'],
      ['--port N', 'port, 0 for any free one (default WAYBILL_GATEWAY_PORT, 4010)'],
      ['--prices FILE', 'a JSON price table (default WAYBILL_GATEWAY_PRICES, else the shipped one)'],
    ],
    examples: ['WAYBILL_GATEWAY_OPENAI_KEY=sk-… waybill gateway --port 4010'],
    run: lazy(
      () => import('./gateway'),
      (m) => m.gateway,
    ),
  },
  prune: {
    usage: 'prune --older-than 30d [--dry-run] [--include-external] [--force] [--batch-size 500] [--reason TEXT]',
    summary: 'delete finished runs older than the limit, in batches',
    flags: [
      ['--older-than DURATION', 'finished before this long ago (required; at least 24h without --force)'],
      ['--dry-run', 'count what would go, delete nothing'],
      ['--include-external', "outside clients' runs too"],
      ['--force', 'allow a limit under 24h'],
      ['--batch-size N', 'runs per transaction (default 500)'],
      REASON,
    ],
    examples: ['waybill prune --older-than 30d --dry-run'],
    run: lazy(
      () => import('./prune'),
      (m) => m.prune,
    ),
  },
  'seed-demo': {
    usage: 'seed-demo [--runs 100] [--steps 50] [--big-run-steps K] [--prefix seed]',
    summary: 'write a synthetic history to try the dashboard at scale',
    flags: [
      ['--runs N', 'runs to write (default 100)'],
      ['--steps N', 'steps per run (default 50)'],
      ['--big-run-steps K', 'add one run of K steps'],
      ['--prefix P', 'run ids start with P (default seed)'],
    ],
    examples: ['waybill seed-demo --runs 10000 --steps 100'],
    run: lazy(
      () => import('./seed'),
      (m) => m.seedDemo,
    ),
  },
  migrate: {
    usage: 'migrate [--check] [--print-sql] [--move-to-schema NAME]',
    summary: 'create the store or bring it up to date',
    details:
      'Read-only commands never create or upgrade a store; workers, `up` and the dashboard migrate on open ' +
      'unless WAYBILL_MIGRATE=off.',
    flags: [
      ['--check', 'change nothing; exit 1 when the store is missing or behind, 0 when current'],
      ['--print-sql', 'change nothing; print the statements it would run'],
      ['--move-to-schema NAME', "move a store an older Waybill made in PostgreSQL's public schema to NAME"],
    ],
    examples: ['waybill migrate', 'waybill migrate --check', 'waybill migrate --move-to-schema waybill'],
    run: lazy(
      () => import('./migrate'),
      (m) => m.migrate,
    ),
  },
  up: {
    usage: 'up [--no-demo] [--no-worker]',
    summary: 'the dashboard and a worker, until Ctrl-C (npm start in a checkout)',
    flags: [
      ['--no-demo', 'start no demo runs'],
      ['--no-worker', 'serve the dashboard only'],
    ],
    examples: ['npx waybill up'],
    run: lazy(
      () => import('../launch/commands'),
      (m) => m.up,
    ),
  },
  dashboard: {
    usage: 'dashboard',
    summary: 'serve the dashboard on HOST:PORT (default 127.0.0.1:3000) until Ctrl-C',
    examples: ['PORT=4000 npx waybill dashboard'],
    run: lazy(
      () => import('../launch/commands'),
      (m) => m.dashboard,
    ),
  },
  drill: {
    usage: 'drill [--steps 1000] [--kill-at 620] [--kills 1] [--latency-ms 20] [--in-place]',
    summary: "the article's crash experiment, with a real SIGKILL, on a throwaway store",
    flags: [
      ['--steps N', 'steps in the drill run (default 1000)'],
      ['--kill-at K', 'SIGKILL the worker holding step K (default 620)'],
      ['--kills N', 'how many kills (default 1)'],
      ['--latency-ms MS', "each step's simulated side effect (default 20)"],
      ['--in-place', 'use the configured store itself, where the run stays as history'],
    ],
    examples: ['waybill drill --steps 600 --kill-at 100 --kills 10'],
    run: lazy(
      () => import('./drill'),
      (m) => m.drill,
    ),
  },
};
