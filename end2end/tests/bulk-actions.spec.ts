import { readFile } from 'node:fs/promises';
import { expect } from '@playwright/test';
import {
  confirmAndGetTask,
  continueTo,
  hydrated,
  pageAs,
  reportCount,
  resultRows,
  screenshot,
  search,
  selectPeopleWithEmail,
  signIn,
  signOut,
  taskItem,
  test,
  users,
} from './helpers';

test('staff change the status of 3 people and see the task complete live on My tasks', async ({ page, context }, testInfo) => {
  await signIn(page, users.staff);

  // "My tasks" stays open in a second tab that is never reloaded: whatever it shows about
  // the new task arrives over the live stream.
  const tasksTab = await context.newPage();
  await tasksTab.goto('/tasks');
  await hydrated(tasksTab);
  await tasksTab.evaluate(() => ((window as unknown as { neverReloaded: boolean }).neverReloaded = true));

  // Search with the form: active people called Nguyen in my caseload.
  await page.getByLabel('Name or school id').fill('Nguyen');
  await page.getByLabel('Program status').selectOption('ACTIVE');
  await page.getByLabel('My caseload').check();
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/q=Nguyen.*status=ACTIVE.*mine=true/);
  const rows = resultRows(page);
  // The old results stay until the new ones arrive.
  await expect(async () => {
    const names = await rows.locator('td.name').allTextContents();
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(name).toMatch(/^Nguyen, /);
    for (const status of await rows.getByTestId('program-status').allTextContents()) {
      expect(status).toBe('Active');
    }
  }).toPass({ timeout: 10_000 });

  const chosen: string[] = [];
  for (let i = 0; i < 3; i++) {
    chosen.push((await rows.nth(i).getAttribute('data-school-id')) ?? '');
    await rows.nth(i).getByRole('checkbox').check();
  }
  await expect(page.getByTestId('selected-count')).toHaveText('3 selected');

  await page.getByRole('button', { name: 'Change status' }).click();
  await page.getByLabel('New status').selectOption('INACTIVE');
  await page.getByLabel('Reason').fill('Moved out of the district');
  await continueTo(page, 'Change the status of 3 people to Inactive?');
  await screenshot(page, testInfo, 'caseload: confirming a status change');
  const taskId = await confirmAndGetTask(page, 'Change status task submitted for 3 people.');

  const item = taskItem(tasksTab, taskId);
  await expect(item.getByTestId('task-status')).toHaveText('COMPLETED');
  await expect(item.getByTestId('task-target')).toHaveText('3 people');
  await expect(item.getByTestId('task-summary')).toHaveText('Change status of 3 people to Inactive');
  await expect(item).toContainText('3 of 3 done');
  await expect(item).toContainText('Finished');
  expect(await tasksTab.evaluate(() => (window as unknown as { neverReloaded?: boolean }).neverReloaded)).toBe(true);
  await screenshot(tasksTab, testInfo, 'my tasks: the status change completed live');

  // The task's page reports what it did.
  await page.getByRole('link', { name: 'View the task' }).click();
  await expect(page.getByRole('heading', { name: 'Change status task' })).toBeVisible();
  await expect(page.getByTestId('task-summary')).toHaveText('Change status of 3 people to Inactive');
  await expect(page.getByTestId('task-status')).toHaveText('COMPLETED');
  await expect(reportCount(page, 'Status changed')).toHaveText('3');
  await screenshot(page, testInfo, 'task detail: status change');

  // Each person's outcome downloads from the task page...
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByTestId('outcomes-download').click(),
  ]);
  const lines = (await readFile((await download.path())!, 'utf8')).trim().split('\n');
  expect(lines[0]).toBe('school_id,name,outcome,meaning,person_id');
  const changed = lines.slice(1).map((line) => line.split(','));
  expect(changed.map((cells) => cells[0]).sort()).toEqual([...chosen].sort());
  for (const cells of changed) expect(cells.slice(2, 4)).toEqual(['changed', 'Status changed']);

  // ...and the task explorer finds the task by any of them.
  await page.goto(`/tasks?person=${encodeURIComponent(chosen[1])}`);
  await hydrated(page);
  await expect(page.getByLabel('Person (school id)')).toHaveValue(chosen[1]);
  await expect(taskItem(page, taskId)).toBeVisible();

  // The caseload shows the new status of exactly those three.
  await search(page, { q: 'Nguyen', mine: true });
  for (const schoolId of chosen) {
    await expect(page.locator(`tr[data-school-id="${schoolId}"]`).getByTestId('program-status')).toHaveText('Inactive');
  }
  await signOut(page);
});

