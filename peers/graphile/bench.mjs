// graphile-worker's side of `make bench-peers` (scripts/bench-peers.sh): the workloads of
// bulkq's queue_bench (queue/examples/queue_bench), run the same way on graphile-worker, and
// reported as one JSON line with queue_bench's names for the same figures, so that one
// table can hold both.
//
//   node bench.mjs --url URL --mode default|batched --workload drain|latency
//                  [--processes 1] [--workers 16] [--tasks 20000]
//
// URL names a database of its own (the script creates it afresh for each run); this
// program installs graphile-worker's schema there before anything is timed.
//
// - drain: the workers (`processes` child processes, each running graphile-worker's `run()`
//   with `workers` concurrent jobs and a no-op task) wait idle; the first of them adds
//   `tasks` jobs with one `addJobs` call (one statement, one transaction), as queue_bench's
//   first node enqueues in-process: the enqueue rate. Then the time from the commit until no
//   job is left in the table, as graphile-worker deletes each job when it completes: the
//   drain rate. The commit is when `addJobs` returned, or the first job's start if that came
//   sooner: `addJobs` returns every job it added, and the enqueuing process may still be
//   reading those 20,000 rows while the other workers, woken by the commit, run thousands
//   of jobs (`started before the enqueue's reply` counts them).
// - latency: one process of 16; this process adds 300 jobs one at a time, each in its own
//   transaction, 20 ms apart; the time from just before COMMIT until the task function
//   begins, p50 / p95 / p99 / max. Times are CLOCK_MONOTONIC (`process.hrtime`), which all
//   processes of the machine share.
//
// Modes: "default" is graphile-worker's defaults; "batched" is its documented
// high-throughput configuration (https://worker.graphile.org/docs/performance#batching):
// `localQueue.size` 500, `completeJobBatchDelay` 0, `failJobBatchDelay` 0. Both use the pool
// size its docs recommend, the larger of 10 and `concurrentJobs + 2`.
//
// Peak RSS is each worker process's own high-water mark (`getrusage`'s ru_maxrss), the
// largest of them reported, as queue_bench reports its nodes'. The drain also reports what
// it cost per job: the database's work, from pg_stat_database and the WAL position, and the
// CPU time of the machine and of the workers, from /proc, as queue_bench's drain does.

import { fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { Logger, makeWorkerUtils, run } from "graphile-worker";

const LATENCY_JOBS = 300;
const LATENCY_GAP_MS = 20;
/// How often the drain looks whether the table is empty, as queue_bench polls its counts.
const POLL_MS = 10;
/// How long a worker batches its count of finished jobs before telling this process, so
/// the drain knows when to start polling the database without a message per job.
const COUNT_FLUSH_MS = 5;
/// How long the closing statistics wait for the workers' backends to end and report.
const SETTLE_MS = 500;

/// Warnings and errors only: graphile-worker logs a line per completed job at info level,
/// which would time the console rather than the queue (bulkq's nodes log nothing per task).
const quietLogger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") console.error(`[graphile ${level}] ${message}`);
});

const nowMicros = () => Number(process.hrtime.bigint() / 1000n);

function parseArgs(argv) {
  const options = { processes: 1, workers: 16, tasks: 20000, mode: "batched", workload: "drain" };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    switch (flag) {
      case "--url": options.url = value; break;
      case "--mode": options.mode = value; break;
      case "--workload": options.workload = value; break;
      case "--processes": options.processes = Number(value); break;
      case "--workers": options.workers = Number(value); break;
      case "--tasks": options.tasks = Number(value); break;
      default: throw new Error(`unknown flag ${flag}`);
    }
  }
  if (!options.url) throw new Error("--url is required");
  if (!["default", "batched"].includes(options.mode)) throw new Error(`unknown mode ${options.mode}`);
  if (!["drain", "latency"].includes(options.workload)) {
    throw new Error(`unknown workload ${options.workload}`);
  }
  return options;
}

