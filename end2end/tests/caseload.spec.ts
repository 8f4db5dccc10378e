import { expect } from '@playwright/test';
import { hydrated, screenshot, signIn, test, users } from './helpers';

test('anonymous visitors are sent to sign in, and bad credentials are refused', async ({ page }, testInfo) => {
  await page.goto('/');
  await expect(page).toHaveURL(/\/login$/);
  await hydrated(page);
  await page.getByLabel('Username').fill(users.staff.username);
  await page.getByLabel('Password').fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toHaveText('Wrong username or password.');
  await screenshot(page, testInfo, 'sign-in: wrong password');
  await expect(page).toHaveURL(/\/login$/);
});

test('staff sign in, search the caseload, page through it and sign out', async ({ page }, testInfo) => {
  await signIn(page, users.staff);
  await expect(page.getByTestId('result-summary')).toHaveText('1–50 of 500 people');
  await expect(page.locator('table.caseload tbody tr')).toHaveCount(50);
  await screenshot(page, testInfo, 'caseload');

  // Search by a last name the seeded data uses; every row must match it.
  await page.getByLabel('Name or school id').fill('Nguyen');
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/q=Nguyen/);
  const summary = page.getByTestId('result-summary');
  await expect(summary).toContainText('people');
  // The old results stay until the new ones arrive.
  const names = page.locator('table.caseload tbody td.name');
  await expect(async () => {
    const all = await names.allTextContents();
    expect(all.length).toBeGreaterThan(0);
    for (const name of all) {
      expect(name.startsWith('Nguyen, '), name).toBeTruthy();
    }
  }).toPass({ timeout: 10_000 });

  // A search that matches no one says so.
  await page.getByLabel('Name or school id').fill('Zzyzx');
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page.getByTestId('result-summary')).toHaveText('No people match this search.');

  // Paging keeps the order stable: page 2 starts at row 51.
  await page.goto('/?q=&status=&page=1');
  await expect(page.getByTestId('result-summary')).toHaveText('51–100 of 500 people');

  await hydrated(page);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto('/');
  await expect(page).toHaveURL(/\/login$/);
});
