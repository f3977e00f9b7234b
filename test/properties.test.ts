import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { foldK, TEXT } from './oracle.js'
import { opArbitrary, reattachProbe, runOp, PLANS, type Op } from './ops.js'
import { settle, track } from './sut.js'
import { SECTION, thrown, Twin } from './twin.js'

/**
 * Property tests: random sequences of the operations a host and a user can perform, over one
 * to three agents, on the real service with a memory-like log whose appends land at once or
 * fail (synchronous throw, asynchronous rejection). After every operation the service is
 * compared with the SPEC oracle (twin.check: get, section, log, call results, notices, review
 * questions and signals, steered messages, warnings, R3 "every plan/mode flips F", R2 "F is the
 * fold", R62 "every actor stays active"). After a restart and at the end, a fresh service over a
 * copy of each log reads the same `get().active` and the same K (R31, R64). At the end the
 * service is disposed and R60 is checked.
 *
 * With held appends, the close timeout of R73 may also expire (the run's own fake clock moves):
 * a detached agent's work still in flight is abandoned, and the agent's next operation waits for
 * the abandoned appends to settle (until the next expiry at most) before it goes on, on the next
 * attachment; the abandoned appends are released (they land) at the end like the others.
 *
 * `PLAN_MODE_FC_RUNS` sets the number of runs (default 1000); `PLAN_MODE_FC_SEED` replays one.
 */
const RUNS = Number(process.env.PLAN_MODE_FC_RUNS ?? 1000)
const SEED = process.env.PLAN_MODE_FC_SEED === undefined ? {} : { seed: Number(process.env.PLAN_MODE_FC_SEED) }
const IDS = ['agent-a', 'agent-b', 'agent-c']

/** R31, R64: a re-attached agent reads the same mode and the same K. */
async function checkReattach(twin: Twin, ids: string[]): Promise<void> {
  for (const id of ids) {
    const events = twin.log(id).events
    const probe = await reattachProbe(events)
    const where = `\nafter:\n  ${twin.trace.join('\n  ')}`
    expect(probe.active, `R64: re-attached get(${id}).active${where}`).toBe(twin.service.get(twin.agent(id)).active)
    expect(probe.told, `R31: re-attached K of ${id} is rebuilt from the log${where}`).toBe(foldK(events))
    if (twin.oracle.toldIsLogged(id)) {
      expect(probe.told, `R31: re-attached K of ${id} equals the live K${where}`).toBe(twin.oracle.told(id))
    }
  }
}

/** R60 after the run: reviews failed as reloaded, later calls fail, pure members work, subscriptions ended. */
async function checkDispose(twin: Twin, ids: string[]): Promise<void> {
  await twin.dispose()
  await settle()
  twin.check()
  for (const id of ids) {
    twin.set(id, true)
    twin.boundary(id)
    twin.execute(id, { plan: PLANS.simple })
    await twin.command(id, 'off')
    expect(thrown(() => twin.service.actor(twin.agent(id)))).toBe(TEXT.disposed)
    expect(thrown(() => twin.service.detach(twin.agent(id)))).toBe(TEXT.disposed)
    expect(twin.log(id).listenerCount, `R60: the subscription of ${id} ended`).toBe(0)
  }
  await settle()
  twin.check()
  await expect(twin.service.dispose()).resolves.toBeUndefined()
  const { projection, exitTool } = twin.service
  expect(projection.view(projection.apply(projection.init(), { seq: 1, type: 'plan/mode', data: { active: true } }))).toEqual({
    active: true,
    pending: false,
  })
  expect(exitTool.presentCall({ plan: PLANS.simple }).title).toBe('Ship the importer')
  expect(exitTool.presentResult({}, { content: [] })).toEqual({ card: 'generic', title: 'Plan review', content: [] })
  expect(twin.service.section()).toBe('')
}

async function run(agentCount: number, asyncLog: boolean, ops: Op[]): Promise<void> {
  const ids = IDS.slice(0, agentCount)
  const twin = new Twin({ agents: ids.map((id) => ({ id })), defaultFate: asyncLog ? 'async' : 'ok' })
  for (const op of ops) {
    await runOp(twin, op, ids)
    if (op.kind === 'restart') await checkReattach(twin, ids)
  }
  await checkReattach(twin, ids)
  await checkDispose(twin, ids)
}

