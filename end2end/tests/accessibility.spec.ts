import { Browser, expect, Page, TestInfo } from '@playwright/test';
import { expectAccessible, hydrated, pageAs, screenshot, test, users } from './helpers';

const widths = { desktop: { width: 1280, height: 800 }, phone: { width: 375, height: 740 } };
const themes = ['light', 'dark'] as const;

/** Fails when the page is wider than the window: at phone width nothing may need a
 * sideways scroll of the whole page (wide tables scroll inside their own box). */
async function expectNoSidewaysScroll(page: Page, what: string) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow, `${what} is ${overflow}px wider than the window`).toBeLessThanOrEqual(1);
}

/** Loads each of `paths` as an admin in both themes and checks it at both widths. One page
 * for all: the theme comes with each load, and a width needs only a resize (the layout is
 * CSS alone; no script reads the width), so each page is loaded once per theme. */
async function checkPages(browser: Browser, paths: string[], testInfo: TestInfo) {
  const admin = await pageAs(browser, users.admin);
  const origin = new URL(admin.url()).origin;
  for (const theme of themes) {
    await admin.context().addCookies([{ name: 'bulkq_theme', value: theme, url: origin }]);
    for (const path of paths) {
      await admin.goto(path);
      await hydrated(admin);
      await expect(admin.locator('html')).toHaveAttribute('data-theme', theme);
      for (const [name, viewport] of Object.entries(widths)) {
        await admin.setViewportSize(viewport);
        const what = `${path} (${theme}, ${name})`;
        await expectAccessible(admin, what);
        if (name === 'phone') await expectNoSidewaysScroll(admin, what);
        if (name === 'phone' && path === '/admin/tasks') await screenshot(admin, testInfo, `all tasks, ${theme}, phone`);
      }
    }
  }
}

// One test per page, so each has its own time budget and the two workers share them.
for (const path of ['/', '/tasks', '/admin/tasks', '/admin/queue', '/admin/users', '/admin/imports', '/admin/alert-reasons', '/admin/audit', '/account', '/no-such-page']) {
  test(`${path} passes axe-core in light and dark, at desktop and phone widths`, async ({ browser }, testInfo) => {
    test.setTimeout(120_000);
    await checkPages(browser, [path], testInfo);
  });
}

test('a task page passes axe-core in light and dark, at desktop and phone widths', async ({ browser }, testInfo) => {
  test.setTimeout(120_000);
  // A colleague's task, waiting until tomorrow (admins see anyone's).
  const owner = await pageAs(browser, users.other);
  await owner.goto('/tasks');
  await hydrated(owner);
  const taskId = await owner.evaluate(async () => {
    const response = await fetch('/api/1/caseload/watches', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ all: true, run_at: new Date(Date.now() + 24 * 3600_000).toISOString() }),
    });
    return (await response.json()).id as string;
  });
  await checkPages(browser, [`/tasks/${taskId}`], testInfo);
  await owner.evaluate(async (id) => {
    await fetch(`/api/1/tasks/${id}/cancel`, { method: 'POST' });
  }, taskId);
});

test('the sign-in page passes axe-core in light and dark at phone width', async ({ browser }) => {
  const origin = new URL((await pageAs(browser, users.admin)).url()).origin;
  for (const theme of themes) {
    const context = await browser.newContext({ viewport: widths.phone });
    await context.addCookies([{ name: 'bulkq_theme', value: theme, url: origin }]);
    const page = await context.newPage();
    await page.goto('/login');
    await hydrated(page);
    await expectAccessible(page, `/login (${theme}, phone)`);
    await expectNoSidewaysScroll(page, `/login (${theme}, phone)`);
    await context.close();
  }
});

test('the theme follows the system until the toggle picks one, and the pick is remembered', async ({ browser }, testInfo) => {
  const page = await pageAs(browser, users.staff, { colorScheme: 'dark' });
  await page.context().clearCookies({ name: 'bulkq_theme' });
  await page.goto('/tasks');
  await hydrated(page);
  const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  // The system says dark and nothing was picked: dark, with no data-theme.
  await expect(page.locator('html')).not.toHaveAttribute('data-theme', /./);
  const systemDark = await background();
  await expect(page.getByTestId('theme-toggle')).toHaveText('Theme: system');

  // System → light → dark, each at once; the pick outlives a reload.
  await page.getByTestId('theme-toggle').click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  expect(await background()).not.toEqual(systemDark);
  await page.getByTestId('theme-toggle').click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  expect(await background()).toEqual(systemDark);
  await page.getByTestId('theme-toggle').click();
  await page.getByTestId('theme-toggle').click();
  await expect(page.getByTestId('theme-toggle')).toHaveText('Theme: light');
  await page.reload();
  await hydrated(page);
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  await expect(page.getByTestId('theme-toggle')).toHaveText('Theme: light');
  await screenshot(page, testInfo, 'my tasks, light by pick on a dark system');
  // Back to the system's choice, which forgets the pick.
  await page.getByTestId('theme-toggle').click();
  await page.getByTestId('theme-toggle').click();
  await expect(page.getByTestId('theme-toggle')).toHaveText('Theme: system');
  await page.reload();
  await hydrated(page);
  await expect(page.locator('html')).not.toHaveAttribute('data-theme', /./);
});
