import { ToolLoopAgent, generateText, jsonSchema, stepCountIs, tool, type ModelMessage } from 'ai'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  exitPlanModeTool,
  toModelMessage,
  withPlanMode,
  type PlanModeAiSdk,
} from '../src/adapters/ai-sdk.js'
import { EXIT_PLAN_MODE, createMemorySessionLog, createPlanMode, type CommandResult, type PlanAgent, type PlanMode, type ReviewAnswer, type ReviewChannel, type ReviewRequest, type SessionLog, type UserMessage } from '../src/index.js'
import { EXIT_PLAN_MODE_DESCRIPTION, EXIT_PLAN_MODE_RESULT_TEXT } from '../src/plan/exit-tool.js'
import { runLoop, scriptedModel, type LoopKind, type SeenRequest } from './fixtures/ai-sdk-model.js'

const SYSTEM = 'You are a careful coding agent.'
const SECTION = 'Plan mode is on: explore read-only, then present the plan with exit_plan_mode.'
const ENTERING = 'The user switched this session to plan mode.'
const LEAVING = 'The user switched this session back to the default mode.'
const NOTICES = [ENTERING, LEAVING]

const V1 = '# Migration plan\n\n1. Add the column.\n2. Backfill and switch reads.'
const V2 = '# Migration plan v2\n\n1. Add the column.\n2. Backfill.\n3. Switch reads.'
const FEEDBACK = 'Split step 2 into a backfill and a switch.'

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/** A memory log whose next `plan/mode` append throws once `failNextPlanMode()` armed it. */
function flakyLog(): SessionLog & { failNextPlanMode(): void; failure: Error } {
  const inner = createMemorySessionLog()
  let armed = false
  const failure = new Error('disk full')
  return {
    get events() {
      return inner.events
    },
    append(type, data) {
      if (type === 'plan/mode' && armed) {
        armed = false
        throw failure
      }
      return inner.append(type, data)
    },
    subscribe: (listener) => inner.subscribe(listener),
    failNextPlanMode: () => void (armed = true),
    failure,
  }
}

/** A review channel answering from a script, recording what it was asked. */
function scriptedReview(answers: ReviewAnswer[]): ReviewChannel & { asked: ReviewRequest[] } {
  const asked: ReviewRequest[] = []
  return {
    asked,
    async ask(request) {
      asked.push(request)
      const answer = answers.shift()
      if (!answer) throw new Error('the review script ran out')
      return answer
    },
  }
}

interface Setup {
  planMode: PlanMode
  agent: PlanAgent
  session: SessionLog
  plan: PlanModeAiSdk<{ read_file: typeof readFile; user_clicks: ReturnType<typeof clickTool> }>
  warn: ReturnType<typeof vi.fn>
  /** Messages the agent's `steer` received while idle: the host sends them with its next call. */
  inbox: ModelMessage[]
  /** What the `/plan` clicks made from inside `user_clicks` returned. */
  clicks: CommandResult[]
  types(): string[]
}

const readFile = tool({
  description: 'Read a file of the repository.',
  inputSchema: jsonSchema<{ path: string }>({
    type: 'object',
    properties: { path: { type: 'string' } },
    required: ['path'],
  }),
  execute: async ({ path }) => `contents of ${path}`,
})

/** A host tool standing for the user's UI: each call runs `/plan <rawInput>` mid-turn. */
function clickTool(run: (rawInput: string) => Promise<CommandResult>) {
  return tool({
    description: 'Stands for a click in the host UI.',
    inputSchema: jsonSchema<{ rawInput: string }>({
      type: 'object',
      properties: { rawInput: { type: 'string' } },
      required: ['rawInput'],
    }),
    execute: async ({ rawInput }) => (await run(rawInput)).text,
  })
}