/** An operation of a held run: one of `ops.ts`, or the close timeout expiring (R73). */
type HeldOp = Op | { kind: 'closeTimeout' }

/** The held runs' `closeTimeoutMs`: any value does, their clock is fake. */
const HELD_CLOSE_TIMEOUT_MS = 700

/**
 * With held appends: operations queue behind them (SPEC §1); everything is released at the end.
 * The run has its own fake `setTimeout`/`clearTimeout` (XState's delayed events use them), so a
 * close timeout fires only where the run says (R73).
 */
async function runHeld(agentCount: number, ops: HeldOp[]): Promise<void> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
  try {
    await runHeldOps(agentCount, ops)
  } finally {
    vi.useRealTimers()
  }
}

async function runHeldOps(agentCount: number, ops: HeldOp[]): Promise<void> {
  const ids = IDS.slice(0, agentCount)
  const twin = new Twin({ agents: ids.map((id) => ({ id })), defaultFate: 'hold', closeTimeoutMs: HELD_CLOSE_TIMEOUT_MS })
  for (const op of ops) {
    if (op.kind !== 'closeTimeout') {
      await runOp(twin, op, ids)
      continue
    }
    twin.expireCloseTimeouts((ms) => vi.advanceTimersByTime(ms))
    await settle()
    twin.check()
  }
  twin.stopHolding()
  for (const id of ids) {
    for (let i = 0; i < 20 && twin.releaseOldest(id, 'resolve'); i++) {
      await settle()
      twin.check()
    }
  }
  for (const id of ids) {
    const probe = await reattachProbe(twin.log(id).events)
    expect(probe.active, `R64: re-attached get(${id}).active`).toBe(twin.service.get(twin.agent(id)).active)
    expect(probe.told, `R31: re-attached K of ${id} is rebuilt from the log`).toBe(foldK(twin.log(id).events))
  }
  await checkDispose(twin, ids)
}

const ops = (options: Parameters<typeof opArbitrary>[0]) =>
  fc.array(opArbitrary(options), { minLength: 1, maxLength: 40, size: 'medium' })
/**
 * The held runs' operations: now and then the close timeout expires, which abandons the work of
 * an agent detached meanwhile (R73); detaches are made a little more frequent for it.
 */
const heldOps = fc.array(
  fc.oneof(
    { weight: 12, arbitrary: opArbitrary({ foreign: false, held: true }) as fc.Arbitrary<HeldOp> },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('detach' as const), a: fc.nat({ max: 2 }) }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'closeTimeout' as const }) },
  ),
  { minLength: 1, maxLength: 40, size: 'medium' },
)
const property = (foreign: boolean) => fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.boolean(), ops({ foreign }), run)

