/**
 * Runs the `postgres` suite alone (bench/suites/postgres.mjs) against the built library and prints
 * its comparisons as ratios from this one run: what to read while working on the adapter, without
 * the whole `npm run bench`. `--quick` (or `BENCH_QUICK=1`) takes fewer rounds and samples.
 *
 * Usage: `npm run build && node --import ./apps/shared/register.mjs bench/pg-run.mjs [--quick]`
 * (the suite starts its cluster with apps/shared/local-postgres.ts, hence the TypeScript loader).
 */
import { loadLibrary } from './harness.mjs'
import { run } from './suites/postgres.mjs'

const r = await run(await loadLibrary())
const us = (stats) => `${(stats.median / 1000).toFixed(0).padStart(5)} µs (p90 ${(stats.p90 / 1000).toFixed(0)})`
const row = (name, lib, floor) => `${name.padEnd(10)} ${us(lib)}  vs ${us(floor)}  = ${(lib.median / floor.median).toFixed(2)}×`
const lines = [
  `postgres suite: ${r.rounds} rounds × ${r.samples} samples`,
  row('flush', r.flush, r.statement),
  row('alone', r.alone, r.statement),
  row('append', r.append, r.statement),
  row('insert', r.insert, r.statement),
  row('toggle', r.toggle, r.row),
  row('notify', r.notify, r.row),
  `statements per flush ${r.statementsPerFlush.min}–${r.statementsPerFlush.max}; openSession ${r.openStatements}`,
  ...r.throughput.map((t) => `appends: ${t.sessions} session(s) ${t.perSecond.toFixed(0)}/s, p50 ${(t.p50 / 1000).toFixed(0)} µs, p99 ${(t.p99 / 1000).toFixed(0)} µs`),
]
process.stdout.write(`${lines.join('\n')}\n`)
