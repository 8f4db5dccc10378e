import { expect, test } from '@playwright/test';
import { hydrated, signIn, users } from './helpers';

test('admins open queue health from the top bar; staff get a 403 page', async ({ page }, testInfo) => {
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
  await hydrated(page);
  await testInfo.attach('queue-health', { body: await page.screenshot({ fullPage: true }), contentType: 'image/png' });
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login$/);

  await signIn(page, users.staff);
  await expect(page.getByRole('link', { name: 'Queue health' })).toHaveCount(0);
  const response = await page.goto('/admin/queue');
  expect(response?.status()).toBe(403);
  await expect(page.getByTestId('forbidden')).toHaveText('Queue health is for administrators only.');
});