function setup(
  options: {
    review?: ReviewChannel
    session?: SessionLog
    steer?: 'host' | 'adapter'
    system?: string | null
    afterClick?: () => void
  } = {},
): Setup {
  const session = options.session ?? createMemorySessionLog()
  const warn = vi.fn()
  const planMode = createPlanMode({ section: SECTION, logger: { warn }, ...(options.review ? { review: options.review } : {}) })
  services.push(planMode)
  const inbox: ModelMessage[] = []
  const clicks: CommandResult[] = []
  const agent: PlanAgent = {
    id: 'agent-1',
    session,
    steer: options.steer === 'adapter' ? (message) => plan.steer(message) : (message) => void inbox.push(toModelMessage(message)),
  }
  const user_clicks = clickTool(async (rawInput) => {
    const result = await planMode.command.run({ agent, rawInput })
    clicks.push(result)
    options.afterClick?.()
    return result
  })
  const plan = withPlanMode({
    planMode,
    agent,
    ...(options.system === null ? {} : { system: options.system ?? SYSTEM }),
    tools: { read_file: readFile, user_clicks },
  })
  return { planMode, agent, session, plan, warn, inbox, clicks, types: () => session.events.map((e) => e.type) }
}

const user = (text: string): ModelMessage => ({ role: 'user', content: [{ type: 'text', text }] })
const notices = (request: SeenRequest | undefined) => request!.userTexts.filter((text) => NOTICES.includes(text))
const withSection = `${SYSTEM}\n\n${SECTION}`