/// graphile-worker's options for `mode` with `workers` concurrent jobs.
function workerPreset(url, mode, workers) {
  const worker = {
    connectionString: url,
    concurrentJobs: workers,
    maxPoolSize: Math.max(10, workers + 2),
    logger: quietLogger,
  };
  if (mode === "batched") {
    Object.assign(worker, {
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    });
  }
  return { worker };
}

// ---- A worker process: runs graphile-worker until told to stop. ----

async function workerProcess(url, mode, workers, index) {
  // The first worker enqueues the drain's jobs, over a pool of its own as an app would.
  const utils =
    index === "0" ? await makeWorkerUtils({ connectionString: url, logger: quietLogger }) : null;
  const starts = [];
  let done = 0;
  let flush = null;
  const taskList = {
    noop: async (_payload, helpers) => {
      starts.push([helpers.job.id, nowMicros()]);
      done += 1;
      flush ??= setTimeout(() => {
        flush = null;
        process.send({ done });
      }, COUNT_FLUSH_MS);
    },
  };
  const runner = await run({
    preset: workerPreset(url, mode, Number(workers)),
    taskList,
    noHandleSignals: true,
  });
  process.send({ ready: true });
  for (;;) {
    const [message] = await once(process, "message");
    if (message === "stop") break;
    if (message.enqueue === undefined || !utils) {
      throw new Error(`unexpected message ${JSON.stringify(message)}`);
    }
    const specs = Array.from({ length: message.enqueue }, () => ({ identifier: "noop", payload: {} }));
    const calledAt = nowMicros();
    await utils.addJobs(specs);
    process.send({ enqueue: { calledAt, repliedAt: nowMicros() } });
  }
  await runner.stop();
  await utils?.release();
  clearTimeout(flush);
  const peakRssMib = process.resourceUsage().maxRSS / 1024;
  process.send({ stopped: true, starts, peakRssMib, done }, () => process.exit(0));
}

// ---- The parent: sets up, enqueues, measures. ----

class Workers {
  constructor(children) {
    this.children = children;
    this.done = children.map(() => 0);
    this.waiters = [];
    children.forEach((child, i) =>
      child.on("message", (message) => {
        if (message.done !== undefined) this.done[i] = message.done;
        this.waiters = this.waiters.filter((waiter) => !waiter());
      }),
    );
  }

  static async start(url, mode, processes, workers) {
    const self = fileURLToPath(import.meta.url);
    const children = [];
    for (let i = 0; i < processes; i++) {
      children.push(
        fork(self, ["worker", url, mode, String(workers), String(i)], { stdio: "inherit" }),
      );
    }
    await Promise.all(
      children.map(async (child) => {
        const [message] = await once(child, "message");
        if (!message.ready) throw new Error(`worker said ${JSON.stringify(message)}`);
      }),
    );
    return new Workers(children);
  }

  pids() {
    return this.children.map((child) => child.pid);
  }

  /// Has the first worker enqueue `count` no-op jobs; returns when (`nowMicros`) it called
  /// `addJobs` and when that returned.
  async enqueue(count) {
    const replied = new Promise((resolve) =>
      this.children[0].on("message", (message) => message.enqueue && resolve(message.enqueue)),
    );
    this.children[0].send({ enqueue: count });
    return replied;
  }

  /// Resolves once the workers' task functions have run `count` times between them.
  untilStarted(count) {
    const total = () => this.done.reduce((a, b) => a + b, 0);
    return new Promise((resolve) => {
      const check = () => total() >= count && (resolve(), true);
      if (!check()) this.waiters.push(check);
    });
  }

  /// Stops every worker; returns the start times of all and the largest peak RSS.
  async stop() {
    const reports = await Promise.all(
      this.children.map(async (child) => {
        const stopped = new Promise((resolve) =>
          child.on("message", (message) => message.stopped && resolve(message)),
        );
        const exited = once(child, "exit");
        child.send("stop");
        const report = await stopped;
        const [code] = await exited;
        if (code !== 0) throw new Error(`a worker exited with ${code}`);
        return report;
      }),
    );
    return {
      starts: reports.flatMap((report) => report.starts),
      peakRssMib: Math.max(...reports.map((report) => report.peakRssMib)),
    };
  }
}

