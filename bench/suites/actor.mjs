/**
 * Suite 5: the XState actor's share of a step. The same decisions (R8–R10, R16, R32) three ways:
 * - oracle: tiny pure functions on plain values (bench/oracle.mjs), the floor;
 * - actor: `actor.send(...)` straight to the agent's actor, no facade;
 * - service: the facade's `stepBoundary`/`set`, with its operation queue, emission collection
 *   and promises.
 * And XState's own floor, which no chart can go under: one transition of a two-state toggle
 * machine, and an event that no state of this chart handles.
 * Fast operations run in batches per timed call, so the timer's own cost does not count.
 */
import { createActor, createMachine } from 'xstate'
import { realisticEntries } from '../log.mjs'
import { measure } from '../harness.mjs'
import { oracleSelect, oracleStep } from '../oracle.mjs'
import { SECTION, boundaryStep, flipStep, sideOf, warmUp } from '../steps.mjs'

const BATCH = 1000

/**
 * Runs suite 5.
 * @param {typeof import('../../dist/index.js')} lib
 * @returns {Promise<object>} ns per operation for each way
 */
export async function run(lib) {
  await warmUp(lib)
  const session = lib.createMemorySessionLog(realisticEntries(1000))
  const agent = { id: 'agent', session }
  const pm = lib.createPlanMode({ section: SECTION })
  const side = sideOf(pm, agent, pm.get(agent).active)
  const actor = pm.actor(agent)

  // The oracle's state lives in plain variables; `sink` keeps the results observable.
  let state = { F: false, P: null, K: false }
  let sink = 0
  const oracleQuiet = await measure(() => {
    for (let i = 0; i < BATCH; i++) {
      state = oracleStep(state)
      sink += state.notice === null ? 0 : 1
    }
  }, { batch: BATCH })
  const oracleFlip = await measure(() => {
    for (let i = 0; i < BATCH; i++) {
      const P = oracleSelect(state, !state.F)
      const next = oracleStep({ F: state.F, P, K: state.K })
      sink += next.append ? 1 : 0
      state = next
    }
  }, { batch: BATCH })
  if (sink === 0) throw new Error('the oracle never flipped')

  // XState's floor: a two-state toggle, and an event this chart ignores (every region looks).
  const toggle = createActor(createMachine({ initial: 'a', states: { a: { on: { T: 'b' } }, b: { on: { T: 'a' } } } })).start()
  const xstateToggle = await measure(() => {
    for (let i = 0; i < 100; i++) toggle.send({ type: 'T' })
  }, { batch: 100 })
  toggle.stop()
  const actorIgnored = await measure(() => {
    for (let i = 0; i < 100; i++) actor.send({ type: 'LOG.IGNORED' })
  }, { batch: 100 })

  // Straight to the actor: a quiet boundary is one microstep (the mode region answers it; K
  // already equals F, so it only emits). Its emission goes nowhere, as no operation is collecting.
  const actorQuiet = await measure(() => {
    for (let i = 0; i < 100; i++) actor.send({ type: 'STEP_BOUNDARY', aborted: false })
  }, { batch: 100 })
  // A selection queued and cancelled again: two macrosteps that change the intent region.
  const actorSelect = await measure(() => {
    for (let i = 0; i < 50; i++) {
      actor.send({ type: 'SELECT', active: !side.active })
      actor.send({ type: 'SELECT', active: side.active })
    }
  }, { batch: 100 })
  const serviceQuiet = await measure(() => boundaryStep(side), { async: true })
  const serviceFlip = await measure(() => flipStep(side), { async: true })
  const serviceGet = await measure(() => {
    for (let i = 0; i < BATCH; i++) pm.get(agent)
  }, { batch: BATCH })
  await pm.dispose()
  const flushSteps = await countFlushSteps(lib)
  return { flushSteps, oracleQuiet, oracleFlip, xstateToggle, actorIgnored, actorQuiet, actorSelect, serviceQuiet, serviceFlip, serviceGet }
}

/**
 * What one flush asks of XState, counted through the inspection API on a fresh agent: the
 * agent actor's macrosteps (events it processed) and microsteps, and the actors it spawned.
 * @returns {Promise<{ macrosteps: number, microsteps: number, spawned: number }>}
 */
async function countFlushSteps(lib) {
  const agent = { id: 'counted', session: lib.createMemorySessionLog(realisticEntries(1000)) }
  let counting = false
  const counts = { macrosteps: 0, microsteps: 0, spawned: 0 }
  const inspect = (event) => {
    if (!counting) return
    if (event.type === '@xstate.actor') counts.spawned++
    else if (event.actorRef.id !== agent.id) return
    else if (event.type === '@xstate.event') counts.macrosteps++
    else if (event.type === '@xstate.microstep') counts.microsteps++
  }
  const pm = lib.createPlanMode({ section: SECTION }, { inspect })
  if ((await pm.set(agent, !pm.get(agent).active)) !== 'queued') throw new Error('expected a queued selection to flush')
  counting = true
  await pm.stepBoundary(agent)
  counting = false
  await pm.dispose()
  return counts
}
