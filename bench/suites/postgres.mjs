/**
 * Suite `postgres` (R83–R84): the PostgreSQL adapter on a throwaway local cluster of Debian's
 * postgresql-15 (apps/shared/local-postgres.ts, started and stopped here), through `pg`.
 * - flush: a step boundary that flushes a pending selection through the adapter (one statement:
 *   the row and its NOTIFY), against one `INSERT` of the same row, autocommitted, on the same
 *   connection (a pool of one);
 * - toggle: an idle `set` on instance A until instance B's service shows it, B in a process of its
 *   own (bench/pg-instance.mjs), against one raw NOTIFY from A's connection until B's process
 *   receives it on a listening connection; B stamps the moment on the clock A reads;
 * - appends: sequential appends to one session, and to 100 sessions at once (each session's
 *   appends in order), reported as appends per second with p50/p99 latencies.
 */
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { startTestPostgres } from '../../apps/shared/local-postgres.ts'
import { LIB_URL, QUICK, interleave, nowNs, percentile } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

const ROUNDS = QUICK ? 3 : 7
const SAMPLES = QUICK ? 50 : 200
const APPENDS = QUICK ? 300 : 2000

/** A `pg` pool and a `listen` for one instance. */
function connection(pgLib, config, max) {
  const db = new pg.Pool({ ...config, max })
  db.on('error', () => {}) // an idle client cut off when the cluster stops at the end
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
    ends.push(() => a.db.end())
    const storeA = pgLib.createPostgresPlanStore({ db: a.db, listen: a.listen, prefix: 'bench_' })
    await storeA.migrate()
    ends.push(() => storeA.close())
    await a.db.query('CREATE TABLE IF NOT EXISTS bench_raw (session text, seq bigint, type text, data jsonb, PRIMARY KEY (session, seq))')
    const serviceA = lib.createPlanMode({ section: SECTION }, { logger: { warn: () => {} } })
    ends.push(() => serviceA.dispose())

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
    // The adapter's statement by hand (the row and its NOTIFY, one commit): what the flush costs
    // the database, so the report can tell the library's own time from the NOTIFY's.
    const statement = {
      run: () =>
        a.db.query(
          `WITH ins AS (INSERT INTO bench_raw (session, seq, type, data) VALUES ($1, $2, $3, $4::jsonb) RETURNING seq) SELECT pg_notify($5, $6) FROM ins`,
          ['flush', ++rawSeq, 'plan/mode', '{"active":true}', 'bench_events', '["bench-raw",0]'],
        ),
      samples: SAMPLES,
    }

    // toggle: A commits idle; the sample ends when B's service, in its own process
    // (bench/pg-instance.mjs), shows the new mode. The floor: a raw NOTIFY from A's connection
    // until B's process receives it on its listening connection.
    const agentA = { id: 'toggle', session: await storeA.openSession('toggle') }
    const instanceB = fork(fileURLToPath(new URL('../pg-instance.mjs', import.meta.url)), [JSON.stringify(config), 'bench_', 'toggle'], {
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    ends.push(async () => {
      if (instanceB.exitCode !== null) return
      const exited = new Promise((resolve) => instanceB.once('exit', resolve))
      instanceB.send('stop')
      const timer = setTimeout(() => instanceB.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(timer)
    })
    const heard = { mode: [], ping: [], ready: [] }
    const waiters = { mode: [], ping: [], ready: [] }
    instanceB.on('message', (message) => {
      const waiter = waiters[message.kind].shift()
      if (waiter) waiter(message)
      else heard[message.kind].push(message)
    })
    instanceB.on('exit', (code) => {
      for (const list of Object.values(waiters)) for (const waiter of list.splice(0)) waiter({ failed: code })
    })
    /** B's next message of a kind; rejects if B has exited. */
    const fromB = async (kind) => {
      const message = heard[kind].shift() ?? (await new Promise((resolve) => waiters[kind].push(resolve)))
      if (message.failed !== undefined) throw new Error(`bench/pg-instance.mjs exited (code ${message.failed})`)
      return message
    }
    await fromB('ready')
    const seenAt = (message, start) => Number(BigInt(message.at)) - start
    let setting = null
    const toggle = {
      run: () => {
        const active = !serviceA.get(agentA).active
        setting = serviceA.set(agentA, active)
        return fromB('mode').then((message) => {
          if (message.active !== active) throw new Error(`instance B showed active ${message.active}, not ${active}: the samples are out of step`)
          return message
        })
      },
      elapsed: seenAt,
      // A's own `set` may resolve after B saw the row; the next sample starts from A's new state.
      after: () => setting,
      samples: SAMPLES,
    }
    const notify = {
      run: () => Promise.all([fromB('ping'), a.db.query(`SELECT pg_notify('bench_ping', 'x')`)]).then(([message]) => message),
      elapsed: seenAt,
      samples: SAMPLES,
    }
    for (let i = 0; i < 50; i++) {
      for (const side of [flush, insert, statement, toggle, notify]) {
        await side.before?.()
        await side.run()
        await side.after?.()
      }
    }
    const { flush: flushStats, insert: insertStats, statement: statementStats } = await interleave({ flush, insert, statement }, { rounds: ROUNDS })
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
    return { rounds: ROUNDS, samples: SAMPLES, flush: flushStats, insert: insertStats, statement: statementStats, toggle: toggleStats, notify: notifyStats, throughput: [oneSession, hundredSessions] }
  } finally {
    for (const end of ends.reverse()) await end().catch(() => {})
    await server.destroy()
  }
}