describe.each<LoopKind>(['generateText', 'streamText'])('withPlanMode with %s', (kind) => {
  it('R56: /plan <message> while idle: the first request carries the section and the steered message', async () => {
    const host = setup()
    const { model, requests } = scriptedModel([{ text: 'Reading the schema first.' }])

    expect(await host.planMode.command.run({ agent: host.agent, rawInput: 'draft the migration' })).toEqual({
      kind: 'success',
      text: 'Plan mode on. Use /plan off to leave.',
    })
    await runLoop(kind, host.plan, model, host.inbox.splice(0), 1)

    const [first] = requests()
    expect(first!.system).toBe(withSection)
    expect(first!.userTexts).toEqual(['draft the migration'])
    expect(host.types()).toEqual(['plan/mode', 'turn/start', 'request/header', 'turn/end'])
  })

  it('R45, R49, R50: keep-planning feedback reaches the model as a tool error; the approved revision leaves plan mode silently', async () => {
    const review = scriptedReview([
      { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: FEEDBACK }] },
      { answers: [{ id: 'plan-review', selected: ['Approve'] }] },
    ])
    const host = setup({ review })
    const { model, requests } = scriptedModel([
      { toolCalls: [{ name: EXIT_PLAN_MODE, input: { plan: V1 } }] },
      { toolCalls: [{ name: EXIT_PLAN_MODE, input: { plan: V2 } }] },
      { text: 'Adding the column.' },
    ])
    expect(await host.planMode.set(host.agent, true)).toBe('committed')

    const turn = await runLoop(kind, host.plan, model, [user('plan the migration')], 3)

    const [first, second, third] = requests()
    expect(first!.system).toBe(withSection)
    expect(second!.system).toBe(withSection)
    expect(second!.toolResults).toEqual([
      {
        toolName: EXIT_PLAN_MODE,
        output: { type: 'error-text', value: `The user chose to keep planning; their feedback: ${FEEDBACK}` },
      },
    ])
    expect(third!.toolResults[1]).toEqual({
      toolName: EXIT_PLAN_MODE,
      output: { type: 'text', value: 'Plan approved — plan mode exited; carry out the plan starting with your next step.' },
    })
    expect(third!.system).toBe(SYSTEM)
    expect(third!.userTexts).toEqual(['plan the migration'])
    expect(turn.toolResults).toEqual([{ approved: true }])
    expect(review.asked.map((request) => request.questions[0].detail)).toEqual([V1, V2])
    expect(host.session.events.filter((e) => e.type === 'plan/review').map((e) => e.data)).toEqual([
      { outcome: 'keep-planning', title: 'Migration plan', plan: V1, feedback: FEEDBACK },
      { outcome: 'approved', title: 'Migration plan v2', plan: V2 },
    ])
    expect(host.session.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([
      { active: true },
      { active: false },
    ])
  })

  it('R32, R33: /plan off clicked during a tool call lands at the next step with exactly one notice and no section', async () => {
    const host = setup()
    const { model, requests } = scriptedModel([
      { toolCalls: [{ name: 'user_clicks', input: { rawInput: 'off' } }] },
      { toolCalls: [{ name: 'read_file', input: { path: 'schema.sql' } }] },
      { text: 'Done.' },
    ])
    await host.planMode.set(host.agent, true)

    const turn = await runLoop(kind, host.plan, model, [user('look around')], 3)

    expect(host.clicks).toEqual([{ kind: 'success', text: 'Leaving plan mode (applies from the next step).' }])
    const [first, second, third] = requests()
    expect(first!.system).toBe(withSection)
    expect(notices(first)).toEqual([])
    expect(second!.system).toBe(SYSTEM)
    expect(notices(second)).toEqual([LEAVING])
    // Still in the history of the next step, and not told again.
    expect(third!.system).toBe(SYSTEM)
    expect(notices(third)).toEqual([LEAVING])
    expect(host.planMode.get(host.agent)).toEqual({ active: false })
    // The notice sits in the transcript where the model saw it.
    expect(turn.messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'user', 'assistant', 'tool', 'assistant'])
    expect(turn.messages[2]).toEqual({ role: 'user', content: [{ type: 'text', text: LEAVING }] })
  })

  it("R17: a step's plan/mode append lands before its request/header", async () => {
    const host = setup()
    const { model } = scriptedModel([
      { toolCalls: [{ name: 'user_clicks', input: { rawInput: 'off' } }] },
      { toolCalls: [{ name: 'read_file', input: { path: 'schema.sql' } }] },
    ])
    await host.planMode.set(host.agent, true)

    await runLoop(kind, host.plan, model, [user('look around')], 3)

    expect(host.session.events.map((e) => [e.type, e.data])).toEqual([
      ['plan/mode', { active: true }],
      ['turn/start', {}],
      ['request/header', { step: 0 }],
      ['plan/mode', { active: false }],
      ['request/header', { step: 1 }],
      ['request/header', { step: 2 }],
      ['turn/end', {}],
    ])
  })

  it('R18, R19: a failed plan/mode append at a boundary: the step runs under the logged state, one warning, and the next step converges', async () => {
    const session = flakyLog()
    // The user's click arms the failure: the next boundary's flush fails.
    const host = setup({ session, afterClick: () => session.failNextPlanMode() })
    const { model, requests } = scriptedModel([
      { toolCalls: [{ name: 'user_clicks', input: { rawInput: '' } }] },
      { toolCalls: [{ name: 'read_file', input: { path: 'a.ts' } }] },
      { toolCalls: [{ name: 'read_file', input: { path: 'b.ts' } }] },
      { text: 'Planning.' },
    ])

    await runLoop(kind, host.plan, model, [user('fix the bug')], 4)

    expect(host.clicks).toEqual([
      { kind: 'success', text: 'Entering plan mode (applies from the next step). Use /plan off to leave.' },
    ])
    const [first, second, third, fourth] = requests()
    expect(first!.system).toBe(SYSTEM)
    expect(second!.system).toBe(SYSTEM) // the append failed: the log still says inactive
    expect(notices(second)).toEqual([])
    expect(host.warn).toHaveBeenCalledTimes(1)
    expect(host.warn).toHaveBeenCalledWith('plan-mode: step-boundary flush failed', session.failure)
    expect(third!.system).toBe(withSection)
    expect(notices(third)).toEqual([ENTERING])
    expect(fourth!.system).toBe(withSection)
    expect(notices(fourth)).toEqual([ENTERING])
    expect(host.session.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }])
    expect(host.types()).toEqual([
      'turn/start',
      'request/header',
      'request/header',
      'plan/mode',
      'request/header',
      'request/header',
      'turn/end',
    ])
  })

  it('R56: /plan <message> clicked mid-turn and steered through plan.steer reaches the next request after the entry notice', async () => {
    const host = setup({ steer: 'adapter' })
    const { model, requests } = scriptedModel([
      { toolCalls: [{ name: 'user_clicks', input: { rawInput: 'draft the migration' } }] },
      { text: 'Planning.' },
    ])

    await runLoop(kind, host.plan, model, [user('hello')], 2)

    expect(host.clicks).toEqual([
      { kind: 'success', text: 'Entering plan mode (applies from the next step). Use /plan off to leave.' },
    ])
    const [first, second] = requests()
    expect(first!.userTexts).toEqual(['hello'])
    expect(second!.system).toBe(withSection)
    expect(second!.userTexts).toEqual(['hello', ENTERING, 'draft the migration'])
  })

  it('R40, R52: the offered tools are the same in both states', async () => {
    const host = setup()
    const { model, requests } = scriptedModel([
      { toolCalls: [{ name: 'user_clicks', input: { rawInput: 'off' } }] },
      { text: 'Done.' },
    ])
    await host.planMode.set(host.agent, true)

    await runLoop(kind, host.plan, model, [user('look around')], 2)

    const [planning, unplanned] = requests()
    expect(planning!.system).toBe(withSection)
    expect(unplanned!.system).toBe(SYSTEM)
    expect(planning!.toolNames).toEqual(['read_file', 'user_clicks', EXIT_PLAN_MODE])
    expect(unplanned!.tools).toEqual(planning!.tools)
  })

  it('R42: a failed check reaches the model as the core message', async () => {
    const host = setup()
    const { model, requests } = scriptedModel([{ toolCalls: [{ name: EXIT_PLAN_MODE, input: { plan: V1 } }] }])

    const turn = await runLoop(kind, host.plan, model, [user('go')], 2)

    expect(requests()[1]!.toolResults).toEqual([
      { toolName: EXIT_PLAN_MODE, output: { type: 'error-text', value: 'exit_plan_mode is only available in plan mode' } },
    ])
    expect(turn.toolErrors).toEqual(['exit_plan_mode is only available in plan mode'])
  })
})

