/** /runs/<id>: one run's progress, counters, claims, committed results and timeline. */
import type { Locator, Page } from '@playwright/test';

export class RunPage {
  readonly status: Locator;
  readonly progress: Locator;
  readonly executed: Locator;
  readonly skipped: Locator;
  readonly awaited: Locator;
  /** The Committed card's count (the committed table is `committed`). */
  readonly committedCount: Locator;
  /** What a queued run waits for. */
  readonly queuedReason: Locator;
  readonly cumulativeChart: Locator;
  readonly timeline: Locator;
  readonly committed: Locator;
  readonly notFound: Locator;
  /** The rerun / fork card: its fields, its buttons and the one line that answers them. */
  readonly rewind: { step: Locator; input: Locator; forkId: Locator; rerun: Locator; fork: Locator; message: Locator };

  constructor(readonly page: Page) {
    this.status = page.getByTestId('run-status');
    this.progress = page.getByTestId('run-progress');
    this.executed = page.getByTestId('run-executed');
    this.skipped = page.getByTestId('run-skipped');
    this.awaited = page.getByTestId('run-awaited');
    this.committedCount = page.getByTestId('run-committed');
    this.queuedReason = page.getByTestId('run-queued-reason');
    this.cumulativeChart = page.getByTestId('chart-cumulative');
    this.timeline = page.getByTestId('timeline');
    this.committed = page.getByTestId('committed-table');
    this.notFound = page.getByTestId('run-not-found');
    this.rewind = {
      step: page.getByTestId('rewind-step'),
      input: page.getByTestId('rewind-input'),
      forkId: page.getByTestId('rewind-fork-id'),
      rerun: page.getByTestId('action-rerun'),
      fork: page.getByTestId('action-fork'),
      message: page.getByTestId('rewind-message'),
    };
  }

  /** /runs/<id>/steps/<step>: `step` as typed, so a test can ask for "abc". */
  async gotoStep(id: string, step: string): Promise<number | undefined> {
    return (await this.page.goto(`/runs/${encodeURIComponent(id)}/steps/${step}`))?.status();
  }

  async goto(id: string): Promise<void> {
    await this.page.goto(`/runs/${encodeURIComponent(id)}`);
  }

  /** Steps done, from the progress bar (aria-valuenow), or else the first number in its text. */
  async stepsDone(): Promise<number> {
    const bar = this.progress.getByRole('progressbar');
    if ((await bar.count()) > 0) {
      const now = await bar.first().getAttribute('aria-valuenow');
      if (now !== null) return Number(now);
    }
    const text = (await this.progress.textContent()) ?? '';
    const match = /\d+/.exec(text);
    if (!match) throw new Error(`run-progress shows no number: ${JSON.stringify(text)}`);
    return Number(match[0]);
  }

  /** Timeline items of one outcome: executed, skipped, expired, resolved, operator, … */
  events(outcome: string): Locator {
    return this.timeline.getByTestId(`event-${outcome}`);
  }

  /**
   * An operator's action in the timeline (start, cancel, expire, resolve, …): its audit line, which stands for
   * the store's event of the same action too (each action is shown once).
   */
  action(name: string): Locator {
    return this.timeline.locator(`[data-testid="audit-entry"][data-action="${name}"]`);
  }

  /** The timeline's kind filter: all, steps, failures, claims, operator. */
  filter(kind: 'all' | 'steps' | 'failures' | 'claims' | 'operator'): Locator {
    return this.timeline.getByTestId(`timeline-filter-${kind}`);
  }

  /** The timeline's items in the order shown. */
  get timelineItems(): Locator {
    return this.timeline.getByTestId('timeline-items').locator(':scope > li');
  }

  /** Committed results an operator supplied by hand. */
  get manualResults(): Locator {
    return this.page.getByTestId('source-manual');
  }
}
