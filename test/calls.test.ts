import { describe, expect, it } from 'vitest'
import { createActor } from 'xstate'
import { answerCallMachine, exitCallMachine, startCall, type CallAgent, type ExitCallResult, type TakeTurn } from '../src/machines/calls.machine.js'
import { abandonedOf, agentsLogic, agentsTransition, attachedIds, currentAttachment, nextGeneration, type AgentsContext, type AttachedAgent } from '../src/machines/agents.machine.js'
import { PersistentMap } from '../src/machines/persistent-map.js'
import type { AnyActorScope } from 'xstate'
import { planModeMachine } from '../src/machines/planMode.machine.js'
import type { PlanModeEmitted, PlanModeEvent } from '../src/machines/planMode.events.js'
import type { ReviewOutcome } from '../src/log/kinds.js'
import { answerClosedMessage } from '../src/plan/review.js'

/**
 * The call actors (src/machines/calls.machine.ts) and the registry chart
 * (src/machines/agents.machine.ts) on their own, with a fake agent: each final state settles the
 * caller once, and only the reports on the call's own review move it.
 */

/** A fake agent: what it was sent, and a way to emit what its chart would. */
function fakeAgent() {
  const listeners = new Set<{ told: (emitted: PlanModeEmitted) => void; stopped: () => void }>()
  const sent: PlanModeEvent[] = []
  let landStore!: () => void
  const store = new Promise<void>((resolve) => (landStore = resolve))
  const agent: CallAgent = {
    listen(told, stopped) {
      const listener = { told, stopped }
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    send: (event) => void sent.push(event),
    storeWritten: () => store,
  }
  return {
    agent,
    sent,
    landStore,
    emit: (emitted: PlanModeEmitted) => [...listeners].forEach((l) => l.told(emitted)),
    stop: () => [...listeners].forEach((l) => l.stopped()),
    listening: () => listeners.size,
  }
}

/** A turn the test gives: `turn()` answers the operation with the review number, `refuse` rejects it. */
function heldTurn() {
  let turned: Parameters<TakeTurn>[0] | undefined
  let refuse!: (error: unknown) => void
  const take: TakeTurn = (t) => {
    turned = t
    return new Promise((_, reject) => (refuse = reject))
  }
  return { take, turn: (review: number, agent: CallAgent) => turned!(review, agent), refuse: (error: unknown) => refuse(error) }
}

/** Whether a promise has settled, and how, after the microtasks queued so far. */
async function state<T>(promise: Promise<T>): Promise<string> {
  const seen = await Promise.race([promise.then((v) => `resolved ${JSON.stringify(v)}`, (e: Error) => `rejected ${e.message}`), new Promise<string>((r) => setImmediate(() => r('pending')))])
  return seen
}

function exitCall(options: { signal?: AbortSignal; reviewId?: string } = {}) {
  const turn = heldTurn()
  let settle!: { resolve: (v: ExitCallResult) => void; reject: (e: unknown) => void }
  const result = new Promise<ExitCallResult>((resolve, reject) => (settle = { resolve, reject }))
  const actor = createActor(exitCallMachine, { input: { settle, abortMessage: () => 'aborted by the host', ...options } })
  startCall(actor, turn.take)
  return { actor, result, ...turn }
}

describe('calls are actors (calls.machine.ts)', () => {
  it('R46: an exit call aborted before its turn fails at once; the review its turn still opens is aborted, and the call ends `aborted`', async () => {
    const controller = new AbortController()
    const { actor, result, turn } = exitCall({ signal: controller.signal })
    expect(actor.getSnapshot().value).toEqual({ queued: 'waiting' })
    controller.abort()
    expect(await state(result)).toBe('rejected aborted by the host')
    const fake = fakeAgent()
    turn(4, fake.agent)
    expect(fake.sent).toEqual([{ type: 'REVIEW.ABORT', review: 4, message: 'aborted by the host' }])
    expect(actor.getSnapshot().status).toBe('done')
    expect(actor.getSnapshot().value).toBe('aborted')
  })

  it('R47: a channel exit call hears only its own review, and resolves approved once the pending store has the leave', async () => {
    const { actor, result, turn } = exitCall()
    const fake = fakeAgent()
    turn(2, fake.agent)
    expect(actor.getSnapshot().value).toBe('open')
    fake.emit({ type: 'review.closed', review: 1, result: { outcome: 'keep-planning', error: 'another call' } })
    expect(actor.getSnapshot().value).toBe('open')
    fake.emit({ type: 'review.closed', review: 2, result: { outcome: 'approved' } })
    expect(actor.getSnapshot().value).toBe('storing')
    expect(await state(result)).toBe('pending')
    fake.landStore()
    expect(await state(result)).toBe('resolved {"approved":true}')
    expect(actor.getSnapshot().value).toBe('approved')
    expect(fake.listening()).toBe(0)
  })

  it('R46, R48: an abort of an open channel review is sent to the chart, whose closing fails the call with its message', async () => {
    const controller = new AbortController()
    const { actor, result, turn } = exitCall({ signal: controller.signal })
    const fake = fakeAgent()
    turn(1, fake.agent)
    controller.abort()
    expect(fake.sent).toEqual([{ type: 'REVIEW.ABORT', review: 1, message: 'aborted by the host' }])
    expect(await state(result)).toBe('pending')
    fake.emit({ type: 'review.closed', review: 1, result: { outcome: 'aborted', error: 'aborted by the host' } })
    expect(await state(result)).toBe('rejected aborted by the host')
    expect(actor.getSnapshot().value).toBe('failed')
  })

  it('R79: a durable exit call is submitted once its request landed; an abort no longer touches it', async () => {
    const controller = new AbortController()
    const { actor, result, turn } = exitCall({ signal: controller.signal, reviewId: 'review-1' })
    const fake = fakeAgent()
    turn(1, fake.agent)
    expect(actor.getSnapshot().value).toBe('requesting')
    controller.abort()
    expect(fake.sent).toEqual([])
    fake.emit({ type: 'review.landed', review: 1 })
    expect(await state(result)).toBe('resolved {"submitted":true,"reviewId":"review-1"}')
    expect(actor.getSnapshot().value).toBe('submitted')
  })

  it('R42, R60: a call whose operation was refused, or whose agent stopped, fails with that reason', async () => {
    const refused = exitCall()
    refused.refuse(new Error('plan mode is not active'))
    expect(await state(refused.result)).toBe('rejected plan mode is not active')
    expect(refused.actor.getSnapshot().value).toBe('failed')
    const stopped = exitCall()
    const fake = fakeAgent()
    stopped.turn(1, fake.agent)
    fake.stop()
    expect(await state(stopped.result)).toBe('rejected plan-mode service is disposed')
  })

  it('R80: an answer resolves with the recorded outcome; one whose record lost, or failed, rejects', async () => {
    const answer = (reviewId: string) => {
      const turn = heldTurn()
      let settle!: { resolve: (v: ReviewOutcome) => void; reject: (e: unknown) => void }
      const result = new Promise<ReviewOutcome>((resolve, reject) => (settle = { resolve, reject }))
      const actor = createActor(answerCallMachine, { input: { settle, reviewId } })
      startCall(actor, turn.take)
      const fake = fakeAgent()
      turn.turn(7, fake.agent)
      return { actor, result, fake }
    }
    const recorded = answer('r-1')
    expect(recorded.actor.getSnapshot().value).toBe('recording')
    recorded.fake.emit({ type: 'review.closed', review: 7, result: { outcome: 'keep-planning', error: 'x' } })
    recorded.fake.landStore()
    expect(await state(recorded.result)).toBe('resolved "keep-planning"')
    const lost = answer('r-2')
    lost.fake.emit({ type: 'review.closed', review: 7, result: { outcome: 'approved' }, lost: true })
    expect(await state(lost.result)).toBe(`rejected ${answerClosedMessage('r-2', 'approved')}`)
    const failed = answer('r-3')
    failed.fake.emit({ type: 'review.closed', review: 7, result: { outcome: 'failed' }, failed: new Error('disk full') })
    expect(await state(failed.result)).toBe('rejected disk full')
    expect(failed.actor.getSnapshot().value).toBe('failed')
  })
})

describe('the agents chart (agents.machine.ts)', () => {
  const NONE_BUSY = new Set<string>()
  /** A fake attached agent whose chart is a bare, idle actor of the plan-mode chart. */
  function attached(agentId: string, generation = 1, appends?: Promise<void>) {
    const snapshot = createActor(planModeMachine).start().getSnapshot()
    let closes = 0
    let finish!: () => void
    const closed = new Promise<void>((resolve) => (finish = resolve))
    const attachment: AttachedAgent & { closes: () => number; finish: () => void } = {
      agentId,
      generation,
      snapshot,
      keepsPendingDurably: false,
      hasAppendsInFlight: appends !== undefined,
      close: () => (closes++, closed),
      appendsSettled: () => appends ?? Promise.resolve(),
      closes: () => closes,
      finish,
    }
    return attachment
  }

  it('R77: past the bound, the least recently used idle agent leaves memory; the one just attached and a used one stay', async () => {
    const agents = createActor(agentsLogic, { input: { maxAttached: 2, busy: () => NONE_BUSY } }).start()
    const [a, b, c] = [attached('a'), attached('b'), attached('c')]
    agents.send({ type: 'ATTACHED', attachment: a, busy: NONE_BUSY })
    agents.send({ type: 'ATTACHED', attachment: b, busy: NONE_BUSY })
    agents.send({ type: 'USED', attachment: a })
    agents.send({ type: 'ATTACHED', attachment: c, busy: NONE_BUSY })
    expect([a.closes(), b.closes(), c.closes()]).toEqual([0, 1, 0])
    // Closing, b still answers reads until its close resolved.
    expect(currentAttachment(agents.getSnapshot().context, 'b')).toBe(b)
    b.finish()
    await new Promise((resolve) => setImmediate(resolve))
    expect(currentAttachment(agents.getSnapshot().context, 'b')).toBeUndefined()
    expect(attachedIds(agents.getSnapshot().context)).toEqual(['a', 'c'])
    // Evicted and waited for by nothing: forgotten entirely (R63: a later attach counts from 1).
    expect(nextGeneration(agents.getSnapshot().context, 'b')).toBe(1)
    expect(agents.getSnapshot().context.agents.has('b')).toBe(false)
  })

  it('R60: dispose closes every attachment; the chart is done only once all have closed', async () => {
    const agents = createActor(agentsLogic, { input: { maxAttached: undefined, busy: () => NONE_BUSY } }).start()
    const [a, b] = [attached('a'), attached('b')]
    agents.send({ type: 'ATTACHED', attachment: a, busy: NONE_BUSY })
    agents.send({ type: 'ATTACHED', attachment: b, busy: NONE_BUSY })
    agents.send({ type: 'DISPOSE' })
    expect([a.closes(), b.closes()]).toEqual([1, 1])
    expect(agents.getSnapshot().context.phase).toBe('disposing')
    a.finish()
    await new Promise((resolve) => setImmediate(resolve))
    expect(agents.getSnapshot().context.phase).toBe('disposing')
    b.finish()
    await new Promise((resolve) => setImmediate(resolve))
    expect(agents.getSnapshot().context.phase).toBe('disposed')
  })

  it('R77: the registry is a pure transition: each event makes new values, the state it was given stays as it was, closes are deferred effects', () => {
    const effects: (() => void)[] = []
    const scope = { self: { send: () => {} }, defer: (fn: () => void) => effects.push(fn) } as unknown as AnyActorScope
    const empty: AgentsContext = { phase: 'serving', maxAttached: 1, busy: () => NONE_BUSY, agents: PersistentMap.empty(), attached: 0, closing: 0, clock: 0, uses: { buffer: [], start: 0, end: 0 } }
    const [a, b] = [attached('a'), attached('b')]
    const one = agentsTransition(empty, { type: 'ATTACHED', attachment: a, busy: NONE_BUSY }, scope)
    const two = agentsTransition(one, { type: 'ATTACHED', attachment: b, busy: NONE_BUSY }, scope)
    // a left memory in `two`: closing there, and its close is an effect, not run by the transition.
    expect(a.closes()).toBe(0)
    expect(effects).toHaveLength(1)
    expect([empty.attached, one.attached, two.attached, two.closing]).toEqual([0, 1, 2, 1])
    expect([empty.agents.size, one.agents.get('a')!.closing, two.agents.get('a')!.closing]).toEqual([0, false, true])
    expect(attachedIds(one)).toEqual(['a'])
    expect(attachedIds(two)).toEqual(['a', 'b'])
    effects[0]!()
    expect(a.closes()).toBe(1)
    // An event that changes nothing returns the state itself.
    expect(agentsTransition(two, { type: 'CLOSE', attachment: a }, scope)).toBe(two)
    expect(agentsTransition(two, { type: 'ABANDONED.TAKEN', agentId: 'a' }, scope)).toBe(two)
  })

  it('R73: the appends a close abandoned wait for the agent\'s next operation until taken, or until they settled', async () => {
    const agents = createActor(agentsLogic, { input: { maxAttached: undefined, busy: () => NONE_BUSY } }).start()
    let land!: () => void
    const appends = new Promise<void>((resolve) => (land = resolve))
    const a = attached('a', 1, appends)
    agents.send({ type: 'ATTACHED', attachment: a, busy: NONE_BUSY })
    agents.send({ type: 'CLOSE', attachment: a })
    a.finish()
    await new Promise((resolve) => setImmediate(resolve))
    expect(currentAttachment(agents.getSnapshot().context, 'a')).toBeUndefined()
    expect(abandonedOf(agents.getSnapshot().context, 'a')).toBe(appends)
    // A detach is no eviction: the next attachment is the agent's second (R63).
    expect(nextGeneration(agents.getSnapshot().context, 'a')).toBe(2)
    land()
    await new Promise((resolve) => setImmediate(resolve))
    expect(abandonedOf(agents.getSnapshot().context, 'a')).toBeUndefined()
  })

  it('R63, R77: an evicted agent a call still waits for keeps its generation; one nothing waits for is forgotten', async () => {
    const busyA = new Set(['a'])
    const agents = createActor(agentsLogic, { input: { maxAttached: 1, busy: () => busyA } }).start()
    const [a, b, c] = [attached('a'), attached('b'), attached('c')]
    agents.send({ type: 'ATTACHED', attachment: a, busy: NONE_BUSY })
    agents.send({ type: 'ATTACHED', attachment: b, busy: NONE_BUSY })
    agents.send({ type: 'ATTACHED', attachment: c, busy: NONE_BUSY })
    expect([a.closes(), b.closes(), c.closes()]).toEqual([1, 1, 0])
    a.finish()
    b.finish()
    await new Promise((resolve) => setImmediate(resolve))
    expect([nextGeneration(agents.getSnapshot().context, 'a'), nextGeneration(agents.getSnapshot().context, 'b')]).toEqual([2, 1])
    expect(attachedIds(agents.getSnapshot().context)).toEqual(['c'])
  })

  it('R77: the order of use stays as large as the attached agents, however many were touched (no memory kept per agent that left)', async () => {
    const agents = createActor(agentsLogic, { input: { maxAttached: 20, busy: () => NONE_BUSY } }).start()
    for (let i = 0; i < 5000; i++) {
      const a = attached(`agent-${i}`)
      a.finish()
      agents.send({ type: 'ATTACHED', attachment: a, busy: NONE_BUSY })
      agents.send({ type: 'USED', attachment: a })
      await new Promise((resolve) => setImmediate(resolve))
    }
    await new Promise((resolve) => setImmediate(resolve))
    const { context } = agents.getSnapshot()
    expect(attachedIds(context)).toHaveLength(20)
    expect(context.agents.size).toBe(20)
    expect(context.uses.buffer.length).toBeLessThan(300) // 10,000 uses were made
  })
})