/// This database's counters and the server's WAL position, read over a connection of its
/// own (see queue_bench's work.rs for why).
async function statsSnapshot(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query(
    `SELECT xact_commit::float8 AS commits, tup_inserted::float8 AS inserted,
            tup_updated::float8 AS updated, tup_deleted::float8 AS deleted,
            pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS wal
       FROM pg_stat_database WHERE datname = current_database()`,
  );
  await client.end();
  return rows[0];
}

function perTask(before, after, tasks) {
  const per = (key) => (after[key] - before[key]) / tasks;
  return {
    "commits per 1000 tasks": per("commits") * 1000,
    "rows inserted per task": per("inserted"),
    "rows updated per task": per("updated"),
    "rows deleted per task": per("deleted"),
    "WAL bytes per task": per("wal"),
  };
}

/// CPU time used so far, in clock ticks (100 a second): by the machine (all but idle and
/// iowait), and by the processes `pids` (utime + stime).
function cpu(pids) {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1, 9).map(Number);
  const machine = fields.reduce((a, b) => a + b, 0) - fields[3] - fields[4];
  let processes = 0;
  for (const pid of pids) {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const after = stat.slice(stat.lastIndexOf(")") + 1).trim().split(/\s+/);
    processes += Number(after[11]) + Number(after[12]);
  }
  return { machine, processes };
}

/// How often the drain reads the CPU times while the enqueue runs, so they can be split at a
/// commit known only later (see `drain`).
const CPU_SAMPLE_MS = 2;

/// The CPU times of `pids`, read every `CPU_SAMPLE_MS` from `start()` until `stop()`.
class CpuTrace {
  constructor(pids) {
    this.pids = pids;
    this.samples = [];
  }

  start() {
    this.sample();
    this.timer = setInterval(() => this.sample(), CPU_SAMPLE_MS);
  }

  sample() {
    this.samples.push({ at: nowMicros(), ...cpu(this.pids) });
  }

  stop() {
    clearInterval(this.timer);
    this.sample();
  }

  /// The last reading taken at or before `micros` (the first one if none was).
  at(micros) {
    const before = this.samples.filter((s) => s.at <= micros);
    return before.length > 0 ? before[before.length - 1] : this.samples[0];
  }
}

/// Milliseconds per 1,000 tasks, during the enqueue (start to commit) and during the drain
/// (commit to drained), as queue_bench's work.rs splits them.
function cpuPerTask(start, committed, drained, tasks) {
  const perThousand = (from, to, key) => ((to[key] - from[key]) * 10 * 1000) / tasks;
  return {
    "enqueue CPU ms per 1000 tasks": perThousand(start, committed, "machine"),
    "enqueue worker CPU ms per 1000 tasks": perThousand(start, committed, "processes"),
    "drain CPU ms per 1000 tasks": perThousand(committed, drained, "machine"),
    "drain worker CPU ms per 1000 tasks": perThousand(committed, drained, "processes"),
  };
}

const round = (value) => Math.round(value * 100) / 100;

function quantile(sorted, q) {
  return sorted[Math.round((sorted.length - 1) * q)] ?? NaN;
}

function report(scenario, mode, params, figures, peakRssMib) {
  const rounded = Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, round(v)]));
  console.log(
    JSON.stringify({
      scenario,
      backend: `graphile-${mode}`,
      system: "graphile-worker",
      params,
      figures: rounded,
      peak_rss_mib: round(peakRssMib),
    }),
  );
}

