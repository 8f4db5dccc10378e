import { expect, Page } from '@playwright/test';
import { hydrated, pageAs, screenshot, taskItem, test, tickThenAct, users } from './helpers';

/** Submits `n` Watch tasks of everyone, scheduled for tomorrow (so they wait), as the page's
 * user, through the JSON API; their ids, oldest first. */
async function scheduleWatches(page: Page, n: number): Promise<string[]> {
  return page.evaluate(async (count) => {
    const runAt = new Date(Date.now() + 24 * 3600_000).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const response = await fetch('/api/1/caseload/watches', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ all: true, run_at: runAt }),
      });
      if (response.status !== 202) throw new Error(`submission answered ${response.status}`);
      ids.push((await response.json()).id);
    }
    return ids;
  }, n);
}

test('the task explorer pages, filters by URL and acts on every matching task', async ({ browser }, testInfo) => {
  // A user only this flow uses: the tasks it pages through and acts on are all there are.
  const staff = await pageAs(browser, users.explorer);
  await staff.goto('/tasks');
  await hydrated(staff);
  const ids = await scheduleWatches(staff, 3);

  // Filters live in the URL: two to a page, newest first, then the older one.
  await staff.goto('/tasks?status=QUEUED&action=caseload.watch&limit=2');
  await hydrated(staff);
  await expect(taskItem(staff, ids[2])).toBeVisible();
  await expect(taskItem(staff, ids[1])).toBeVisible();
  await expect(taskItem(staff, ids[0])).toHaveCount(0);
  await staff.getByTestId('older').click();
  await expect(staff).toHaveURL(/before=/);
  await expect(taskItem(staff, ids[0])).toBeVisible();
  await expect(staff.getByTestId('older')).toHaveCount(0);

  // The form writes the same URL.
  await staff.goto('/tasks');
  await hydrated(staff);
  await staff.getByLabel('Status').selectOption({ label: 'Queued' });
  await staff.getByLabel('Action').selectOption({ label: 'Watch' });
  await staff.getByRole('button', { name: 'Apply' }).click();
  await expect(staff).toHaveURL(/status=QUEUED/);
  await expect(staff).toHaveURL(/action=caseload\.watch/);
  await hydrated(staff);
  for (const id of ids) await expect(taskItem(staff, id)).toBeVisible();
  await screenshot(staff, testInfo, 'my tasks, filtered');

  // A tick outlives the list's refetch: a new task of theirs reloads the list.
  const tick = taskItem(staff, ids[0]).getByRole('checkbox', { name: 'Tick task' });
  await tick.check();
  ids.push(...(await scheduleWatches(staff, 1)));
  await expect(taskItem(staff, ids[3])).toBeVisible();
  await expect(tick).toBeChecked();
  await expect(staff.locator('button[data-act="cancel"]')).toHaveText('Cancel 1 task');
  await tick.uncheck();

  // Staff cancel every matching task of theirs at once; retry is not theirs to offer.
  await expect(staff.locator('button[data-act="retry"]')).toHaveCount(0);
  await tickThenAct(staff.getByTestId('select-all-matching'), staff.locator('button[data-act="cancel"]'));
  await expect(staff.getByTestId('repair-result')).toContainText('Cancelled 4 tasks (0 skipped).');
  await expect(staff.getByTestId('tasks-empty')).toHaveText('No tasks match these filters.');

  // An admin finds them by owner and status across everyone's tasks, and retries them all.
  const admin = await pageAs(browser, users.admin);
  await admin.goto(`/admin/tasks?owner=${users.explorer.username}&status=ABANDONED&action=caseload.watch`);
  await hydrated(admin);
  await expect(admin.getByRole('heading', { name: 'All tasks' })).toBeVisible();
  for (const id of ids) await expect(taskItem(admin, id).getByTestId('task-status')).toHaveText('ABANDONED');
  await tickThenAct(admin.getByTestId('select-all-matching'), admin.locator('button[data-act="retry"]'));
  await expect(admin.getByTestId('repair-result')).toContainText('Retried 4 tasks (0 skipped).');

  // Found again by id alone: a retry runs at once, so it is on its way or done.
  await admin.goto(`/admin/tasks?id=${ids[0]}`);
  await hydrated(admin);
  await expect(admin.locator('li.task')).toHaveCount(1);
  await expect(taskItem(admin, ids[0]).getByTestId('task-status')).toHaveText(/QUEUED|EXECUTING|COMPLETED/);
  await screenshot(admin, testInfo, 'all tasks, one id');

  // A bad filter is named, not a blank page.
  await admin.goto('/admin/tasks?created_from=yesterday');
  await expect(admin.getByRole('alert')).toContainText('created_from');
});
