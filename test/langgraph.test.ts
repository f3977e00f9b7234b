import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import { Command, MemorySaver } from '@langchain/langgraph'
import { afterEach, describe, expect, it } from 'vitest'
import { PLAN_MODE_TEXTS } from '../src/index.js'
import { EXIT_PLAN_MODE_PARAMETERS } from '../src/plan/exit-tool.js'
import { TOOL_CALL_STOPPED_TEXT } from '../src/adapters/langgraph.js'
import { APPROVE, ENTERING, PLAN, SECTION } from './helpers.js'
import { calls, says, startGraphHost, thread, type GraphHost } from './langgraph.fixture.js'

const hosts: GraphHost[] = []
afterEach(async () => {
  for (const host of hosts.splice(0)) await host.planMode.dispose()
})
async function start(checkpointer = new MemorySaver()) {
  const host = await startGraphHost(checkpointer)
  hosts.push(host)
  return host
}

/** What a run that paused returns besides the state (LangGraph's `__interrupt__`). */
type Paused = { messages: BaseMessage[]; __interrupt__?: { value: unknown }[] }
const user = (text: string) => ({ messages: [new HumanMessage(text)] })
const toolMessages = (messages: readonly BaseMessage[]) => messages.filter((m) => ToolMessage.isInstance(m)) as ToolMessage[]
const lastTool = (messages: readonly BaseMessage[]) => toolMessages(messages).at(-1)!
const texts = (messages: readonly BaseMessage[]) => messages.map((m) => (typeof m.content === 'string' ? m.content : (m.content[0] as { text: string }).text))
const KEEP_WITH = (custom: string) => ({ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom }] })

/** Puts thread `id` in plan mode from outside the graph (an idle `/plan`), and runs a turn to the review. */
async function toReview(host: GraphHost, id: string, plan = PLAN, callId = 'call-exit-1') {
  const agent = await host.lg.agent(host.graph, thread(id))
  await host.planMode.set(agent, true)
  host.script(calls('exit_plan_mode', { plan }, callId, 'Here is my plan.'))
  return (await host.graph.invoke(user('Plan the migration.'), thread(id))) as Paused
}

