/**
 * The store's append function (`<prefix>append`, src/adapters/postgres.ts) in the database alone:
 * called by hand as a flush calls it (its pending row written before, untimed; a deadline; the
 * pending row deleted), against the postgres suite's floor (one named statement that inserts a
 * row and NOTIFYs it) on the same connection, one sample of each side after the other, in an order that rotates. Prints
 * each side's median round trip and the server's own time per call (`track_functions`), so a
 * change of the function is measured without the chart or the adapter's JavaScript.
 *
 * Variants: a SQL file of functions with the append function's signature (`CREATE FUNCTION
 * v_name(p_session text, …, p_forget_pending boolean) RETURNS TABLE (…)`, the tables named with
 * the prefix `bench_`), each measured beside it: `--variants file.sql v_one,v_two`.
 *
 * Usage: `npm run build && node --import ./apps/shared/register.mjs bench/pg-function.mjs [N] [--variants file.sql names]`
 */
import { readFileSync } from 'node:fs'
import pg from 'pg'
import { startTestPostgres } from '../apps/shared/local-postgres.ts'
import { LIB_URL, nowNs, percentile } from './harness.mjs'

const args = process.argv.slice(2)
const at = args.indexOf('--variants')
const variants = at < 0 ? [] : args[at + 2].split(',')
const samples = Number(args.find((a) => /^\d+$/.test(a)) ?? 1500)
const pgLib = await import(new URL('./postgres.js', LIB_URL).href)
const server = await startTestPostgres()
const db = new pg.Pool({ query_timeout: 10_000, ...server.config, max: 1 })
db.on('error', () => {}) // the idle connection, cut when the cluster stops
try {
  const store = pgLib.createPostgresPlanStore({ db, listen: async () => async () => {}, prefix: 'bench_' })
  await store.migrate()
  await db.query('CREATE TABLE bench_raw (session text, seq bigint, type text, data jsonb, PRIMARY KEY (session, seq))')
  if (at >= 0) await db.query(readFileSync(args[at + 1], 'utf8'))
  await db.query(`SET track_functions = 'all'`)
  let rawSeq = 0
  let active = false
  const floor = async () => {
    const t = nowNs()
    await db.query({
      name: 'floor',
      text: 'WITH ins AS (INSERT INTO bench_raw (session, seq, type, data) VALUES ($1, $2, $3, $4::jsonb) RETURNING seq) SELECT pg_notify($5, $6) FROM ins',
      values: ['raw', ++rawSeq, 'plan/mode', '{"active":true}', 'bench_events', '["bench-raw",0]'],
    })
    return nowNs() - t
  }
  const seqs = new Map()
  const call = (fn) => async () => {
    active = !active
    await db.query('INSERT INTO bench_pending (session, pending) VALUES ($1, $2) ON CONFLICT (session) DO UPDATE SET pending = excluded.pending', [fn, active])
    const after = seqs.get(fn) ?? 0
    const t = nowNs()
    const { rows } = await db.query({
      name: `call_${fn}`,
      text: `SELECT * FROM ${fn}($1, $2, $3::jsonb, $4::json, $5, $6, $7, $8)`,
      values: [fn, 'plan/mode', JSON.stringify({ active }), null, after + 1, after, Date.now() + 10_000, true],
    })
    const elapsed = nowNs() - t
    const own = rows.at(-1)
    if (own.r_pending !== null) throw new Error(`${fn} left the pending row`)
    seqs.set(fn, Number(own.r_seq))
    return elapsed
  }
  const sides = { floor, bench_append: call('bench_append'), ...Object.fromEntries(variants.map((v) => [v, call(v)])) }
  const taken = Object.fromEntries(Object.keys(sides).map((k) => [k, []]))
  const names = Object.keys(sides)
  for (let i = 0; i < samples + 100; i++) {
    // The order rotates every sample: a side never always follows the same one.
    for (let k = 0; k < names.length; k++) {
      const name = names[(i + k) % names.length]
      const side = sides[name]
      const ns = await side()
      if (i >= 100) taken[name].push(ns / 1000)
    }
  }
  // The server reports a backend's function times when its transaction ends, at most once a second.
  await new Promise((resolve) => setTimeout(resolve, 1100))
  await db.query('SELECT 1')
  await new Promise((resolve) => setTimeout(resolve, 1100))
  const { rows } = await db.query('SELECT funcname, calls, self_time FROM pg_stat_user_functions')
  const serverTime = new Map(rows.map((r) => [r.funcname, (r.self_time * 1000) / Number(r.calls)]))
  const floorMedian = percentile(taken.floor, 0.5)
  for (const [name, values] of Object.entries(taken)) {
    const median = percentile(values, 0.5)
    const inServer = serverTime.has(name) ? `, in the server ${serverTime.get(name).toFixed(0)} µs per call (mean)` : ''
    process.stdout.write(`${name.padEnd(16)} ${median.toFixed(1).padStart(7)} µs  ${(median / floorMedian).toFixed(2)}× the floor${inServer}\n`)
  }
} finally {
  await db.end()
  await server.destroy()
}
