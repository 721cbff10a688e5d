/** /claims: claims in flight, orphaned ones with expire and resolve, and the sweep. */
import type { Locator, Page } from '@playwright/test';

export class ClaimsPage {
  /** The one status line every claim action reports into. */
  readonly message: Locator;
  readonly sweepAll: Locator;

  constructor(readonly page: Page) {
    this.message = page.getByTestId('claim-message');
    this.sweepAll = page.getByTestId('sweep-all');
  }

  async goto(): Promise<void> {
    await this.page.goto('/claims');
    await this.sweepAll.waitFor();
  }

  get table(): Locator {
    return this.page.getByTestId('claims-table');
  }

  row(key: string): Locator {
    return this.page.getByTestId(`claim-row-${key}`);
  }

  /** Who holds the claim when no worker does: "outside client" or "protocol client". */
  holder(key: string): Locator {
    return this.page.getByTestId(`claim-holder-${key}`);
  }

  orphaned(key: string): Locator {
    return this.page.getByTestId(`claim-orphaned-${key}`);
  }

  countdown(key: string): Locator {
    return this.page.getByTestId(`claim-countdown-${key}`);
  }

  /** Expire asks first: the dialog takes an optional reason for the audit log. */
  async expire(key: string, reason?: string): Promise<void> {
    await this.page.getByTestId(`expire-${key}`).click();
    const dialog = this.page.getByTestId('confirm-dialog');
    if (reason !== undefined) await dialog.getByTestId('confirm-reason').fill(reason);
    await dialog.getByTestId('confirm-submit').click();
  }

  /** Opens the claim's resolve form, fills it and commits. */
  async resolve(key: string, result: string, note?: string): Promise<void> {
    await this.page.getByTestId(`resolve-${key}`).click();
    const form = this.row(key);
    await form.getByTestId('resolve-result').fill(result);
    if (note !== undefined) await form.getByTestId('resolve-note').fill(note);
    await form.getByTestId('resolve-submit').click();
  }
}