describe('xstate-plan-mode/langgraph', () => {
  it('R145: plan mode\'s events are the graph\'s planLog channel: a restart on the same checkpointer reads the mode and the open review from it alone', async () => {
    const saver = new MemorySaver()
    const first = await start(saver)
    const paused = await toReview(first, 't1')
    expect(paused.__interrupt__).toHaveLength(1)
    const state = await first.graph.getState(thread('t1'))
    const types = (state.values.planLog as { seq: number; type: string }[]).map((e) => e.type)
    expect(types).toEqual(['plan/mode', 'turn/start', 'request/header', 'plan/review', 'turn/end'])
    expect((state.values.planLog as { seq: number }[]).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5])
    // The first model call ran in plan mode: the section, and no notice (K was undefined, R36).
    expect(first.calls[0]!.section).toBe(SECTION)
    expect(first.calls[0]!.active).toBe(true)

    // Another process: a new service and graph on the same checkpointer.
    await first.planMode.dispose()
    const second = await start(saver)
    const agent = await second.lg.agent(second.graph, thread('t1'))
    expect(second.planMode.get(agent)).toEqual({ active: true })
    expect(second.planMode.openReview(agent)).toMatchObject({ plan: PLAN, callId: 'call-exit-1' })
  })

  it('R145: an operation outside the graph is written to the thread\'s state with updateState, and the next step tells its notice', async () => {
    const host = await start()
    host.script(says('Hello.'))
    await host.graph.invoke(user('Hi.'), thread('t2'))
    const agent = await host.lg.agent(host.graph, thread('t2'))
    expect(await host.planMode.set(agent, true)).toBe('committed')
    const held = (await host.graph.getState(thread('t2'))).values.planLog as { type: string; data: unknown }[]
    expect(held.at(-1)).toMatchObject({ type: 'plan/mode', data: { active: true } })
    host.script(says('Planning now.'))
    await host.graph.invoke(user('Plan it.'), thread('t2'))
    const seen = host.calls.at(-1)!.messages
    expect(seen.at(-1)!.content).toEqual([{ type: 'text', text: ENTERING }])
    expect(host.calls.at(-1)!.section).toBe(SECTION)
  })

  it('R146: the review node pauses with interrupt(); resumed with the approval itself, the exit call\'s result is the approved text', async () => {
    const host = await start()
    const paused = await toReview(host, 't3')
    const review = paused.__interrupt__![0]!.value as Record<string, unknown>
    expect(review).toMatchObject({ kind: 'plan-review', callId: 'call-exit-1', plan: PLAN, title: 'Migrate the database' })
    expect(review['question']).toEqual(PLAN_MODE_TEXTS.review.question(PLAN))
    host.script(says('Backing up first.'))
    const done = await host.graph.invoke(new Command({ resume: { ...APPROVE, reviewId: review['reviewId'] } }), thread('t3'))
    const result = lastTool(done.messages)
    expect(result.content).toBe(PLAN_MODE_TEXTS.tool.result)
    expect(result.status).toBe('success')
    expect(result.tool_call_id).toBe('call-exit-1')
    // The carrying-out step runs outside plan mode, told in the result: no notice (R81).
    expect(host.calls.at(-1)!.section).toBe('')
    const lastSeen = host.calls.at(-1)!.messages.at(-1) as ToolMessage
    expect(ToolMessage.isInstance(lastSeen) && lastSeen.tool_call_id).toBe('call-exit-1')
    const log = (await host.graph.getState(thread('t3'))).values.planLog as { type: string; data: Record<string, unknown> }[]
    expect(log.filter((e) => e.type === 'plan/review').map((e) => [e.data['outcome'], e.data['toldInResult']])).toEqual([
      ['requested', undefined],
      ['approved', true],
    ])
  })

  it('R146: keep planning with feedback is the exit call\'s error result, status error, with the core\'s text', async () => {
    const host = await start()
    const { reviewId } = (await toReview(host, 't4')).__interrupt__![0]!.value as { reviewId: string }
    host.script(calls('exit_plan_mode', { plan: `${PLAN}\n3. Verify.` }, 'call-exit-2'))
    const paused = (await host.graph.invoke(new Command({ resume: { ...KEEP_WITH('Add a verification step.'), reviewId } }), thread('t4'))) as Paused
    const result = toolMessages(paused.messages).find((m) => m.tool_call_id === 'call-exit-1')!
    expect(result.content).toBe('The user chose to keep planning; their feedback: Add a verification step.')
    expect(result.status).toBe('error')
    // The revised plan is under review in turn.
    expect((paused.__interrupt__![0]!.value as { callId: string }).callId).toBe('call-exit-2')
  })

  it('R146: resumed with { reviewId } of a review answered outside the graph, the run takes the recorded outcome', async () => {
    const host = await start()
    const paused = await toReview(host, 't5')
    const { reviewId } = paused.__interrupt__![0]!.value as { reviewId: string }
    const agent = await host.lg.agent(host.graph, thread('t5'))
    await host.planMode.answerReview(agent, reviewId, APPROVE, { toldInResult: true })
    host.script(says('Carrying it out.'))
    const done = await host.graph.invoke(new Command({ resume: { reviewId } }), thread('t5'))
    expect(lastTool(done.messages).content).toBe(PLAN_MODE_TEXTS.tool.result)
  })

  it('R146: { reviewId } of a review still open pauses the run again, and a re-run of the node opens no second review', async () => {
    const host = await start()
    const paused = await toReview(host, 't6')
    const { reviewId } = paused.__interrupt__![0]!.value as { reviewId: string }
    const again = (await host.graph.invoke(new Command({ resume: { reviewId } }), thread('t6'))) as Paused
    expect((again.__interrupt__![0]!.value as { reviewId: string }).reviewId).toBe(reviewId)
    // Re-running the tools node for the same call (a retry) finds its review open.
    const state = await host.graph.getState(thread('t6'))
    expect(await host.lg.tools(state.values, thread('t6'))).toEqual({})
    host.script(says('Done.'))
    await host.graph.invoke(new Command({ resume: { ...APPROVE, reviewId } }), thread('t6'))
    const log = (await host.graph.getState(thread('t6'))).values.planLog as { type: string; data: Record<string, unknown> }[]
    expect(log.filter((e) => e.type === 'plan/review' && e.data['outcome'] === 'requested')).toHaveLength(1)
  })

  it('R147: a run paused at a review that a /plan off closed meanwhile resumes with resumeClosedReview; the next step tells the supersede once (R81)', async () => {
    const host = await start()
    await toReview(host, 't7')
    expect(await host.lg.resumeClosedReview(host.graph, thread('t7'))).toBeNull()
    const agent = await host.lg.agent(host.graph, thread('t7'))
    expect((await host.planMode.command.run({ agent, rawInput: 'off' })).text).toBe('Plan mode off.')
    const resume = await host.lg.resumeClosedReview(host.graph, thread('t7'))
    expect(resume).not.toBeNull()
    host.script(says('Understood.'))
    const done = await host.graph.invoke(resume!, thread('t7'))
    // Not told in the result (the record has no toldInResult): the call's result is the submitted
    // text, and the boundary tells the outcome and the switch, once.
    const result = lastTool(done.messages)
    expect([result.content, result.status]).toEqual([PLAN_MODE_TEXTS.tool.submitted, 'success'])
    const seen = host.calls.at(-1)!.messages.slice(host.calls.at(-1)!.messages.indexOf(result))
    const said = seen.map((m) => (typeof m.content === 'string' ? m.content : (m.content[0] as { text: string }).text))
    expect(said.filter((text) => text === 'The user changed the plan mode directly; the review is closed.')).toHaveLength(1)
    expect(said.slice(1)).toEqual(['The user changed the plan mode directly; the review is closed.', 'The user switched this session back to the default mode.'])
    expect(host.calls.at(-1)!.section).toBe('')
  })

  it('R146: a review answered outside the graph without toldInResult is not told twice: the waiting call gets the submitted text, the boundary the outcome', async () => {
    const host = await start()
    const paused = await toReview(host, 't10')
    const { reviewId } = paused.__interrupt__![0]!.value as { reviewId: string }
    const agent = await host.lg.agent(host.graph, thread('t10'))
    await host.planMode.answerReview(agent, reviewId, KEEP_WITH('Smaller steps.'))
    host.script(says('Revising.'))
    const done = await host.graph.invoke(new Command({ resume: { reviewId } }), thread('t10'))
    const said = texts(done.messages)
    expect(said.filter((text) => text.includes('Smaller steps.'))).toEqual(['The user chose to keep planning; their feedback: Smaller steps.'])
    expect(lastTool(done.messages).content).toBe(PLAN_MODE_TEXTS.tool.submitted)
  })

  it('R149: tool calls a stopped run left without results are answered where they stand; the model\'s text stays', async () => {
    const host = await start()
    host.script(says('Hi.'))
    await host.graph.invoke(user('Hi.'), thread('t8'))
    // A run stopped between the model's answer and the tools: its message is in the state, its call unanswered.
    await host.graph.updateState(thread('t8'), { messages: [new AIMessage({ content: 'Let me read the config.', tool_calls: [{ id: 'call-read-1', name: 'read_file', args: { path: 'src/config.ts' } }] })] }, 'model')
    host.script(says('Where were we?'))
    await host.graph.invoke(user('Go on.'), thread('t8'))
    const seen = host.calls.at(-1)!.messages
    const at = seen.findIndex((m) => m.content === 'Let me read the config.')
    expect(at).toBeGreaterThan(0)
    const answer = seen[at + 1] as ToolMessage
    expect(ToolMessage.isInstance(answer)).toBe(true)
    expect(answer.tool_call_id).toBe('call-read-1')
    expect(answer.content).toBe(TOOL_CALL_STOPPED_TEXT)
    expect(answer.status).toBe('error')
    expect(seen.at(-1)!.content).toBe('Go on.')
  })

  it('R150: a host tool\'s failure and a refused exit call reach the model with their own texts, status error (never "Please fix your mistakes.")', async () => {
    const host = await start()
    host.script(calls('read_file', { path: 'missing.ts' }, 'call-read-2'), calls('exit_plan_mode', { plan: 42 }, 'call-exit-3'), says('Sorry.'))
    const done = await host.graph.invoke(user('Read it.'), thread('t9'))
    const [read, exit] = toolMessages(done.messages)
    expect(read!.content).toBe("ENOENT: no such file, open 'missing.ts'")
    expect(read!.status).toBe('error')
    expect(exit!.content).toBe(PLAN_MODE_TEXTS.review.messages.planNotString)
    expect(exit!.status).toBe('error')
  })

  it('R150: exit_plan_mode is a LangChain tool with its own copy of the schema; the core\'s stays frozen and unchanged', async () => {
    const host = await start()
    const before = JSON.stringify(EXIT_PLAN_MODE_PARAMETERS)
    expect(host.lg.exitTool.name).toBe('exit_plan_mode')
    expect(host.lg.exitTool.description).toBe(PLAN_MODE_TEXTS.tool.description)
    expect(host.lg.exitTool.schema).not.toBe(EXIT_PLAN_MODE_PARAMETERS)
    expect(host.lg.exitTool.schema).toEqual(JSON.parse(before))
    expect(Object.isFrozen(EXIT_PLAN_MODE_PARAMETERS)).toBe(true)
    expect(JSON.stringify(EXIT_PLAN_MODE_PARAMETERS)).toBe(before)
    expect(host.lg.toolDefinitions.map((t) => t.name)).toEqual(['read_file', 'exit_plan_mode'])
  })
})

