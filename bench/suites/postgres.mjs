/**
 * Suite `postgres` (R83–R85): the PostgreSQL adapter on a throwaway local cluster of Debian's
 * postgresql-15 (apps/shared/local-postgres.ts, started and stopped here), through `pg`, in the
 * README's setup (docs/postgres.md, examples/many-instances.ts: durable reviews, the store's
 * pending store and checkpoints, a pool with `query_timeout`).
 * - flush: a step boundary that flushes a pending selection through the adapter, against the
 *   adapter's work done by hand on the same connection: one statement that inserts the row and
 *   NOTIFYs it, autocommitted (the floor); one bare `INSERT` of the row is a reported column, and
 *   so is the adapter's own statement sent by hand (the function a flush calls, with its pending
 *   row): the flush's time in the database, the chart's left out; and so is that statement sent
 *   through the adapter's `session.append` (the flush without the chart and the service). Every
 *   by-hand statement is a named prepared statement, as the adapter's are on a pool (R126). The
 *   statements each flush sends are counted (every one, the pending store's included);
 * - toggle: an idle `set` on instance A until instance B's service shows it, B in a process of its
 *   own (bench/pg-instance.mjs), against the same by hand: A's connection inserts a row and NOTIFYs
 *   in one statement, B's process hears the NOTIFY on a listening connection and reads the row
 *   from the table (a NOTIFY is only a hint, R83: the row is what counts); B stamps the moment on
 *   the clock A reads. A bare NOTIFY round trip is a reported column;
 * - openSession: the statements one `openSession` of a session with a checkpoint sends;
 * - appends: sequential appends to one session, and to 100 sessions at once (each session's
 *   appends in order), reported as appends per second with p50/p99 latencies.
 */
import pg from 'pg'
import { startTestPostgres } from '../../apps/shared/local-postgres.ts'
import { countedPool, forkInstance } from '../pg-pool.mjs'
import { LIB_URL, QUICK, interleave, nowNs, percentile } from '../harness.mjs'
import { SECTION } from '../steps.mjs'

const ROUNDS = QUICK ? 3 : 7
const SAMPLES = QUICK ? 50 : 200
const APPENDS = QUICK ? 300 : 2000

/**
 * A `pg` pool as the README makes it (`onServer`), counted (bench/pg-pool.mjs), and a `listen`.
 * The store gets the pool itself, so it sends named statements as on a user's pool (R126).
 */