describe('R1–R64 properties: random operation sequences against the oracle', () => {
  it('R3, R7, R30–R32, R62, R64: the service agrees with the oracle after every operation (one writer)', async () => {
    await fc.assert(property(false), { numRuns: RUNS, ...SEED })
  }, 300_000)

  it('R16, R9, R47: the service agrees with the oracle when another writer also logs plan/mode', async () => {
    await fc.assert(property(true), { numRuns: Math.ceil(RUNS / 4), ...SEED })
  }, 300_000)

  it('R11, R19, R49, R73: the service agrees with the oracle when appends are held and operations queue behind them (§1), and when a detach gives up on them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 }), heldOps, runHeld),
      { numRuns: Math.ceil(RUNS / 4), timeout: 5_000, ...SEED },
    )
  }, 300_000)

  it('R60, R73: calls still waiting for their turn at dispose fail without running, and the close timeout settles the dispose (against the oracle)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const twin = new Twin({
        agents: [{ id: 'agent-a', seed: [{ type: 'turn/start', data: {} }] }, { id: 'agent-b' }],
        defaultFate: 'hold',
        closeTimeoutMs: 300,
      })
      twin.set('agent-a', true) // an open turn: queued, nothing appended
      twin.boundary('agent-a') // its flush is held
      twin.set('agent-a', false)
      twin.execute('agent-a', { plan: PLANS.simple })
      await twin.command('agent-a', 'off')
      twin.boundary('agent-a')
      twin.set('agent-b', true) // its commit is held
      await settle()
      twin.check()
      const disposal = track(() => twin.dispose())
      await settle()
      twin.check()
      twin.releaseOldest('agent-a', 'resolve') // the flush lands; the calls queued behind it do nothing
      await settle()
      twin.check()
      const DISPOSED_BEFORE_TURN = "plan-mode service was disposed before this call's turn came; nothing was done"
      const outcome = ({ sut: { state } }: Twin['calls'][number]) => (state.status === 'rejected' ? (state.error as Error).message : state)
      expect(twin.calls.slice(1, 6).map(outcome)).toEqual([
        { status: 'resolved', value: { section: SECTION, messages: [] } },
        DISPOSED_BEFORE_TURN,
        TEXT.reloaded,
        { status: 'resolved', value: { kind: 'error', text: `Plan mode could not be changed: ${DISPOSED_BEFORE_TURN}` } },
        DISPOSED_BEFORE_TURN,
      ])
      expect(disposal.state.status, 'the commit of agent-b holds the dispose').toBe('pending')
      twin.expireCloseTimeouts((ms) => vi.advanceTimersByTime(ms))
      await settle()
      twin.check()
      expect(disposal.state.status).toBe('resolved')
      twin.releaseOldest('agent-b', 'resolve') // the abandoned commit lands late
      await settle()
      twin.check()
      expect(twin.oracle.warnings.map((w) => w.message)).toEqual([
        'plan-mode: the session log did not settle within 300 ms of a reload or detach; work in flight was abandoned',
      ])
    } finally {
      vi.useRealTimers()
    }
  })

  it('R73: after a close abandoned appends, the agent\'s next operation waits for them to settle, at most another close timeout and not past dispose (against the oracle)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const twin = new Twin({ agents: [{ id: 'agent-a' }, { id: 'agent-b' }], defaultFate: 'hold', closeTimeoutMs: 300 })
      const step = async () => {
        await settle()
        twin.check()
      }
      const expire = () => twin.expireCloseTimeouts((ms) => vi.advanceTimersByTime(ms))
      twin.set('agent-a', true) // both commits are held, then abandoned
      twin.set('agent-b', true)
      await step()
      twin.detach('agent-a')
      twin.detach('agent-b')
      const repeatA = twin.set('agent-a', true) // behind the detach
      await step()
      expire()
      await step()
      const repeatB = twin.set('agent-b', true) // after the abandonment
      const boundaryB = twin.boundary('agent-b')
      await step()
      expect([repeatA, repeatB, boundaryB].map((c) => c.sut.state.status)).toEqual(['pending', 'pending', 'pending'])
      // a: the abandoned commit lands after all; the repeated selection is a noop.
      twin.publish('agent-a', 'plan/mode')
      await step()
      expect(repeatA.sut.state.status, 'a publish alone does not settle the append').toBe('pending')
      twin.resolveHeld('agent-a', 'plan/mode')
      await step()
      expect(repeatA.sut.state).toEqual({ status: 'resolved', value: 'noop' })
      // b: the wait gives up; the selection commits the same flip, and the abandoned one lands after it.
      expire()
      await step()
      expect(twin.releaseOldest('agent-b', 'resolve')).toBe(true) // the abandoned commit
      await step()
      expect(twin.releaseOldest('agent-b', 'resolve')).toBe(true) // the repeated selection's own commit
      await step()
      expect(repeatB.sut.state).toEqual({ status: 'resolved', value: 'committed' })
      expect(twin.oracle.log('agent-b')).toEqual([
        { type: 'plan/mode', data: { active: true } },
        { type: 'plan/mode', data: { active: true } },
      ])
      expect(twin.oracle.abandonedModeLanded('agent-b')).toBe(true)
      // a again: a dispose ends the wait; the waiting operations fail as queued before it.
      twin.set('agent-a', false)
      await step()
      twin.detach('agent-a')
      expire()
      await step()
      const waiting = twin.boundary('agent-a')
      const exit = twin.execute('agent-a', { plan: PLANS.simple })
      await step()
      await twin.dispose()
      await step()
      expect(waiting.sut.state).toMatchObject({ status: 'rejected', error: new Error("plan-mode service was disposed before this call's turn came; nothing was done") })
      expect(exit.sut.state).toMatchObject({ status: 'rejected', error: new Error(TEXT.reloaded) })
      twin.releaseOldest('agent-a', 'resolve')
      await step()
      expect(twin.oracle.abandonedModeLanded('agent-a')).toBe(false)
      expect(twin.oracle.warnings).toHaveLength(3)
    } finally {
      vi.useRealTimers()
    }
  })
})
