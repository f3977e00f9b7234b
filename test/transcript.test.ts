import { describe, expect, it } from 'vitest'
import { createCallTranscript, createMemorySessionLog, createPlanMode, type PlanAgent } from '../src/index.js'
import { interleaveInjections } from '../src/plan/transcript.js'

/**
 * `createCallTranscript` and `interleaveInjections` (src/plan/transcript.ts): the framework-neutral
 * bookkeeping that keeps messages a step hook added where the model saw them.
 */

describe('interleaveInjections', () => {
  it('places each injection before the message at its index, and past-the-end ones last', () => {
    expect(
      interleaveInjections(
        ['a', 'b', 'c'],
        [
          { at: 0, message: 'n0' },
          { at: 2, message: 'n2' },
          { at: 3, message: 'n3' },
          { at: 9, message: 'n9' },
        ],
      ),
    ).toEqual(['n0', 'a', 'b', 'n2', 'c', 'n3', 'n9'])
  })

  it('keeps the order of injections made at the same index', () => {
    expect(interleaveInjections(['a'], [{ at: 1, message: 'x' }, { at: 1, message: 'y' }])).toEqual(['a', 'x', 'y'])
  })

  it('returns a new array and changes neither argument', () => {
    const messages = Object.freeze(['a', 'b'])
    const injections = Object.freeze([Object.freeze({ at: 1, message: 'n' })])
    const out = interleaveInjections(messages, injections)
    expect(out).toEqual(['a', 'n', 'b'])
    expect(out).not.toBe(messages)
    expect(interleaveInjections(messages, [])).toEqual(['a', 'b'])
    expect(interleaveInjections(messages, [])).not.toBe(messages)
  })
})

describe('createCallTranscript', () => {
  it('a message injected at one step is put back at every later step of the call, at its place', () => {
    const transcript = createCallTranscript<string>()
    transcript.startCall(2) // the history: two messages
    // Step 0: the framework's messages are the input; a notice goes after them.
    expect(transcript.inject(['h1', 'h2'], ['notice'])).toEqual(['h1', 'h2', 'notice'])
    // Step 1: the framework forgot the notice; it comes back before the step-0 reply.
    expect(transcript.inject(['h1', 'h2', 'reply0', 'tool0'])).toEqual(['h1', 'h2', 'notice', 'reply0', 'tool0'])
    // Step 2 adds one more, after everything so far.
    expect(transcript.inject(['h1', 'h2', 'reply0', 'tool0', 'reply1'], ['steered'])).toEqual([
      'h1',
      'h2',
      'notice',
      'reply0',
      'tool0',
      'reply1',
      'steered',
    ])
    expect(transcript.injections).toEqual([
      { at: 2, message: 'notice' },
      { at: 5, message: 'steered' },
    ])
  })

  it('transcript() gives the call’s new messages with the injections in place (indices shifted by the input)', () => {
    const transcript = createCallTranscript<string>()
    transcript.startCall(2)
    transcript.inject(['h1', 'h2'], ['notice'])
    transcript.inject(['h1', 'h2', 'reply0', 'tool0', 'reply1'], ['steered'])
    expect(transcript.transcript(['reply0', 'tool0', 'reply1', 'reply2'])).toEqual([
      'notice',
      'reply0',
      'tool0',
      'reply1',
      'steered',
      'reply2',
    ])
  })

  it('startCall forgets the previous call’s injections', () => {
    const transcript = createCallTranscript<string>()
    transcript.startCall(0)
    transcript.inject([], ['old'])
    transcript.startCall(3)
    expect(transcript.injections).toEqual([])
    expect(transcript.inject(['a', 'b', 'c'])).toEqual(['a', 'b', 'c'])
    expect(transcript.transcript(['r'])).toEqual(['r'])
  })

  it('inject does not change the messages it is given', () => {
    const transcript = createCallTranscript<string>()
    transcript.startCall(1)
    const step = Object.freeze(['h'])
    const added = Object.freeze(['n'])
    expect(transcript.inject(step, added)).toEqual(['h', 'n'])
    expect(step).toEqual(['h'])
  })

  it('startCall refuses a count that is not a non-negative integer', () => {
    const transcript = createCallTranscript<string>()
    for (const bad of [-1, 1.5, Number.NaN]) {
      expect(() => transcript.startCall(bad)).toThrow(new RangeError(`createCallTranscript: startCall needs a message count; got ${String(bad)}`))
    }
  })

  it('R32, R34: with a framework that drops hook messages, the notice stays where the model saw it for the rest of the call', async () => {
    type Message = { role: string; text: string }
    const planMode = createPlanMode({ section: 'PLAN', logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'a', session: createMemorySessionLog() }
    try {
      const transcript = createCallTranscript<Message>()
      const sent: Message[][] = []
      /** A framework call: its steps see the input and earlier replies only, never the hook's additions. */
      async function frameworkCall(input: Message[], steps: number) {
        const own = [...input]
        transcript.startCall(input.length)
        for (let step = 0; step < steps; step++) {
          const { messages } = await planMode.stepBoundary(agent)
          agent.session.append('request/header', {})
          const notices = messages.map((m) => ({ role: 'user', text: (m.content[0] as { text: string }).text }))
          sent.push(transcript.inject(own, notices))
          own.push({ role: 'assistant', text: `reply ${step}` })
        }
        return own.slice(input.length)
      }
      const history: Message[] = [{ role: 'user', text: 'hi' }]
      agent.session.append('turn/start', {})
      history.push(...transcript.transcript(await frameworkCall(history, 1)))
      await planMode.set(agent, true) // queued: the turn is open
      history.push(...transcript.transcript(await frameworkCall(history, 3)))
      const notice = { role: 'user', text: 'The user switched this session to plan mode.' }
      expect(sent.slice(1).map((messages) => messages.map((m) => m.text))).toEqual([
        ['hi', 'reply 0', notice.text],
        ['hi', 'reply 0', notice.text, 'reply 0'],
        ['hi', 'reply 0', notice.text, 'reply 0', 'reply 1'],
      ])
      expect(history.map((m) => m.text)).toEqual(['hi', 'reply 0', notice.text, 'reply 0', 'reply 1', 'reply 2'])
    } finally {
      await planMode.dispose()
    }
  })
})
