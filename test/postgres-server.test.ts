import { fork } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { beforeAll, describe, expect, it } from 'vitest'
import { createPostgresPlanStore, seqTakenMessage, type PostgresPlanStore } from '../src/adapters/postgres.js'
import { createPlanMode, type PlanAgent, type PlanMode } from '../src/index.js'
import { useTestPostgres } from './databases.js'
import { waitAtMost } from '../src/timeouts.js'

/**
 * The PostgreSQL adapter on a real server (R83–R85): a throwaway cluster of Debian's
 * postgresql-15 on 127.0.0.1 and a free port, started here and stopped here. Each instance of
 * the host is a `pg.Pool` of its own with its own listening connection.
 */
const SECTION = 'Plan mode is on.'
const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'
const APPROVE = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }

const { server, closers, pool: openPool, listen, client } = useTestPostgres()

async function instance(prefix: string): Promise<{ store: PostgresPlanStore; pool: pg.Pool }> {
  const pool = openPool({ max: 4 })
  const store = createPostgresPlanStore({ db: pool, listen: listen({}, { retryMs: 100 }), prefix })
  await store.migrate()
  closers.push(() => store.close())
  return { store, pool }
}

/** Two instances on the tables of `prefix`, each with session s1 open. */
async function twoInstances(prefix: string) {
  const [a, b] = [await instance(prefix), await instance(prefix)]
  return { a, b, logA: await a.store.openSession('s1'), logB: await b.store.openSession('s1') }
}

function service(store: PostgresPlanStore, options: Omit<Parameters<typeof createPlanMode>[0], 'section'> = {}): PlanMode {
  const planMode = createPlanMode({ section: SECTION, pendingStore: store.pendingStore, logger: { warn: () => {} }, ...options })
  closers.push(() => planMode.dispose())
  return planMode
}

