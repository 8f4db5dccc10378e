import { expect, Page } from '@playwright/test';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { hydrated, signIn, test } from './helpers';

// A deploy restarts the node under an open page: SIGTERM, then the new process on the same
// address. The page, never reloaded, shows the running task's progress live again by
// itself, and the task finishes, its hand-back in the timeline. The node is this test's own
// (its own database), so stopping it disturbs no other test.

const root = resolve(__dirname, '../..');
const bin = join(root, 'target/debug/bulkq');
const PEOPLE = 3000;

/** A loopback port nobody listens on. */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Starts `bulkq serve` on `port` over the database in `dir`, with `batchSize` people per
 * batch and checkpoint; resolves once it listens. */
async function startNode(dir: string, port: number, batchSize: number): Promise<ChildProcess> {
  const node = spawn(bin, ['serve', '--listen', `127.0.0.1:${port}`, '--site-root', join(root, 'target/site'),
    '--exports-dir', join(dir, 'exports'), '--outbox-dir', join(dir, 'outbox'), '--batch-size', String(batchSize)],
  { env: nodeEnv(dir), stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: node.stdout! });
  for await (const line of lines) {
    if (line.startsWith('bulkq is running at')) return node;
  }
  throw new Error('the node ended before it listened');
}

function nodeEnv(dir: string): NodeJS.ProcessEnv {
  return { ...process.env, DATABASE_URL: `sqlite://${dir}/restart.db?mode=rwc`, BULKQ_LOG: 'warn' };
}

/** The people done so far, as the page shows them ("1,200 of 3,000 done"); -1 while it
 * shows none (a refetch that failed while the node was down shows an error instead). */
async function progressShown(page: Page): Promise<number> {
  const text = await page.getByTestId('task-progress').textContent({ timeout: 500 }).catch(() => null);
  const done = text?.match(/^\s*([\d,]+) of/);
  return done ? Number(done[1].replaceAll(',', '')) : -1;
}

test('a page shows live progress again after its node restarts, and the task finishes', async ({ browser }) => {
  test.setTimeout(120_000);
  const dir = mkdtempSync(join(tmpdir(), 'bulkq-restart-'));
  const user = { username: 'restarter', password: `restart-password-${Date.now()}`, name: 'Rae Restarter' };
  execFileSync(bin, ['migrate'], { env: nodeEnv(dir) });
  execFileSync(bin, ['user', 'create', '--username', user.username, '--display-name', user.name,
    '--role', 'admin', '--password', user.password], { env: nodeEnv(dir) });
  execFileSync(bin, ['seed', '--people', String(PEOPLE), '--seed', '5'], { env: nodeEnv(dir) });
  const port = await freePort();
  // One person per checkpoint first, so the change is mid-way when the node stops; the
  // restarted node takes larger batches and finishes soon even on a busy machine.
  let node = await startNode(dir, port, 1);
  const context = await browser.newContext({ baseURL: `http://127.0.0.1:${port}` });
  try {
    const page = await context.newPage();
    await signIn(page, user);
    const submitted = await page.request.post('/api/1/caseload/program-status-changes', {
      data: { all: true, to_status: 'INACTIVE', reason: 'restart drill' },
    });
    expect(submitted.status()).toBe(202);
    const { id } = await submitted.json();
    await page.goto(`/tasks/${id}`);
    await hydrated(page);
    await expect.poll(() => progressShown(page), { timeout: 30_000 }).toBeGreaterThan(0);

    const beforeStop = await progressShown(page);
    expect(beforeStop, 'the restart comes mid-task').toBeLessThan(PEOPLE);
    node.kill('SIGTERM');
    const [code] = await once(node, 'exit');
    expect(code, 'the node stops cleanly').toBe(0);
    node = await startNode(dir, port, 200);

    // No reload: the page's stream reconnects and its progress moves on.
    await expect.poll(() => progressShown(page), { timeout: 20_000 }).toBeGreaterThan(beforeStop);
    await expect(page.getByTestId('task-status')).toHaveText('COMPLETED', { timeout: 60_000 });
    await expect(page.getByTestId('timeline')).toContainText('handed back');
  } finally {
    await context.close();
    node.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
