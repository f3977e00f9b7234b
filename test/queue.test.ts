import { describe, expect, it } from 'vitest'
import type { AnyActorScope } from 'xstate'
import { PersistentMap } from '../src/machines/persistent-map.js'
import { createQueue, isBusy, queueTransition, takeTurn, type QueueActor, type QueueState } from '../src/machines/queue.machine.js'

/**
 * The agents' queues of operations (src/machines/queue.machine.ts, docs/spec.md §1) on their own:
 * each operation is a state of the queue (queued → running → ended → done), operations run one
 * after another, and calls settle in the order they were made.
 */

/** A promise the test settles. */
function deferred<T = string>() {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)))
  return { promise, resolve, reject }
}

/** Whether a promise has settled, and how, once the callbacks queued so far have run. */
async function state(promise: Promise<unknown>): Promise<string> {
  return Promise.race([
    promise.then((v) => `resolved ${String(v)}`, (e: Error) => `rejected ${e.message}`),
    new Promise<string>((r) => setImmediate(() => r('pending'))),
  ])
}

/** The states of the agent's operations, in the order of the calls. */
function states(queue: QueueActor, agentId: string): string[] {
  return (queue.getSnapshot().context.queues.get(agentId) ?? []).map((operation) => operation.state)
}

describe('the queue of operations (queue.machine.ts)', () => {
  it('§1: an operation of an agent with nothing in progress runs within the call, and the queue is forgotten once it settled', async () => {
    const queue = createQueue()
    const ran: string[] = []
    const held = deferred()
    const call = takeTurn(queue, 'a', () => (ran.push('first'), held.promise))
    expect(ran).toEqual(['first'])
    expect(states(queue, 'a')).toEqual(['running'])
    expect(isBusy(queue.getSnapshot().context, 'a')).toBe(true)
    held.resolve('one')
    expect(await call).toBe('one')
    expect(isBusy(queue.getSnapshot().context, 'a')).toBe(false)
    expect(queue.getSnapshot().context.queues.size).toBe(0)
  })

  it('§1: a call made while another runs waits `queued`, and runs within the `end` of the one before', async () => {
    const queue = createQueue()
    const ran: string[] = []
    let endFirst!: () => void
    const first = deferred()
    const one = takeTurn(queue, 'a', (end) => ((endFirst = end), ran.push('first'), first.promise))
    const two = takeTurn(queue, 'a', async () => (ran.push('second'), 'two'))
    expect(ran).toEqual(['first'])
    expect(states(queue, 'a')).toEqual(['running', 'queued'])
    endFirst()
    // The second ran within `end`; it settled, but its caller waits for the first's (calls settle in order).
    expect(ran).toEqual(['first', 'second'])
    expect(await state(two)).toBe('pending')
    expect(states(queue, 'a')).toEqual(['ended', 'done'])
    first.resolve('one')
    expect(await one).toBe('one')
    expect(await two).toBe('two')
    expect(isBusy(queue.getSnapshot().context, 'a')).toBe(false)
  })

  it('§1: an operation whose promise settles without `end` ends then; the next one runs', async () => {
    const queue = createQueue()
    const first = deferred()
    const ran: string[] = []
    const one = takeTurn(queue, 'a', () => first.promise)
    const two = takeTurn(queue, 'a', async () => (ran.push('second'), 'two'))
    expect(states(queue, 'a')).toEqual(['running', 'queued'])
    first.resolve('one')
    expect(await one).toBe('one')
    expect(await two).toBe('two')
    expect(ran).toEqual(['second'])
  })

  it('§1: an operation whose end tells its final outcome is done then: its caller settles without waiting for its promise, and the next one runs', async () => {
    const queue = createQueue()
    const never = new Promise<string>(() => {})
    const ran: string[] = []
    const one = takeTurn(queue, 'a', (end) => (end({ ok: true, value: 'one' }), never))
    const two = takeTurn(queue, 'a', (end) => (ran.push('second'), end({ ok: false, error: new Error('refused') }), never))
    // Both were done at their ends, in one call each: nothing is left in the queue.
    expect(ran).toEqual(['second'])
    expect(isBusy(queue.getSnapshot().context, 'a')).toBe(false)
    expect(await one).toBe('one')
    await expect(two).rejects.toThrow('refused')
  })

  it('§1: callers settle in a microtask after their operations leave, in call order, also when a nested call ends within the call before it', async () => {
    const queue = createQueue()
    const order: string[] = []
    const inner: Promise<unknown>[] = []
    const outer = takeTurn(queue, 'a', (end) => {
      inner.push(takeTurn(queue, 'a', async (innerEnd) => (innerEnd({ ok: true, value: 'inner' }), 'inner')).then((v) => order.push(v)))
      end({ ok: true, value: 'outer' })
      return Promise.resolve('outer')
    })
    // The caller attaches its reaction after the call returned: it still hears first.
    await Promise.all([outer.then((v) => order.push(v)), ...inner])
    expect(order).toEqual(['outer', 'inner'])
  })

  it('§1: calls settle in the order they were made, also when a later one settles first', async () => {
    const queue = createQueue()
    const order: string[] = []
    const first = deferred()
    const second = deferred()
    const one = takeTurn(queue, 'a', (end) => (end(), first.promise)).then((v) => order.push(v))
    const two = takeTurn(queue, 'a', (end) => (end(), second.promise)).then((v) => order.push(v))
    expect(states(queue, 'a')).toEqual(['ended', 'ended'])
    second.resolve('two')
    expect(await state(two)).toBe('pending')
    expect(states(queue, 'a')).toEqual(['ended', 'done'])
    first.resolve('one')
    await Promise.all([one, two])
    expect(order).toEqual(['one', 'two'])
  })

  it('§1: a call made from inside a running operation (a port that calls the service) takes its place behind it', async () => {
    const queue = createQueue()
    const order: string[] = []
    const outer = deferred()
    let inner: Promise<unknown> | undefined
    const one = takeTurn(queue, 'a', (end) => {
      inner = takeTurn(queue, 'a', async () => (order.push('inner ran'), 'inner')).then((v) => order.push(v))
      order.push('outer ran')
      end()
      return outer.promise
    }).then((v) => order.push(v))
    expect(order).toEqual(['outer ran', 'inner ran'])
    expect(await state(inner!)).toBe('pending')
    outer.resolve('outer')
    await Promise.all([one, inner])
    expect(order).toEqual(['outer ran', 'inner ran', 'outer', 'inner'])
  })

  it('§1: an operation that throws or rejects rejects its caller only; the next one runs', async () => {
    const queue = createQueue()
    const thrown = takeTurn(queue, 'a', () => {
      throw new Error('refused')
    })
    const rejected = takeTurn(queue, 'a', () => Promise.reject(new Error('log failed')))
    const after = takeTurn(queue, 'a', async () => 'ran')
    expect(await state(thrown)).toBe('rejected refused')
    expect(await state(rejected)).toBe('rejected log failed')
    expect(await after).toBe('ran')
    expect(queue.getSnapshot().status).toBe('active')
  })

  it('§1: the queue belongs to the agent: another agent\'s operation runs while one waits', async () => {
    const queue = createQueue()
    const held = deferred()
    const ran: string[] = []
    const a = takeTurn(queue, 'a', () => held.promise)
    const b = takeTurn(queue, 'b', async () => (ran.push('b'), 'b'))
    expect(ran).toEqual(['b'])
    expect(await b).toBe('b')
    expect(isBusy(queue.getSnapshot().context, 'a')).toBe(true)
    expect(isBusy(queue.getSnapshot().context, 'b')).toBe(false)
    held.resolve('a')
    expect(await a).toBe('a')
  })

  it('§1: the transition is pure: it returns new values and leaves the state it was given as it was; its effects are deferred', () => {
    const deferredEffects: (() => void)[] = []
    const scope = { self: { send: () => {} }, defer: (fn: () => void) => deferredEffects.push(fn) } as unknown as AnyActorScope
    const empty: QueueState = { queues: PersistentMap.empty(), taken: 0 }
    const ran: string[] = []
    const run = async () => (ran.push('run'), 'x')
    const one = queueTransition(empty, { type: 'TAKE', agentId: 'a', run, settle: () => {} }, scope)
    expect(empty.queues.size).toBe(0)
    expect(one.queues.get('a')!.map((o) => o.state)).toEqual(['running'])
    // Nothing ran inside the transition: running the operation is an effect, deferred.
    expect(ran).toEqual([])
    expect(deferredEffects).toHaveLength(1)
    const two = queueTransition(one, { type: 'TAKE', agentId: 'a', run, settle: () => {} }, scope)
    expect(one.queues.get('a')!.map((o) => o.state)).toEqual(['running'])
    expect(two.queues.get('a')!.map((o) => o.state)).toEqual(['running', 'queued'])
    const three = queueTransition(two, { type: 'END', agentId: 'a', id: 0 }, scope)
    expect(two.queues.get('a')!.map((o) => o.state)).toEqual(['running', 'queued'])
    expect(three.queues.get('a')!.map((o) => o.state)).toEqual(['ended', 'running'])
    // An event about an operation the queue does not hold (or not in that state) changes nothing.
    expect(queueTransition(three, { type: 'END', agentId: 'a', id: 0 }, scope)).toBe(three)
    expect(queueTransition(three, { type: 'END', agentId: 'b', id: 7 }, scope)).toBe(three)
  })
})
