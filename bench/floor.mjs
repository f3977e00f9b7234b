/**
 * The floors the library's speed is measured against, built in the bench from xstate itself:
 * - `floorMachine`: the minimal async-safe XState chart doing a step boundary's work (the floor
 *   of flush and quiet boundary);
 * - `createFloorPlanMode`: that chart behind the same `get`/`set`/`stepBoundary`/`section`
 *   shapes as the service, so bench/steps.mjs drives both sides with the same code; its options
 *   add, one at a time, parts of the library's shape, whose cost the steps suite reports;
 * - `bareSnapshot`: the library's own chart's start snapshot (the floor of an idle attach).
 */
import { assign, createActor, fromTransition, setup, stateIn, waitFor } from 'xstate'

/**
 * The minimal chart: three parallel regions (mode inactive/active, turn idle/open, intent
 * logged/pending/flushing). A `STEP_BOUNDARY` with a selection pending enters `flushing`, whose
 * entry action starts the append on the log and sends its completion back to the actor as an
 * event; nothing is spawned or invoked. The logged event flips the mode region. A throwing or
 * rejecting append becomes an `APPEND_FAILED` event, so the chart is async-safe the same way the
 * library's is (a failing port never stops the actor), just without an invoked actor.
 */
function floorChart({ decides = false, configured = false } = {}) {
  // `configured`: the library's configuration at rest around the same work (see createFloorPlanMode).
  const headers = configured ? { initial: 'headerTells', states: { headerTells: {}, newsOutlivesHeader: {} } } : {}
  const selection = { initial: 'queued', states: { queued: { on: { STEP_BOUNDARY: '#floor.intent.flushing' } } } }
  return setup({
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
          inactive: { ...headers, on: { APPENDED: { guard: 'logsActive', target: 'active' } } },
          active: { ...headers, on: { APPENDED: { guard: 'logsInactive', target: 'inactive' } } },
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
          logged: {
            on: {
              SELECT: { guard: 'isTurnOpen', target: 'pending', actions: assign({ target: ({ event }) => event.active }) },
              // A chart that decides the boundary takes it as a transition (here one with no action).
              ...(decides ? { STEP_BOUNDARY: {} } : {}),
            },
          },
          pending: configured ? { initial: 'entering', states: { entering: selection, leaving: selection } } : { on: { STEP_BOUNDARY: 'flushing' } },
          flushing: {
            entry: 'startAppend',
            on: { APPENDED: 'logged', APPEND_FAILED: 'pending' },
          },
        },
      },
      ...(configured
        ? {
            review: { initial: 'idle', states: { idle: {}, open: { initial: 'undecided', states: { undecided: {}, recording: {} } } } },
            lifecycle: { initial: 'serving', states: { serving: {}, closing: {}, stopped: { type: 'final' } } },
          }
        : {}),
    },
  })
}

export const floorMachine = floorChart()
/** The floor's variants (`createFloorPlanMode`'s options), made once each. */
const variants = new Map()
function floorChartOf(decides, configured) {
  if (!decides && !configured) return floorMachine
  const key = `${decides}/${configured}`
  if (!variants.has(key)) variants.set(key, floorChart({ decides, configured }))
  return variants.get(key)
}

const NOTICE = { entering: 'The user switched this session to plan mode.', leaving: 'The user switched this session out of plan mode.' }

/**
 * The operations' queue at its least: a transition actor per service through which each
 * operation takes its turn (`TAKE`) and gives it up (`END`), the next one starting then. An
 * operation's run is deferred until the queue's new state is the actor's. (docs/spec.md §1: an
 * agent's operations take turns across its attachments, so the queue outlives the agent's actor;
 * this one serializes every agent's, which costs the same for the one agent the bench drives.)
 */
const queueLogic = fromTransition((queue, event, { defer }) => {
  if (event.type === 'TAKE') {
    if (queue.length === 0) defer(event.run)
    return [...queue, event.run]
  }
  const rest = queue.slice(1)
  if (rest.length > 0) defer(rest[0])
  return rest
}, [])

