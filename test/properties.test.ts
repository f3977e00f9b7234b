import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { foldK, TEXT } from './oracle.js'
import { opArbitrary, reattachProbe, runOp, PLANS, type Op } from './ops.js'
import { settle } from './sut.js'
import { thrown, Twin } from './twin.js'

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

/** With held appends: operations queue behind them (SPEC §1); everything is released at the end. */
async function runHeld(agentCount: number, ops: Op[]): Promise<void> {
  const ids = IDS.slice(0, agentCount)
  const twin = new Twin({ agents: ids.map((id) => ({ id })), defaultFate: 'hold' })
  for (const op of ops) await runOp(twin, op, ids)
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
const property = (foreign: boolean) => fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.boolean(), ops({ foreign }), run)

describe('R1–R64 properties: random operation sequences against the oracle', () => {
  it('R3, R7, R30–R32, R62, R64: the service agrees with the oracle after every operation (one writer)', async () => {
    await fc.assert(property(false), { numRuns: RUNS, ...SEED })
  }, 300_000)

  it('R16, R9, R47: the service agrees with the oracle when another writer also logs plan/mode', async () => {
    await fc.assert(property(true), { numRuns: Math.ceil(RUNS / 4), ...SEED })
  }, 300_000)

  it('R11, R19, R49: the service agrees with the oracle when appends are held and operations queue behind them (§1)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 }), ops({ foreign: false, held: true }), runHeld),
      { numRuns: Math.ceil(RUNS / 4), timeout: 5_000, ...SEED },
    )
  }, 300_000)
})