/** A host instance in a Node process of its own (test/fixtures/pg-instance-child.ts), killed after the file if still running. */
function instanceProcess(prefix: string, ...args: string[]) {
  const child = fork(fileURLToPath(new URL('./fixtures/pg-instance-child.ts', import.meta.url)), [String(server.port), prefix, 's1', ...args], {
    execArgv: ['--import', fileURLToPath(new URL('../apps/shared/register.mjs', import.meta.url))],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  closers.push(async () => void (child.exitCode === null && child.kill('SIGKILL')))
  return child
}

/** Waits until `check` holds (NOTIFY crosses a real connection); the 60 s cap is only a hang guard. */
/** {@link eventually} for a check that must ask the database. */
async function eventuallyAsync(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 60_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

async function eventually(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('R83–R85: the PostgreSQL adapter on a real server (postgresql-15)', () => {
  it('R84: a /plan on one instance applies at the next step of the other; a review opened on one is answered on the other', async () => {
    const [a, b] = [await instance('t1_'), await instance('t1_')]
    const agentA: PlanAgent = { id: 's1', session: await a.store.openSession('s1') }
    const agentB: PlanAgent = { id: 's1', session: await b.store.openSession('s1') }
    const [serviceA, serviceB] = [service(a.store, { review: 'durable' }), service(b.store, { review: 'durable' })]
    expect(serviceA.get(agentA)).toEqual({ active: false })
    await agentB.session.append('turn/start', {})
    expect(await serviceB.set(agentB, true)).toBe('queued')
    expect((await serviceB.stepBoundary(agentB)).section).toBe(SECTION)
    await eventually(() => serviceA.get(agentA).active, 'instance A hears the flip')
    expect(serviceA.section(agentA)).toBe(SECTION)
    const { reviewId } = (await serviceA.exitTool.execute({ plan: PLAN }, { agent: agentA })) as { reviewId: string }
    await eventually(() => serviceB.openReview(agentB) !== null, 'instance B sees the review')
    expect(await serviceB.answerReview(agentB, reviewId, APPROVE)).toBe('approved')
    await eventually(() => serviceA.openReview(agentA) === null, 'instance A hears the answer')
    expect((await serviceA.stepBoundary(agentA)).section).toBe('')
    await eventually(() => agentB.session.events.length === agentA.session.events.length, 'both instances hold the same log')
    expect(agentB.session.events).toEqual(agentA.session.events)
  })

  it('R84: an append on a stale view is refused with the exact message; the instance then holds the row it missed', async () => {
    const { a, logA, logB } = await twoInstances('t2_')
    const results = await Promise.allSettled([logA.append('plan/mode', { active: true }), logB.append('plan/mode', { active: true })])
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    expect(refused.map((r) => (r.reason as Error).message)).toEqual([seqTakenMessage('s1', 1, 'plan/mode')])
    await eventually(() => logA.events.length === 1 && logB.events.length === 1, 'both instances hold the one row')
    const { rows } = await a.pool.query('SELECT count(*)::int AS n FROM t2_events')
    expect(rows).toEqual([{ n: 1 }])
  })

  it('R83: an instance killed with SIGKILL mid-append loses no acknowledged append; the log stays whole', async () => {
    const child = instanceProcess('t4_', 'append')
    const acked: number[] = []
    child.on('message', (m: { acked: number }) => acked.push(m.acked))
    await eventually(() => acked.length >= 200, 'the child has 200 appends acknowledged')
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
    const { store } = await instance('t4_')
    const log = await store.openSession('s1')
    const seqs = log.events.map((e) => e.seq)
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1)) // whole: no gap
    expect(seqs.length).toBeGreaterThanOrEqual(acked.length) // every acknowledged append is there
    expect(acked).toEqual(seqs.slice(0, acked.length))
  })

  it('R84, R3: two Node processes switching one session 2 × 500 times leave a log with no repeated plan/mode, whose fold both read', async () => {
    const children = [instanceProcess('t5_', 'toggle', '500'), instanceProcess('t5_', 'toggle', '500')]
    const message = <T>(child: (typeof children)[number], key: string) =>
      new Promise<T>((resolve, reject) => {
        child.on('message', (m: Record<string, unknown>) => key in m && resolve(m as T))
        child.once('exit', (code) => code !== 0 && reject(new Error(`an instance exited with code ${code}`)))
      })
    const done = await Promise.all(children.map((child) => message<{ refused: number }>(child, 'done')))
    const { rows } = await (await instance('t5_')).pool.query(`SELECT seq, data FROM t5_events WHERE type = 'plan/mode' ORDER BY seq`)
    const flips = rows.map((row) => (row.data as { active: boolean }).active)
    for (let i = 1; i < flips.length; i++) expect(flips[i], `plan/mode #${i + 1} repeats the one before`).not.toBe(flips[i - 1])
    const length = Number((await (await instance('t5_')).pool.query('SELECT count(*)::int AS n FROM t5_events')).rows[0]!.n)
    const reported = children.map((child) => message<{ active: boolean }>(child, 'active'))
    for (const child of children) child.send({ length })
    expect((await Promise.all(reported)).map((r) => r.active)).toEqual([flips.at(-1) ?? false, flips.at(-1) ?? false])
    console.log(`R84 two processes: ${flips.length} plan/mode rows, ${done[0]!.refused + done[1]!.refused} of 1000 selections refused as stale`)
  }, 120_000)

  it('R83: a listening connection cut by the server is made again, and the instance hears every append it missed once, in seq order', async () => {
    const { a, logA, logB } = await twoInstances('t6_')
    const heard: number[] = []
    logB.subscribe((event) => heard.push(event.seq))
    await logA.append('message', { n: 1 })
    await eventually(() => heard.length === 1, 'B hears the first append')
    // The listening backends of this test's instances (A's and B's) are cut; nothing else is, so the appends go on.
    const { rows } = await a.pool.query(`SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE query = 'LISTEN "t6_events"'`)
    expect(rows.length).toBe(2)
    for (let n = 2; n <= 6; n++) await logA.append('message', { n })
    await eventually(() => heard.length === 6, 'B catches up after reconnecting')
    expect(heard).toEqual([1, 2, 3, 4, 5, 6])
    expect(logB.events.map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 3, 4, 5, 6])
    // The new listening connection hears later appends as before.
    await logA.append('message', { n: 7 })
    await eventually(() => heard.length === 7, 'B hears an append made after reconnecting')
    expect(heard).toEqual([1, 2, 3, 4, 5, 6, 7])
  })

  it('R83: a server that stops answering fails an append after the pool\'s query_timeout, never a hung promise', async () => {
    const pool = openPool({ max: 1, query_timeout: 500 })
    const store = createPostgresPlanStore({ db: pool, listen: listen(), prefix: 't7_' })
    closers.push(() => store.close())
    await store.migrate()
    const log = await store.openSession('s1')
    await log.append('message', { n: 1 })
    const { rows } = await pool.query('SELECT pg_backend_pid() AS pid')
    const backend = Number(rows[0]!.pid)
    process.kill(backend, 'SIGSTOP') // the connection stays open; nothing answers on it
    try {
      // The append settles by its own 500 ms deadline: before a 5 s timer set at the same time fires.
      // Both are timers of this process, so a busy machine delays them alike; no wall clock is read.
      const late = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5_000))
      const failed = await Promise.race([
        log.append('message', { n: 2 }).then(
          () => 'written',
          (error: Error) => error.message,
        ),
        late,
      ])
      expect(failed).toBe('plan-mode postgres: the message event of session s1 may not have been written: no answer from the database within 500 ms')
    } finally {
      process.kill(backend, 'SIGCONT')
    }
  })

  it('R83: the server going away fails an append with a clear message, never a hung promise; after its restart appends land and the other instance hears them', async () => {
    const { logA, logB } = await twoInstances('t3_')
    await logA.append('message', { n: 1 })
    await eventually(() => logB.events.length === 1, 'B hears the first append')
    await server.stop()
    const failed = await logA.append('message', { n: 2 }).then(
      () => 'written',
      (error: Error) => error.message,
    )
    expect(failed).toMatch(/^plan-mode postgres: the message event of session s1 may not have been written: /)
    await server.start()
    // The pool's connections died with the server: the first query may still meet one.
    let landed = false
    for (let i = 0; i < 20 && !landed; i++) {
      landed = await logA.append('message', { n: 3 }).then(
        () => true,
        () => false,
      )
    }
    expect(landed).toBe(true)
    await eventually(() => logB.events.some((e) => (e.data as { n?: number }).n === 3), 'B hears the append made after the restart')
    expect(logB.events.map((e) => e.seq)).toEqual(logA.events.map((e) => e.seq))
  })
})

