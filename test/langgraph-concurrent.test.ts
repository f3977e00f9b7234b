/**
 * R177: one run of a thread at a time in the adapter's nodes. A host tool holds run A inside
 * `plan_tools` (a gate the test opens); meanwhile run B of the same thread, `lg.agent` and
 * `resumeClosedReview` are refused with the rule's text and record nothing, and A goes on as if
 * they had not been made. Another thread is not affected.
 */
import { HumanMessage, ToolMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import { afterEach, describe, expect, it } from 'vitest'
import { concurrentRunMessage, type PlanGraphState } from '../src/adapters/langgraph.js'
import { calls, says, startGraphHost, thread, type GraphHost } from './langgraph.fixture.js'

const hosts: GraphHost[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.planMode.dispose()
})

describe('xstate-plan-mode/langgraph: one run of a thread at a time (R177)', () => {
  it('R177: while a run of a thread waits in plan_tools, another run of it, lg.agent and resumeClosedReview are refused with the rule\'s text and record nothing; the first run goes on, and another thread runs meanwhile', async () => {
    let entered!: () => void
    const inTool = new Promise<void>((resolve) => (entered = resolve))
    let open!: (text: string) => void
    const gate = new Promise<string>((resolve) => (open = resolve))
    const slow = tool(
      async () => {
        entered()
        return gate
      },
      { name: 'run_tests', description: 'Run the tests.', schema: { type: 'object', properties: {}, additionalProperties: false } },
    )
    const host = await startGraphHost(undefined, [slow])
    hosts.push(host)
    const { graph, lg, planMode } = host
    host.script(calls('run_tests', {}, 'call-tests'))
    const first = graph.invoke({ messages: [new HumanMessage('Run the tests.')] }, thread('t1'))
    await inTool
    const before = ((await graph.getState(thread('t1'))).values as PlanGraphState).planLog.length

    const refused = concurrentRunMessage('t1')
    expect(refused).toBe(
      'plan-mode langgraph: a run of thread "t1" is in a plan-mode node in this process; run a thread\'s runs one at a time, and call agent or resumeClosedReview while it is paused or idle (nothing was recorded)',
    )
    await expect(graph.invoke({ messages: [new HumanMessage('And again.')] }, thread('t1'))).rejects.toThrow(refused)
    await expect(lg.agent(graph, thread('t1'))).rejects.toThrow(refused)
    await expect(lg.resumeClosedReview(graph, thread('t1'))).resolves.toBeNull() // not paused at a review: nothing to read
    // Another thread is its own: it runs meanwhile.
    host.script(says('Hello.'))
    const other = await graph.invoke({ messages: [new HumanMessage('Hi.')] }, thread('t2'))
    expect(other.messages.at(-1)!.content).toBe('Hello.')

    host.script(says('The tests pass.'))
    open('12 passed')
    const done = await first
    const result = done.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === 'call-tests')!
    expect(result.content).toBe('12 passed')
    expect(done.messages.at(-1)!.content).toBe('The tests pass.')
    // The refused run recorded nothing: the thread's log is the first run's alone (its turn, in order, no seq twice).
    const log = ((await graph.getState(thread('t1'))).values as PlanGraphState).planLog
    expect(log.length).toBeGreaterThan(before)
    expect(log.map((event) => event.seq)).toEqual(log.map((_, i) => i + 1))
    expect(log.filter((event) => event.type === 'turn/start')).toHaveLength(1)
    // Idle again: the thread's helpers work.
    expect(planMode.get(await lg.agent(graph, thread('t1'))).active).toBe(false)
  })
})
