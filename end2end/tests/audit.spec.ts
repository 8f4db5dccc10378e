import { readFile } from 'node:fs/promises';
import { expect } from '@playwright/test';
import { hydrated, pageAs, test, users } from './helpers';

// An admin changes an account on the Users page, then finds the change on the Audit page:
// who did it, to whom and from where; narrows the trail to it, downloads it as CSV, and a
// member of staff is kept out.
test('an admin finds their change on the audit page and downloads it', async ({ browser }) => {
  test.setTimeout(90_000);
  const admin = await pageAs(browser, users.admin);
  const username = `audited-${Date.now()}`;
  await admin.goto('/admin/users');
  await hydrated(admin);
  await admin.getByLabel('Username', { exact: true }).fill(username);
  await admin.getByLabel('Name', { exact: true }).fill('Ava Audited');
  await admin.getByRole('button', { name: 'Create' }).click();
  const row = admin.getByTestId(`account-${username}`);
  await row.getByRole('button', { name: 'Make admin' }).click();
  await expect(row.getByRole('button', { name: 'Make staff' })).toBeVisible();

  await admin.getByRole('link', { name: 'Audit' }).click();
  await expect(admin.getByRole('heading', { name: 'Audit' })).toBeVisible();
  await hydrated(admin);
  await admin.getByLabel('Target contains').fill(username);
  await admin.getByLabel('What').selectOption({ label: 'Users' });
  await admin.getByRole('button', { name: 'Apply' }).click();
  await expect(admin).toHaveURL(new RegExp(`target=${username}`));
  const entries = admin.getByTestId('audit-entry');
  await expect(entries).toHaveCount(2);
  await expect(entries.nth(0)).toContainText('changed a role');
  await expect(entries.nth(0)).toContainText('role: admin');
  await expect(entries.nth(1)).toContainText('created an account');
  await expect(entries.nth(1)).toContainText(users.admin.username);
  await expect(entries.nth(1).locator('td').nth(5)).toHaveText(/\S/);

  const [download] = await Promise.all([
    admin.waitForEvent('download'),
    admin.getByTestId('audit-csv').click(),
  ]);
  const lines = (await readFile((await download.path())!, 'utf8')).trimEnd().split(/\r?\n/);
  expect(lines[0]).toBe('at,actor,act,targets,target_count,detail,client');
  expect(lines.slice(1).map((line) => line.split(',')[2])).toEqual(['users.set_role', 'users.create']);

  const staff = await pageAs(browser, users.staff);
  const response = await staff.goto('/admin/audit');
  expect(response?.status()).toBe(403);
  await expect(staff.getByTestId('forbidden')).toBeVisible();
});
