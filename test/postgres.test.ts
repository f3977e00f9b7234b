import type { PGlite } from '@electric-sql/pglite'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createPostgresPlanStore, isSeqTaken, pgliteListen, seqTakenMessage, type PgListen, type PgQueryable, type PostgresPlanStore } from '../src/adapters/postgres.js'
import { createPlanMode, foldPlanMode, type PlanAgent, type PlanCheckpoint, type PlanMode } from '../src/index.js'
import { readFileSync } from 'node:fs'
import { createCheckpoint } from '../src/log/checkpoint.js'
import { replayPlanLog } from '../src/log/kinds.js'
import { usePGlite } from './databases.js'

/**
 * The PostgreSQL adapter on PGlite (R83–R85): real PostgreSQL in-process, so these need no
 * server. Two stores on one database are two instances of a host: each has its own sessions and
 * LISTEN, and they meet only in the database.
 */
const SECTION = 'Plan mode is on.'
const PLAN = '# Migrate the users table\n\n1. Add the column.\n2. Backfill it.'
const APPROVE = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }
const APPROVED_NEWS = 'The user approved your plan and plan mode is off; carry out the plan, starting now.'

const open: { close(): Promise<void> }[] = []
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close()
})

/** One PGlite for the file (it takes seconds to start); each test has tables of its own prefix. */
const shared = usePGlite()
let tests = 0
let prefix = 'plan_mode_'

async function database(): Promise<PGlite> {
  prefix = `t${++tests}_`
  return shared()
}

async function instance(db: PGlite, tablePrefix = prefix): Promise<PostgresPlanStore> {
  const store = createPostgresPlanStore({ db, listen: pgliteListen(db), prefix: tablePrefix })
  await store.migrate()
  open.push(store)
  return store
}

function service(store: PostgresPlanStore, options: Omit<Parameters<typeof createPlanMode>[0], 'section'> = {}): PlanMode {
  const planMode = createPlanMode({ section: SECTION, pendingStore: store.pendingStore, logger: { warn: () => {} }, ...options })
  open.push({ close: () => planMode.dispose() })
  return planMode
}

/** Two instances of the host (stores) with session s1 open as agent s1 on each, and a service of each's own. */
async function twoInstances([storeA, storeB]: [PostgresPlanStore, PostgresPlanStore], options: Omit<Parameters<typeof createPlanMode>[0], 'section'> = {}) {
  const agentA: PlanAgent = { id: 's1', session: await storeA.openSession('s1') }
  const agentB: PlanAgent = { id: 's1', session: await storeB.openSession('s1') }
  return { agentA, agentB, a: service(storeA, options), b: service(storeB, options) }
}

/** A store on `db` whose session s1 (agent s1's) has a checkpoint saved at its turn/end of `data`, seq 2. */
async function checkpointedAtTurnEnd(db: PGlite, data: object) {
  const store = await instance(db)
  const agent: PlanAgent = { id: 's1', session: await store.openSession('s1') }
  const writer = service(store, { checkpoints: { store: store.checkpoints, every: 1 } })
  expect(await writer.set(agent, true)).toBe('committed')
  await agent.session.append('turn/end', data)
  await writer.dispose() // waits for the checkpoint's write
  return { store, agent, saved: (await store.checkpoints.load('s1')) as PlanCheckpoint }
}

/** Lets NOTIFY deliveries and the reads they start land. */
const quiet = () => new Promise((resolve) => setTimeout(resolve, 30))

const modes = (events: readonly { type: string; data: unknown }[]) =>
  events.filter((e) => e.type === 'plan/mode').map((e) => (e.data as { active: boolean }).active)