async function drain(utils, options) {
  const { url, mode, processes, workers, tasks } = options;
  const workersHandle = await Workers.start(url, mode, processes, workers);
  await sleep(SETTLE_MS);
  const before = await statsSnapshot(url);
  const pids = workersHandle.pids();
  const trace = new CpuTrace(pids);
  trace.start();
  const { calledAt, repliedAt } = await workersHandle.enqueue(tasks);
  trace.stop();
  await workersHandle.untilStarted(tasks);
  // The last completions may still be on their way (batched, or in flight).
  await utils.withPgClient(async (client) => {
    for (;;) {
      const { rows } = await client.query(
        "SELECT EXISTS (SELECT 1 FROM graphile_worker._private_jobs) AS left",
      );
      if (!rows[0].left) break;
      await sleep(POLL_MS);
    }
  });
  const drained = nowMicros();
  const cpuDrained = cpu(pids);
  const { peakRssMib, starts } = await workersHandle.stop();
  // No job starts before its commit, so a start before the reply dates the commit better.
  const firstStart = Math.min(...starts.map(([, at]) => at));
  const committed = Math.min(repliedAt, firstStart);
  const startedEarly = starts.filter(([, at]) => at < repliedAt).length;
  await utils.release();
  await sleep(SETTLE_MS);
  const after = await statsSnapshot(url);
  const drainSeconds = (drained - committed) / 1e6;
  report(
    "drain",
    mode,
    { tasks, rounds: 1, processes, workers_per_process: workers },
    {
      "enqueue tasks/s": tasks / ((committed - calledAt) / 1e6),
      "drain tasks/s": tasks / drainSeconds,
      "drain s": drainSeconds,
      ...perTask(before, after, tasks),
      "started before the enqueue's reply": startedEarly,
      ...cpuPerTask(trace.samples[0], trace.at(committed), cpuDrained, tasks),
    },
    peakRssMib,
  );
}

async function latency(utils, options) {
  const { url, mode } = options;
  const workersHandle = await Workers.start(url, mode, 1, 16);
  // Let the workers settle into waiting.
  await sleep(500);
  const committedAt = new Map();
  for (let i = 0; i < LATENCY_JOBS; i++) {
    await utils.withPgClient(async (client) => {
      await client.query("BEGIN");
      const { rows } = await client.query(
        "SELECT (graphile_worker.add_job('noop', '{}'::json)).id AS id",
      );
      committedAt.set(String(rows[0].id), nowMicros());
      await client.query("COMMIT");
    });
    await sleep(LATENCY_GAP_MS);
  }
  await workersHandle.untilStarted(LATENCY_JOBS);
  const { starts, peakRssMib } = await workersHandle.stop();
  await utils.release();
  const millis = starts
    .filter(([id]) => committedAt.has(String(id)))
    .map(([id, at]) => (at - committedAt.get(String(id))) / 1000)
    .sort((a, b) => a - b);
  if (millis.length !== LATENCY_JOBS) {
    throw new Error(`${millis.length} of ${LATENCY_JOBS} jobs started`);
  }
  report(
    "latency",
    mode,
    { tasks: LATENCY_JOBS, gap_ms: LATENCY_GAP_MS, processes: 1, workers_per_process: 16 },
    {
      "commit-to-start p50 ms": quantile(millis, 0.5),
      "commit-to-start p95 ms": quantile(millis, 0.95),
      "commit-to-start p99 ms": quantile(millis, 0.99),
      "commit-to-start max ms": quantile(millis, 1),
    },
    peakRssMib,
  );
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === "worker") return workerProcess(...argv.slice(1));
  const options = parseArgs(argv);
  // The schema is installed over a pool of its own, ended before anything is counted, so
  // that its statistics are reported before the drain's first snapshot.
  const installer = await makeWorkerUtils({ connectionString: options.url, logger: quietLogger });
  await installer.migrate();
  await installer.release();
  const utils = await makeWorkerUtils({ connectionString: options.url, logger: quietLogger });
  if (options.workload === "drain") await drain(utils, options);
  else await latency(utils, options);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
