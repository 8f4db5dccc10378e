import { expect, Page } from '@playwright/test';
import { confirmAndGetTask, continueTo, hydrated, pageAs, screenshot, search, selectPeopleWithEmail, test, users } from './helpers';

// The SMTP sink of scripts/e2e.sh accepts a message whose subject holds "[relay-slow]" only
// after 6 s, so such an email task stays EXECUTING long enough to be acted on.

/** Emails `n` of the staff user's people with `subject`; returns the task's id. */
async function emailPeople(page: Page, n: number, subject: string): Promise<string> {
  await search(page, { q: 'Lopez', mine: true });
  await selectPeopleWithEmail(page, n);
  await page.getByRole('button', { name: 'Email', exact: true }).click();
  await page.getByLabel('Subject').fill(subject);
  await page.getByLabel('Message').fill('A message through a slow relay.');
  const people = n === 1 ? '1 person' : `${n} people`;
  await continueTo(page, `Email ${people} with the subject “${subject}”?`);
  return confirmAndGetTask(page, `Email task submitted for ${people}.`);
}

test('staff cancel their running email; it stops with what it did', async ({ browser }, testInfo) => {
  test.setTimeout(90_000);
  const page = await pageAs(browser, users.staff);
  const taskId = await emailPeople(page, 2, '[relay-slow] Cancel while sending');
  await page.goto(`/tasks/${taskId}`);
  await hydrated(page);
  await expect(page.getByTestId('task-status')).toHaveText('EXECUTING', { timeout: 20_000 });
  await page.getByTestId('cancel-task').click();
  await expect(page.getByTestId('task-status')).toHaveText('ABANDONED');
  await expect(page.getByTestId('timeline')).toContainText(new RegExp(`ABANDONED \\(attempt 1\\) by ${users.staff.username}`));
  await screenshot(page, testInfo, 'task detail: a running email cancelled');
});

test('an admin requeues a running email at once; it finishes without mailing anyone twice', async ({ browser }, testInfo) => {
  test.setTimeout(90_000);
  // The admin's page is open before the email starts its 6 s of sending.
  const admin = await pageAs(browser, users.admin);
  const staff = await pageAs(browser, users.staff);
  const taskId = await emailPeople(staff, 1, '[relay-slow] Requeue while sending');
  await admin.goto(`/tasks/${taskId}`);
  await hydrated(admin);
  await expect(admin.getByTestId('task-status')).toHaveText('EXECUTING', { timeout: 20_000 });
  await expect(admin.getByRole('button', { name: 'Retry' })).toBeDisabled();
  await admin.getByTestId('requeue-task').click();
  // Taken back from its worker at once, with a fresh budget; the next attempt finds the
  // person already handled (email is sent at most once) and completes.
  await expect(admin.getByTestId('timeline')).toContainText(new RegExp(`QUEUED \\(attempt 0\\) by ${users.admin.username}`));
  await expect(admin.getByTestId('task-status')).toHaveText('COMPLETED', { timeout: 30_000 });
  await expect(admin.getByTestId('report')).toContainText('Sent');
  await screenshot(admin, testInfo, 'task detail: a running email requeued by an admin');
});
