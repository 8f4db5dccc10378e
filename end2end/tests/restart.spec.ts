import { expect, Page } from '@playwright/test';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { hydrated, signIn, test } from './helpers';

// A deploy restarts nodes under an open page: SIGTERM, then the new process on the same
// address. The page, never reloaded, shows the running task's progress live again by
// itself, and the task finishes, its hand-back in the timeline. One SQLite node; then three
// PostgreSQL nodes restarted in turn. The nodes are this file's own (their own database),
// so stopping them disturbs no other test.

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

/** Starts `bulkq serve` on `port` over `database`, with `batchSize` people per batch and
 * checkpoint; resolves once it listens. `extra` adds flags. */
async function startNode(dir: string, database: string, port: number, batchSize: number,
  systemId = 'bulkq', extra: string[] = []): Promise<ChildProcess> {
  const node = spawn(bin, ['serve', '--listen', `127.0.0.1:${port}`, '--site-root', join(root, 'target/site'),
    '--exports-dir', join(dir, 'exports'), '--outbox-dir', join(dir, 'outbox'), '--batch-size', String(batchSize),
    '--system-id', systemId, ...extra],
  { env: nodeEnv(database), stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: node.stdout! });
  for await (const line of lines) {
    if (line.startsWith('bulkq is running at')) return node;
  }
  throw new Error('the node ended before it listened');
}

function nodeEnv(database: string): NodeJS.ProcessEnv {
  return { ...process.env, DATABASE_URL: database, BULKQ_LOG: 'warn' };
}

/** An admin and `people` seeded people in `database`, migrated first. */
function prepare(database: string, user: { username: string, password: string, name: string }, people: number) {
  execFileSync(bin, ['migrate'], { env: nodeEnv(database) });
  execFileSync(bin, ['user', 'create', '--username', user.username, '--display-name', user.name,
    '--role', 'admin', '--password', user.password], { env: nodeEnv(database) });
  execFileSync(bin, ['seed', '--people', String(people), '--seed', '5'], { env: nodeEnv(database) });
}

/** Stops `node` as a deploy does and expects a clean exit. */
async function stopCleanly(node: ChildProcess) {
  const exited = once(node, 'exit');
  node.kill('SIGTERM');
  const [code] = await exited;
  expect(code, 'the node stops cleanly').toBe(0);
}

/** Submits a status change of everyone and opens its task page; resolves once the page
 * shows progress, with the task's id. */
async function followStatusChange(page: Page): Promise<string> {
  const submitted = await page.request.post('/api/1/caseload/program-status-changes', {
    data: { all: true, to_status: 'INACTIVE', reason: 'restart drill' },
  });
  expect(submitted.status()).toBe(202);
  const { id } = await submitted.json();
  await page.goto(`/tasks/${id}`);
  await hydrated(page);
  await expect.poll(() => progressShown(page), { timeout: 30_000 }).toBeGreaterThan(0);
  return id;
}

