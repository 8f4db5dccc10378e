import { expect } from '@playwright/test';
import { expectAccessible, hydrated, pageAs, test, users } from './helpers';

// A member of staff works on another page while a task of theirs runs: the bell in the top
// bar counts its end live, opened it lists the task with a link, and the count is gone,
// after a reload too.
test('the bell counts a task that ends and quiets once opened', async ({ browser }) => {
  const page = await pageAs(browser, users.bell);
  await page.goto('/tasks');
  await hydrated(page);
  const count = page.getByTestId('bell-count');
  await expect(count).toHaveCount(0);

  const taskId = await page.evaluate(async () => {
    const response = await fetch('/api/1/caseload/watches', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ all: true }),
    });
    return (await response.json()).id as string;
  });
  await expect(count).toHaveText('1', { timeout: 30_000 });
  await expect(page.getByTestId('bell')).toHaveAccessibleName('Finished tasks, 1 new');

  await page.getByTestId('bell').click();
  const item = page.getByTestId('bell-item');
  await expect(item).toHaveCount(1);
  await expect(item).toHaveAttribute('data-task-id', taskId);
  await expect(item).toContainText('COMPLETED');
  await expect(count).toHaveCount(0);
  await expectAccessible(page, 'the open bell');

  await page.reload();
  await hydrated(page);
  await expect(page.getByTestId('bell')).toBeVisible();
  await expect(count).toHaveCount(0);
  await page.getByTestId('bell').click();
  await item.getByRole('link').click();
  await expect(page).toHaveURL(new RegExp(`/tasks/${taskId}$`));
});