/** The parent pid of a process (the 4th field of /proc/<pid>/stat, after the parenthesized name). */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
}

/**
 * Freezes the whole server: the postmaster (no new connection is answered) and every process it
 * forked (each backend, listening ones included). Returns the function that thaws it.
 */
async function freezeServer(pool: pg.Pool): Promise<() => void> {
  const { rows } = await pool.query('SELECT pg_backend_pid() AS pid')
  const postmaster = parentOf(Number(rows[0]!.pid))
  const children = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return parentOf(pid) === postmaster
      } catch {
        return false // gone meanwhile
      }
    })
  const frozen = [postmaster, ...children]
  for (const pid of frozen) process.kill(pid, 'SIGSTOP')
  return () => {
    for (const pid of frozen.reverse()) {
      try {
        process.kill(pid, 'SIGCONT')
      } catch {
        // gone
      }
    }
  }
}

describe('#23 on a real server: nothing forged, nothing bricked, nothing hung', () => {
  it('R83: a forged NOTIFY of the next seq is only a hint to read: no instance hears it, and the next append follows the rows', async () => {
    const { a, logA, logB } = await twoInstances('f1_')
    await logA.append('message', { n: 1 })
    await eventually(() => logB.events.length === 1, 'B hears the first append')
    await a.pool.query('SELECT pg_notify($1, $2)', ['f1_events', JSON.stringify(['s1', 2, 'plan/mode', { active: true }])])
    const real = await logA.append('message', { n: 2 })
    expect(real.seq).toBe(2)
    await eventually(() => logB.events.length === 2, 'B hears the real append')
    const expected = [
      { seq: 1, type: 'message', data: { n: 1 } },
      { seq: 2, type: 'message', data: { n: 2 } },
    ]
    expect(logA.events).toEqual(expected)
    expect(logB.events).toEqual(expected)
  })

  it('R83: a server down at the first openSession fails it with a clear message; once the server is back, openSession succeeds and follows the other instances', async () => {
    await instance('l1_') // the tables
    await server.stop()
    let stopped = true
    try {
      // An instance that starts while the server is down: its first LISTEN fails.
      const pool = openPool({ max: 2 })
      const late = createPostgresPlanStore({ db: pool, listen: listen(), prefix: 'l1_' })
      closers.push(() => late.close())
      await expect(late.openSession('s1')).rejects.toThrow(
        new Error(`plan-mode postgres: session s1 was not opened: connect ECONNREFUSED 127.0.0.1:${server.port}`),
      )
      await server.start()
      stopped = false
      const log = await late.openSession('s1')
      const other = await (await instance('l1_')).store.openSession('s1')
      await other.append('message', { n: 1 })
      await eventually(() => log.events.length === 1, 'the late instance hears the other one')
      expect(log.events).toEqual([{ seq: 1, type: 'message', data: { n: 1 } }])
    } finally {
      if (stopped) await server.start()
    }
  })

  it('R83: with the server frozen (SIGSTOP), every append settles within its timeout from its call, rejected with the may-not-have-been-written message; after the thaw appends land', async () => {
    const timeoutMs = 1_000
    const pool = openPool({ max: 4, query_timeout: timeoutMs })
    const store = createPostgresPlanStore({ db: pool, listen: listen(), prefix: 'z1_' })
    closers.push(() => store.close())
    await store.migrate()
    const log = await store.openSession('s1')
    await log.append('message', { n: 0 })
    const thaw = await freezeServer(pool)
    const settled: { message: string; ms: number }[] = []
    try {
      const appends = Array.from({ length: 6 }, (_, i) => {
        const called = Date.now()
        return log.append(i === 5 ? 'plan/mode' : 'message', i === 5 ? { active: true } : { n: i + 1 }).then(
          () => settled.push({ message: 'written', ms: Date.now() - called }),
          (error: Error) => settled.push({ message: error.message, ms: Date.now() - called }),
        )
      })
      // Safety net only: the appends settle on their own while the server is still frozen.
      const cap = new Promise((resolve) => setTimeout(resolve, 60 * timeoutMs))
      await Promise.race([Promise.all(appends), cap])
      expect(settled).toHaveLength(6)
    } finally {
      thaw()
    }
    expect(settled.map((s) => s.message).sort()).toEqual(
      [
        ...[1, 2, 3, 4, 5].map(() => `plan-mode postgres: the message event of session s1 may not have been written: no answer from the database within ${timeoutMs} ms`),
        `plan-mode postgres: the plan/mode event of session s1 may not have been written: no answer from the database within ${timeoutMs} ms`,
      ].sort(),
    )
    const slowest = Math.max(...settled.map((s) => s.ms))
    console.log(`R83 frozen server: ${settled.length} appends settled, the slowest ${slowest} ms after its call (timeout ${timeoutMs} ms)`)
    expect(slowest).toBeLessThan(4 * timeoutMs) // within a few timeouts, never one after another
    // Nothing is bricked: once the server answers again, an append lands after the rows the table holds.
    let landed: number | undefined
    for (let i = 0; i < 20 && landed === undefined; i++) {
      landed = await log.append('message', { n: 7 }).then((event) => event.seq, () => undefined)
    }
    const { rows } = await pool.query(`SELECT max(seq)::int AS last FROM z1_events WHERE session = 's1'`)
    expect(landed).toBe(rows[0]!.last)
    expect(log.events.map((e) => e.seq)).toEqual(Array.from({ length: landed! }, (_, i) => i + 1))
  })

  it('R84: turns are granted in the order asked: four instances whose appends wait for the session\'s turn land in the order they asked for it', async () => {
    const writers = [await instance('w2_'), await instance('w2_'), await instance('w2_'), await instance('w2_')]
    const logs = await Promise.all(writers.map((w) => w.store.openSession('s1')))
    await logs[0]!.append('message', { warm: true })
    await Promise.all(logs.map((log) => eventuallyAsync(async () => log.events.length === 1, 'every instance holds the first row')))
    // A transaction of the test's own holds the session's turn, so that each append queues behind it.
    const holder = await writers[0]!.pool.connect()
    const waiting = async () => {
      const { rows } = await writers[0]!.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%w2_append%'`,
      )
      return rows[0]!.n as number
    }
    const order = [2, 0, 3, 1]
    const landed: number[] = []
    const appends: Promise<unknown>[] = []
    try {
      await holder.query('BEGIN')
      await holder.query(`SELECT 1 FROM w2_turns WHERE session = 's1' FOR UPDATE`)
      for (const [asked, writer] of order.entries()) {
        appends.push(logs[writer]!.append('message', { writer }).then(() => landed.push(writer)))
        // The next one asks only once this one waits in the queue for the turn.
        await eventuallyAsync(async () => (await waiting()) === asked + 1, `${asked + 1} appends wait for the turn`)
      }
    } finally {
      await holder.query('COMMIT')
      holder.release()
    }
    await Promise.all(appends)
    const { rows } = await writers[0]!.pool.query(`SELECT seq, data FROM w2_events WHERE session = 's1' AND seq > 1 ORDER BY seq`)
    expect(rows.map((row) => row.data.writer)).toEqual(order)
    expect(rows.map((row) => Number(row.seq))).toEqual([2, 3, 4, 5])
  }, 120_000)

  it('R84: two instances appending events that decide nothing to one session as fast as they can: none fails, and neither starves', async () => {
    const [a, b] = [await instance('w1_'), await instance('w1_')]
    const logs = [await a.store.openSession('s1'), await b.store.openSession('s1')]
    const each = 300
    const acked = [0, 0]
    const failures: string[] = []
    let ackedByOtherWhenFirstDone: number | undefined
    await Promise.all(
      logs.map(async (log, writer) => {
        for (let i = 0; i < each; i++) {
          await log.append('message', { writer, i }).then(
            () => acked[writer]!++,
            (error: Error) => failures.push(error.message),
          )
        }
        ackedByOtherWhenFirstDone ??= acked[1 - writer]
      }),
    )
    console.log(`R84 two writers: ${acked[0]} and ${acked[1]} acknowledged; the other had ${ackedByOtherWhenFirstDone} when the first finished its ${each}`)
    expect(failures).toEqual([])
    expect(acked).toEqual([each, each])
    // Not starved: the other writer's appends landed while the first made its 300. How many depends on
    // how the cores were shared (a busy machine can keep one writer's process from asking for a while),
    // so the order of the turns themselves is the next test's, where every writer is already waiting.
    expect(ackedByOtherWhenFirstDone).toBeGreaterThan(0)
    const { rows } = await a.pool.query(`SELECT seq FROM w1_events WHERE session = 's1' ORDER BY seq`)
    expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 2 * each }, (_, i) => i + 1))
    await eventually(() => logs.every((log) => log.events.length === 2 * each), 'both instances hold every row')
    expect(logs[0]!.events).toEqual(logs[1]!.events)
  }, 120_000)
})

