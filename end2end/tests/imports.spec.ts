import { readFile } from 'node:fs/promises';
import AxeBuilder from '@axe-core/playwright';
import { expect, Page } from '@playwright/test';
import { hydrated, pageAs, screenshot, test, users } from './helpers';

/** Uploads `csv` on the import page and waits for its preview. */
async function upload(page: Page, csv: string) {
  await page.goto('/admin/imports');
  await hydrated(page);
  await page.getByLabel('CSV file').setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
  await page.getByRole('button', { name: 'Upload and preview' }).click();
  await expect(page).toHaveURL(/\/admin\/imports\/[0-9a-f-]{36}$/);
  await hydrated(page);
}

/** Matches the file's "Family" column to the last name, which its header does not say. */
async function matchLastName(page: Page) {
  const lastName = page.locator('select[name="last_name"]');
  await expect(lastName).toHaveAttribute('aria-invalid', 'true');
  await lastName.selectOption({ label: 'column 3: Family' });
  await page.getByRole('button', { name: 'Preview again' }).click();
  await expect(page).toHaveURL(/last_name=2/);
  await hydrated(page);
}

// An admin brings people in from the school's records: uploads a file, matches the column
// the header does not name, reads what would happen (a bad status and a formula refused by
// line), imports it as a task, downloads the rows not imported; the same file again would
// change nothing.
test('an admin imports people from a CSV file and downloads the rows not imported', async ({ browser }, testInfo) => {
  test.setTimeout(120_000);
  const admin = await pageAs(browser, users.admin);
  const id = `I${Date.now()}`;
  const csv = [
    'Student number,Given name,Family,Status',
    `${id}a,Ida,Importer,ACTIVE`,
    `${id}b,Ivo,Importer,NO_SUCH_STATUS`,
    `${id}c,=cmd(),Importer,ACTIVE`,
    '',
  ].join('\r\n');
  await upload(admin, csv);
  await matchLastName(admin);
  await expect(admin.getByTestId('import-counts')).toHaveText(
    '3 rows: 1 to create, 0 to change, 0 unchanged; 2 with problems.',
  );
  await expect(admin.getByTestId('first-rows')).toContainText('Ida');
  const problems = admin.getByTestId('problems');
  await expect(problems.locator('tbody tr')).toHaveCount(2);
  await expect(problems).toContainText('NO_SUCH_STATUS');
  const axe = await new AxeBuilder({ page: admin }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
  await screenshot(admin, testInfo, 'import preview');

  await admin.getByRole('button', { name: 'Import 3 rows' }).click();
  await expect(admin).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await hydrated(admin);
  await expect(admin.getByTestId('task-status')).toHaveText('COMPLETED');
  const outcome = admin.getByTestId('import-outcome');
  await expect(outcome).toContainText('3 rows read: 1 created, 0 changed, 0 unchanged, 0 retired; 2 not imported.');
  const [download] = await Promise.all([
    admin.waitForEvent('download'),
    outcome.getByRole('link', { name: 'Download the rows not imported (CSV)' }).click(),
  ]);
  const report = (await readFile((await download.path())!, 'utf8')).trimEnd().split(/\r?\n/);
  expect(report[0]).toBe('line,school_id,problem');
  expect(report.slice(1).map((line) => line.split(',')[0])).toEqual(['3', '4']);
  expect(report[1]).toContain('NO_SUCH_STATUS');

  await upload(admin, csv);
  await matchLastName(admin);
  await expect(admin.getByTestId('import-counts')).toHaveText(
    '3 rows: 0 to create, 0 to change, 1 unchanged; 2 with problems.',
  );
  await admin.getByRole('button', { name: 'Discard' }).click();
  await expect(admin).toHaveURL(/\/admin\/imports$/);
});

// Staff cannot import: the page says so with a 403, and an upload is refused.
test('staff cannot import people', async ({ browser }) => {
  const staff = await pageAs(browser, users.staff);
  const response = await staff.goto('/admin/imports/00000000-0000-7000-8000-000000000000');
  expect(response?.status()).toBe(403);
  await expect(staff.getByTestId('forbidden')).toBeVisible();
  const refused = await staff.request.post('/admin/imports/upload', {
    multipart: { file: { name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\n1,2\n') } },
  });
  expect(refused.status()).toBe(403);
});
