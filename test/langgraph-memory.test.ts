import { HumanMessage } from '@langchain/core/messages'
import { Command, MemorySaver } from '@langchain/langgraph'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterEach, describe, expect, it } from 'vitest'
import { PLAN_MODE_TEXTS, type SessionEvent } from '../src/index.js'
import { APPROVE, ENTERING, PLAN, SECTION } from './helpers.js'
import { calls, says, startGraphHost, thread, type GraphHost } from './langgraph.fixture.js'

/** A full garbage collection (V8's `gc`, exposed for this test). */
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const hosts: GraphHost[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.planMode.dispose()
})

/** How many of `refs` are still reachable after full collections (the next macrotask lets WeakRefs go). */
async function alive(refs: readonly WeakRef<object>[]): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve))
    gc()
  }
  return refs.filter((ref) => ref.deref() !== undefined).length
}

const THREADS = 40

const planLogOf = (values: unknown): SessionEvent[] => (values as { planLog?: SessionEvent[] }).planLog ?? []

describe('xstate-plan-mode/langgraph: memory follows the service', () => {
  it('R166: with limits.maxAttachedAgents 2, after 40 threads through one adapter at most 2 threads\' agents and logs stay reachable', async () => {
    const host = await startGraphHost(new MemorySaver(), undefined, { maxAttachedAgents: 2 })
    hosts.push(host)
    const agents: WeakRef<object>[] = []
    const logs: WeakRef<object>[] = []
    for (let i = 0; i < THREADS; i++) {
      host.script(says(`Hello ${i}.`))
      await host.graph.invoke({ messages: [new HumanMessage('Hi.')] }, thread(`t${i}`))
      const agent = await host.lg.agent(host.graph, thread(`t${i}`))
      // Each thread's agent is the one its nodes ran on (its log holds the turn).
      expect(agent.session.events.map((e) => e.type)).toEqual(['turn/start', 'request/header', 'turn/end'])
      agents.push(new WeakRef(agent))
      logs.push(new WeakRef(agent.session))
    }
    expect(await alive(agents)).toBeLessThanOrEqual(2)
    expect(await alive(logs)).toBeLessThanOrEqual(2)
  })

  it('R166, R77: a thread whose agent left memory while its run waited at a review is answered and carried out from the graph\'s planLog', async () => {
    const host = await startGraphHost(new MemorySaver(), undefined, { maxAttachedAgents: 1 })
    hosts.push(host)
    await host.planMode.set(await host.lg.agent(host.graph, thread('waiting')), true)
    host.script(calls('exit_plan_mode', { plan: PLAN }, 'call-exit-1'))
    const paused = (await host.graph.invoke({ messages: [new HumanMessage('Plan it.')] }, thread('waiting'))) as { __interrupt__?: { value: { reviewId: string } }[] }
    const { reviewId } = paused.__interrupt__![0]!.value
    for (let i = 0; i < 5; i++) {
      host.script(says(`Hello ${i}.`))
      await host.graph.invoke({ messages: [new HumanMessage('Hi.')] }, thread(`other-${i}`))
    }
    host.script(says('Carrying it out.'))
    const done = await host.graph.invoke(new Command({ resume: { ...APPROVE, reviewId } }), thread('waiting'))
    expect(done.messages.at(-2)!.content).toBe(PLAN_MODE_TEXTS.tool.result)
    expect(done.messages.at(-1)!.content).toBe('Carrying it out.')
    const agent = await host.lg.agent(host.graph, thread('waiting'))
    expect(host.planMode.get(agent)).toEqual({ active: false })
    expect(host.planMode.openReview(agent)).toBeNull()
    const log = agent.session.events
    expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1))
  })

  it('R166: an agent a host kept from lg.agent, let go and attached again, is the thread\'s agent again: the next run goes on from its log', async () => {
    const host = await startGraphHost(new MemorySaver(), undefined, { maxAttachedAgents: 1 })
    hosts.push(host)
    host.script(says('Hello.'))
    await host.graph.invoke({ messages: [new HumanMessage('Hi.')] }, thread('kept'))
    const kept = await host.lg.agent(host.graph, thread('kept'))
    for (let i = 0; i < 3; i++) {
      host.script(says(`Hello ${i}.`))
      await host.graph.invoke({ messages: [new HumanMessage('Hi.')] }, thread(`other-${i}`))
    }
    // The host's /plan on the agent it kept: it attaches again on that agent's log.
    expect(await host.planMode.set(kept, true)).toBe('committed')
    host.script(says('Planning.'))
    await host.graph.invoke({ messages: [new HumanMessage('Plan it.')] }, thread('kept'))
    expect(host.calls.at(-1)!.section).toBe(SECTION)
    expect(host.calls.at(-1)!.messages.at(-1)!.content).toEqual([{ type: 'text', text: ENTERING }])
    expect(await host.lg.agent(host.graph, thread('kept'))).toBe(kept)
    expect(kept.session.events.map((e) => e.type)).toEqual(['turn/start', 'request/header', 'turn/end', 'plan/mode', 'turn/start', 'request/header', 'turn/end'])
  })
  it('R166 regression: an agent a host kept from lg.agent and lg.agent\'s agent after the thread was let go are one agent: a /plan on either lands', async () => {
    const host = await startGraphHost(new MemorySaver(), undefined, { maxAttachedAgents: 1 })
    hosts.push(host)
    host.script(says('Hello.'))
    await host.graph.invoke({ messages: [new HumanMessage('Hi.')] }, thread('kept'))
    const kept = await host.lg.agent(host.graph, thread('kept'))
    host.script(says('Other.'))
    await host.graph.invoke({ messages: [new HumanMessage('Hi.')] }, thread('other'))
    // The thread was let go (its agent detached): the host asks for its agent again and uses both.
    const again = await host.lg.agent(host.graph, thread('kept'))
    expect(await host.planMode.set(again, true)).toBe('committed')
    expect(await host.planMode.set(kept, false)).toBe('committed')
    expect(host.planMode.get(again)).toEqual({ active: false })
    const log = (await host.lg.agent(host.graph, thread('kept'))).session.events
    expect(log.map((e) => e.type)).toEqual(['turn/start', 'request/header', 'turn/end', 'plan/mode', 'plan/mode'])
    expect(log.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5])
  })
  it('R166, R145 regression: an agent a host kept from lg.agent writes its appends to the graph also after a run of the thread went through its nodes: a /plan on it lands and the next run plans', async () => {
    const host = await startGraphHost(new MemorySaver())
    hosts.push(host)
    const kept = await host.lg.agent(host.graph, thread('kept'))
    host.script(says('Hello.'))
    await host.graph.invoke({ messages: [new HumanMessage('Hi.')] }, thread('kept'))
    expect(await host.planMode.set(kept, true)).toBe('committed')
    const held = planLogOf((await host.graph.getState(thread('kept'))).values)
    expect(held.map((e) => e.type)).toEqual(['turn/start', 'request/header', 'turn/end', 'plan/mode'])
    host.script(says('Planning.'))
    await host.graph.invoke({ messages: [new HumanMessage('Plan it.')] }, thread('kept'))
    expect(host.calls.at(-1)!.section).toBe(SECTION)
  })
})