describe('R83–R85: the PostgreSQL adapter on PGlite', () => {
  it('R83: migrate is idempotent; an append is a row of (session, seq), read back by a new instance in order', async () => {
    const db = await database()
    const a = await instance(db)
    await a.migrate()
    const log = await a.openSession('s1')
    expect(await log.append('turn/start', {})).toEqual({ seq: 1, type: 'turn/start', data: {} })
    expect(await log.append('plan/mode', { active: true })).toEqual({ seq: 2, type: 'plan/mode', data: { active: true } })
    const { rows } = await db.query(`SELECT session, seq, type, data FROM ${prefix}events ORDER BY seq`)
    expect(rows).toEqual([
      { session: 's1', seq: 1, type: 'turn/start', data: {} },
      { session: 's1', seq: 2, type: 'plan/mode', data: { active: true } },
    ])
    const b = await instance(db)
    expect((await b.openSession('s1')).events).toEqual(log.events)
    expect((await b.openSession('other')).events).toEqual([])
  })

  it('R86, R84: /plan off typed on instance B while instance A streams the turn is applied by A at the next step; both see one flip', async () => {
    const db = await database()
    const { agentA, agentB, a: serviceA, b: serviceB } = await twoInstances([await instance(db), await instance(db)])
    expect(await serviceA.set(agentA, true)).toBe('committed')
    await agentA.session.append('turn/start', {})
    expect((await serviceA.stepBoundary(agentA)).section).toBe(SECTION)
    await agentA.session.append('request/header', {})
    await quiet()
    // The user's request lands on B: the host logs its /plan around the run (ids unique across instances).
    const commandId = crypto.randomUUID()
    await agentB.session.append('command/run', { commandId, name: 'plan', args: 'off' })
    expect(await serviceB.command.run({ agent: agentB, rawInput: 'off' })).toEqual({ kind: 'success', text: 'Leaving plan mode (applies from the next step).' })
    await agentB.session.append('command/done', { commandId, kind: 'success', text: 'Leaving plan mode (applies from the next step).' })
    await quiet()
    expect(serviceA.get(agentA)).toEqual({ active: true, pending: false })
    const step = await serviceA.stepBoundary(agentA)
    expect(step.section).toBe('')
    expect(step.messages.map((m) => (m.content[0] as { text: string }).text)).toEqual(['The user switched this session back to the default mode.'])
    await quiet()
    expect(serviceB.get(agentB)).toEqual({ active: false })
    expect(modes(agentA.session.events)).toEqual([true, false])
    expect(agentB.session.events).toEqual(agentA.session.events)
  })

  it('R84: an event that decides nothing goes after what another instance appended; a decision on the stale view is refused, and isSeqTaken tells it', async () => {
    const db = await database()
    const a = await (await instance(db)).openSession('s1')
    const b = await (await instance(db)).openSession('s1')
    // B has not heard A's append yet when both write seq 1.
    const [fromA, fromB] = await Promise.all([a.append('request/header', { step: 0 }), b.append('request/header', { step: 1 })])
    expect(new Set([fromA.seq, fromB.seq])).toEqual(new Set([1, 2]))
    await quiet()
    // Another writer's row that B has not heard (no NOTIFY): B's view is stale.
    await db.query(`INSERT INTO ${prefix}events (session, seq, type, data) VALUES ('s1', 3, 'message', '{}'::jsonb)`)
    const refused = await b.append('plan/mode', { active: true }).then(
      () => new Error('written'),
      (error: Error) => error,
    )
    expect(refused.message).toBe(seqTakenMessage('s1', 3, 'plan/mode'))
    expect(isSeqTaken(refused)).toBe(true)
    expect(isSeqTaken(`Plan mode was not changed: ${refused.message}`)).toBe(true)
    expect(b.events.at(-1)).toEqual({ seq: 3, type: 'message', data: {} }) // it read the row it missed
    // The same on a view now current is written.
    expect((await b.append('plan/mode', { active: true })).seq).toBe(4)
    expect(isSeqTaken(new Error('plan-mode postgres: the message event of session s1 may not have been written: boom'))).toBe(false)
    const { rows } = await db.query(`SELECT seq, type FROM ${prefix}events ORDER BY seq`)
    expect(rows.map((r) => Number((r as { seq: unknown }).seq))).toEqual(rows.map((_, i) => i + 1))
  })

  it("R83: subscribe hears another instance's appends, in order, each once", async () => {
    const db = await database()
    const a = await (await instance(db)).openSession('s1')
    const b = await (await instance(db)).openSession('s1')
    const heard: number[] = []
    b.subscribe((event) => heard.push(event.seq))
    for (let i = 0; i < 5; i++) await a.append('message', { i })
    await quiet()
    expect(heard).toEqual([1, 2, 3, 4, 5])
    expect(b.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5])
  })

  it('R84: two instances appending the same seq: the database keeps one; the other is refused with the exact message after reading the row it missed', async () => {
    const db = await database()
    const a = await (await instance(db)).openSession('s1')
    const b = await (await instance(db)).openSession('s1')
    const results = await Promise.allSettled([a.append('plan/mode', { active: true }), b.append('plan/mode', { active: true })])
    const refused = results.filter((r) => r.status === 'rejected')
    expect(refused).toHaveLength(1)
    expect((refused[0] as PromiseRejectedResult).reason).toEqual(new Error(seqTakenMessage('s1', 1, 'plan/mode')))
    expect(seqTakenMessage('s1', 1, 'plan/mode')).toBe(
      'plan-mode postgres: session s1 already has seq 1 (another instance appended first); the plan/mode event was not written',
    )
    await quiet()
    expect(a.events).toEqual(b.events)
    expect(a.events).toHaveLength(1)
  })

  it('R84: a /plan on one instance applies at the next step of the other; a review opened on one is answered on the other and told once', async () => {
    const db = await database()
    const { agentA, agentB, a, b } = await twoInstances([await instance(db), await instance(db)], { review: 'durable' })
    await agentB.session.append('turn/start', {})
    await quiet()
    expect(a.get(agentA)).toEqual({ active: false }) // attached, following the log
    expect(await b.set(agentB, true)).toBe('queued')
    expect((await b.stepBoundary(agentB)).section).toBe(SECTION)
    await quiet()
    expect(a.get(agentA)).toEqual({ active: true })
    const { reviewId } = (await a.exitTool.execute({ plan: PLAN }, { agent: agentA })) as { reviewId: string }
    await quiet()
    expect(b.openReview(agentB)).toMatchObject({ reviewId, plan: PLAN })
    expect(await b.answerReview(agentB, reviewId, APPROVE)).toBe('approved')
    await quiet()
    expect(a.openReview(agentA)).toBeNull()
    expect(await a.stepBoundary(agentA)).toMatchObject({ section: '', messages: [{ content: [{ type: 'text', text: APPROVED_NEWS }] }] })
    await quiet()
    expect(modes(agentB.session.events)).toEqual([true, false])
    expect(agentA.session.events).toEqual(agentB.session.events)
  })

  it('R84, R3: two instances switching one session concurrently leave a log with no repeated plan/mode, whose fold every instance reads', async () => {
    const db = await database()
    const { agentA, agentB, a, b } = await twoInstances([await instance(db), await instance(db)])
    const hammer = async (planMode: PlanMode, agent: PlanAgent, seed: number) => {
      let refused = 0
      for (let i = 0; i < 150; i++) {
        const active = ((i * 7 + seed) % 3) !== 0
        await planMode.set(agent, active).catch(() => refused++)
      }
      return refused
    }
    const refused = await Promise.all([hammer(a, agentA, 1), hammer(b, agentB, 2)])
    await quiet()
    const events = agentA.session.events
    expect(events).toEqual(agentB.session.events)
    const flips = modes(events)
    for (let i = 1; i < flips.length; i++) expect(flips[i], `plan/mode #${i + 1} repeats the one before`).not.toBe(flips[i - 1])
    expect(flips[0]).toBe(true)
    expect(a.get(agentA).active).toBe(foldPlanMode(events))
    expect(b.get(agentB).active).toBe(foldPlanMode(events))
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${prefix}events`)
    expect(rows[0]!.n).toBe(events.length)
    console.log(`R84 hammer: ${events.length} plan/mode appends, ${refused[0]! + refused[1]!} refused as stale`)
  })

  it('R85: the pending store keeps P in the database, and a new instance attaches with it', async () => {
    const db = await database()
    const storeA = await instance(db)
    const agentA: PlanAgent = { id: 's1', session: await storeA.openSession('s1') }
    await agentA.session.append('turn/start', {})
    const a = service(storeA)
    expect(await a.set(agentA, true)).toBe('queued')
    expect((await db.query(`SELECT session, pending FROM ${prefix}pending`)).rows).toEqual([{ session: 's1', pending: true }])
    const storeB = await instance(db)
    const agentB: PlanAgent = { id: 's1', session: await storeB.openSession('s1') }
    expect(storeB.pendingStore.get('s1')).toBe(true)
    expect(service(storeB).get(agentB)).toEqual({ active: false, pending: true })
    expect(await a.set(agentA, false)).toBe('cancelled')
    expect((await db.query(`SELECT * FROM ${prefix}pending`)).rows).toEqual([])
  })

  it('R85, R76: checkpoints are saved in the database, and a session loads only the events after the latest one', async () => {
    const db = await database()
    const storeA = await instance(db)
    const agentA: PlanAgent = { id: 's1', session: await storeA.openSession('s1') }
    const a = service(storeA, { checkpoints: { store: storeA.checkpoints, every: 5 } })
    await agentA.session.append('turn/start', {})
    expect(await a.set(agentA, true)).toBe('queued')
    await a.stepBoundary(agentA)
    for (let i = 0; i < 5; i++) await agentA.session.append('message', { i })
    await agentA.session.append('turn/end', {})
    await agentA.session.append('turn/start', {})
    await a.dispose() // waits for the checkpoint's write
    expect(await storeA.checkpoints.load('s1')).toMatchObject({ seq: 8, type: 'turn/end', projection: { active: true } })
    const storeB = await instance(db)
    const tail = await storeB.openSession('s1')
    // The event the checkpoint ends at (checked against it, R76), and those after it.
    expect(tail.events).toEqual([
      { seq: 8, type: 'turn/end', data: {} },
      { seq: 9, type: 'turn/start', data: {} },
    ])
    expect(tail.checkpoint).toMatchObject({ seq: 8 })
    const b = service(storeB)
    const agentB: PlanAgent = { id: 's1', session: tail }
    expect(b.get(agentB)).toEqual({ active: true })
    expect(await b.set(agentB, false)).toBe('queued') // the turn opened after the checkpoint is open
    // An older checkpoint never replaces a newer one.
    const saved = (await storeB.checkpoints.load('s1')) as PlanCheckpoint
    await storeB.checkpoints.save('s1', { ...saved, seq: 3 })
    expect(await storeB.checkpoints.load('s1')).toMatchObject({ seq: 8 })
  })

  it("R76, R85: openSession loads the whole log when the stored checkpoint is another session's or does not end at the log's event", async () => {
    const db = await database()
    const { store, saved } = await checkpointedAtTurnEnd(db, { turn: 1 })
    expect(saved).toMatchObject({ agentId: 's1', seq: 2, type: 'turn/end' })
    // Copied to another session whose log has a turn/end at seq 2 too; and the log of s1 rewritten since.
    const other = await store.openSession('s2')
    await other.append('turn/start', {})
    await other.append('turn/end', { turn: 1 })
    await store.checkpoints.save('s2', saved)
    const copied = await (await instance(db)).openSession('s2')
    expect([copied.checkpoint, copied.events.map((event) => event.seq)]).toEqual([undefined, [1, 2]])
    await db.query(`UPDATE ${prefix}events SET data = '{"turn": 7}' WHERE session = 's1' AND seq = 2`)
    const rewritten = await (await instance(db)).openSession('s1')
    expect([rewritten.checkpoint, rewritten.events.map((event) => event.seq)]).toEqual([undefined, [1, 2]])
  })

  it('R85, R76: a save replaces a stored checkpoint that no loader can use, whatever its seq (regression: an @2 one or another agent\'s kept every later checkpoint out; one past the log\'s end cannot be stored, the checkpoint goes with its event)', async () => {
    const db = await database()
    const { store, agent, saved } = await checkpointedAtTurnEnd(db, {})
    expect(saved).toMatchObject({ seq: 2 })
    await agent.session.append('message', {})
    await agent.session.append('message', {}) // seq 4: the stored one below is newer than the save
    const unusable = [
      { ...saved, version: 'xstate-plan-mode/checkpoint@2', seq: 4 },
      { ...saved, agentId: 's9', seq: 4 },
    ]
    for (const stored of unusable) {
      await db.query(`UPDATE ${prefix}checkpoints SET seq = $2, checkpoint = $3::json WHERE session = $1`, ['s1', stored.seq, JSON.stringify(stored)])
      await store.checkpoints.save('s1', saved)
      expect(await store.checkpoints.load('s1')).toEqual(saved)
    }
    // A usable newer one is still kept.
    await store.checkpoints.save('s1', { ...saved, seq: 1 })
    expect(await store.checkpoints.load('s1')).toEqual(saved)
    // None is stored at a seq the log does not hold.
    await expect(store.checkpoints.save('s1', { ...saved, seq: 90 })).rejects.toThrow(/foreign key/)
    expect(await store.checkpoints.load('s1')).toEqual(saved)
  })

  it('R85: tables take the prefix; a bad prefix, a closed session and a closed store are refused with exact messages', async () => {
    const db = await database()
    const store = await instance(db, 'acme_plan_')
    const log = await store.openSession('s1')
    await log.append('message', {})
    expect((await db.query('SELECT count(*)::int AS n FROM acme_plan_events')).rows).toEqual([{ n: 1 }])
    expect(() => createPostgresPlanStore({ db, listen: pgliteListen(db), prefix: 'Bad-Prefix' })).toThrow(
      new TypeError('plan-mode postgres: the prefix must match /^[a-z_][a-z0-9_]{0,40}$/; got "Bad-Prefix"'),
    )
    await log.close()
    await expect(log.append('message', {})).rejects.toThrow(new Error('plan-mode postgres: session s1 is closed; the message event was not written'))
    await store.close()
    await expect(store.openSession('s2')).rejects.toThrow(new Error('plan-mode postgres: the store is closed'))
  })
})

/** Waits for a condition that a NOTIFY (and the read it wakes) brings about; the cap is only a safety net. */
const until = (check: () => void) => vi.waitFor(check, { timeout: 60_000, interval: 5 })

/** The session's rows as events, straight from the table (what every instance must agree with). */
async function rowsOf(db: PGlite, session: string) {
  const { rows } = await db.query<{ seq: number; type: string; data: unknown; data_json?: unknown }>(`SELECT * FROM ${prefix}events WHERE session = $1 ORDER BY seq`, [session])
  return rows.map((row) => ({ seq: Number(row.seq), type: row.type, data: row.data_json ?? row.data }))
}

describe('#23 on PGlite: nothing forged, nothing bricked', () => {
  it('R76, R83: a checkpoint row whose seq column is past the log\'s end and whose checkpoint cannot be used loads the whole log, not none of it (regression: openSession read the rows from that seq and opened an empty log)', async () => {
    const db = await database()
    const { store, saved } = await checkpointedAtTurnEnd(db, {})
    // Only a role that may bypass the foreign key (a table owner in replica mode) can write this row.
    await db.exec('SET session_replication_role = replica')
    try {
      await db.query(`UPDATE ${prefix}checkpoints SET seq = 90, checkpoint = $2::json WHERE session = $1`, ['s1', JSON.stringify({ ...saved, version: 'forged' })])
    } finally {
      await db.exec('SET session_replication_role = origin')
    }
    const session = await store.openSession('s1')
    expect(session.events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'plan/mode'],
      [2, 'turn/end'],
    ])
  })

  it('R83: the host\'s listen is called as a function, never as a method of the store: a listen written with `function` sees no store object to run statements through', async () => {
    const db = await database()
    const thisOf: unknown[] = []
    const hosts = pgliteListen(db)
    const listen: PgListen = function (this: unknown, channel, onNotify, onReconnect) {
      thisOf.push(this)
      return hosts(channel, onNotify, onReconnect)
    }
    const store = createPostgresPlanStore({ db, listen, prefix })
    await store.migrate()
    open.push(store)
    await store.openSession('s1')
    expect(thisOf).toEqual([undefined])
  })

  it('R83: a forged NOTIFY approving the open review is only a hint to read: no review closes, no event is heard, and the next append and a fresh instance agree with the live ones', async () => {
    const db = await database()
    const { agentA, agentB, a, b } = await twoInstances([await instance(db), await instance(db)], { review: 'durable' })
    expect(await a.set(agentA, true)).toBe('committed')
    const { reviewId } = (await a.exitTool.execute({ plan: PLAN }, { agent: agentA })) as { reviewId: string }
    await until(() => expect(b.openReview(agentB)).toMatchObject({ reviewId }))
    const last = agentA.session.events.at(-1)!.seq
    const heard: number[] = []
    agentB.session.subscribe((event) => heard.push(event.seq))
    // Any role that may connect may NOTIFY on the channel: the payload of an approval that no row holds.
    const forged = ['s1', last + 1, 'plan/review', { outcome: 'approved', reviewId, title: 'Migrate the users table', plan: PLAN }]
    await db.query('SELECT pg_notify($1, $2)', [`${prefix}events`, JSON.stringify(forged)])
    const real = await agentA.session.append('message', { text: 'a real row' })
    await until(() => expect(heard).toContain(real.seq))
    expect(real.seq).toBe(last + 1)
    expect(heard).toEqual([last + 1])
    expect(a.openReview(agentA)).toMatchObject({ reviewId })
    expect(b.openReview(agentB)).toMatchObject({ reviewId })
    const rows = await rowsOf(db, 's1')
    expect(agentA.session.events).toEqual(rows)
    expect(agentB.session.events).toEqual(rows)
    expect((await (await instance(db)).openSession('s1')).events).toEqual(rows)
  })

  it('R83: a read the database never answers holds the reads after it no longer than appendTimeoutMs: the instance still follows the others', async () => {
    const db = await database()
    const a = await (await instance(db)).openSession('s1')
    let hangNextRead = false
    const hanging: PgQueryable = {
      query: (text, params) => {
        if (hangNextRead && text.startsWith('SELECT seq, type, data')) {
          hangNextRead = false
          return new Promise(() => {}) // never answered
        }
        return db.query(text, params)
      },
      exec: (sql) => db.exec(sql),
    }
    const storeB = createPostgresPlanStore({ db: hanging, listen: pgliteListen(db), prefix, appendTimeoutMs: 200 })
    open.push(storeB)
    const b = await storeB.openSession('s1')
    hangNextRead = true // the read after the open is on its way already: the next one hangs
    await a.append('message', { n: 1 }) // B's read of it hangs
    await a.append('message', { n: 2 })
    await until(() => expect(b.events.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }]))
  })

  it('R83: a session id longer than 1024 bytes in UTF-8 is refused at openSession with a short message that does not repeat it', async () => {
    const store = await instance(await database())
    await expect(store.openSession('x'.repeat(1025))).rejects.toThrow(new TypeError('plan-mode postgres: a session id must be at most 1024 bytes in UTF-8; got 1025'))
    await expect(store.openSession('é'.repeat(4000))).rejects.toThrow(new TypeError('plan-mode postgres: a session id must be at most 1024 bytes in UTF-8; got 8000'))
  })

  it('R83: a session id of 1024 bytes in UTF-8 opens; its appends land and another instance hears them', async () => {
    const db = await database()
    const id = 'é'.repeat(511) + '"\\' // quotes and backslashes grow in the NOTIFY's JSON
    expect(new TextEncoder().encode(id).length).toBe(1024)
    const a = await (await instance(db)).openSession(id)
    const b = await (await instance(db)).openSession(id)
    expect(await a.append('message', { n: 1 })).toEqual({ seq: 1, type: 'message', data: { n: 1 } })
    await until(() => expect(b.events).toEqual([{ seq: 1, type: 'message', data: { n: 1 } }]))
  })

  it('R83: appendTimeoutMs is a number of milliseconds from 1 to 2147483647; anything else throws an exact TypeError (regression: 3e9 made every append time out at once)', () => {
    const make = (appendTimeoutMs: unknown) => () => createPostgresPlanStore({ db: shared(), listen: pgliteListen(shared()), appendTimeoutMs } as never)
    for (const bad of [0, -1, 3e9, Number.POSITIVE_INFINITY, Number.NaN, '500']) {
      expect(make(bad)).toThrow(new TypeError(`plan-mode postgres: appendTimeoutMs must be a number of milliseconds from 1 to 2147483647; got ${String(bad)}`))
    }
    for (const good of [1, 500, 2_147_483_647, undefined]) expect(make(good)).not.toThrow()
  })

  it('R83: a session id holding U+0000 is refused at openSession', async () => {
    const store = await instance(await database())
    await expect(store.openSession('a\u0000b')).rejects.toThrow(new TypeError('plan-mode postgres: a session id must not contain U+0000'))
  })

  it('R83: a session id holding a lone surrogate is refused at openSession (regression: PostgreSQL stored it as U+FFFD, so chat-\\uD800 read the log of chat-\\uDC00)', async () => {
    const db = await database()
    const store = await instance(db)
    const refused = new TypeError('plan-mode postgres: a session id must be well-formed UTF-16 (no lone surrogate)')
    await expect(store.openSession('chat-\uDC00')).rejects.toThrow(refused)
    await expect(store.openSession('\uD800chat')).rejects.toThrow(refused)
    expect((await store.openSession('chat-\uD83D\uDE00')).events).toEqual([]) // a pair is a character
  })

  it('R83: data holding U+0000 or a lone surrogate (which jsonb cannot hold) is stored exactly: the append lands, another instance hears it, a fresh one loads it', async () => {
    const db = await database()
    const a = await (await instance(db)).openSession('s1')
    const b = await (await instance(db)).openSession('s1')
    const data = { text: 'nul \u0000 here', key: { 'k\u0000': ['\ud800 lone', 'pair \ud83d\ude00'] }, literal: '\\u0000 typed' }
    expect(await a.append('message', data)).toEqual({ seq: 1, type: 'message', data })
    expect(await a.append('message', { plain: true })).toEqual({ seq: 2, type: 'message', data: { plain: true } })
    await until(() => expect(b.events).toEqual([{ seq: 1, type: 'message', data }, { seq: 2, type: 'message', data: { plain: true } }]))
    expect((await (await instance(db)).openSession('s1')).events).toEqual(b.events)
  })

  it('R83, R84: a durable review answered with feedback holding U+0000 is recorded, and the other instance hears it closed', async () => {
    const db = await database()
    const { agentA, agentB, a, b } = await twoInstances([await instance(db), await instance(db)], { review: 'durable' })
    expect(await a.set(agentA, true)).toBe('committed')
    const { reviewId } = (await a.exitTool.execute({ plan: PLAN }, { agent: agentA })) as { reviewId: string }
    const feedback = 'Split step 2\u0000 in two.'
    expect(await a.answerReview(agentA, reviewId, { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: feedback }] })).toBe('keep-planning')
    await until(() => expect(b.openReview(agentB)).toBeNull())
    expect(agentB.session.events.at(-1)).toMatchObject({ type: 'plan/review', data: { reviewId, outcome: 'keep-planning', feedback } })
  })

  it('R83, R85: a checkpoint whose plan holds U+0000 is saved and loaded exactly (regression: jsonb refused it; every save of the session warned)', async () => {
    const db = await database()
    // A table made before checkpoints were kept as json: migrate changes its type.
    await db.exec(`CREATE TABLE ${prefix}checkpoints (session text PRIMARY KEY, seq bigint NOT NULL, checkpoint jsonb NOT NULL)`)
    const store = await instance(db)
    const warnings: unknown[][] = []
    const planMode = service(store, { checkpoints: { store: store.checkpoints, every: 1 }, logger: { warn: (...args: unknown[]) => warnings.push(args) } })
    const agent: PlanAgent = { id: 's1', session: await store.openSession('s1') }
    expect(await planMode.set(agent, true)).toBe('committed')
    const plan = '# Nul\u0000 plan\n\n1. Keep the \u0000 byte.'
    const { reviewId } = (await service(store, { review: 'durable' }).exitTool.execute({ plan }, { agent })) as { reviewId: string }
    await agent.session.append('turn/start', {})
    await agent.session.append('turn/end', {}) // a checkpoint is due here; it holds the open review's plan
    await planMode.dispose() // waits for the checkpoint's write
    expect(warnings).toEqual([])
    const saved = (await store.checkpoints.load('s1')) as { seq: number; review: { open: { reviewId: string; plan: string } } }
    expect(saved).toMatchObject({ seq: 4, review: { open: { reviewId, plan } } })
    const reopened = await (await instance(db)).openSession('s1')
    expect(reopened.checkpoint).toEqual(saved)
  })

  it('R83, R74: openSession refuses a session whose rows skip a seq, naming the session and the missing seq', async () => {
    const db = await database()
    await instance(db)
    await db.query(`INSERT INTO ${prefix}events (session, seq, type, data) VALUES ('s1', 1, 'turn/start', '{}'), ('s1', 3, 'plan/mode', '{"active": true}')`)
    await expect((await instance(db)).openSession('s1')).rejects.toThrow(
      new Error('plan-mode postgres: session s1 was not opened: its log has no event at seq 2 (the next row has seq 3)'),
    )
  })

  it('R83, R76: openSession refuses a session whose first row after its checkpoint skips a seq', async () => {
    const db = await database()
    const storeA = await instance(db)
    const agentA: PlanAgent = { id: 's1', session: await storeA.openSession('s1') }
    const a = service(storeA, { checkpoints: { store: storeA.checkpoints, every: 2 } })
    expect(a.get(agentA)).toEqual({ active: false }) // attached: it follows the log and saves checkpoints
    await agentA.session.append('turn/start', {})
    await agentA.session.append('message', {})
    await agentA.session.append('turn/end', {})
    await a.dispose() // waits for the checkpoint's write
    expect(await storeA.checkpoints.load('s1')).toMatchObject({ seq: 3 })
    await db.query(`INSERT INTO ${prefix}events (session, seq, type, data) VALUES ('s1', 5, 'turn/start', '{}')`)
    await expect((await instance(db)).openSession('s1')).rejects.toThrow(
      new Error('plan-mode postgres: session s1 was not opened: its log has no event at seq 4 (the next row has seq 5)'),
    )
  })
})

describe('#23 on PGlite: rows written by hand are untrusted input', () => {
  // Each row as [type, what it is, its data as JSON text].
  const odd: [string, string, string | null][] = [
    ['plan/review', 'a string as data', '"approved"'],
    ['plan/review', 'an array as data', '[{"outcome":"approved"}]'],
    ['plan/review', 'null data', null],
    ['plan/review', 'a closing record with a numeric reviewId', '{"outcome":"approved","reviewId":7,"plan":"# X","title":"X"}'],
    ['plan/review', 'a request whose plan is an object', '{"outcome":"requested","reviewId":"r1","plan":{"a":1},"title":"X"}'],
    ['command/run', 'a /plan run whose commandId is an object', '{"commandId":{"x":1},"name":"plan","args":"off"}'],
    ['command/done', 'a done whose commandId is "__proto__"', '{"commandId":"__proto__","kind":"success"}'],
    ['command/run', 'a run whose commandId is "toString"', '{"commandId":"toString","name":"plan","args":"off"}'],
    ['command/done', 'its success', '{"commandId":"toString","kind":"success"}'],
    ['request/header', 'a header with data 42', '42'],
    ['turn/start', 'a turn/start with data true', 'true'],
    ['plan/violation', 'a violation with odd fields', '{"tool":{"a":1},"callId":null,"action":"blocked"}'],
    ['', 'an empty type', '{}'],
  ]

  it('R62, R83: an attached service takes hand-written odd rows without stopping: it follows them and still switches modes', async () => {
    const db = await database()
    const store = await instance(db)
    const agent: PlanAgent = { id: 's1', session: await store.openSession('s1') }
    const planMode = service(store, { review: 'durable' })
    expect(await planMode.set(agent, true)).toBe('committed')
    for (const [type, , data] of odd) {
      const { rows } = await db.query<{ seq: number }>(`SELECT COALESCE(max(seq), 0) + 1 AS seq FROM ${prefix}events WHERE session = 's1'`)
      const seq = Number(rows[0]!.seq)
      await db.query(`INSERT INTO ${prefix}events (session, seq, type, data) VALUES ('s1', $1, $2, $3::jsonb)`, [seq, type, data])
      await db.query('SELECT pg_notify($1, $2)', [`${prefix}events`, JSON.stringify(['s1', seq])])
    }
    const last = (await rowsOf(db, 's1')).at(-1)!.seq
    await until(() => expect(agent.session.events.at(-1)?.seq).toBe(last))
    // The /plan off runs of "toString" were settled by hand: whatever they select, the chart works.
    const state = planMode.get(agent)
    expect(planMode.actor(agent).getSnapshot().status).toBe('active')
    // The hand-settled /plan off of "toString" is a /plan off like any other (R86): it is pending.
    expect(state).toEqual({ active: true, pending: false })
    // It switches at the next step, and a /plan on after it switches back.
    expect((await planMode.stepBoundary(agent)).section).toBe('')
    expect([planMode.get(agent), agent.session.events.at(-1)]).toMatchObject([{ active: false }, { type: 'plan/mode', data: { active: false } }])
    expect(await planMode.set(agent, true)).toBe('queued') // in the turn the hand-written turn/start opened (R9)
    expect((await planMode.stepBoundary(agent)).section).toBe(SECTION)
    expect([planMode.get(agent), agent.session.events.at(-1)]).toMatchObject([{ active: true }, { type: 'plan/mode', data: { active: true } }])
    // A fresh instance attaches the same log and reads the same mode.
    const fresh = service(await instance(db))
    const again: PlanAgent = { id: 's1', session: await (await instance(db)).openSession('s1') }
    expect(fresh.get(again).active).toBe(planMode.get(agent).active)
  })
})

describe('#23 on PGlite: a checkpoint holds only for the rows it was cut from', () => {
  const OLD_PLAN = '# Drop the users table\n\n1. DROP TABLE users.'
  const NEW_PLAN = '# Add an index\n\n1. CREATE INDEX.'

  it("R76, R85: after an operator deletes a session's rows, the new log of that session is not read through the old log's checkpoint (regression: its turn/end {} at the same seq had the same digest: plan mode read off, the open review was gone, the old plan read approved)", async () => {
    const db = await database()
    const checkpointing = (store: PostgresPlanStore) => service(store, { review: 'durable', checkpoints: { store: store.checkpoints, every: 1 } })
    // The old log: plan mode on, a plan approved and left, the turn ended; its checkpoint at that turn/end.
    const first = await instance(db)
    const agent: PlanAgent = { id: 's1', session: await first.openSession('s1') }
    const old = checkpointing(first)
    expect(await old.set(agent, true)).toBe('committed') // 1
    await agent.session.append('turn/start', {}) // 2
    const { reviewId } = (await old.exitTool.execute({ plan: OLD_PLAN }, { agent })) as { reviewId: string } // 3
    expect(await old.answerReview(agent, reviewId, APPROVE)).toBe('approved') // 4
    await old.stepBoundary(agent) // 5: plan/mode false
    await agent.session.append('turn/end', {}) // 6, as withPlanMode's endTurn logs it
    await old.dispose() // waits for the checkpoint's write
    expect(await first.checkpoints.load('s1')).toMatchObject({ seq: 6, type: 'turn/end', projection: { active: false }, approved: { plan: OLD_PLAN } })

    // The operator deletes the session's rows; the session starts again, grows to seq 6 and ends a turn there.
    await db.query(`DELETE FROM ${prefix}events WHERE session = 's1'`)
    const second = await instance(db)
    const again: PlanAgent = { id: 's1', session: await second.openSession('s1') }
    expect(again.session.events).toEqual([])
    const now = checkpointing(second)
    expect(await now.set(again, true)).toBe('committed') // 1
    await again.session.append('turn/start', {}) // 2
    const fresh = (await now.exitTool.execute({ plan: NEW_PLAN }, { agent: again })) as { reviewId: string } // 3
    await again.session.append('message', { text: 'waiting for the user' }) // 4
    await again.session.append('message', { text: 'still waiting' }) // 5
    await again.session.append('turn/end', {}) // 6: the seq of the old checkpoint's event, and the same event
    await now.dispose()

    // A restart reads the new log (through the new log's checkpoint, the only one the store may hold).
    const third = await instance(db)
    const reloaded: PlanAgent = { id: 's1', session: await third.openSession('s1') }
    const after = service(third, { review: 'durable' })
    expect(reloaded.session.checkpoint).toMatchObject({ seq: 6, projection: { active: true }, review: { open: { reviewId: fresh.reviewId } } })
    expect({
      mode: after.get(reloaded),
      openReview: after.openReview(reloaded)?.reviewId ?? null,
      approvedPlan: after.approvedPlan(reloaded)?.plan ?? null,
    }).toEqual({ mode: { active: true }, openReview: fresh.reviewId, approvedPlan: null })
  })

  it("R85, R76: migrate drops a checkpoint whose event an earlier version's tables no longer hold, so a log made again past its seq is not read through it", async () => {
    const db = await database()
    // Tables of an earlier version, with a checkpoint left behind by a log deleted since (turn/end {} at seq 2).
    const stale = await instance(db)
    const writer = service(stale, { checkpoints: { store: stale.checkpoints, every: 1 } })
    const agent: PlanAgent = { id: 's1', session: await stale.openSession('s1') }
    expect(await writer.set(agent, true)).toBe('committed')
    await agent.session.append('turn/end', {})
    await writer.dispose()
    const saved = (await stale.checkpoints.load('s1')) as PlanCheckpoint
    expect(saved).toMatchObject({ seq: 2, projection: { active: true } })
    await db.exec(`DROP TABLE ${prefix}checkpoints; CREATE TABLE ${prefix}checkpoints (session text PRIMARY KEY, seq bigint NOT NULL, checkpoint json NOT NULL)`)
    await db.query(`DELETE FROM ${prefix}events WHERE session = 's1'`)
    await db.query(`INSERT INTO ${prefix}checkpoints (session, seq, checkpoint) VALUES ('s1', 2, $1::json)`, [JSON.stringify(saved)])
    // This version's migrate; then the log is made again: no plan mode, a turn ended at seq 2.
    const store = await instance(db)
    const log = await store.openSession('s1')
    await log.append('turn/start', {})
    await log.append('turn/end', {})
    const reopened = await (await instance(db)).openSession('s1')
    expect([reopened.checkpoint, reopened.events.map((e) => e.seq), foldPlanMode(reopened.events)]).toEqual([undefined, [1, 2], false])
  })

})

describe('#23 on PGlite: an append reported as timed out is never written later', () => {
  it('R83: a clock reading that reached the instance late does not stop its appends (regression: openSession\'s answer delayed 1.2 s past appendTimeoutMs 1000 put every deadline in the past; 5 of 5 appends were refused at once as "no answer from the database within 1000 ms")', async () => {
    const db = await database()
    // The database as the instance reaches it: openSession's clock reading arrives 1.2 s after the
    // server read its clock (a GC pause, a starved CPU, a laptop suspended), so it is 1.2 s behind.
    const lateClock: PgQueryable = {
      async query(text, params) {
        const result = await db.query(text, params)
        if (text.includes('server_ms')) await new Promise((resolve) => setTimeout(resolve, 1200))
        return result as { rows: Record<string, unknown>[] }
      },
      exec: (sql) => db.exec(sql),
    }
    const store = createPostgresPlanStore({ db: lateClock, listen: pgliteListen(db), prefix, appendTimeoutMs: 1000 })
    open.push(store)
    await store.migrate()
    const log = await store.openSession('s1')
    const outcomes: unknown[] = []
    for (let n = 1; n <= 5; n++) outcomes.push(await log.append('message', { n }).catch((error: Error) => error.message))
    expect(outcomes).toEqual([1, 2, 3, 4, 5].map((n) => ({ seq: n, type: 'message', data: { n } })))
    expect((await rowsOf(db, 's1')).map((row) => row.seq)).toEqual([1, 2, 3, 4, 5])
  })

  it('R83, R86: an append reported as timed out is not written when its statement reaches the database later (regression: a /plan off whose command/done timed out landed after the user entered plan mode again, and switched it off on every instance)', async () => {
    const db = await database()
    // The database as instance A reaches it: the statement of the first /plan off's done is held on
    // its way (a stalled connection, a pool with no free client) until released.
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let held!: () => void
    const holding = new Promise<void>((resolve) => (held = resolve))
    let arrived!: (outcome: string) => void
    const heldArrived = new Promise<string>((resolve) => (arrived = resolve))
    const stalled: PgQueryable = {
      async query(text, params) {
        if (text.includes('append(') && params?.[1] === 'command/done' && String(params[2]).includes('"first-off"')) {
          held()
          await released
          return db.query(text, params).then(
            (result) => (arrived('answered'), result as { rows: Record<string, unknown>[] }),
            (error: Error) => (arrived(`refused: ${error.message}`), Promise.reject(error)),
          )
        }
        return db.query(text, params) as Promise<{ rows: Record<string, unknown>[] }>
      },
      exec: (sql) => db.exec(sql),
    }
    // Generous, so that the appends that are not held land in time on a busy machine.
    const storeA = createPostgresPlanStore({ db: stalled, listen: pgliteListen(db), prefix, appendTimeoutMs: 1500 })
    open.push(storeA)
    await storeA.migrate()
    const { agentA, agentB, a, b } = await twoInstances([storeA, await instance(db)])
    expect(b.get(agentB)).toEqual({ active: false }) // B follows the session from the start
    expect(await a.set(agentA, true)).toBe('committed')
    // A /plan as the web demo logs it: command/run, the selection, command/done.
    const slash = async (commandId: string, rawInput: string) => {
      await agentA.session.append('command/run', { commandId, name: 'plan', args: rawInput })
      const result = await a.command.run({ agent: agentA, rawInput })
      await agentA.session.append('command/done', { commandId, kind: result.kind, text: result.text })
      return result.text
    }
    // /plan off: applied on A, but its done does not arrive in time: the user is told it may not be written.
    const off = await slash('first-off', 'off').catch((error: Error) => error.message)
    expect(off).toBe('plan-mode postgres: the command/done event of session s1 may not have been written: no answer from the database within 1500 ms')
    await holding
    // The user enters plan mode again; it is on, on every instance.
    expect(await slash('then-on', '')).toBe('Plan mode on. Use /plan off to leave.')
    await until(() => expect(b.get(agentB)).toEqual({ active: true }))
    // The held statement reaches the database now: past its deadline, it writes nothing.
    release()
    expect(await heldArrived).toMatch(/^refused: /)
    await agentA.session.append('message', { text: 'after' })
    const rows = await rowsOf(db, 's1')
    expect(rows.filter((row) => row.type === 'command/done').map((row) => (row.data as { commandId: string }).commandId)).toEqual(['then-on'])
    await until(() => expect(agentB.session.events).toEqual(rows))
    const fresh = service(await instance(db))
    const agentC: PlanAgent = { id: 's1', session: await (await instance(db)).openSession('s1') }
    expect({ a: a.get(agentA), b: b.get(agentB), fresh: fresh.get(agentC) }).toEqual({ a: { active: true }, b: { active: true }, fresh: { active: true } })
  })
})

/**
 * `db` as an instance reaches it, counting the statements sent (`sent`, their text) and telling
 * when none is on its way (`settled`); `hold(text, params)` may hold one back until it resolves.
 */
function counting(db: PGlite, hold?: (text: string, params: unknown[] | undefined) => Promise<void> | undefined) {
  const sent: string[] = []
  let inFlight = 0
  const idle: (() => void)[] = []
  const wrapper = {
    sent,
    async query(text: string, params?: unknown[]) {
      sent.push(text)
      inFlight++
      try {
        await hold?.(text, params)
        return (await db.query(text, params)) as { rows: Record<string, unknown>[] }
      } finally {
        if (--inFlight === 0) for (const resolve of idle.splice(0)) resolve()
      }
    },
    exec: (sql: string) => db.exec(sql),
    /** Resolves once the writes started from promise chains have been sent and none is on its way. */
    async settled() {
      await new Promise((resolve) => setImmediate(resolve))
      if (inFlight > 0) await new Promise<void>((resolve) => idle.push(resolve))
    },
  } satisfies PgQueryable & Record<string, unknown>
  return wrapper
}

async function pendingRows(db: PGlite) {
  return (await db.query<{ session: string; pending: boolean }>(`SELECT session, pending FROM ${prefix}pending ORDER BY session`)).rows
}

/** The service of the README's setup (examples/many-instances.ts). */
function readmeService(store: PostgresPlanStore): PlanMode {
  return service(store, { review: 'durable', checkpoints: { store: store.checkpoints } })
}

describe('#25 on PGlite: one statement per flush, one round trip per openSession', () => {
  it('R83, R74: an append whose answer stops short of its own row (a row before it missing) does not count a hint up to its own seq as read: the rows are read (regression: the hint was taken as covered and the session stalled)', async () => {
    const db = await database()
    const storeB = await instance(db)
    let deliver: ((payload: string) => void) | undefined
    let heldNotices = true
    // Instance A: its NOTIFYs wait while the test holds them; the append's answer loses the rows
    // before A's own (an answer that is not whole: a hostile or broken database).
    const listen: PgListen = async (channel, onNotify, onReconnect) => {
      deliver = onNotify
      return pgliteListen(db)(channel, (payload) => { if (!heldNotices) onNotify(payload) }, onReconnect)
    }
    const appendOf = `SELECT * FROM ${prefix}append`
    const wire = {
      async query(text: string, params?: unknown[]) {
        const result = (await db.query(text, params)) as { rows: Record<string, unknown>[] }
        if (!text.startsWith(appendOf)) return result
        deliver!(JSON.stringify(['s1', 2])) // A's own NOTIFY, heard while its append is on its way
        return { ...result, rows: result.rows.filter((row) => row.r_type === null) }
      },
      exec: (sql: string) => db.exec(sql),
    }
    const storeA = createPostgresPlanStore({ db: wire, listen, prefix })
    open.push(storeA)
    const [logA, logB] = [await storeA.openSession('s1'), await storeB.openSession('s1')]
    await logB.append('note', { by: 'B' }) // seq 1: A does not hear of it (its NOTIFYs are held)
    await logA.append('note', { by: 'A' }) // seq 2: its answer lacks seq 1
    heldNotices = false
    await expect.poll(() => logA.events.map((event) => [event.seq, (event.data as { by: string }).by])).toEqual([
      [1, 'B'],
      [2, 'A'],
    ])
  })

  it('R85, R64: an instance dropping its pending selection leaves another instance\'s newer one in the table (regression: the delete removed whatever the row held)', async () => {
    const db = await database()
    const [storeA, storeB] = [await instance(db), await instance(db)]
    await storeA.pendingStore.set('s1', true)
    await storeB.pendingStore.set('s1', false) // another instance's selection, written after A's
    await storeA.pendingStore.delete('s1') // A drops its own (true): B's false stays for a restart
    expect(await pendingRows(db)).toEqual([{ session: 's1', pending: false }])
    await storeB.pendingStore.delete('s1')
    expect(await pendingRows(db)).toEqual([])
  })

  it("R85, R16: a flush in the README's setup (durable reviews, pending store, checkpoints) sends one statement: the append deletes the pending row of the mode it logs (regression: a DELETE of the pending row followed every flush)", async () => {
    const db = await database()
    const wire = counting(db)
    const store = createPostgresPlanStore({ db: wire, listen: pgliteListen(db), prefix })
    open.push(store)
    await store.migrate()
    const agent: PlanAgent = { id: 's1', session: await store.openSession('s1') }
    const planMode = readmeService(store)
    await agent.session.append('turn/start', {})
    for (const active of [true, false, true]) {
      expect(await planMode.set(agent, active)).toBe('queued')
      await wire.settled()
      expect(await pendingRows(db)).toEqual([{ session: 's1', pending: active }])
      const before = wire.sent.length
      await planMode.stepBoundary(agent)
      await wire.settled()
      expect(wire.sent.slice(before).map((text) => text.slice(0, text.indexOf('(')))).toEqual([`SELECT * FROM ${prefix}append`])
      expect([planMode.get(agent), await pendingRows(db), store.pendingStore.get('s1')]).toEqual([{ active }, [], undefined])
    }
    // A new instance reads the same: no pending selection.
    const fresh = await instance(db)
    const again: PlanAgent = { id: 's1', session: await fresh.openSession('s1') }
    expect([fresh.pendingStore.get('s1'), readmeService(fresh).get(again)]).toEqual([undefined, { active: true }])
  })

  it('R85: a pending write still on its way when a plan/mode is appended is deleted by the delete that follows (the append could not delete it: its DELETE is sent)', async () => {
    const db = await database()
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let held!: () => void
    const holding = new Promise<void>((resolve) => (held = resolve))
    const wire = counting(db, (text) => {
      if (!text.startsWith(`INSERT INTO ${prefix}pending`)) return undefined
      held()
      return released
    })
    const store = createPostgresPlanStore({ db: wire, listen: pgliteListen(db), prefix })
    open.push(store)
    await store.migrate()
    const log = await store.openSession('s1')
    // The pending row's INSERT is held on its way (a pool of several connections) while the plan/mode lands.
    const writing = store.pendingStore.set('s1', true)
    await holding
    await log.append('plan/mode', { active: true })
    release()
    await writing
    expect(await pendingRows(db)).toEqual([{ session: 's1', pending: true }])
    await store.pendingStore.delete('s1')
    expect([await pendingRows(db), wire.sent.filter((text) => text.startsWith(`DELETE FROM ${prefix}pending`)).length]).toEqual([[], 1])
  })

  it('R83: openSession takes one round trip: the checkpoint, the events from its seq on, the pending selection and the server\'s clock come in one statement', async () => {
    const db = await database()
    const { store: writer, agent } = await checkpointedAtTurnEnd(db, {})
    await agent.session.append('turn/start', {})
    await agent.session.append('message', { text: 'hello' })
    await writer.pendingStore.set('s1', false)
    const wire = counting(db)
    const store = createPostgresPlanStore({ db: wire, listen: pgliteListen(db), prefix })
    open.push(store)
    await store.migrate()
    const before = wire.sent.length
    const log = await store.openSession('s1')
    expect(wire.sent.length - before).toBe(1)
    expect([log.checkpoint, log.events.map((event) => event.seq), store.pendingStore.get('s1')]).toEqual([expect.objectContaining({ seq: 2, type: 'turn/end' }), [2, 3, 4], false])
    // A session without a checkpoint or rows: one statement too.
    const empty = await store.openSession('s2')
    expect([wire.sent.length - before, empty.checkpoint, empty.events, store.pendingStore.get('s2')]).toEqual([2, undefined, [], undefined])
    expect(readmeService(store).get({ id: 's1', session: log })).toEqual({ active: true, pending: false })
  })

  it("R83: a row appended while openSession reads is read once its NOTIFY is heard (regression guard: openSession reads again only when a hint came during its read)", async () => {
    const db = await database()
    const other = await instance(db)
    const otherLog = await other.openSession('s1')
    await otherLog.append('turn/start', {})
    let notified!: () => void
    const heard = new Promise<void>((resolve) => (notified = resolve))
    const listen = pgliteListen(db)
    // The other instance appends after this one's read and before its answer arrives.
    const wire = counting(db)
    const store = createPostgresPlanStore({
      db: {
        async query(text, params) {
          const answer = await wire.query(text, params)
          if (text.includes('server_ms')) {
            await otherLog.append('message', { text: 'during the read' })
            await heard
          }
          return answer
        },
        exec: (sql) => db.exec(sql),
      },
      listen: (channel, onNotify, onReconnect) => listen(channel, (payload) => (onNotify(payload), notified()), onReconnect),
      prefix,
    })
    open.push(store)
    const log = await store.openSession('s1')
    expect(log.events.map((event) => event.seq)).toEqual([1])
    await until(() => expect(log.events).toEqual(otherLog.events))
    expect(log.events.map((event) => event.type)).toEqual(['turn/start', 'message'])
  })

  it('R83, R85: a database migrated by the version before #25 keeps working after this migrate: its checkpoint, rows and pending row load in one statement, a flush is one statement, and that version\'s appends (and its migrate run again) go on', async () => {
    const db = await database()
    const before25 = readFileSync(new URL('./fixtures/postgres-migrate-before-25.sql', import.meta.url), 'utf8').replaceAll('__prefix__', prefix)
    await db.exec(before25)
    // That version's instance: plan mode on, a turn ended (its checkpoint), a turn started, /plan off queued.
    const append = `SELECT r_seq FROM ${prefix}append($1, $2, $3::jsonb, NULL, $4, $5, NULL)`
    await db.query(append, ['s1', 'plan/mode', '{"active":true}', 1, 0])
    await db.query(append, ['s1', 'turn/end', '{}', null, 1])
    await db.query(append, ['s1', 'turn/start', '{}', null, 2])
    const events = await rowsOf(db, 's1')
    const checkpoint = createCheckpoint('s1', replayPlanLog(events.slice(0, 2)), events.slice(0, 2))
    await db.query(`INSERT INTO ${prefix}checkpoints (session, seq, checkpoint) VALUES ('s1', 2, $1::json)`, [JSON.stringify(checkpoint)])
    await db.query(`INSERT INTO ${prefix}pending (session, pending) VALUES ('s1', false)`)

    const wire = counting(db)
    const store = createPostgresPlanStore({ db: wire, listen: pgliteListen(db), prefix })
    open.push(store)
    await store.migrate()
    const opened = wire.sent.length
    const agent: PlanAgent = { id: 's1', session: await store.openSession('s1') }
    expect([wire.sent.length - opened, agent.session.checkpoint, agent.session.events.map((event) => event.seq)]).toEqual([1, checkpoint, [2, 3]])
    const planMode = readmeService(store)
    expect(planMode.get(agent)).toEqual({ active: true, pending: false })
    const flushed = wire.sent.length
    expect((await planMode.stepBoundary(agent)).section).toBe('')
    await wire.settled()
    expect([wire.sent.length - flushed, await pendingRows(db), (await rowsOf(db, 's1')).at(-1)]).toEqual([1, [], { seq: 4, type: 'plan/mode', data: { active: false } }])
    // That version's instances call the six- and seven-argument functions: their appends land, and this one hears them.
    await db.query(`SELECT r_seq FROM ${prefix}append($1, $2, $3::jsonb, NULL, NULL, $4)`, ['s1', 'message', '{"n":5}', 4])
    await db.query(append, ['s1', 'message', '{"n":6}', null, 5])
    await until(() => expect(agent.session.events.map((event) => event.seq)).toEqual([2, 3, 4, 5, 6]))
    // Its migrate, run again by one of them, replaces only its own functions: this version's appends go on.
    await db.exec(before25)
    expect(await planMode.set(agent, true)).toBe('queued')
    await planMode.stepBoundary(agent)
    await wire.settled()
    expect([planMode.get(agent), await pendingRows(db), (await rowsOf(db, 's1')).map((row) => row.seq)]).toEqual([{ active: true }, [], [1, 2, 3, 4, 5, 6, 7]])
  })
})
