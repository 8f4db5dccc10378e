import { expect, Page } from '@playwright/test';
import { confirmAndGetTask, continueTo, hydrated, pageAs, screenshot, search, selectPeopleWithEmail, taskItem, test, users } from './helpers';

/** How many tasks the signed-in user has submitted, from the JSON API. */
async function myTaskCount(page: Page): Promise<number> {
  const response = await page.request.get('/api/1/tasks?mine=true&limit=1');
  expect(response.status()).toBe(200);
  return (await response.json()).total;
}

/** The next whole minute at least a minute from now, in the browser's local time, as a
 * `datetime-local` input takes it (`2026-11-25T14:31`). */
async function aMinuteAhead(page: Page): Promise<{ input: string; at: number }> {
  return page.evaluate(() => {
    const at = new Date(Date.now() + 60_000);
    at.setSeconds(0, 0);
    at.setMinutes(at.getMinutes() + 1);
    const two = (n: number) => String(n).padStart(2, '0');
    const input = `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}T${two(at.getHours())}:${two(at.getMinutes())}`;
    return { input, at: at.getTime() };
  });
}

/**
 * Sets the page's clock back so that `aMinuteAhead` picks the first whole minute at least
 * `lead` ms away in real time: the task then waits at most a minute and `lead`, not up to
 * two minutes. Only the page's clock moves, and it keeps running (the countdown ticks): the
 * form turns a local time into an instant without reading the clock, and the server, which
 * schedules and runs the task, keeps the real time.
 */
async function setClockBackForAMinuteAhead(page: Page, lead: number) {
  const minute = 60_000;
  const target = Math.ceil((Date.now() + lead) / minute) * minute;
  // `aMinuteAhead` picks `target` when run in the minute from `target - 2 min` on: start in
  // its middle, so up to 30 s may pass before it runs.
  await page.clock.setSystemTime(target - 90_000);
}

test('staff schedule an email a minute ahead: it waits, counts down, then runs', async ({ browser }, testInfo) => {
  test.setTimeout(150_000);
  const page = await pageAs(browser, users.staff);
  await search(page, { q: 'Lopez', mine: true });
  await selectPeopleWithEmail(page, 2);

  await page.getByRole('button', { name: 'Email', exact: true }).click();
  await page.getByLabel('Subject').fill('Office hours moved');
  await page.getByLabel('Message').fill('Office hours are on Thursday this week.');
  // 10 s: time to submit the task and see it wait before it starts.
  await setClockBackForAMinuteAhead(page, 10_000);
  const { input, at } = await aMinuteAhead(page);
  await page.getByLabel('Send at (optional)').fill(input);
  await page.getByLabel('Priority').selectOption({ label: 'High' });
  const local = input.replace('T', ' ');
  await continueTo(page, `Email 2 people with the subject “Office hours moved”? It starts at ${local}.`);
  const taskId = await confirmAndGetTask(page, 'Email task submitted for 2 people.');

  // Waiting, with the start time in local time and a countdown.
  await page.goto('/tasks');
  await hydrated(page);
  const item = taskItem(page, taskId);
  await expect(item.getByTestId('task-status')).toHaveText('QUEUED');
  await expect(item.getByTestId('scheduled-for')).toContainText(`Scheduled for ${local} (in `);
  const first = await item.getByTestId('scheduled-for').textContent();
  await expect(item.getByTestId('scheduled-for')).not.toHaveText(first ?? '', { timeout: 5_000 });
  await screenshot(page, testInfo, 'my tasks: an email scheduled for later');

  // Then it runs, by itself, never before its time.
  await expect(item.getByTestId('task-status')).toHaveText('COMPLETED', { timeout: 100_000 });
  const task = await (await page.request.get(`/api/1/tasks/${taskId}`)).json();
  expect(Date.parse(task.execution_started_date)).toBeGreaterThanOrEqual(at);
  expect(Date.parse(task.run_at)).toBe(at);
  await expect(item.getByTestId('scheduled-for')).toHaveCount(0);
});

