import { expect } from '@playwright/test';
import { hydrated, screenshot, signIn, test, users } from './helpers';

test('my tasks is reachable from the top bar and says when there is nothing yet', async ({ page }, testInfo) => {
  // A user no other flow signs in as: they have no tasks, whatever ran before.
  await signIn(page, users.newcomer);
  await page.getByRole('link', { name: 'My tasks' }).click();
  await expect(page).toHaveURL(/\/tasks$/);
  await expect(page.getByRole('heading', { name: 'My tasks' })).toBeVisible();
  await expect(page.getByTestId('tasks-empty')).toContainText('You have no tasks yet');
  await hydrated(page);
  await screenshot(page, testInfo, 'my-tasks');
  // Anonymous visitors cannot see it.
  await page.context().clearCookies();
  await page.goto('/tasks');
  await expect(page).toHaveURL(/\/login$/);
});
