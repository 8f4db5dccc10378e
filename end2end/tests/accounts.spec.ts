import { expect } from '@playwright/test';
import { hydrated, pageAs, test, users } from './helpers';

/** Signs in through the form as `username` and leaves the page wherever sign-in sends it. */
async function signInAs(page: import('@playwright/test').Page, username: string, password: string) {
  await page.goto('/login');
  await hydrated(page);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

// An admin brings a colleague in: creates their account, hands over the one-time password,
// the colleague chooses their own, and when the admin disables the account its open page
// is signed out; a reset gives a new one-time password.
test('an admin creates, disables and resets a staff account', async ({ browser }) => {
  // Six password hashes and three sign-ins: slow on a debug build beside the Rust tests.
  test.setTimeout(120_000);
  const admin = await pageAs(browser, users.admin);
  const username = `recruit-${Date.now()}`;
  await admin.goto('/admin/users');
  await hydrated(admin);
  await admin.getByLabel('Username', { exact: true }).fill(username);
  await admin.getByLabel('Name', { exact: true }).fill('Rae Recruit');
  await admin.getByRole('button', { name: 'Create' }).click();
  const oneTime = (await admin.getByTestId('one-time-password').textContent()) ?? '';
  expect(oneTime).toHaveLength(20);
  const row = admin.getByTestId(`account-${username}`);
  await expect(row.getByTestId('state')).toHaveText('password to choose');

  const context = await browser.newContext();
  const recruit = await context.newPage();
  await signInAs(recruit, username, oneTime);
  await expect(recruit).toHaveURL(/\/account$/);
  await expect(recruit.getByTestId('must-change')).toBeVisible();
  await recruit.goto('/tasks');
  await expect(recruit).toHaveURL(/\/account$/);
  await hydrated(recruit);
  await recruit.getByLabel('Current password').fill(oneTime);
  await recruit.getByLabel('New password').fill('password1234567890');
  await recruit.getByRole('button', { name: 'Change password' }).click();
  await expect(recruit.getByRole('alert')).toContainText('common');
  await recruit.getByLabel('New password').fill('rae chooses a long passphrase');
  await recruit.getByRole('button', { name: 'Change password' }).click();
  await expect(recruit.getByTestId('password-changed')).toBeVisible();
  await recruit.goto('/');
  await expect(recruit.getByRole('heading', { name: 'Caseload' })).toBeVisible();

  await admin.reload();
  await hydrated(admin);
  await expect(row.getByTestId('state')).toHaveText('active');
  await row.getByRole('button', { name: 'Disable' }).click();
  await expect(row.getByTestId('state')).toHaveText('disabled');
  await recruit.goto('/tasks');
  await expect(recruit).toHaveURL(/\/login$/);

  await row.getByRole('button', { name: 'Enable' }).click();
  await expect(row.getByTestId('state')).toHaveText('active');
  await row.getByRole('button', { name: 'Reset password' }).click();
  const reset = (await admin.getByTestId('one-time-password').textContent()) ?? '';
  expect(reset).not.toEqual(oneTime);
  await expect(row.getByTestId('state')).toHaveText('password to choose');
  await signInAs(recruit, username, reset);
  await expect(recruit).toHaveURL(/\/account$/);
  await context.close();
});

// A member of staff makes a personal token on their account page and a program uses it
// on the JSON API, without a password or a cookie; revoked, it stops.
test('a token made on the account page lets a program use the API', async ({ browser, playwright, baseURL }) => {
  // Maybe a sign-in, and six page loads and API calls: slow on a debug build beside the Rust tests.
  test.setTimeout(120_000);
  const page = await pageAs(browser, users.staff);
  await page.goto('/account');
  await hydrated(page);
  // A name of its own, so a run repeated against the same server finds one row.
  const name = `nightly script ${Date.now()}`;
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByLabel('Access').selectOption('true');
  await page.getByRole('button', { name: 'Make token' }).click();
  const secret = (await page.getByTestId('new-token').textContent()) ?? '';
  expect(secret).toMatch(/^bq_[0-9a-f]{64}$/);
  const row = page.getByTestId(`token-${name}`);
  await expect(row.getByTestId('last-used')).toHaveText('never');

  const program = await playwright.request.newContext({
    baseURL,
    extraHTTPHeaders: { Authorization: `Bearer ${secret}` },
  });
  const tasks = await program.get('/api/1/tasks');
  expect(tasks.status()).toBe(200);
  const submitted = await program.post('/api/1/caseload/exports', {
    data: { query: { name: '=zz-no-one' }, columns: ['school_id'] },
  });
  expect(submitted.status()).toBe(202);

  await page.reload();
  await hydrated(page);
  await expect(row.getByTestId('last-used')).not.toHaveText('never');
  await row.getByRole('button', { name: 'Revoke' }).click();
  await expect(row).toContainText('revoked');
  expect((await program.get('/api/1/tasks')).status()).toBe(401);
  await program.dispose();
});