test('staff move two people of their caseload to a colleague', async ({ browser }, testInfo) => {
  const page = await pageAs(browser, users.staff);
  await search(page, { q: 'Tanaka', mine: true });
  const chosen = await selectPeopleWithEmail(page, 2);

  await page.getByRole('button', { name: 'Reassign coach' }).click();
  await page.getByLabel('New coach').selectOption({ label: 'Olu Other' });
  await continueTo(page, 'Move 2 people to the coach e2e-other?');
  const taskId = await confirmAndGetTask(page, 'Reassign coach task submitted for 2 people.');

  await page.getByRole('link', { name: 'View the task' }).click();
  await expect(page.getByRole('heading', { name: 'Reassign coach task' })).toBeVisible();
  await expect(page.getByTestId('task-summary')).toHaveText('Move 2 people to Olu Other');
  await expect(page.getByTestId('task-status')).toHaveText('COMPLETED');
  await expect(reportCount(page, 'Moved')).toHaveText('2');
  await screenshot(page, testInfo, 'task detail: coach reassignment');
  expect(page.url()).toContain(taskId);

  // They have left Erin's caseload.
  await search(page, { q: 'Tanaka', mine: true });
  for (const schoolId of chosen) {
    await expect(page.locator(`tr[data-school-id="${schoolId}"]`)).toHaveCount(0);
  }
});

test('staff raise an early alert for two of their people, are told, and close one', async ({ browser }, testInfo) => {
  const page = await pageAs(browser, users.staff);
  // Erin coaches the people: she is told at the address on her account page.
  await page.goto('/account');
  await hydrated(page);
  await page.getByLabel('Tell me things at').fill('erin.staff@example.edu');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(page.getByText('Saved.')).toBeVisible();
  // And of her own tasks' ends, every one.
  await page.getByLabel('Email me about my tasks').selectOption({ label: 'whenever one ends' });
  await Promise.all([
    page.waitForResponse((response) => response.url().endsWith('/api/account/task-emails') && response.ok()),
    page.getByRole('button', { name: 'Save choice' }).click(),
  ]);
  await page.reload();
  await hydrated(page);
  await expect(page.getByLabel('Email me about my tasks')).toHaveValue('all');
  await expect(page.getByLabel('Tell me things at')).toHaveValue('erin.staff@example.edu');

  await search(page, { q: 'Rossi', mine: true });
  const chosen = await selectPeopleWithEmail(page, 2);
  await page.getByRole('button', { name: 'Early alert' }).click();
  await page.getByLabel('Course or term').fill('MATH 101, fall term');
  await page.getByLabel('Missing assignments').check();
  await page.getByLabel('Suggestion (optional)').fill('Book a tutoring slot');
  await screenshot(page, testInfo, 'caseload: the early alert form');
  await continueTo(page, 'Raise an early alert for 2 people in “MATH 101, fall term” and tell their coaches?');
  const taskId = await confirmAndGetTask(page, 'Early alert task submitted for 2 people.');

  await page.getByRole('link', { name: 'View the task' }).click();
  await expect(page).toHaveURL(new RegExp(`/tasks/${taskId}$`));
  await expect(page.getByTestId('task-summary')).toHaveText('Raise an early alert for 2 people: \'Missing assignments\'');
  await expect(page.getByTestId('task-status')).toHaveText('COMPLETED');
  await expect(reportCount(page, 'Alerts raised')).toHaveText('2');
  await expect(reportCount(page, 'Coaches told')).toHaveText('1');

  // The caseload shows their open alerts and finds them by it; one is closed.
  await search(page, { q: 'Rossi', mine: true, alerts: true });
  await expect(resultRows(page)).toHaveCount(2);
  const first = page.locator(`tr[data-school-id="${chosen[0]}"]`);
  await first.getByRole('button', { name: '1 open' }).click();
  await expect(first.getByTestId('open-alert')).toContainText('Missing assignments');
  await expect(first.getByTestId('open-alert')).toContainText('Book a tutoring slot');
  await screenshot(page, testInfo, 'caseload: a person\'s open alert');
  await first.getByRole('button', { name: 'Close the alert for MATH 101, fall term' }).click();
  await expect(first.getByText('No open alerts.')).toBeVisible();
  await search(page, { q: 'Rossi', mine: true, alerts: true });
  await expect(resultRows(page)).toHaveCount(1);
  await expect(page.locator(`tr[data-school-id="${chosen[1]}"]`)).toHaveCount(1);
});