function connection(pgLib, config, max) {
  const counted = countedPool(config, max)
  const listen = pgLib.pgListen(async () => {
    const client = new pg.Client(config)
    await client.connect()
    return client
  })
  return { counted, db: counted.pool, listen }
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
    // The README's setup (examples/many-instances.ts).
    const serviceA = lib.createPlanMode(
      { section: SECTION, review: 'durable', pendingStore: storeA.pendingStore, checkpoints: { store: storeA.checkpoints }, logger: { warn: () => {} } },
    )
    ends.push(() => serviceA.dispose())

    // flush: a turn stays open; each sample queues the other mode (untimed, its pending-store
    // write landed) and flushes it. Every statement the flush sends is counted, the pending
    // store's included (it may land after the boundary resolved).
    const flushAgent = { id: 'flush', session: await storeA.openSession('flush') }
    await flushAgent.session.append('turn/start', {})
    let rawSeq = 0
    let sentBefore = 0
    const flushStatements = []
    const flush = {
      before: async () => {
        await serviceA.set(flushAgent, !serviceA.get(flushAgent).active)
        // The pending store's write starts from a promise chain: let it start, then land.
        await new Promise((resolve) => setImmediate(resolve))
        await a.counted.settled()
        sentBefore = a.counted.statements()
      },
      run: () => serviceA.stepBoundary(flushAgent),
      after: async () => {
        await a.counted.settled()
        flushStatements.push(a.counted.statements() - sentBefore)
      },
      samples: SAMPLES,
    }
    const insert = {
      run: () =>
        a.db.query({
          name: 'bench_insert',
          text: 'INSERT INTO bench_raw (session, seq, type, data) VALUES ($1, $2, $3, $4::jsonb)',
          values: ['flush', ++rawSeq, 'plan/mode', '{"active":true}'],
        }),
      samples: SAMPLES,
    }
    // The floor: the adapter's work by hand (the row and its NOTIFY, one commit), prepared as the adapter's is.
    const statement = {
      run: () =>
        a.db.query({
          name: 'bench_row_notify',
          text: `WITH ins AS (INSERT INTO bench_raw (session, seq, type, data) VALUES ($1, $2, $3, $4::jsonb) RETURNING seq) SELECT pg_notify($5, $6) FROM ins`,
          values: ['flush', ++rawSeq, 'plan/mode', '{"active":true}', 'bench_events', '["bench-raw",0]'],
        }),
      samples: SAMPLES,
    }
    // Reported: the adapter's statement alone, sent by hand as a flush sends it (its pending row
    // written before, untimed): what the flush costs in the database, the chart's work left out.
    let aloneSeq = 0
    let aloneActive = false
    const alone = {
      before: () => a.db.query(`INSERT INTO bench_pending (session, pending) VALUES ('alone', $1) ON CONFLICT (session) DO UPDATE SET pending = excluded.pending`, [(aloneActive = !aloneActive)]),
      run: async () => {
        const { rows } = await a.db.query({
          name: 'bench_alone',
          text: 'SELECT * FROM bench_append($1, $2, $3::jsonb, $4::json, $5, $6, $7, $8)',
          values: ['alone', 'plan/mode', JSON.stringify({ active: aloneActive }), null, aloneSeq + 1, aloneSeq, Date.now() + 10_000, true],
        })
        aloneSeq = Number(rows.at(-1).r_seq)
        if (rows.at(-1).r_pending !== null) throw new Error('the statement alone left the pending row: it is not the flush\'s work')
      },
      samples: SAMPLES,
    }
    // Reported: the adapter's append alone, the flush without the chart: the statement a flush
    // sends, through `session.append` on the same pool (its pending row written before through the
    // store's pending store, untimed; dropped after it as the flush drops it, which sends nothing).
    const appendSession = await storeA.openSession('append')
    let appendActive = false
    let appendSentBefore = 0
    const append = {
      before: async () => {
        appendActive = !appendActive
        await storeA.pendingStore.set('append', appendActive)
        await a.counted.settled()
        appendSentBefore = a.counted.statements()
      },
      run: async () => {
        await appendSession.append('plan/mode', { active: appendActive })
        await storeA.pendingStore.delete('append')
      },
      // One statement, which deleted the pending row (else the `delete` would have sent its own).
      after: async () => {
        await a.counted.settled()
        if (a.counted.statements() - appendSentBefore !== 1) throw new Error('the append alone sent more than its statement: it is not the flush\'s work')
      },
      samples: SAMPLES,
    }

    // toggle: A commits idle; the sample ends when B's service, in its own process
    // (bench/pg-instance.mjs), shows the new mode. The floor: A's connection inserts a row and
    // NOTIFYs, B's process hears it and reads the row from the table. Reported: a bare NOTIFY
    // from A's connection until B's process receives it.
    const agentA = { id: 'toggle', session: await storeA.openSession('toggle') }
    const instanceB = forkInstance(new URL('../pg-instance.mjs', import.meta.url), [JSON.stringify(config), 'bench_', 'toggle'], ends)
    const heard = { mode: [], ping: [], row: [], ready: [] }
    const waiters = { mode: [], ping: [], row: [], ready: [] }
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
    let rowSeq = 0
    const row = {
      run: () => {
        const seq = ++rowSeq
        return Promise.all([
          fromB('row'),
          a.db.query({
            name: 'bench_row_notify',
            text: `WITH ins AS (INSERT INTO bench_raw (session, seq, type, data) VALUES ($1, $2, $3, $4::jsonb) RETURNING seq) SELECT pg_notify($5, $6) FROM ins`,
            values: ['row', seq, 'plan/mode', '{"active":true}', 'bench_row', JSON.stringify(['row', seq])],
          }),
        ]).then(([message]) => {
          if (message.seq !== seq) throw new Error(`instance B read row ${message.seq}, not ${seq}: the samples are out of step`)
          return message
        })
      },
      elapsed: seenAt,
      samples: SAMPLES,
    }
    for (let i = 0; i < 50; i++) {
      for (const side of [flush, insert, statement, alone, append, toggle, row, notify]) {
        await side.before?.()
        await side.run()
        await side.after?.()
      }
    }
    const { flush: flushStats, insert: insertStats, statement: statementStats, alone: aloneStats, append: appendStats } = await interleave(
      { flush, insert, statement, alone, append },
      { rounds: ROUNDS },
    )
    const { toggle: toggleStats, row: rowStats, notify: notifyStats } = await interleave({ toggle, row, notify }, { rounds: ROUNDS })

    // openSession: the statements it sends, on a session of the length the flushes made.
    await a.counted.settled()
    const sentBeforeOpen = a.counted.statements()
    const reopened = await storeA.openSession('flush')
    await a.counted.settled()
    const openStatements = a.counted.statements() - sentBeforeOpen
    await reopened.close()

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
    const statementsPerFlush = { min: Math.min(...flushStatements), max: Math.max(...flushStatements) }
    return {
      rounds: ROUNDS,
      samples: SAMPLES,
      flush: flushStats,
      insert: insertStats,
      statement: statementStats,
      alone: aloneStats,
      append: appendStats,
      toggle: toggleStats,
      row: rowStats,
      notify: notifyStats,
      statementsPerFlush,
      openStatements,
      throughput: [oneSession, hundredSessions],
    }
  } finally {
    for (const end of ends.reverse()) await end().catch(() => {})
    await server.destroy()
  }
}
