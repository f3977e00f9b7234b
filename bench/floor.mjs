/**
 * The floors the library's speed is measured against, built in the bench from xstate itself:
 * - `floorMachine`: the minimal async-safe XState chart doing a step boundary's work (the floor
 *   of flush and quiet boundary);
 * - `createFloorPlanMode`: that chart behind the same `get`/`set`/`stepBoundary`/`section`
 *   shapes as the service, so bench/steps.mjs drives both sides with the same code;
 * - `bareSnapshot`: the library's own chart's start snapshot (the floor of an idle attach).
 */
import { assign, createActor, emit, fromTransition, setup, stateIn, waitFor } from 'xstate'

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
              // A chart that decides the boundary answers it in a transition, by an emitted result.
              ...(decides ? { STEP_BOUNDARY: { actions: emit({ type: 'boundary' }) } } : {}),
            },
          },
          pending: configured ? { initial: 'entering', states: { entering: selection, leaving: selection } } : { on: { STEP_BOUNDARY: 'flushing' } },
          flushing: {
            entry: 'startAppend',
            on: decides
              ? { APPENDED: { target: 'logged', actions: emit({ type: 'boundary' }) }, APPEND_FAILED: { target: 'pending', actions: emit({ type: 'boundary' }) } }
              : { APPENDED: 'logged', APPEND_FAILED: 'pending' },
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

/** Whether a selection is pending (`pending`, or one of its children in the configured chart). */
const isPending = (value) => value.intent === 'pending' || typeof value.intent === 'object'
/** Whether the mode region is `active` (or one of its children in the configured chart). */
const isActive = (value) => value.mode === 'active' || (typeof value.mode === 'object' && 'active' in value.mode)

const NOTICE = { entering: 'The user switched this session to plan mode.', leaving: 'The user switched this session out of plan mode.' }

/**
 * The operations' queue of docs/spec.md §1 at its least: a chart (a transition actor) per service
 * through which each operation takes its turn (`TAKE`) and gives it up (`END`), the next one
 * starting then. An operation's run is deferred until the queue's new state is the actor's.
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

/**
 * The floor chart behind the service's method shapes, one actor per agent id (a Map lookup per
 * call, as the service has). Attach is untimed and starts the actor in the state the log is in
 * (F from `foldPlanMode`, the open turn from the last turn event).
 *
 * Two options make it the least a chart built as issue #25 asks can cost (reported bounds, not
 * the floor):
 * - `decides`: the chart decides every boundary in a transition and emits its result, which the
 *   call waits for (a quiet boundary is a transition with one `emit` action; a flush's landing
 *   gets that action too), rather than the call reading the snapshot after an event no state
 *   handles;
 * - `queued`: every operation (`set`, `stepBoundary`) takes its turn in a queue chart (§1);
 * - `configured`: the chart's configuration at rest is as large as the library's (mode's children
 *   `headerTells`/`newsOutlivesHeader`, a pending selection two levels deep, an idle `review`
 *   region and a `serving` `lifecycle` region beside the three), with no more behaviour: what
 *   XState's per-step work over a larger configuration costs by itself.
 * @param {{ section: string, foldPlanMode: (events: readonly object[]) => boolean, inspect?: Function, decides?: boolean, queued?: boolean, configured?: boolean }} deps
 *   `inspect`: an XState inspection observer for every actor (bench/profile.mjs counts steps with it)
 * @returns {{ get: Function, set: Function, stepBoundary: Function, section: Function, actor: Function }}
 */
export function createFloorPlanMode({ section, foldPlanMode, inspect, decides = false, queued = false, configured = false }) {
  const actors = new Map()
  const machine = floorChartOf(decides, configured)
  /** Per actor, the call waiting for its boundary's emitted result. */
  const answers = new Map()
  const queue = queued ? createActor(queueLogic).start() : undefined

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
      if (decides) actor.on('boundary', () => answers.get(actor)?.())
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

  /** Sends the boundary and waits for the chart's emitted result. */
  function answered(actor) {
    return new Promise((resolve) => {
      answers.set(actor, resolve)
      actor.send({ type: 'STEP_BOUNDARY' })
    })
  }

  /** Runs `run` in its turn of the queue (`queued`), or at once. */
  function inTurn(run) {
    if (queue === undefined) return run()
    return new Promise((resolve, reject) => {
      const end = () => queue.send({ type: 'END' })
      queue.send({ type: 'TAKE', run: () => run().then((value) => (end(), resolve(value)), (error) => (end(), reject(error))) })
    })
  }

  async function boundary(agent) {
    const actor = actorOf(agent)
    const before = isActive(actor.getSnapshot().value)
    let value
    if (decides) {
      await answered(actor)
      value = actor.getSnapshot().value
    } else {
      actor.send({ type: 'STEP_BOUNDARY' })
      value = (await settled(actor)).value
    }
    const active = isActive(value)
    const messages = active === before ? [] : [notice(active)]
    return { section: active ? section : '', messages }
  }

  async function select(agent, active) {
    const actor = actorOf(agent)
    actor.send({ type: 'SELECT', active })
    return isPending(actor.getSnapshot().value) ? 'queued' : 'noop'
  }

  return {
    get(agent) {
      const { value, context } = actorOf(agent).getSnapshot()
      const active = isActive(value)
      return isPending(value) ? { active, pending: context.target } : { active }
    },
    set: (agent, active) => inTurn(() => select(agent, active)),
    stepBoundary: (agent) => inTurn(() => boundary(agent)),
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