/** How many checkpoints the upgrade test's old tables hold: enough that checking them takes a while. */
const OLD_CHECKPOINTS = 300_000

/** Settles `promise`, or tells that it has not within `ms` (the safety net of a test that would otherwise hang). */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<{ settled: 'resolved'; value: T } | { settled: 'rejected'; error: string } | { settled: 'pending' }> {
  if (!(await waitAtMost(ms, promise))) return { settled: 'pending' }
  return promise.then(
    (value) => ({ settled: 'resolved' as const, value }),
    (error: unknown) => ({ settled: 'rejected' as const, error: error instanceof Error ? error.message : String(error) }),
  )
}

describe('#23 on a real server: a session\'s turn and migrate\'s lock are the store\'s own; an append that timed out stays unwritten', () => {
  /** A connection of a role that may connect and do nothing else: no privilege on any table (R83's hostile database user). */
  const stranger = () => client({ user: 'stranger' })

  /** A connection of the tables' owner, for a transaction the test holds open. */
  const owner = () => client()

  beforeAll(async () => {
    const admin = await owner()
    await admin.query('CREATE ROLE stranger LOGIN')
  })

  it("R83: a role that may only connect cannot stop a session's appends (regression: it took the session's advisory lock, pg_advisory_lock(hashtext('<prefix>events'), hashtext(<session>)), and every append timed out)", async () => {
    const pool = openPool({ max: 4, query_timeout: 3000 })
    const store = createPostgresPlanStore({ db: pool, listen: async () => async () => {}, prefix: 'adv1_' })
    closers.push(() => store.close())
    await store.migrate()
    const log = await store.openSession('s1')
    await log.append('turn/start', {})
    const m = await stranger()
    // Every lock the stranger can name: the old advisory key, the turn's row, its table.
    await m.query("SELECT pg_advisory_lock(hashtext('adv1_events'), hashtext('s1'))")
    await m.query('BEGIN')
    const rowLock = await m.query("SELECT 1 FROM adv1_turns WHERE session = 's1' FOR UPDATE").then(() => 'taken', (error: Error) => error.message)
    await m.query('ROLLBACK')
    await m.query('BEGIN')
    const tableLock = await m.query('LOCK TABLE adv1_turns IN ACCESS EXCLUSIVE MODE').then(() => 'taken', (error: Error) => error.message)
    const appended = await settledWithin(log.append('turn/end', {}), 60_000)
    await m.query('ROLLBACK')
    await m.query('SELECT pg_advisory_unlock_all()')
    expect({ rowLock, tableLock, appended }).toEqual({
      rowLock: 'permission denied for table adv1_turns',
      tableLock: 'permission denied for table adv1_turns',
      appended: { settled: 'resolved', value: { seq: 2, type: 'turn/end', data: {} } },
    })
  })

  it("R83: a role that may only connect cannot hold up migrate (regression: it took migrate's advisory lock, pg_advisory_lock(hashtext('<prefix>migrate')), and migrate waited as long as it held it)", async () => {
    const m = await stranger()
    await m.query("SELECT pg_advisory_lock(hashtext('adv3_migrate'))")
    const pool = openPool({ max: 2 })
    const store = createPostgresPlanStore({ db: pool, listen: async () => async () => {}, prefix: 'adv3_' })
    const migrated = await settledWithin(store.migrate(), 60_000)
    await m.query('SELECT pg_advisory_unlock_all()')
    expect(migrated).toEqual({ settled: 'resolved', value: undefined })
  })

  it('R83: an append that times out while it waits in the server is not written when the wait ends (regression: a transaction holding the events table made it time out, and it was written once that transaction ended)', async () => {
    const pool = openPool({ max: 4 })
    const store = createPostgresPlanStore({ db: pool, listen: async () => async () => {}, prefix: 'late1_', appendTimeoutMs: 1500 })
    closers.push(() => store.close())
    await store.migrate()
    const log = await store.openSession('s1')
    await log.append('message', { n: 1 })
    // A writer's transaction (an operator's repair, a long batch) holds the table against inserts.
    const holder = await owner()
    await holder.query('BEGIN')
    await holder.query('LOCK TABLE late1_events IN EXCLUSIVE MODE')
    const timedOut = await log.append('plan/mode', { active: true }).then(() => 'written', (error: Error) => error.message)
    expect(timedOut).toBe('plan-mode postgres: the plan/mode event of session s1 may not have been written: no answer from the database within 1500 ms')
    await holder.query('COMMIT')
    // The next append queues behind whatever still waits in the server for the session's turn.
    expect(await log.append('message', { n: 2 })).toEqual({ seq: 2, type: 'message', data: { n: 2 } })
    const { rows } = await pool.query(`SELECT seq::int, type FROM late1_events WHERE session = 's1' ORDER BY seq`)
    expect(rows).toEqual([{ seq: 1, type: 'message' }, { seq: 2, type: 'message' }])
  })

  it('R83: an append on a server whose commits wait for a synchronous standby commits without waiting for it (regression: with synchronous_standby_names set and no standby, the append was rejected as timed out after 1500 ms and written once the setting was reset)', async () => {
    const pool = new pg.Pool({ ...server.config, max: 2 })
    pool.on('error', () => {})
    closers.push(() => pool.end())
    const store = createPostgresPlanStore({ db: pool, listen: async () => async () => {}, prefix: 'sync1_', appendTimeoutMs: 1500 })
    closers.push(() => store.close())
    await store.migrate()
    const log = await store.openSession('s1')
    await log.append('message', { n: 1 })
    const admin = await owner()
    const standbyNames = async (value: string) => {
      await admin.query(value === '' ? 'ALTER SYSTEM RESET synchronous_standby_names' : `ALTER SYSTEM SET synchronous_standby_names = '${value}'`)
      await admin.query('SELECT pg_reload_conf()')
      // A reload reaches each backend before its next statement: wait until the pool's see it.
      for (let tries = 0; ; tries++) {
        const shown = await Promise.all([pool.query('SHOW synchronous_standby_names'), pool.query('SHOW synchronous_standby_names')])
        if (shown.every((r) => r.rows[0]!.synchronous_standby_names === value)) return
        if (tries > 500) throw new Error(`synchronous_standby_names never became '${value}'`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
    let appended: Awaited<ReturnType<typeof settledWithin>>
    try {
      // A standby named that never connects: a commit that waits for it waits for ever.
      await standbyNames('nobody')
      appended = await settledWithin(log.append('plan/mode', { active: true }), 60_000)
    } finally {
      await standbyNames('')
    }
    expect(appended).toEqual({ settled: 'resolved', value: { seq: 2, type: 'plan/mode', data: { active: true } } })
    const { rows } = await pool.query(`SELECT seq::int, type FROM sync1_events WHERE session = 's1' ORDER BY seq`)
    expect(rows).toEqual([{ seq: 1, type: 'message' }, { seq: 2, type: 'plan/mode' }])
  })

  it('R83: migrate waits at most appendTimeoutMs for a lock another transaction holds, then rejects with an exact message; appends go on meanwhile', async () => {
    const { store: first } = await instance('mig1_')
    const log = await first.openSession('s1')
    await log.append('message', { n: 1 })
    // A migrate that hangs half-way holds what a migrate takes first.
    const holder = await owner()
    await holder.query('BEGIN')
    await holder.query('LOCK TABLE mig1_turns IN SHARE UPDATE EXCLUSIVE MODE')
    const pool = openPool({ max: 2 })
    const store = createPostgresPlanStore({ db: pool, listen: async () => async () => {}, prefix: 'mig1_', appendTimeoutMs: 300 })
    const migrated = await settledWithin(store.migrate(), 60_000)
    // Appends go on meanwhile: migrate's lock does not stand in their way.
    expect(await log.append('message', { n: 2 })).toMatchObject({ seq: 2 })
    await holder.query('COMMIT')
    expect(migrated).toEqual({
      settled: 'rejected',
      error: 'plan-mode postgres: migrate waited 300 ms for a lock another transaction holds (another migrate?); nothing was changed',
    })
    await store.migrate() // once the lock is free
  })

  it("R83, R85: migrate's one-time upgrade holds the events table against appends only while it adds the checkpoints' key, not while it checks the old checkpoints (regression: the check ran under the key's lock on the events table, and appends waited for all of it)", async () => {
    const { store: first, pool } = await instance('fk1_')
    const log = await first.openSession('s1')
    await log.append('message', { n: 1 })
    // Tables of a version before the key, with many checkpoints to check.
    await pool.query('ALTER TABLE fk1_checkpoints DROP CONSTRAINT fk1_checkpoints_event')
    // The rows go in without the primary keys, which are then made again as migrate made them: one
    // sort each, not 300 000 inserts into each index.
    await pool.query('ALTER TABLE fk1_events DROP CONSTRAINT fk1_events_pkey; ALTER TABLE fk1_checkpoints DROP CONSTRAINT fk1_checkpoints_pkey')
    await pool.query(`INSERT INTO fk1_events (session, seq, type, data) SELECT 'old-' || i, 1, 'message', '{}' FROM generate_series(1, ${OLD_CHECKPOINTS}) i`)
    await pool.query(`INSERT INTO fk1_checkpoints (session, seq, checkpoint) SELECT 'old-' || i, 1, '{}' FROM generate_series(1, ${OLD_CHECKPOINTS}) i`)
    await pool.query('ALTER TABLE fk1_events ADD PRIMARY KEY (session, seq); ALTER TABLE fk1_checkpoints ADD PRIMARY KEY (session)')
    const upgrading = new pg.Pool({ ...server.config, max: 1 })
    upgrading.on('error', () => {})
    closers.push(() => upgrading.end())
    const migratePid = Number((await upgrading.query('SELECT pg_backend_pid() AS pid')).rows[0]!.pid)
    const store = createPostgresPlanStore({ db: upgrading, listen: async () => async () => {}, prefix: 'fk1_', appendTimeoutMs: 20_000 })
    const migrated = store.migrate()
    // Once migrate adds the key (ShareRowExclusiveLock) or checks the old rows (ShareUpdateExclusiveLock):
    const holdsCheckpoints = async () =>
      (
        await pool.query(
          "SELECT 1 FROM pg_locks WHERE pid = $1 AND relation = 'fk1_checkpoints'::regclass AND granted AND mode IN ('ShareRowExclusiveLock', 'ShareUpdateExclusiveLock')",
          [migratePid],
        )
      ).rows.length > 0
    for (let tries = 0; !(await holdsCheckpoints()); tries++) {
      if (tries > 2000) throw new Error('migrate never reached the checkpoints table')
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const appended = await log.append('message', { n: 2 })
    // When the append has landed, migrate is still checking the old checkpoints: the key is not valid yet.
    const whenAppended = await pool.query("SELECT convalidated FROM pg_constraint WHERE conname = 'fk1_checkpoints_event'")
    await migrated
    const afterMigrate = await pool.query("SELECT convalidated FROM pg_constraint WHERE conname = 'fk1_checkpoints_event'")
    expect({ appended, whenAppended: whenAppended.rows, afterMigrate: afterMigrate.rows }).toEqual({
      appended: { seq: 2, type: 'message', data: { n: 2 } },
      whenAppended: [{ convalidated: false }],
      afterMigrate: [{ convalidated: true }],
    })
  }, 120_000)

  it('R126: on a pg.Pool each statement of the store but migrate is prepared once per connection under a name of its own per prefix; namedStatements: false sends the text every time', async () => {
    const pool = openPool({ max: 1 }) // one connection: pg_prepared_statements shows all it holds
    const store = (prefix: string, namedStatements?: boolean) => {
      const made = createPostgresPlanStore({ db: pool, listen: async () => async () => {}, prefix, ...(namedStatements === undefined ? {} : { namedStatements }) })
      closers.push(() => made.close())
      return made
    }
    const stores = { prep1_: store('prep1_'), prep2_: store('prep2_'), prep3_: store('prep3_', false) }
    const logged: Record<string, unknown[]> = {}
    for (const [prefix, s] of Object.entries(stores)) {
      await s.migrate()
      for (let round = 0; round < 2; round++) {
        const log = await s.openSession('s1')
        logged[prefix] = [...(logged[prefix] ?? []), await log.append('message', { round }), await log.append('plan/mode', { active: round === 0 })]
        await log.catchUp()
        await s.pendingStore.set('s1', true)
        await s.checkpoints.load('s1')
        await log.close()
      }
    }
    const { rows } = await pool.query(`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'plan\\_mode\\_%'`)
    const of = (prefix: string) => rows.filter((r) => (r.statement as string).includes(`${prefix}events`) || (r.statement as string).includes(`${prefix}pending`) || (r.statement as string).includes(`${prefix}checkpoints`) || (r.statement as string).includes(`${prefix}append`)).length
    const events = (seqs: [number, string, unknown][]) => seqs.map(([seq, type, data]) => ({ seq, type, data }))
    const expected = events([[1, 'message', { round: 0 }], [2, 'plan/mode', { active: true }], [3, 'message', { round: 1 }], [4, 'plan/mode', { active: false }]])
    expect({ logged, prepared: { prep1_: of('prep1_'), prep2_: of('prep2_'), prep3_: of('prep3_') }, names: new Set(rows.map((r) => r.name)).size }).toEqual({
      logged: { prep1_: expected, prep2_: expected, prep3_: expected },
      // openSession, append, catchUp's read, pendingStore.set, checkpoints.load: once each, however often called
      prepared: { prep1_: 5, prep2_: 5, prep3_: 0 },
      names: 10,
    })
  })

  it('R83: migrate from six instances at once on an empty database: every one resolves, and the tables serve', async () => {
    const pools = Array.from({ length: 6 }, () => openPool({ max: 1 }))
    const stores = pools.map((db) => createPostgresPlanStore({ db, listen: async () => async () => {}, prefix: 'many1_' }))
    const results = await Promise.allSettled(stores.map((store) => store.migrate()))
    expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : r.status))).toEqual(Array(6).fill('fulfilled'))
    const log = await stores[0]!.openSession('s1')
    expect(await log.append('message', {})).toEqual({ seq: 1, type: 'message', data: {} })
  })
})