/** Runs `run` in its turn of `queue`: resolves or rejects as its promise does, then the next one runs. */
function inTurn(queue, run) {
  return new Promise((resolve, reject) => {
    const end = () => queue.send({ type: 'END' })
    queue.send({ type: 'TAKE', run: () => run().then((value) => (end(), resolve(value)), (error) => (end(), reject(error))) })
  })
}

/** Whether a selection is pending (`pending`, or one of its children in the configured chart). */
const isPending = (value) => value.intent === 'pending' || typeof value.intent === 'object'
/** Whether the mode region is `active` (or one of its children in the configured chart). */
const isActive = (value) => value.mode === 'active' || (typeof value.mode === 'object' && 'active' in value.mode)

/**
 * The floor chart behind the service's method shapes, one actor per agent id (a Map lookup per
 * call, as the service has). Attach is untimed and starts the actor in the state the log is in
 * (F from `foldPlanMode`, the open turn from the last turn event).
 *
 * Three options make it pay, each alone, for a part of the library's shape (reported beside the
 * floor, never the floor itself):
 * - `decides`: the chart takes every boundary as a transition: a quiet one is a targetless
 *   transition with no action (the inspector shows it taken), where the floor's chart handles no
 *   such event; the result is read from the snapshot either way;
 * - `queued`: every operation (`set`, `stepBoundary`) takes its turn in a queue actor (above);
 * - `configured`: the chart's configuration at rest is as large as the library's (mode's children
 *   `headerTells`/`newsOutlivesHeader`, a pending selection two levels deep, an idle `review`
 *   region and a `serving` `lifecycle` region beside the three), with no more behaviour: what
 *   XState's work per step over a larger configuration costs by itself.
 * @param {{ section: string, foldPlanMode: (events: readonly object[]) => boolean, inspect?: Function, decides?: boolean, queued?: boolean, configured?: boolean }} deps
 *   `inspect`: an XState inspection observer for every actor (bench/profile.mjs counts steps with it)
 * @returns {{ get: Function, set: Function, stepBoundary: Function, section: Function, actor: Function }}
 */
export function createFloorPlanMode({ section, foldPlanMode, inspect, decides = false, queued = false, configured = false }) {
  const actors = new Map()
  const machine = floorChartOf(decides, configured)

  function actorOf(agent) {
    let actor = actors.get(agent.id)
    if (actor === undefined) {
      const { events } = agent.session
      const active = foldPlanMode(events)
      const lastTurn = events.findLast((event) => event.type === 'turn/start' || event.type === 'turn/end')
      const openTurn = lastTurn?.type === 'turn/start'
      const snapshot = machine.resolveState({
        value: { mode: active ? 'active' : 'inactive', turn: openTurn ? 'open' : 'idle', intent: 'logged' },
        context: { log: agent.session, target: null },
      })
      actor = createActor(machine, inspect ? { snapshot, inspect } : { snapshot }).start()
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

  async function set(agent, active) {
    const actor = actorOf(agent)
    actor.send({ type: 'SELECT', active })
    return isPending(actor.getSnapshot().value) ? 'queued' : 'noop'
  }

  async function stepBoundary(agent) {
    const actor = actorOf(agent)
    const before = isActive(actor.getSnapshot().value)
    actor.send({ type: 'STEP_BOUNDARY' })
    const { value } = await settled(actor)
    const active = isActive(value)
    const messages = active === before ? [] : [notice(active)]
    return { section: active ? section : '', messages }
  }

  const queue = queued ? createActor(queueLogic).start() : undefined
  return {
    get(agent) {
      const { value, context } = actorOf(agent).getSnapshot()
      const active = isActive(value)
      return isPending(value) ? { active, pending: context.target } : { active }
    },
    // Chosen once: the floor itself calls its methods with no wrapper around them.
    set: queue === undefined ? set : (agent, active) => inTurn(queue, () => set(agent, active)),
    stepBoundary: queue === undefined ? stepBoundary : (agent) => inTurn(queue, () => stepBoundary(agent)),
    section(agent) {
      if (agent === undefined) return ''
      const { value, context } = actorOf(agent).getSnapshot()
      return (isPending(value) ? context.target : isActive(value)) ? section : ''
    },
    actor: actorOf,
    dispose() {
      for (const actor of actors.values()) actor.stop()
      actors.clear()
      queue?.stop()
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
