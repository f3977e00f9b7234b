/**
 * The floors the library's speed is measured against, built in the bench from xstate itself:
 * - `floorMachine`: the minimal async-safe XState chart doing a step boundary's work (the floor
 *   of flush and quiet boundary);
 * - `createFloorPlanMode`: that chart behind the same `get`/`set`/`stepBoundary`/`section`
 *   shapes as the service, so bench/steps.mjs drives both sides with the same code;
 * - `bareSnapshot`: the library's own chart's start snapshot (the floor of an idle attach).
 */
import { assign, createActor, setup, stateIn, waitFor } from 'xstate'

/**
 * The minimal chart: three parallel regions (mode inactive/active, turn idle/open, intent
 * logged/pending/flushing). A `STEP_BOUNDARY` with a selection pending enters `flushing`, whose
 * entry action starts the append on the log and sends its completion back to the actor as an
 * event; nothing is spawned or invoked. The logged event flips the mode region. A throwing or
 * rejecting append becomes an `APPEND_FAILED` event, so the chart is async-safe the same way the
 * library's is (a failing port never stops the actor), just without an invoked actor.
 */
export const floorMachine = setup({
  actions: {
    startAppend: ({ context, self }) => {
      let appended
      try {
        appended = context.log.append('plan/mode', { active: context.target })
      } catch (error) {
        self.send({ type: 'APPEND_FAILED', error })
        return
      }
      if (typeof appended?.then === 'function') {
        appended.then(
          (event) => self.send({ type: 'APPENDED', event }),
          (error) => self.send({ type: 'APPEND_FAILED', error }),
        )
      } else {
        // Sent from inside the macrostep: XState queues it and processes it right after, within
        // the same `send` call, so a synchronous log completes the flush before `send` returns.
        self.send({ type: 'APPENDED', event: appended })
      }
    },
  },
  guards: {
    logsActive: ({ event }) => event.event.data.active === true,
    logsInactive: ({ event }) => event.event.data.active === false,
    isTurnOpen: stateIn({ turn: 'open' }),
  },
}).createMachine({
  id: 'floor',
  type: 'parallel',
  context: ({ input }) => ({ log: input.log, target: null }),
  states: {
    mode: {
      initial: 'inactive',
      states: {
        inactive: { on: { APPENDED: { guard: 'logsActive', target: 'active' } } },
        active: { on: { APPENDED: { guard: 'logsInactive', target: 'inactive' } } },
      },
    },
    turn: {
      initial: 'idle',
      states: {
        idle: { on: { TURN_START: 'open' } },
        open: { on: { TURN_END: 'idle' } },
      },
    },
    intent: {
      initial: 'logged',
      states: {
        // Only what the bench asks of it: a selection queued within an open turn.
        logged: { on: { SELECT: { guard: 'isTurnOpen', target: 'pending', actions: assign({ target: ({ event }) => event.active }) } } },
        pending: { on: { STEP_BOUNDARY: 'flushing' } },
        flushing: {
          entry: 'startAppend',
          on: { APPENDED: 'logged', APPEND_FAILED: 'pending' },
        },
      },
    },
  },
})

const NOTICE = { entering: 'The user switched this session to plan mode.', leaving: 'The user switched this session out of plan mode.' }

/**
 * The floor chart behind the service's method shapes, one actor per agent id (a Map lookup per
 * call, as the service has). Attach is untimed and starts the actor in the state the log is in
 * (F from `foldPlanMode`, the open turn from the last turn event).
 * @param {{ section: string, foldPlanMode: (events: readonly object[]) => boolean, inspect?: Function }} deps
 *   `inspect`: an XState inspection observer for every actor (bench/profile.mjs counts steps with it)
 * @returns {{ get: Function, set: Function, stepBoundary: Function, section: Function, actor: Function }}
 */
export function createFloorPlanMode({ section, foldPlanMode, inspect }) {
  const actors = new Map()

  function actorOf(agent) {
    let actor = actors.get(agent.id)
    if (actor === undefined) {
      const { events } = agent.session
      const active = foldPlanMode(events)
      const lastTurn = events.findLast((event) => event.type === 'turn/start' || event.type === 'turn/end')
      const openTurn = lastTurn?.type === 'turn/start'
      const snapshot = floorMachine.resolveState({
        value: { mode: active ? 'active' : 'inactive', turn: openTurn ? 'open' : 'idle', intent: 'logged' },
        context: { log: agent.session, target: null },
      })
      actor = createActor(floorMachine, inspect ? { snapshot, inspect } : { snapshot }).start()
      actors.set(agent.id, actor)
    }
    return actor
  }

  /** The boundary's result, read from the snapshot once the flush (if any) has landed. */
  async function settled(actor) {
    const snapshot = actor.getSnapshot()
    // Async-safe: a log whose append returns a promise leaves the chart in `flushing` until then.
    return snapshot.value.intent === 'flushing' ? waitFor(actor, (s) => s.value.intent !== 'flushing') : snapshot
  }

  return {
    get(agent) {
      const { value, context } = actorOf(agent).getSnapshot()
      const active = value.mode === 'active'
      return value.intent === 'pending' ? { active, pending: context.target } : { active }
    },
    async set(agent, active) {
      const actor = actorOf(agent)
      actor.send({ type: 'SELECT', active })
      return actor.getSnapshot().value.intent === 'pending' ? 'queued' : 'noop'
    },
    async stepBoundary(agent) {
      const actor = actorOf(agent)
      const before = actor.getSnapshot().value.mode
      actor.send({ type: 'STEP_BOUNDARY' })
      const { value } = await settled(actor)
      const active = value.mode === 'active'
      const messages = value.mode === before ? [] : [notice(active)]
      return { section: active ? section : '', messages }
    },
    section(agent) {
      if (agent === undefined) return ''
      const { value, context } = actorOf(agent).getSnapshot()
      return (value.intent === 'pending' ? context.target : value.mode === 'active') ? section : ''
    },
    actor: actorOf,
    dispose() {
      for (const actor of actors.values()) actor.stop()
      actors.clear()
    },
  }
}

/** A notice message of the same shape as the service's (a user message with one text part). */
function notice(active) {
  const text = active ? NOTICE.entering : NOTICE.leaving
  return { id: globalThis.crypto.randomUUID(), role: 'user', content: [{ type: 'text', text }] }
}

/**
 * The snapshot a bare started actor of the library's chart has, resolved again from its value
 * and context (as an attach from a log would start it): the floor of an idle attach is
 * `createActor(planModeMachine, { snapshot }).start()`. Taken from a started actor, so the bench
 * does not depend on the context's fields.
 * @param {{ planModeMachine: object }} lib
 * @returns {object} a snapshot of `planModeMachine`
 */
export function bareSnapshot({ planModeMachine }) {
  const probe = createActor(planModeMachine).start()
  const { value, context } = probe.getSnapshot()
  probe.stop()
  return planModeMachine.resolveState({ value, context })
}