describe('xstate-plan-mode/langgraph: failures', () => {
  it('R145: an append outside the graph at a seq another writer took rejects, and the selection is not made (R11)', async () => {
    const saver = new MemorySaver()
    const one = await start(saver)
    const two = await start(saver)
    one.script(says('Hello.'))
    await one.graph.invoke(user('Hi.'), thread('f1'))
    const a = await one.lg.agent(one.graph, thread('f1'))
    const b = await two.lg.agent(two.graph, thread('f1'))
    expect(two.planMode.get(b)).toEqual({ active: false }) // two has read the log
    await a.session.append('command/run', { commandId: 'c1', name: 'review' })
    await expect(two.planMode.set(b, true)).rejects.toThrow(
      "plan-mode langgraph: the thread's log already has seq 4 (another writer appended first); the plan/mode event was not written",
    )
    const log = (await one.graph.getState(thread('f1'))).values.planLog as { type: string }[]
    expect(log.map((e) => e.type).slice(-1)).toEqual(['command/run'])
    expect(two.planMode.get(b)).toEqual({ active: false })
  })

  it('R145, R149: a run aborted after the exit call opened its review commits nothing of that step; the next run attaches from the graph\'s log, with no review open, and answers the calls', async () => {
    let release!: () => void
    let started!: () => void
    const running = new Promise<void>((resolve) => (started = resolve))
    const slow = tool(
      async () => {
        started()
        await new Promise<void>((resolve) => (release = resolve))
        return 'done'
      },
      { name: 'run_tests', description: 'Run the tests.', schema: { type: 'object', properties: {}, additionalProperties: false } },
    )
    const host = await startGraphHost(new MemorySaver(), [slow])
    hosts.push(host)
    const agent = await host.lg.agent(host.graph, thread('f2'))
    await host.planMode.set(agent, true)
    host.script(() =>
      new AIMessage({
        content: 'Planning; running the tests first.',
        tool_calls: [
          { id: 'call-exit-9', name: 'exit_plan_mode', args: { plan: PLAN } },
          { id: 'call-tests-1', name: 'run_tests', args: {} },
        ],
      }),
    )
    const controller = new AbortController()
    const run = host.graph.invoke(user('Plan it.'), { ...thread('f2'), signal: controller.signal })
    await running
    // The exit call's review is open in this process's log, not yet in the graph's.
    expect(host.planMode.openReview(agent)).toMatchObject({ callId: 'call-exit-9' })
    controller.abort()
    await expect(run).rejects.toThrow()
    release()
    const held = (await host.graph.getState(thread('f2'))).values.planLog as { type: string }[]
    expect(held.map((e) => e.type)).not.toContain('plan/review')

    host.script(says('Where were we?'))
    await host.graph.invoke(user('Go on.'), thread('f2'))
    const again = await host.lg.agent(host.graph, thread('f2'))
    expect(host.planMode.openReview(again)).toBeNull()
    const seen = host.calls.at(-1)!.messages
    const at = seen.findIndex((m) => m.content === 'Planning; running the tests first.')
    expect(seen.slice(at + 1, at + 3).map((m) => [(m as ToolMessage).tool_call_id, m.content])).toEqual([
      ['call-exit-9', TOOL_CALL_STOPPED_TEXT],
      ['call-tests-1', TOOL_CALL_STOPPED_TEXT],
    ])
  })
})
