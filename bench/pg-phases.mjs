/**
 * Where a PostgreSQL flush and toggle spend their time, phase by phase, beside the postgres
 * suite's floors (bench/suites/postgres.mjs), in the README's setup on a throwaway cluster. Every
 * phase is a median of stamps on the monotonic clock both processes read:
 * - flush (instance A alone, against the by-hand statement): `stepBoundary` called → the store's
 *   `append` called (the service and the chart) → its statement handed to the connection (the
 *   adapter, pg-pool) → its answer → the append resolved (the adapter and the subscribers' fold) →
 *   `stepBoundary` resolved (the service and the chart);
 * - toggle (A, and B in a process of its own: bench/pg-phases-instance.mjs), against the by-hand
 *   row + NOTIFY that B reads back: A's `set` called → A's statement sent → its answer → B hears
 *   the NOTIFY → B's read sent → its answer → B's subscribers told (the adapter) → B's service
 *   shows the mode (its fold). `--spin <µs>` makes the by-hand side's A busy that long after its
 *   answer, as A's chart is after its own: on a machine with few cores A's work after its answer
 *   delays B's.
 * Not a target: a tool to see which side of the adapter a change moves. The connection's client
 * is instrumented (`pg.Client.prototype.query`), which adds the same small cost to both sides.
 *
 * Usage: `npm run build && node --import ./apps/shared/register.mjs bench/pg-phases.mjs [samples] [--spin µs]`
 */
import pg from 'pg'
import { startTestPostgres } from '../apps/shared/local-postgres.ts'
import { countedPool, forkInstance } from './pg-pool.mjs'
import { LIB_URL, loadLibrary, nowNs, percentile } from './harness.mjs'
import { SECTION } from './steps.mjs'

const args = process.argv.slice(2)
const samples = Number(args.find((a) => /^\d+$/.test(a)) ?? 1000)
const spinNs = args.includes('--spin') ? Number(args[args.indexOf('--spin') + 1]) * 1000 : 0
const WARMUP = 200

/** Stamps of the current sample: the instrumented client's sends and answers. */
let stamps = {}
const query = pg.Client.prototype.query
pg.Client.prototype.query = function stamped(...params) {
  if (!this.stamped) return query.apply(this, params)
  stamps.sent ??= nowNs()
  const callback = params.at(-1)
  if (typeof callback === 'function') {
    params[params.length - 1] = function answered(...result) {
      stamps.answered ??= nowNs()
      return callback.apply(this, result)
    }
  }
  return query.apply(this, params)
}

