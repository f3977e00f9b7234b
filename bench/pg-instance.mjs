/**
 * Instance B of the postgres suite's toggle, in a process of its own as on a real deployment
 * (two instances in one process would add A's work to B's on one event loop). It follows the
 * session with the library's service (the README's setup) and, on a raw connection, LISTENs to
 * the floors' channels: `bench_row` (it then reads the announced row from the table on its pool)
 * and `bench_ping` (a bare NOTIFY). For each it sends the parent the moment it saw it, read from
 * the monotonic clock that the parent's `nowNs` reads too.
 *
 * Usage (forked by bench/suites/postgres.mjs): `pg-instance.mjs <pg config JSON> <prefix> <session>`.
 */
import pg from 'pg'
import { LIB_URL, loadLibrary } from './harness.mjs'
import { SECTION } from './steps.mjs'

const [configJson, prefix, sessionId] = process.argv.slice(2)
const config = JSON.parse(configJson)
const lib = await loadLibrary()
const pgLib = await import(new URL('./postgres.js', LIB_URL).href)

const db = new pg.Pool({ query_timeout: 10_000, connectionTimeoutMillis: 5_000, ...config, max: 1 })
db.on('error', () => {})
const store = pgLib.createPostgresPlanStore({
  db,
  listen: pgLib.pgListen(async () => {
    const client = new pg.Client(config)
    await client.connect()
    return client
  }),
  prefix,
})
const service = lib.createPlanMode(
  { section: SECTION, review: 'durable', pendingStore: store.pendingStore, checkpoints: { store: store.checkpoints }, logger: { warn: () => {} } },
)
const agent = { id: sessionId, session: await store.openSession(sessionId) }
let shown = service.get(agent).active
agent.session.subscribe((event) => {
  if (event.type !== 'plan/mode') return
  const active = service.get(agent).active
  if (active === shown) return
  shown = active
  process.send({ kind: 'mode', active, at: String(process.hrtime.bigint()) })
})

const floor = new pg.Client(config)
floor.on('error', () => {})
await floor.connect()
await floor.query('LISTEN bench_ping')
await floor.query('LISTEN bench_row')
// The by-hand toggle: the NOTIFY is a hint, the row is read from the table (on B's pool, prepared, as the store reads).
let rowRead = 0
floor.on('notification', (message) => {
  if (message.channel === 'bench_ping') return process.send({ kind: 'ping', at: String(process.hrtime.bigint()) })
  db.query({ name: 'bench_read_row', text: 'SELECT seq, type, data FROM bench_raw WHERE session = $1 AND seq > $2 ORDER BY seq', values: ['row', rowRead] }).then(({ rows }) => {
    const last = rows.at(-1)
    if (last === undefined) return
    rowRead = Number(last.seq)
    process.send({ kind: 'row', seq: rowRead, at: String(process.hrtime.bigint()) })
  })
})

process.on('message', async (message) => {
  if (message !== 'stop') return
  await service.dispose()
  await store.close()
  await floor.end().catch(() => {})
  await db.end().catch(() => {})
  process.exit(0)
})
process.send({ kind: 'ready', active: shown })
