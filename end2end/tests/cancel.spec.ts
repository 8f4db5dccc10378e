import { expect } from '@playwright/test';
import { confirmAndGetTask, continueTo, hydrated, pageAs, screenshot, search, selectPeopleWithEmail, taskItem, test, users } from './helpers';

test('staff cancel their own scheduled email before it starts', async ({ browser }, testInfo) => {
  const page = await pageAs(browser, users.staff);
  await search(page, { q: 'Lopez', mine: true });
  await selectPeopleWithEmail(page, 1);
  await page.getByRole('button', { name: 'Email', exact: true }).click();
  await page.getByLabel('Subject').fill('Cancel drill');
  await page.getByLabel('Message').fill('This message is never sent.');
  // Tomorrow at this time, in the browser's local time.
  const input = await page.evaluate(() => {
    const at = new Date(Date.now() + 24 * 3600_000);
    const two = (n: number) => String(n).padStart(2, '0');
    return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}T${two(at.getHours())}:${two(at.getMinutes())}`;
  });
  await page.getByLabel('Send at (optional)').fill(input);
  await continueTo(page, `Email 1 person with the subject “Cancel drill”? It starts at ${input.replace('T', ' ')}.`);
  const taskId = await confirmAndGetTask(page, 'Email task submitted for 1 person.');

  await page.goto(`/tasks/${taskId}`);
  await hydrated(page);
  await expect(page.getByTestId('task-summary')).toHaveText("Email 1 person: 'Cancel drill'");
  await expect(page.getByTestId('task-status')).toHaveText('QUEUED');
  await page.getByTestId('cancel-task').click();
  await expect(page.getByTestId('task-status')).toHaveText('ABANDONED');
  await expect(page.getByTestId('timeline')).toContainText(new RegExp(`ABANDONED \\(attempt \\d+\\) by ${users.staff.username}`));
  await expect(page.getByTestId('cancel-task')).toHaveCount(0);
  await screenshot(page, testInfo, 'task detail: a cancelled email');

  await page.goto('/tasks');
  await hydrated(page);
  await expect(taskItem(page, taskId).getByTestId('task-status')).toHaveText('ABANDONED');
});
