// The table of `make bench-peers` (scripts/bench-peers.sh): reads the JSON lines of every
// repetition (queue_bench's for bulkq, peers/graphile/bench.mjs's for graphile-worker, each
// with the repetition's number added as `rep`) and prints, in Markdown, the median of each
// figure over the repetitions, the ratio of bulkq's to graphile-worker batched's, and
// whether each goal of issue 35 is met.
//
//   node peers/table.mjs RESULTS.jsonl

import { readFileSync } from "node:fs";

const SYSTEMS = [
  ["postgres", "bulkq (defaults)"],
  ["graphile-batched", "graphile-worker batched"],
  ["graphile-default", "graphile-worker default"],
];
const BASE = "graphile-batched";

const lines = readFileSync(process.argv[2], "utf8")
  .split("\n")
  .filter((line) => line.startsWith("{"))
  .map((line) => JSON.parse(line));

function median(values) {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/// The values of `pick(line)` over the lines of `backend` that `where` accepts.
function values(backend, where, pick) {
  return lines.filter((l) => l.backend === backend && where(l)).map(pick);
}

const drainOf = (processes) => (l) => l.scenario === "drain" && l.params.processes === processes;
const anyDrain = (l) => l.scenario === "drain";
const latency = (l) => l.scenario === "latency";
const figure = (name) => (l) => l.figures[name];
const written = (l) =>
  l.figures["rows inserted per task"] +
  l.figures["rows updated per task"] +
  l.figures["rows deleted per task"];

// Each row: its label, and how to get its median (or medians) for a backend. The first five
// are issue 35's; the rest say where the time and the writes go, and the last how many jobs
// began before the enqueuing process heard its commit (the drain is timed from the commit).
const ROWS = [
  ["drain 1 × 16, jobs/s", (b) => median(values(b, drainOf(1), figure("drain tasks/s")))],
  ["drain 2 × 8, jobs/s", (b) => median(values(b, drainOf(2), figure("drain tasks/s")))],
  ["bulk enqueue, jobs/s", (b) => median(values(b, anyDrain, figure("enqueue tasks/s")))],
  [
    "latency p50 / p99, ms",
    (b) => [
      median(values(b, latency, figure("commit-to-start p50 ms"))),
      median(values(b, latency, figure("commit-to-start p99 ms"))),
    ],
  ],
  ["worker peak RSS, MB (drain 1 × 16)", (b) => median(values(b, drainOf(1), (l) => l.peak_rss_mib))],
  ["worker peak RSS, MB (latency)", (b) => median(values(b, latency, (l) => l.peak_rss_mib))],
  [
    "drain CPU ms per 1,000 jobs: machine / workers (1 × 16)",
    (b) => [
      median(values(b, drainOf(1), figure("drain CPU ms per 1000 tasks"))),
      median(values(b, drainOf(1), figure("drain worker CPU ms per 1000 tasks"))),
    ],
  ],
  [
    "cores busy while draining (1 × 16)",
    (b) => median(values(b, drainOf(1), (l) => (l.figures["drain CPU ms per 1000 tasks"] * l.figures["drain tasks/s"]) / 1e6)),
  ],
  [
    "enqueue CPU ms per 1,000 jobs: machine / enqueuing worker",
    (b) => [
      median(values(b, anyDrain, figure("enqueue CPU ms per 1000 tasks"))),
      median(values(b, anyDrain, figure("enqueue worker CPU ms per 1000 tasks"))),
    ],
  ],
  ["commits per 1,000 jobs (drain 1 × 16)", (b) => median(values(b, drainOf(1), figure("commits per 1000 tasks")))],
  ["rows written per job (drain 1 × 16)", (b) => median(values(b, drainOf(1), written))],
  ["WAL bytes per job (drain 1 × 16)", (b) => median(values(b, drainOf(1), figure("WAL bytes per task")))],
  [
    "jobs begun before the enqueue's reply (drain 1 × 16 / 2 × 8)",
    (b) => [1, 2].map((processes) => median(values(b, drainOf(processes), figure("started before the enqueue's reply")))),
  ],
];

function show(value) {
  if (Array.isArray(value)) return value.map(show).join(" / ");
  if (!Number.isFinite(value)) return "–";
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString("en-US");
  if (Math.abs(value) >= 10) return value.toFixed(0);
  if (Math.abs(value) >= 0.1 || value === 0) return value.toFixed(value < 1 ? 2 : 1);
  return value.toFixed(3);
}

function ratio(a, b) {
  if (Array.isArray(a)) return a.map((x, i) => ratio(x, b[i])).join(" / ");
  return Number.isFinite(a / b) ? `${(a / b).toFixed(2)} ×` : "–";
}

const reps = new Set(lines.map((l) => l.rep)).size;
const results = new Map(ROWS.map(([label, get]) => [label, new Map(SYSTEMS.map(([b]) => [b, get(b)]))]));

console.log(`Medians of ${reps} interleaved repetitions; ratio = bulkq / graphile-worker batched.`);
console.log();
console.log(`| | ${SYSTEMS.map(([, name]) => name).join(" | ")} | bulkq / batched |`);
console.log(`|---|${SYSTEMS.map(() => "---").join("|")}|---|`);
for (const [label] of ROWS) {
  const row = results.get(label);
  const cells = SYSTEMS.map(([b]) => show(row.get(b)));
  console.log(`| ${label} | ${cells.join(" | ")} | ${ratio(row.get("postgres"), row.get(BASE))} |`);
}

// The goals of issue 35, each read from the medians above.
const get = (label, backend = "postgres") => results.get(label).get(backend);
const goals = [
  ["drain 1 × 16 ≥ 1.2 × batched", get("drain 1 × 16, jobs/s") / get("drain 1 × 16, jobs/s", BASE), (r) => r >= 1.2],
  ["drain 2 × 8 ≥ 1.2 × batched", get("drain 2 × 8, jobs/s") / get("drain 2 × 8, jobs/s", BASE), (r) => r >= 1.2],
  ["bulk enqueue ≥ 1.0 × batched", get("bulk enqueue, jobs/s") / get("bulk enqueue, jobs/s", BASE), (r) => r >= 1.0],
  [
    "latency p99 no worse than batched",
    get("latency p50 / p99, ms")[1] / get("latency p50 / p99, ms", BASE)[1],
    (r) => r <= 1.0,
  ],
  [
    "worker RSS ≤ 0.25 × batched (drain 1 × 16)",
    get("worker peak RSS, MB (drain 1 × 16)") / get("worker peak RSS, MB (drain 1 × 16)", BASE),
    (r) => r <= 0.25,
  ],
];
console.log();
for (const [goal, r, met] of goals) {
  console.log(`- ${goal}: ${Number.isFinite(r) ? r.toFixed(2) : "–"} × — ${met(r) ? "met" : "MISSED"}`);
}
