import { expect } from '@playwright/test';
import { hydrated, pageAs, screenshot, signIn, test, users } from './helpers';

test('admins open queue health from the top bar; staff get a 403 page', async ({ page, browser }, testInfo) => {
  await signIn(page, users.admin);
  await page.getByRole('link', { name: 'Queue health' }).click();
  await expect(page).toHaveURL(/\/admin\/queue$/);
  await expect(page.getByRole('heading', { name: 'Queue health' })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Nodes' })).toBeVisible();
  await expect(page.getByTestId('throughput-chart')).toBeVisible();
  // The server under test is itself a live node.
  await expect(page.locator('ul.nodes li')).toHaveCount(1);
  await expect(page.getByTestId('node')).toContainText('LIVE');
  await expect(page.getByTestId('no-problems')).toBeVisible();
  await expect(page.getByTestId('no-stalled')).toBeVisible();
  // The rescuer and the pruner are periodic jobs of the cluster.
  await expect(page.getByRole('heading', { name: 'Periodic jobs' })).toBeVisible();
  await expect(page.locator('table.periodic-jobs')).toContainText('queue.rescue');
  await expect(page.locator('table.periodic-jobs')).toContainText('queue.prune');
  await hydrated(page);
  await screenshot(page, testInfo, 'queue-health');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login$/);

  const staff = await pageAs(browser, users.staff);
  await expect(staff.getByRole('link', { name: 'Queue health' })).toHaveCount(0);
  const response = await staff.goto('/admin/queue');
  expect(response?.status()).toBe(403);
  await expect(staff.getByTestId('forbidden')).toHaveText('Queue health is for administrators only.');
  await screenshot(staff, testInfo, 'queue-health-403');
});

test('queue health refetches at most once a second however many task events arrive', async ({ browser }, testInfo) => {
  const admin = await pageAs(browser, users.admin);
  await admin.goto('/admin/queue');
  await hydrated(admin);
  const refetches: number[] = [];
  admin.on('request', (request) => {
    if (request.url().includes('/api/queue_health')) refetches.push(Date.now());
  });

  // A burst of small tasks (each queued, started and completed: three events apiece).
  const tasks = 60;
  const started = Date.now();
  await admin.evaluate(async (count) => {
    const submissions = Array.from({ length: count }, () =>
      fetch('/api/1/caseload/unwatches', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ all: true }),
      }),
    );
    for (const response of await Promise.all(submissions)) {
      if (response.status !== 202) throw new Error(`submission answered ${response.status}`);
    }
  }, tasks);
  // Every task finishes; the page's last refetch comes within a second of the last event.
  const unfinished = async () => {
    let total = 0;
    for (const status of ['QUEUED', 'SCHEDULING', 'EXECUTING']) {
      const response = await admin.request.get(`/api/1/tasks?mine=true&status=${status}&limit=1`);
      total += (await response.json()).total;
    }
    return total;
  };
  await expect.poll(unfinished, { timeout: 60_000 }).toBe(0);
  await admin.waitForTimeout(2_500);
  const seconds = (Date.now() - started) / 1000;

  const figure = `${refetches.length} refetches for ${tasks * 3} task events in ${seconds.toFixed(1)} s`;
  testInfo.annotations.push({ type: 'queue health refetches', description: figure });
  console.log(`queue health: ${figure}`);
  expect(refetches.length).toBeGreaterThan(0);
  expect(refetches.length).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
  // Refetches are timed a second apart, but a busy browser may send one late, close to the
  // next: so no three fall within one second (without the throttle, each event would
  // send its own).
  for (let i = 2; i < refetches.length; i++) {
    expect(refetches[i] - refetches[i - 2]).toBeGreaterThanOrEqual(900);
  }
});
