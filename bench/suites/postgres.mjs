/**
 * Suite `postgres` (R83–R84): the PostgreSQL adapter on a throwaway local cluster of Debian's
 * postgresql-15 (scripts/local-postgres.ts, started and stopped here), through `pg`.
 * - flush: a step boundary that flushes a pending selection through the adapter (one statement:
 *   the row and its NOTIFY), against one `INSERT` of the same row, autocommitted, on the same
 *   connection (a pool of one);
 * - toggle: an idle `set` on instance A until instance B's service shows it, against one raw
 *   NOTIFY from A's connection until B's listening connection receives it;
 * - appends: sequential appends to one session, and to 100 sessions at once (each session's
 *   appends in order), reported as appends per second with p50/p99 latencies.
 */
import pg from 'pg'
import { startTestPostgres } from '../../scripts/local-postgres.ts'
import { LIB_URL, QUICK, interleave, nowNs, percentile } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

const ROUNDS = QUICK ? 3 : 7
const SAMPLES = QUICK ? 50 : 200
const APPENDS = QUICK ? 300 : 2000

/** A `pg` pool and a `listen` for one instance. */
function connection(pgLib, config, max) {
  const db = new pg.Pool({ ...config, max })
  const listen = pgLib.pgListen(async () => {
    const client = new pg.Client(config)
    await client.connect()
    return client
  })
  return { db, listen }
}

/** Runs the suite. */
export async function run(lib) {
  const pgLib = await import(new URL('./postgres.js', LIB_URL).href)
  const server = await startTestPostgres()
  const config = server.config
  const ends = []
  try {
    const a = connection(pgLib, config, 1)
    const b = connection(pgLib, config, 1)
    ends.push(() => a.db.end(), () => b.db.end())
    const storeA = pgLib.createPostgresPlanStore({ db: a.db, listen: a.listen, prefix: 'bench_' })
    const storeB = pgLib.createPostgresPlanStore({ db: b.db, listen: b.listen, prefix: 'bench_' })
    await storeA.migrate()
    ends.push(() => storeA.close(), () => storeB.close())
    await a.db.query('CREATE TABLE IF NOT EXISTS bench_raw (session text, seq bigint, type text, data jsonb, PRIMARY KEY (session, seq))')
    const serviceA = lib.createPlanMode({ section: SECTION }, { logger: { warn: () => {} } })
    const serviceB = lib.createPlanMode({ section: SECTION }, { logger: { warn: () => {} } })
    ends.push(() => serviceA.dispose(), () => serviceB.dispose())

    // flush: a turn stays open; each sample queues the other mode (untimed) and flushes it.
    const flushAgent = { id: 'flush', session: await storeA.openSession('flush') }
    await flushAgent.session.append('turn/start', {})
    let rawSeq = 0
    const flush = {
      before: async () => {
        await serviceA.set(flushAgent, !serviceA.get(flushAgent).active)
      },
      run: () => serviceA.stepBoundary(flushAgent),
      samples: SAMPLES,
    }
    const insert = {
      run: () => a.db.query('INSERT INTO bench_raw (session, seq, type, data) VALUES ($1, $2, $3, $4::jsonb)', ['flush', ++rawSeq, 'plan/mode', '{"active":true}']),
      samples: SAMPLES,
    }

    // toggle: A commits idle; the sample ends when B's service shows the new mode.
    const agentA = { id: 'toggle', session: await storeA.openSession('toggle') }
    const agentB = { id: 'toggle', session: await storeB.openSession('toggle') }
    serviceB.get(agentB)
    let waiting = null
    agentB.session.subscribe((event) => {
      if (waiting && event.type === 'plan/mode' && serviceB.get(agentB).active === waiting.active) waiting.resolve()
    })
    // A sample ends when B shows the switch and A's own `set` has resolved: B may hear the row
    // before A has its commit's answer, and the next sample must start from A's new state.
    const toggle = {
      run: () => {
        const active = !serviceA.get(agentA).active
        const seen = new Promise((resolve) => (waiting = { active, resolve }))
        return Promise.all([seen, serviceA.set(agentA, active)])
      },
      samples: SAMPLES,
    }
    const listener = new pg.Client(config)
    await listener.connect()
    ends.push(() => listener.end())
    await listener.query('LISTEN bench_ping')
    let pong = null
    listener.on('notification', () => pong?.())
    const notify = {
      run: () =>
        new Promise((resolve, reject) => {
          pong = resolve
          a.db.query(`SELECT pg_notify('bench_ping', 'x')`).catch(reject)
        }),
      samples: SAMPLES,
    }
    for (let i = 0; i < 50; i++) {
      for (const side of [flush, insert, toggle, notify]) {
        await side.before?.()
        await side.run()
      }
    }
    const { flush: flushStats, insert: insertStats } = await interleave({ flush, insert }, { rounds: ROUNDS })
    const { toggle: toggleStats, notify: notifyStats } = await interleave({ toggle, notify }, { rounds: ROUNDS })

    // appends per second: one session, then 100 sessions at once.
    const many = connection(pgLib, config, 10)
    ends.push(() => many.db.end())
    const storeC = pgLib.createPostgresPlanStore({ db: many.db, listen: many.listen, prefix: 'bench_' })
    ends.push(() => storeC.close())
    const appendRun = async (sessions, perSession) => {
      const logs = await Promise.all(Array.from({ length: sessions }, (_, i) => storeC.openSession(`tp-${sessions}-${i}`)))
      const latencies = []
      const started = nowNs()
      await Promise.all(
        logs.map(async (log) => {
          for (let i = 0; i < perSession; i++) {
            const t = nowNs()
            await log.append('message', { i })
            latencies.push(nowNs() - t)
          }
        }),
      )
      const seconds = (nowNs() - started) / 1e9
      return { sessions, appends: latencies.length, perSecond: latencies.length / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) }
    }
    const oneSession = await appendRun(1, APPENDS)
    const hundredSessions = await appendRun(100, Math.ceil(APPENDS / 100))
    return { rounds: ROUNDS, samples: SAMPLES, flush: flushStats, insert: insertStats, toggle: toggleStats, notify: notifyStats, throughput: [oneSession, hundredSessions] }
  } finally {
    for (const end of ends.reverse()) await end().catch(() => {})
    await server.destroy()
  }
}
