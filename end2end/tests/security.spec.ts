import { expect } from '@playwright/test';
import { hydrated, pageAs, test, users } from './helpers';

// Every page works under its Content Security Policy: the browser blocks nothing the page
// needs (its scripts, the WebAssembly, styles, the live update stream), and reports nothing.
test('every page hydrates under its Content Security Policy with nothing blocked', async ({ browser }) => {
  const page = await pageAs(browser, users.admin);
  const violations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
  });
  await page.exposeFunction('reportViolation', (text: string) => violations.push(text));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      (window as unknown as { reportViolation: (t: string) => void }).reportViolation(
        `${event.violatedDirective} blocked ${event.blockedURI}`,
      );
    });
  });
  for (const path of ['/', '/tasks', '/admin/queue', '/admin/users', '/account', '/?q=a&page=2']) {
    const response = await page.goto(path);
    const policy = response?.headers()['content-security-policy'] ?? '';
    expect(policy, path).toContain("frame-ancestors 'none'");
    expect(policy, path).toMatch(/'nonce-[^']+'/);
    await hydrated(page);
  }
  expect(violations).toEqual([]);
});