const lib = await loadLibrary()
const pgLib = await import(new URL('./postgres.js', LIB_URL).href)
const server = await startTestPostgres()
const ends = []
try {
  const counted = countedPool(server.config, 1)
  const db = counted.pool
  ends.push(() => db.end())
  db.on('connect', (client) => (client.stamped = true))
  const listen = pgLib.pgListen(async () => {
    const client = new pg.Client(server.config)
    await client.connect()
    return client
  })
  const store = pgLib.createPostgresPlanStore({ db, listen, prefix: 'bench_' })
  await store.migrate()
  ends.push(() => store.close())
  await db.query('CREATE TABLE IF NOT EXISTS bench_raw (session text, seq bigint, type text, data jsonb, PRIMARY KEY (session, seq))')
  const service = lib.createPlanMode(
    { section: SECTION, review: 'durable', pendingStore: store.pendingStore, checkpoints: { store: store.checkpoints }, logger: { warn: () => {} } },
  )
  ends.push(() => service.dispose())
  let rawSeq = 0
  const byHand = (session, channel) => {
    const seq = ++rawSeq
    return db.query({
      name: 'bench_row_notify',
      text: `WITH ins AS (INSERT INTO bench_raw (session, seq, type, data) VALUES ($1, $2, $3, $4::jsonb) RETURNING seq) SELECT pg_notify($5, $6) FROM ins`,
      values: [session, seq, 'plan/mode', '{"active":true}', channel, JSON.stringify([session, seq])],
    })
  }
  const median = (values) => (percentile(values, 0.5) / 1000).toFixed(1).padStart(8)
  const print = (title, phases, floor) => {
    process.stdout.write(`${title}\n`)
    for (const [name, values] of Object.entries(phases)) process.stdout.write(`  ${name.padEnd(34)} ${median(values)} µs${floor[name]?.length ? `  by hand ${median(floor[name])} µs` : ''}\n`)
  }

  // flush
  const flushAgent = { id: 'flush', session: await store.openSession('flush') }
  await flushAgent.session.append('turn/start', {})
  const append = flushAgent.session.append.bind(flushAgent.session)
  flushAgent.session.append = (type, data) => {
    stamps.append ??= nowNs()
    const appended = append(type, data)
    appended.then(() => (stamps.appended ??= nowNs()), () => {})
    return appended
  }
  const flush = { 'chart before the append': [], 'adapter until sent': [], 'statement (sent → answered)': [], 'adapter + fold after the answer': [], 'chart after the append': [], total: [] }
  const flushFloor = { 'statement (sent → answered)': [], total: [] }
  for (let i = 0; i < samples + WARMUP; i++) {
    await service.set(flushAgent, !service.get(flushAgent).active)
    await new Promise((resolve) => setImmediate(resolve))
    await counted.settled()
    stamps = {}
    const start = nowNs()
    await service.stepBoundary(flushAgent)
    const end = nowNs()
    await counted.settled()
    const s = stamps
    stamps = {}
    const floorStart = nowNs()
    await byHand('raw', 'bench_events')
    const floorEnd = nowNs()
    if (i < WARMUP) continue
    flush['chart before the append'].push(s.append - start)
    flush['adapter until sent'].push(s.sent - s.append)
    flush['statement (sent → answered)'].push(s.answered - s.sent)
    flush['adapter + fold after the answer'].push(s.appended - s.answered)
    flush['chart after the append'].push(end - s.appended)
    flush.total.push(end - start)
    flushFloor['statement (sent → answered)'].push(stamps.answered - stamps.sent)
    flushFloor.total.push(floorEnd - floorStart)
  }
  print(`flush (${samples} samples, by hand after each)`, flush, flushFloor)

  // toggle
  const agentA = { id: 'toggle', session: await store.openSession('toggle') }
  const instanceB = forkInstance(new URL('./pg-phases-instance.mjs', import.meta.url), [JSON.stringify(server.config), 'bench_', 'toggle'], ends)
  const inbox = []
  let waiting
  instanceB.on('message', (message) => (waiting ? (waiting(message), (waiting = undefined)) : inbox.push(message)))
  instanceB.on('exit', (code) => waiting?.({ failed: code }))
  const fromB = async () => {
    const message = inbox.shift() ?? (await new Promise((resolve) => (waiting = resolve)))
    if (message.failed !== undefined) throw new Error(`bench/pg-phases-instance.mjs exited (code ${message.failed})`)
    return Object.fromEntries(Object.entries(message).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(BigInt(v)) : v]))
  }
  await fromB()
  const toggleNames = ['A: chart + adapter until sent', 'A: statement (sent → answered)', 'B hears the NOTIFY after A\'s answer', 'B: notified → read sent', 'B: read (sent → answered)', 'B: answered → subscribers told', 'B: told → service shows it', 'total']
  const toggle = Object.fromEntries(toggleNames.map((n) => [n, []]))
  const toggleFloor = Object.fromEntries(toggleNames.map((n) => [n, []]))
  for (let i = 0; i < 2 * (samples + WARMUP); i++) {
    const floor = i % 2 === 1
    stamps = {}
    const start = nowNs()
    let done
    if (floor) {
      done = byHand('row', 'bench_row').then(() => {
        const until = nowNs() + spinNs
        while (nowNs() < until);
      })
    } else done = service.set(agentA, !service.get(agentA).active)
    const b = await fromB()
    await done
    await counted.settled()
    if (i < 2 * WARMUP) continue
    const into = floor ? toggleFloor : toggle
    const phases = [stamps.sent - start, stamps.answered - stamps.sent, b.notified - stamps.answered, b.sent - b.notified, b.answered - b.sent, b.told - b.answered, b.at - b.told, b.at - start]
    phases.forEach((value, k) => into[toggleNames[k]].push(value))
  }
  print(`toggle (${samples} samples, interleaved with the by-hand side${spinNs ? `, which spins ${spinNs / 1000} µs after its answer` : ''})`, toggle, toggleFloor)
} finally {
  for (const end of ends.reverse()) await end().catch(() => {})
  await server.destroy()
}