/** The page shows the task finished, every person changed, after a hand-back and no rescue. */
async function expectFinishedAfterHandBack(page: Page, people: number) {
  await expect(page.getByTestId('task-status')).toHaveText('COMPLETED', { timeout: 90_000 });
  await expect.poll(() => progressShown(page)).toBe(people);
  const timeline = page.getByTestId('timeline');
  await expect(timeline).toContainText('handed back');
  await expect(timeline, 'no node died holding it').not.toContainText('rescued');
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
  const database = `sqlite://${dir}/restart.db?mode=rwc`;
  const user = { username: 'restarter', password: `restart-password-${Date.now()}`, name: 'Rae Restarter' };
  prepare(database, user, PEOPLE);
  const port = await freePort();
  // One person per checkpoint first, so the change is mid-way when the node stops; the
  // restarted node takes larger batches and finishes soon even on a busy machine.
  let node = await startNode(dir, database, port, 1);
  const context = await browser.newContext({ baseURL: `http://127.0.0.1:${port}` });
  try {
    const page = await context.newPage();
    await signIn(page, user);
    await followStatusChange(page);

    const beforeStop = await progressShown(page);
    expect(beforeStop, 'the restart comes mid-task').toBeLessThan(PEOPLE);
    await stopCleanly(node);
    node = await startNode(dir, database, port, 200);

    // No reload: the page's stream reconnects and its progress moves on.
    await expect.poll(() => progressShown(page), { timeout: 20_000 }).toBeGreaterThan(beforeStop);
    await expectFinishedAfterHandBack(page, PEOPLE);
  } finally {
    await context.close();
    node.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The PostgreSQL server the Rust tests use (`TEST_DATABASE_URL`, set by `make test`). */
const postgresServer = process.env.TEST_DATABASE_URL;
const postgresRequired = process.env.BULKQ_REQUIRE_POSTGRES === '1';

/** The first column of the first row `sql` returns in `database`, as text. */
function psqlOut(database: string, sql: string): string {
  return execFileSync('psql', ['-At', database, '-c', sql]).toString().trim();
}

/** `server` with its database path replaced by `name`. */
function databaseOn(server: string, name: string): string {
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

test('three PostgreSQL nodes restarted in turn: the page follows the task to its end', async ({ browser }) => {
  if (!postgresServer) {
    expect(postgresRequired, 'BULKQ_REQUIRE_POSTGRES is set but TEST_DATABASE_URL is not').toBe(false);
    test.skip(true, 'PostgreSQL SKIPPED: no TEST_DATABASE_URL');
    return;
  }
  test.setTimeout(180_000);
  const dir = mkdtempSync(join(tmpdir(), 'bulkq-rolling-'));
  const name = `bulkq_e2e_rolling_${process.pid}_${Date.now()}`;
  const psql = (sql: string) => execFileSync('psql', ['-q', postgresServer, '-c', sql],
    { env: { ...process.env, PGOPTIONS: '-c client_min_messages=warning' } });
  psql(`CREATE DATABASE ${name}`);
  const database = databaseOn(postgresServer, name);
  const user = { username: 'deployer', password: `rolling-password-${Date.now()}`, name: 'Dee Deployer' };
  prepare(database, user, PEOPLE);
  const ports = [await freePort(), await freePort(), await freePort()];
  const names = ['node-a', 'node-b', 'node-c'];
  // Small batches at first, so the change outlasts the restarts on a busy machine; a
  // restarted node takes large ones, so the change ends soon once its holder is restarted
  // last. Small pools and few workers, so three debug nodes weigh little on a machine
  // running other tests.
  const small = ['--workers', '4', '--worker-connections', '4', '--dashboard-connections', '2'];
  const start = (at: number, batch: number) => startNode(dir, database, ports[at], batch, names[at], small);
  // The page's node first: the sign-in is not slowed by the others starting.
  const nodes = [await start(0, 2)];
  const context = await browser.newContext({ baseURL: `http://127.0.0.1:${ports[0]}` });
  try {
    const page = await context.newPage();
    await signIn(page, user);
    nodes.push(await start(1, 2), await start(2, 2));
    const id = await followStatusChange(page);
    // The node running the change goes last: until then it keeps its small batches.
    const runner = psqlOut(database, `SELECT scheduled_by_process FROM queue_task WHERE id = '${id}'`);
    const holder = names.findIndex((name) => runner.startsWith(`${name}-`));
    expect(holder, `a node runs the change (${runner})`).toBeGreaterThanOrEqual(0);
    const order = [0, 1, 2].filter((at) => at !== holder).concat(holder);
    for (const at of order) {
      const before = await progressShown(page);
      expect(before, `restart of ${names[at]} comes mid-task`).toBeLessThan(PEOPLE);
      await stopCleanly(nodes[at]);
      nodes[at] = await start(at, 200);
      // The page is on the first node: its stream reconnects when that one restarts, and
      // follows the work wherever it runs the rest of the time.
      await expect.poll(() => progressShown(page), { timeout: 20_000 }).toBeGreaterThan(before);
    }
    await expectFinishedAfterHandBack(page, PEOPLE);
  } finally {
    await context.close();
    for (const node of nodes) node.kill('SIGKILL');
    await Promise.all(nodes.map((node) => node.exitCode === null && node.signalCode === null
      ? once(node, 'exit') : Promise.resolve()));
    psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    rmSync(dir, { recursive: true, force: true });
  }
});
