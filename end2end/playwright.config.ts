import { defineConfig } from '@playwright/test';

// scripts/e2e.sh starts one server per worker (E2E_WORKERS, default 2), each on a free port
// with a throwaway database, and lists them in BASE_URLS; tests/helpers.ts points each
// worker at its own. The browser is Debian's Chromium: Playwright's own browser downloads
// cannot work on this network, so `npx playwright install` is never used.
export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  workers: Number(process.env.E2E_WORKERS ?? 2),
  fullyParallel: false,
  retries: 0,
  forbidOnly: !!process.env.CI,
  reporter: [['list'], ['html', { open: 'never' }]],
  use: {
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
});
