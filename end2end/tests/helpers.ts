import AxeBuilder from '@axe-core/playwright';
import { test as base, Browser, BrowserContext, BrowserContextOptions, expect, Locator, Page, TestInfo } from '@playwright/test';

/** The contexts the running test opened through `pageAs`. An open page keeps its live
 * stream, and a user may hold only `--streams-per-user` (6) at once, so a test that left
 * its pages open would starve the next test's pages of live updates. */
const openedContexts: BrowserContext[] = [];

/** What the script of a page opened through `pageAs` threw uncaught (a panic of the hydrated
 * app among them): a page whose script died looks right and answers nothing, so any such
 * error fails the test that met it. */
const pageErrors: string[] = [];

/** The servers scripts/e2e.sh started, one per worker, in worker order. */
const baseURLs = (process.env.BASE_URLS ?? 'http://127.0.0.1:3000').split(',');

/** Playwright's `test`, against this worker's own server (so workers never see each other's
 * tasks), closing the pages each test opened through `pageAs` when it ends. */
export const test = base.extend<{ closeOpenedPages: void }>({
  // eslint-disable-next-line no-empty-pattern
  baseURL: async ({}, use, testInfo) => {
    const url = baseURLs[testInfo.parallelIndex];
    if (!url) throw new Error(`worker ${testInfo.parallelIndex} has no server: BASE_URLS names ${baseURLs.length}`);
    await use(url);
  },
  closeOpenedPages: [
    // eslint-disable-next-line no-empty-pattern
    async ({}, use) => {
      await use();
      for (const context of openedContexts.splice(0)) {
        await context.close();
      }
      const errors = pageErrors.splice(0);
      expect(errors, `uncaught errors in the pages' script:\n${errors.join('\n')}`).toEqual([]);
    },
    { auto: true },
  ],
});

type User = { username: string; password: string; name: string };

/** Credentials of the users scripts/e2e.sh created for this run. e2e-staff coaches most of
 * the seeded people (and may act on all of them); the others coach nobody. `explorer`,
 * `newcomer` and `bell` are each used by one flow only, which may count on their tasks
 * being its own. */
export const users = {
  staff: { username: 'e2e-staff', password: process.env.E2E_STAFF_PASSWORD ?? '', name: 'Erin Staff' },
  admin: { username: 'e2e-admin', password: process.env.E2E_ADMIN_PASSWORD ?? '', name: 'Ari Admin' },
  other: { username: 'e2e-other', password: process.env.E2E_OTHER_PASSWORD ?? '', name: 'Olu Other' },
  explorer: { username: 'e2e-explorer', password: process.env.E2E_EXPLORER_PASSWORD ?? '', name: 'Eli Explorer' },
  newcomer: { username: 'e2e-newcomer', password: process.env.E2E_NEWCOMER_PASSWORD ?? '', name: 'Nia Newcomer' },
  bell: { username: 'e2e-bell', password: process.env.E2E_BELL_PASSWORD ?? '', name: 'Bea Bell' },
};

/**
 * Waits until the WASM has hydrated the page, so clicks reach the app. Beside the Rust
 * tests on two cores, loading and compiling the debug build's WASM has taken over the
 * default 10 s (an admin page's reload, twice in CI); a page that never hydrates still
 * fails here, and its script errors fail the test besides.
 */
export async function hydrated(page: Page) {
  await expect(page.locator('body[data-hydrated="true"]')).toBeAttached({ timeout: 30_000 });
}

/** Signs in through the sign-in form and waits for the caseload. */
export async function signIn(page: Page, user: User) {
  await page.goto('/login');
  await hydrated(page);
  await page.getByLabel('Username').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Caseload' })).toBeVisible();
  await expect(page.getByTestId('user-name')).toContainText(user.name);
  await hydrated(page);
}

type SessionState = Awaited<ReturnType<BrowserContext['storageState']>>;
/** Sessions by username; this worker's only, as is its server. */
const sessions = new Map<string, SessionState>();

/**
 * A page signed in as `user`, in a browser context of its own (`options` apply to it).
 * Sign-in attempts are rate-limited per username (a burst of 5), so the first call per user
 * signs in through the form and later calls reuse that session. Never sign out of a page
 * from here: that would end the session the other tests share; use `signIn` for that.
 */