describe('withPlanMode', () => {
  it('R15: an aborted turn leaves the selection pending, logs no request/header and sends no request', async () => {
    const host = setup()
    const { model, requests } = scriptedModel([])
    const controller = new AbortController()
    await host.plan.startTurn({ abortSignal: controller.signal })
    expect(await host.planMode.set(host.agent, true)).toBe('queued')
    controller.abort()

    await expect(
      generateText({ model, prompt: 'go', tools: host.plan.tools, prepareStep: host.plan.prepareStep, abortSignal: controller.signal }),
    ).rejects.toThrow('This operation was aborted')
    await host.plan.endTurn()

    expect(requests()).toEqual([])
    expect(host.planMode.get(host.agent)).toEqual({ active: false, pending: true })
    expect(host.types()).toEqual(['turn/start', 'turn/end'])
  })

  it('R18: without a base system prompt the section is the whole system prompt, and none is sent outside plan mode', async () => {
    const host = setup({ system: null })
    const { model, requests } = scriptedModel([
      { toolCalls: [{ name: 'user_clicks', input: { rawInput: '' } }] },
      { text: 'Planning.' },
    ])

    await runLoop('generateText', host.plan, model, [user('hi')], 2)

    expect(requests().map((r) => r.system)).toEqual([undefined, SECTION])
  })

  it('R52: the host tools pass through as the same objects, with exit_plan_mode added', () => {
    const host = setup()
    expect(Object.keys(host.plan.tools)).toEqual(['read_file', 'user_clicks', EXIT_PLAN_MODE])
    expect(host.plan.tools.read_file).toBe(readFile)
    const exit = host.plan.tools[EXIT_PLAN_MODE]
    expect(exit.description).toBe(EXIT_PLAN_MODE_DESCRIPTION)
  })

  it('R41: exit_plan_mode offers the core schema and description to the model', async () => {
    const host = setup()
    const { model, requests } = scriptedModel([{ text: 'hi' }])
    await runLoop('generateText', host.plan, model, [user('hi')], 1)
    const offered = (requests()[0]!.tools as { name: string }[]).find((t) => t.name === EXIT_PLAN_MODE)
    expect(offered).toMatchObject({
      type: 'function',
      name: EXIT_PLAN_MODE,
      description: EXIT_PLAN_MODE_DESCRIPTION,
      inputSchema: host.planMode.exitTool.parameters,
    })
  })

  it('R50: the exit tool keeps { approved: true } for the host and shows the model the result text', async () => {
    const host = setup({ review: scriptedReview([{ answers: [{ id: 'plan-review', selected: ['Approve'] }] }]) })
    await host.planMode.set(host.agent, true)
    const exit = exitPlanModeTool(host.planMode, host.agent)
    const output = await exit.execute!({ plan: V1 }, { toolCallId: 'c1', messages: [] })
    expect(output).toEqual({ approved: true })
    expect(await exit.toModelOutput!({ toolCallId: 'c1', input: { plan: V1 }, output: { approved: true } })).toEqual({
      type: 'text',
      value: EXIT_PLAN_MODE_RESULT_TEXT,
    })
  })

  it('refuses a host tool named exit_plan_mode', () => {
    const planMode = createPlanMode({ section: SECTION })
    services.push(planMode)
    expect(() =>
      withPlanMode({ planMode, agent: { id: 'a', session: createMemorySessionLog() }, tools: { exit_plan_mode: readFile } }),
    ).toThrow(new Error('withPlanMode: a host tool is already named "exit_plan_mode"'))
  })

  it('R5: runTurn logs turn/start and turn/end around a call, also when the call fails', async () => {
    const host = setup()
    await expect(host.plan.runTurn(() => Promise.reject(new Error('model unavailable')))).rejects.toThrow(
      new Error('model unavailable'),
    )
    expect(await host.plan.runTurn(() => 42)).toBe(42)
    expect(host.types()).toEqual(['turn/start', 'turn/end', 'turn/start', 'turn/end'])
  })

  it('R34, R56: toModelMessage keeps text blocks and AI SDK attachments, and refuses other parts', () => {
    const image = { type: 'image', image: new URL('https://example.com/schema.png') }
    const message: UserMessage = {
      id: 'm1',
      role: 'user',
      content: [image, { type: 'text', text: 'draft the migration' }],
      source: { kind: 'user' },
    }
    expect(toModelMessage(message)).toEqual({ role: 'user', content: [image, { type: 'text', text: 'draft the migration' }] })
    expect(() => toModelMessage({ ...message, content: [{ type: 'widget' }] })).toThrow(
      new TypeError(
        'plan-mode: a message part of type "widget" cannot be sent to the AI SDK; attach AI SDK image or file parts',
      ),
    )
  })

  it('a steered message that a failed step did not send goes with the next request', async () => {
    const host = setup({ steer: 'adapter' })
    const { model, requests } = scriptedModel([{ text: 'ok' }])
    host.plan.steer({ id: 'm', role: 'user', content: [{ type: 'text', text: 'also check the indexes' }], source: { kind: 'user' } })
    const controller = new AbortController()
    controller.abort()
    await expect(
      host.plan.runTurn(
        () => generateText({ model, prompt: 'go', tools: host.plan.tools, prepareStep: host.plan.prepareStep, abortSignal: controller.signal }),
        { abortSignal: controller.signal },
      ),
    ).rejects.toThrow('This operation was aborted')

    await runLoop('generateText', host.plan, model, [user('go')], 1)

    expect(requests().map((r) => r.userTexts)).toEqual([['go', 'also check the indexes']])
  })

  it('takeSteered hands messages steered while idle to the host, and they are not injected again', async () => {
    const host = setup({ steer: 'adapter' })
    const { model, requests } = scriptedModel([{ text: 'Planning.' }])
    await host.planMode.command.run({ agent: host.agent, rawInput: 'draft the migration' })

    const opening = host.plan.takeSteered()
    expect(opening).toEqual([{ role: 'user', content: [{ type: 'text', text: 'draft the migration' }] }])
    expect(host.plan.takeSteered()).toEqual([])
    await runLoop('generateText', host.plan, model, opening, 1)

    expect(requests()[0]!.userTexts).toEqual(['draft the migration'])
  })

  it('R18, R32: the same settings drive a ToolLoopAgent', async () => {
    const host = setup()
    const { model, requests } = scriptedModel([
      { toolCalls: [{ name: 'user_clicks', input: { rawInput: 'off' } }] },
      { text: 'Done.' },
    ])
    await host.planMode.set(host.agent, true)
    const loop = new ToolLoopAgent({ model, tools: host.plan.tools, prepareStep: host.plan.prepareStep, stopWhen: stepCountIs(2) })

    await host.plan.runTurn(() => loop.generate({ prompt: 'look around' }))

    expect(requests().map((r) => [r.system, notices(r)])).toEqual([
      [withSection, []],
      [SYSTEM, [LEAVING]],
    ])
  })
})