test('admins add and retire the reasons an early alert may give', async ({ browser }, testInfo) => {
  const admin = await pageAs(browser, users.admin);
  // Admins may ask to hear of every failure; staff are not offered it.
  await admin.goto('/account');
  await hydrated(admin);
  await admin.getByLabel('Email me when anyone\'s task fails').selectOption({ label: 'yes' });
  await Promise.all([
    admin.waitForResponse((response) => response.url().endsWith('/api/account/failure-alerts') && response.ok()),
    admin.getByRole('button', { name: 'Save alerts' }).click(),
  ]);
  await admin.goto('/admin/alert-reasons');
  await hydrated(admin);
  await admin.getByLabel('Name').fill('Late work');
  await admin.getByRole('button', { name: 'Add' }).click();
  const row = admin.locator('tr[data-code="LATE_WORK"]');
  await expect(row).toContainText('in use');
  await screenshot(admin, testInfo, 'alert reasons');

  // Staff see it in the form.
  const staff = await pageAs(browser, users.staff);
  await staff.goto('/account');
  await hydrated(staff);
  await expect(staff.getByLabel('Email me about my tasks')).toBeVisible();
  await expect(staff.getByLabel('Email me when anyone\'s task fails')).toHaveCount(0);
  await search(staff, { q: 'Baker', mine: true });
  await selectPeopleWithEmail(staff, 1);
  await staff.getByRole('button', { name: 'Early alert' }).click();
  await expect(staff.getByLabel('Late work')).toBeVisible();

  await row.getByRole('button', { name: 'Retire Late work' }).click();
  await expect(row).toContainText('retired');
  // A form opened after the retirement no longer offers it.
  await staff.reload();
  await hydrated(staff);
  await selectPeopleWithEmail(staff, 1);
  await staff.getByRole('button', { name: 'Early alert' }).click();
  await expect(staff.getByLabel('Missing assignments')).toBeVisible();
  await expect(staff.getByLabel('Late work')).toHaveCount(0);
});

