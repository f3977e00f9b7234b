/**
 * Instance B of bench/pg-phases.mjs, in a process of its own (as bench/pg-instance.mjs is for the
 * postgres suite): it follows the session with the library's service and, on a raw connection,
 * LISTENs to `bench_row` (the by-hand side: it then reads the announced row from the table on its
 * pool). For each sample it sends the parent its stamps on the monotonic clock: when it heard the
 * NOTIFY, sent its read, had the answer, told the session's subscribers (the first subscriber,
 * before the service's), and saw the new state (`at`).
 *
 * Usage (forked by bench/pg-phases.mjs): `pg-phases-instance.mjs <pg config JSON> <prefix> <session>`.
 */
import pg from 'pg'
import { LIB_URL, loadLibrary } from './harness.mjs'
import { SECTION } from './steps.mjs'

const [configJson, prefix, sessionId] = process.argv.slice(2)
const config = JSON.parse(configJson)
const stamp = () => String(process.hrtime.bigint())
let stamps = {}
const query = pg.Client.prototype.query
pg.Client.prototype.query = function stamped(...params) {
  if (!this.stamped) return query.apply(this, params)
  stamps.sent ??= stamp()
  const callback = params.at(-1)
  if (typeof callback === 'function') {
    params[params.length - 1] = function answered(...result) {
      stamps.answered ??= stamp()
      return callback.apply(this, result)
    }
  }
  return query.apply(this, params)
}
const lib = await loadLibrary()
const pgLib = await import(new URL('./postgres.js', LIB_URL).href)

const db = new pg.Pool({ query_timeout: 10_000, connectionTimeoutMillis: 5_000, ...config, max: 1 })
db.on('error', () => {})
db.on('connect', (client) => (client.stamped = true))
const listen = pgLib.pgListen(async () => {
  const client = new pg.Client(config)
  await client.connect()
  return client
})
const store = pgLib.createPostgresPlanStore({
  db,
  listen: (channel, onNotify, onReconnect) =>
    listen(channel, (payload) => ((stamps.notified ??= stamp()), onNotify(payload)), onReconnect),
  prefix,
})
const service = lib.createPlanMode(
  { section: SECTION, review: 'durable', pendingStore: store.pendingStore, checkpoints: { store: store.checkpoints }, logger: { warn: () => {} } },
)
const agent = { id: sessionId, session: await store.openSession(sessionId) }
// Subscribed before the service attaches: told before the service folds the event.
agent.session.subscribe(() => (stamps.told ??= stamp()))
let shown = service.get(agent).active
agent.session.subscribe((event) => {
  if (event.type !== 'plan/mode') return
  const active = service.get(agent).active
  if (active === shown) return
  shown = active
  process.send({ ...stamps, at: stamp() })
  stamps = {}
})

const floor = new pg.Client(config)
floor.on('error', () => {})
await floor.connect()
await floor.query('LISTEN bench_row')
let rowRead = 0
floor.on('notification', () => {
  stamps.notified ??= stamp()
  db.query({ name: 'bench_read_row', text: 'SELECT seq, type, data FROM bench_raw WHERE session = $1 AND seq > $2 ORDER BY seq', values: ['row', rowRead] }).then(({ rows }) => {
    const last = rows.at(-1)
    if (last === undefined) return
    rowRead = Number(last.seq)
    stamps.told = stamp()
    process.send({ ...stamps, at: stamps.told })
    stamps = {}
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
process.send({ ready: true })