test('a double-clicked or retried Confirm makes one task', async ({ browser }) => {
  const page = await pageAs(browser, users.staff);
  await search(page, { q: 'Kowalski', mine: true });
  await selectPeopleWithEmail(page, 2);
  const before = await myTaskCount(page);

  // The network drops the first answer and the browser sends the request again: the server
  // sees the same submission twice.
  const replies: string[] = [];
  await page.route('**/api/submit_bulk_action', async (route) => {
    await route.fetch();
    const again = await route.fetch();
    replies.push(await again.text());
    await route.fulfill({ response: again });
  });
  await page.getByRole('button', { name: 'Watch', exact: true }).click();
  await expect(page.getByTestId('bulk-question')).toHaveText('Watch 2 people?');
  await page.getByRole('button', { name: 'Confirm' }).dblclick();
  await expect(page.getByTestId('bulk-submitted')).toContainText('Watch task submitted for 2 people.');

  expect(replies.length).toBeGreaterThanOrEqual(1);
  expect(await myTaskCount(page)).toBe(before + 1);
});

test('an export can be downloaded until its retention passes, then it is expired', async ({ browser }, testInfo) => {
  const page = await pageAs(browser, users.staff);
  await search(page, { q: 'Schmidt', mine: true });
  await selectPeopleWithEmail(page, 2);
  await page.getByRole('button', { name: 'Export' }).click();
  await continueTo(page, 'Export 2 people to CSV (8 columns)?');
  const taskId = await confirmAndGetTask(page, 'Export task submitted for 2 people.');

  await page.getByRole('link', { name: 'View the task' }).click();
  await hydrated(page);
  await expect(page.getByTestId('task-status')).toHaveText('COMPLETED');
  const file = `/api/1/caseload/exports/${taskId}/file`;
  expect((await page.request.get(file)).status()).toBe(200);
  await expect(page.getByText(/\(available until /)).toBeVisible();

  // scripts/e2e.sh keeps exports for 10 s.
  await expect
    .poll(async () => (await page.request.get(file)).status(), { timeout: 30_000, intervals: [1_000] })
    .toBe(410);
  const gone = await page.request.get(file);
  expect((await gone.json()).error).toContain('expired');
  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId('export-expired')).toContainText('This export expired on');
  await expect(page.getByRole('link', { name: 'Download the CSV' })).toHaveCount(0);
  await screenshot(page, testInfo, 'task detail: an expired export');

  await page.goto('/tasks');
  await hydrated(page);
  await expect(taskItem(page, taskId)).toContainText('Expired');
});

test('owners raise a waiting task, then run it now', async ({ browser }, testInfo) => {
  const page = await pageAs(browser, users.staff);
  await search(page, { q: 'Garcia', mine: true });
  await selectPeopleWithEmail(page, 2);
  await page.getByRole('button', { name: 'Export' }).click();
  const tomorrow = await page.evaluate(() => {
    const at = new Date(Date.now() + 24 * 3600_000);
    const two = (n: number) => String(n).padStart(2, '0');
    return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}T${two(at.getHours())}:${two(at.getMinutes())}`;
  });
  await page.getByLabel('Start at (optional)').fill(tomorrow);
  await page.getByRole('button', { name: 'Continue' }).click();
  await expect(page.getByTestId('bulk-question')).toContainText('Export 2 people to CSV');
  const taskId = await confirmAndGetTask(page, 'Export task submitted for 2 people.');

  await page.goto(`/tasks/${taskId}`);
  await hydrated(page);
  await expect(page.getByTestId('task-status')).toHaveText('QUEUED');
  await expect(page.getByTestId('task-priority')).toHaveText('Normal');

  // Raised: the page shows it at once.
  await page.getByLabel('Priority').selectOption({ label: 'High' });
  await page.getByTestId('reschedule').click();
  await expect(page.getByTestId('task-priority')).toHaveText('High');
  await expect(page.getByTestId('task-status')).toHaveText('QUEUED');
  await screenshot(page, testInfo, 'task page: a waiting task raised');

  // A staff member cannot go beyond what the form offers, even by hand.
  const beyond = await page.request.post(`/api/1/tasks/${taskId}/schedule`, { data: { priority: 99 } });
  expect(beyond.status()).toBe(422);

  // Run now: it starts without waiting for tomorrow, and the steer is gone.
  await page.getByTestId('run-now').click();
  await expect(page.getByTestId('task-status')).toHaveText('COMPLETED', { timeout: 30_000 });
  await expect(page.getByTestId('run-now')).toHaveCount(0);
  const task = await (await page.request.get(`/api/1/tasks/${taskId}`)).json();
  expect(task.priority).toBe(10);
  expect(Date.parse(task.execution_started_date)).toBeLessThan(Date.now() + 3600_000);
});
