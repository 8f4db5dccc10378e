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
