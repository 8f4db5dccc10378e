import { expect, Page } from '@playwright/test';

/** Credentials of the users scripts/e2e.sh created for this run. */
export const users = {
  staff: { username: 'e2e-staff', password: process.env.E2E_STAFF_PASSWORD ?? '', name: 'Erin Staff' },
  admin: { username: 'e2e-admin', password: process.env.E2E_ADMIN_PASSWORD ?? '', name: 'Ari Admin' },
};

/** Waits until the WASM has hydrated the page, so clicks reach the app. */
export async function hydrated(page: Page) {
  await expect(page.locator('body[data-hydrated="true"]')).toBeAttached();
}

/** Signs in through the sign-in form and waits for the caseload. */
export async function signIn(page: Page, user: { username: string; password: string; name: string }) {
  await page.goto('/login');
  await hydrated(page);
  await page.getByLabel('Username').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Caseload' })).toBeVisible();
  await expect(page.getByTestId('user-name')).toContainText(user.name);
  await hydrated(page);
}