export async function pageAs(browser: Browser, user: User, options: BrowserContextOptions = {}): Promise<Page> {
  const saved = sessions.get(user.username);
  const context = await browser.newContext({ ...options, storageState: saved });
  openedContexts.push(context);
  context.on('weberror', (error) => pageErrors.push(error.error().message.slice(0, 2000)));
  // A wasm panic reaches `weberror` as "unreachable"; its message is a console error.
  context.on('console', (message) => {
    if (message.type() === 'error' && message.text().startsWith('panicked at')) {
      pageErrors.push(message.text().slice(0, 2000));
    }
  });
  const page = await context.newPage();
  if (saved) {
    await page.goto('/');
    await expect(page.getByTestId('user-name')).toContainText(user.name);
    await hydrated(page);
  } else {
    await signIn(page, user);
    sessions.set(user.username, await context.storageState());
  }
  return page;
}

/** Signs out with the top bar's button and checks that the pages are closed again. */
export async function signOut(page: Page) {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto('/tasks');
  await expect(page).toHaveURL(/\/login$/);
}

/** Attaches a full-page screenshot to the test report. */
export async function screenshot(page: Page, testInfo: TestInfo, name: string) {
  await testInfo.attach(name, { body: await page.screenshot({ fullPage: true }), contentType: 'image/png' });
}

/** Opens a caseload search (the URL the search form builds) and waits for its results. */
export async function search(
  page: Page,
  filters: { q?: string; status?: string; mine?: boolean; watched?: boolean; alerts?: boolean },
) {
  const params = new URLSearchParams({ q: filters.q ?? '', status: filters.status ?? '' });
  if (filters.mine) params.set('mine', 'true');
  if (filters.watched) params.set('watched', 'true');
  if (filters.alerts) params.set('alerts', 'true');
  await page.goto(`/?${params}`);
  await expect(page.getByTestId('result-summary')).toBeVisible();
  await hydrated(page);
}

/** The rows of the caseload table. */
export function resultRows(page: Page): Locator {
  return page.locator('table.caseload tbody tr');
}

/** Ticks the first `n` rows that have an email address; returns their school ids. */
export async function selectPeopleWithEmail(page: Page, n: number): Promise<string[]> {
  const rows = resultRows(page).filter({ has: page.locator('td:nth-child(4)', { hasText: '@' }) });
  expect(await rows.count()).toBeGreaterThanOrEqual(n);
  const chosen: string[] = [];
  for (let i = 0; i < n; i++) {
    const row = rows.nth(i);
    chosen.push((await row.getAttribute('data-school-id')) ?? '');
    await row.getByRole('checkbox').check();
  }
  return chosen;
}

/** Continues from a bulk-action form to its confirmation, expecting `question`. */
export async function continueTo(page: Page, question: string) {
  await page.getByRole('button', { name: 'Continue' }).click();
  await expect(page.getByTestId('bulk-question')).toHaveText(question);
}

/** Confirms the action on screen and returns the id of the task it became. */
export async function confirmAndGetTask(page: Page, submitted: string): Promise<string> {
  await page.getByRole('button', { name: 'Confirm' }).click();
  const result = page.getByTestId('bulk-submitted');
  await expect(result).toContainText(submitted);
  const href = await result.getByRole('link', { name: 'View the task' }).getAttribute('href');
  const id = href?.match(/^\/tasks\/([0-9a-f-]{36})$/)?.[1];
  expect(id, `task link ${href}`).toBeTruthy();
  return id!;
}

/** Ticks `tick`, then clicks `act`, again until the click lands. A list of tasks is fetched
 * again whenever the page's live stream (re)connects (so about a second after each page
 * load) or its tasks change; the new list keeps the ticks, but a tick given to a row the
 * swap is replacing can miss. */
export async function tickThenAct(tick: Locator, act: Locator) {
  await expect(async () => {
    await tick.check({ timeout: 1_000 });
    await act.click({ timeout: 1_000 });
  }).toPass();
}

/** A task's row on "My tasks". */
export function taskItem(page: Page, taskId: string): Locator {
  return page.locator(`li.task[data-task-id="${taskId}"]`);
}

/** A count of the task page's "Result so far", by its label. */
export function reportCount(page: Page, label: string): Locator {
  return page
    .getByTestId('report')
    .locator('dt', { hasText: new RegExp(`^${label}$`) })
    .locator('xpath=following-sibling::dd[1]');
}

/** Fails on any serious or critical WCAG 2.1 A/AA violation axe-core finds on the page. */
export async function expectAccessible(page: Page, what: string) {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
  expect(bad, `${what}: ${bad.join('; ')}`).toEqual([]);
}