describe('R129: withPlanMode checks approvedPlan when it is called', () => {
  const SHAPE = '{ pin?, onHandoff? }'
  function make(options: Record<string, unknown>) {
    const planMode = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all' })
    services.push(planMode)
    const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog() }
    return () => withPlanMode({ planMode, agent, system: SYSTEM, ...options } as Parameters<typeof withPlanMode>[0])
  }

  it('R129: pinApprovedPlan or onHandoff beside the other options is refused, never ignored', () => {
    expect(make({ pinApprovedPlan: true })).toThrow(new TypeError(`withPlanMode option pinApprovedPlan is approvedPlan.pin: approvedPlan is ${SHAPE}`))
    expect(make({ onHandoff: () => {} })).toThrow(new TypeError(`withPlanMode option onHandoff is approvedPlan.onHandoff: approvedPlan is ${SHAPE}`))
  })

  it('R129: approvedPlan that is no object, has another key, or a wrong pin or onHandoff throws the first failure (regression: a callback that is no function failed every step that handed a plan off)', () => {
    for (const [value, got] of [[null, 'null'], [true, 'boolean'], ['pin', '"pin"'], [[], 'an array']] as const) {
      expect(make({ approvedPlan: value })).toThrow(new TypeError(`withPlanMode option approvedPlan must be ${SHAPE}; got ${got}`))
    }
    expect(make({ approvedPlan: { pin: true, pinned: true, [Symbol('x')]: 1 } })).toThrow(
      new TypeError(`withPlanMode option approvedPlan has unknown key(s) pinned, Symbol(x) — approvedPlan is ${SHAPE}`),
    )
    expect(make({ approvedPlan: { pin: 'yes', onHandoff: 1 } })).toThrow(new TypeError('withPlanMode option approvedPlan.pin must be a boolean; got "yes"'))
    expect(make({ approvedPlan: { onHandoff: 'log' } })).toThrow(new TypeError('withPlanMode option approvedPlan.onHandoff must be a function; got "log"'))
    expect(make({ approvedPlan: { onHandoff: null } })).toThrow(new TypeError('withPlanMode option approvedPlan.onHandoff must be a function; got null'))
  })

  it('R129: { pin, onHandoff }, either alone, an empty group or none is accepted', () => {
    for (const approvedPlan of [{ pin: true, onHandoff: () => {} }, { pin: false }, { onHandoff: () => {} }, {}, undefined]) {
      expect(make({ approvedPlan })).not.toThrow()
    }
  })
})