test('staff export everyone matching a search and download the CSV', async ({ browser }, testInfo) => {
  const page = await pageAs(browser, users.staff);
  // More than one page matches, so "select all matching" reaches beyond the page.
  await search(page, { status: 'ACTIVE', mine: true });
  const summary = (await page.getByTestId('result-summary').textContent()) ?? '';
  const total = Number(summary.match(/of ([\d,]+) people/)?.[1].replace(/,/g, ''));
  expect(total).toBeGreaterThan(50);

  await page.getByLabel('Select all on this page').check();
  await expect(page.getByTestId('selected-count')).toHaveText('50 selected');
  await page.getByRole('button', { name: `Select all ${total.toLocaleString('en-US')} matching` }).click();
  await expect(page.getByTestId('selected-count')).toHaveText(`All ${total.toLocaleString('en-US')} matching selected`);

  await page.getByRole('button', { name: 'Export' }).click();
  const form = page.getByRole('form', { name: 'Export to CSV' });
  for (const column of ['Id', 'First name', 'Email', 'Coach id', 'Last updated']) {
    await form.getByLabel(column, { exact: true }).uncheck();
  }
  await continueTo(page, `Export ${total.toLocaleString('en-US')} people to CSV (3 columns)?`);
  await screenshot(page, testInfo, 'caseload: confirming an export of all matching');
  const taskId = await confirmAndGetTask(page, `Export task submitted for ${total.toLocaleString('en-US')} people.`);

  await page.getByRole('link', { name: 'My tasks' }).last().click();
  await expect(page).toHaveURL(/\/tasks$/);
  await hydrated(page);
  const item = taskItem(page, taskId);
  await expect(item.getByTestId('task-status')).toHaveText('COMPLETED');
  await screenshot(page, testInfo, 'my tasks: a finished export');

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    item.getByRole('link', { name: 'Download CSV' }).click(),
  ]);
  const csv = await readFile((await download.path())!, 'utf8');
  const lines = csv.trimEnd().split(/\r?\n/);
  expect(lines[0]).toBe('school_id,last_name,program_status');
  expect(lines.length).toBe(total + 1);
  for (const line of lines.slice(1)) {
    expect(line).toMatch(/^S\d{8},[^,]+,ACTIVE$/);
  }

  // The task's page offers the same file.
  await item.getByRole('link', { name: 'Export' }).click();
  await expect(reportCount(page, 'Rows exported')).toHaveText(total.toLocaleString('en-US'));
  await expect(page.getByRole('link', { name: 'Download the CSV' })).toHaveAttribute(
    'href',
    `/api/1/caseload/exports/${taskId}/file`,
  );
  await screenshot(page, testInfo, 'task detail: export');
});

test('staff email three people; a wrong cc address is shown, not sent', async ({ browser }, testInfo) => {
  const page = await pageAs(browser, users.staff);
  await search(page, { q: 'Garcia', mine: true });
  await selectPeopleWithEmail(page, 3);

  await page.getByRole('button', { name: 'Email', exact: true }).click();
  await page.getByLabel('Subject').fill('Spring workshop');
  await page.getByLabel('Message').fill('Dear student,\n\nsee you at the workshop on Friday.');
  await page.getByLabel('Cc (optional)').fill('not-an-address');
  await continueTo(page, 'Email 3 people with the subject “Spring workshop”?');
  const [refusal] = await Promise.all([
    page.waitForResponse((response) => response.url().endsWith('/api/submit_bulk_action')),
    page.getByRole('button', { name: 'Confirm' }).click(),
  ]);
  expect(refusal.status()).toBe(422);
  await expect(page.getByTestId('bulk-error')).toHaveText('Cc: "not-an-address" is not an email address.');
  // Back in the form, with everything still typed in.
  await expect(page.getByLabel('Subject')).toHaveValue('Spring workshop');
  await screenshot(page, testInfo, 'caseload: an email form with an error');

  await page.getByLabel('Cc (optional)').fill('coach@example.edu');
  await continueTo(page, 'Email 3 people with the subject “Spring workshop”?');
  const taskId = await confirmAndGetTask(page, 'Email task submitted for 3 people.');

  await page.getByRole('link', { name: 'View the task' }).click();
  await expect(page).toHaveURL(new RegExp(`/tasks/${taskId}$`));
  await hydrated(page);
  await expect(page.getByTestId('task-status')).toHaveText('COMPLETED');
  await expect(reportCount(page, 'Sent')).toHaveText('3');
  await expect(reportCount(page, 'Could not be sent')).toHaveText('0');
  await screenshot(page, testInfo, 'task detail: email sent');
});

