import { expect, Page } from '@playwright/test';
import {
  confirmAndGetTask,
  continueTo,
  hydrated,
  pageAs,
  screenshot,
  search,
  selectPeopleWithEmail,
  signIn,
  signOut,
  test,
  tickThenAct,
  users,
} from './helpers';

/** Emails one person with `subject` from the caseload; returns the task's id. */
async function emailOnePerson(page: Page, subject: string): Promise<string> {
  await search(page, { q: 'Lopez', mine: true });
  await selectPeopleWithEmail(page, 1);
  await page.getByRole('button', { name: 'Email', exact: true }).click();
  await page.getByLabel('Subject').fill(subject);
  await page.getByLabel('Message').fill('This message tests what happens when the relay says "later".');
  await continueTo(page, `Email 1 person with the subject “${subject}”?`);
  return confirmAndGetTask(page, 'Email task submitted for 1 person.');
}

/** Abandons the task whose page is open, giving a reason, as an admin. */
async function abandonOpenTask(page: Page) {
  await page.getByLabel('Reason').fill('Relay drill over');
  await page.getByRole('button', { name: 'Abandon' }).click();
  await expect(page.getByTestId('task-status')).toHaveText('ABANDONED');
}

// The SMTP sink of scripts/e2e.sh answers "451 try again later" to every message whose
// subject holds "[relay-fail]", so such a task is retried with backoff (1, 2, 4, 8 s) and
// ends in FAILURE (attempts exhausted) after its fifth attempt, about 20 s after it was
// submitted.
test('an email the relay keeps deferring fails; an admin retries it and abandons another', async ({ browser }, testInfo) => {
  test.setTimeout(180_000);
  const staff = await pageAs(browser, users.staff);
  const failing = await emailOnePerson(staff, '[relay-fail] Outage drill A');
  const waiting = await emailOnePerson(staff, '[relay-fail] Outage drill B');

  const admin = await (await browser.newContext()).newPage();
  await signIn(admin, users.admin);

  // B waits for its next attempt: abandon it.
  await admin.goto(`/tasks/${waiting}`);
  await hydrated(admin);
  await expect(admin.getByTestId('task-status')).toHaveText(/^(QUEUED|SCHEDULING|EXECUTING)$/);
  await abandonOpenTask(admin);
  await expect(admin.getByTestId('timeline')).toContainText('ABANDONED');
  await expect(admin.getByTestId('timeline')).toContainText('Relay drill over');
  await screenshot(admin, testInfo, 'task detail (admin): an abandoned task');

  // A runs out of attempts and is listed as failed on Queue health, which follows the live
  // stream (no reload here).
  await admin.getByRole('link', { name: 'Queue health' }).click();
  await expect(admin).toHaveURL(/\/admin\/queue$/);
  await hydrated(admin);
  const row = admin.getByTestId('problems').locator('tbody tr', { has: admin.locator(`a[href="/tasks/${failing}"]`) });
  await expect(row).toContainText('FAILURE', { timeout: 60_000 });
  // The row says what was asked, what went wrong and whose it is.
  await expect(row).toContainText("Email 1 person: '[relay-fail] Outage drill A'");
  await expect(row.locator('td.error-line')).toContainText('deferred');
  await expect(row).toContainText(users.staff.username);
  await screenshot(admin, testInfo, 'queue health: a failed email');

  // Its page tells the admin why.
  await row.getByRole('link').click();
  await expect(admin.getByTestId('task-status')).toHaveText('FAILURE');
  await expect(admin.getByTestId('error-detail')).toContainText('deferred');
  await screenshot(admin, testInfo, 'task detail (admin): the error');

  // Retry it from Queue health.
  await admin.getByRole('link', { name: 'Queue health' }).click();
  await hydrated(admin);
  await tickThenAct(row.getByRole('checkbox'), admin.getByRole('button', { name: 'Retry 1 task' }));
  await expect(admin.getByTestId('repair-result')).toHaveText('Retried 1 task (0 skipped).');

  await admin.goto(`/tasks/${failing}`);
  await hydrated(admin);
  await expect(admin.getByTestId('timeline')).toContainText('by e2e-admin');

  // The owner sees the timeline, but not the error detail, which is for admins.
  await staff.goto(`/tasks/${failing}`);
  await expect(staff.getByTestId('timeline')).toContainText('FAILURE');
  await expect(staff.getByTestId('error-detail')).toHaveCount(0);
  await expect(staff.getByRole('heading', { name: 'Repair' })).toHaveCount(0);

  // The relay still refuses, so the retried task would fail again: abandon it too, leaving
  // no failed tasks behind.
  await abandonOpenTask(admin);
  await signOut(admin);
});