test('staff watch and unwatch people with the keyboard and filter by "Watched by me"', async ({ browser }) => {
  const page = await pageAs(browser, users.staff);
  await search(page, { q: 'Zhang', mine: true });
  const rows = resultRows(page);
  // More Zhangs than the two watched, so the filter below has some to leave out.
  expect(await rows.count()).toBeGreaterThan(2);
  const chosen = [
    await rows.nth(0).getAttribute('data-school-id'),
    await rows.nth(1).getAttribute('data-school-id'),
  ];

  // Tick two rows with the space bar, moving between them with Tab.
  await rows.nth(0).getByRole('checkbox').focus();
  await page.keyboard.press('Space');
  await page.keyboard.press('Tab');
  await expect(rows.nth(1).getByRole('checkbox')).toBeFocused();
  await page.keyboard.press('Space');
  await expect(page.getByTestId('selected-count')).toHaveText('2 selected');

  await page.getByRole('button', { name: 'Watch', exact: true }).focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('bulk-question')).toHaveText('Watch 2 people?');
  await expect(page.getByRole('button', { name: 'Confirm' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('bulk-submitted')).toContainText('Watch task submitted for 2 people.');
  await expect(page.getByRole('link', { name: 'View the task' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('task-status')).toHaveText('COMPLETED');
  await expect(reportCount(page, 'Now watched')).toHaveText('2');

  // Among the Zhangs: other flows may leave this user watching other people.
  await search(page, { q: 'Zhang', watched: true });
  await expect(page.getByTestId('result-summary')).toHaveText('1–2 of 2 people');
  expect((await resultRows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-school-id')))).sort()).toEqual(
    chosen.sort(),
  );

  // Unwatch everyone on that list.
  await page.getByLabel('Select all on this page').check();
  await page.getByRole('button', { name: 'Unwatch' }).click();
  await expect(page.getByTestId('bulk-question')).toHaveText('Stop watching 2 people?');
  await confirmAndGetTask(page, 'Unwatch task submitted for 2 people.');
  await page.getByRole('link', { name: 'View the task' }).click();
  await expect(page.getByTestId('task-status')).toHaveText('COMPLETED');
  await search(page, { q: 'Zhang', watched: true });
  await expect(page.getByTestId('result-summary')).toHaveText('No people match this search.');
});

test('staff cannot see a colleague\'s task', async ({ browser }, testInfo) => {
  const colleague = await pageAs(browser, users.other);
  await search(colleague, { q: 'Abbott' });
  await resultRows(colleague).first().getByRole('checkbox').check();
  await colleague.getByRole('button', { name: 'Watch', exact: true }).click();
  await expect(colleague.getByTestId('bulk-question')).toHaveText('Watch 1 person?');
  const taskId = await confirmAndGetTask(colleague, 'Watch task submitted for 1 person.');

  const staff = await pageAs(browser, users.staff);
  const response = await staff.goto(`/tasks/${taskId}`);
  expect(response?.status()).toBe(404);
  await expect(staff.getByRole('alert')).toHaveText('Task not found.');
  await screenshot(staff, testInfo, 'task detail: another user\'s task');
  await staff.goto('/tasks');
  await expect(staff.getByRole('heading', { name: 'My tasks' })).toBeVisible();
  await expect(taskItem(staff, taskId)).toHaveCount(0);
});

test('the caseload and its bulk actions fit a phone screen', async ({ browser }, testInfo) => {
  const page = await pageAs(browser, users.staff, { viewport: { width: 390, height: 844 } });
  await search(page, { q: 'Patel', mine: true });
  await resultRows(page).nth(0).getByRole('checkbox').check();
  await resultRows(page).nth(1).getByRole('checkbox').check();
  await page.getByRole('button', { name: 'Email', exact: true }).click();
  await expect(page.getByLabel('Subject')).toBeVisible();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  await screenshot(page, testInfo, 'caseload on a phone: the email form');

  await page.goto('/tasks');
  await hydrated(page);
  expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
  await screenshot(page, testInfo, 'my tasks on a phone');
});
