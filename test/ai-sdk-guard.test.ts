import { jsonSchema, tool, type ToolSet } from 'ai'
import { afterEach, describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/ai-sdk.js'
import { createPlanGuard, readOnlyTool, type GuardAction } from '../src/guard/index.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type PlanMode } from '../src/index.js'
import { runLoop, scriptedModel, type LoopKind } from './fixtures/ai-sdk-model.js'

const SECTION = 'Plan mode is on: explore read-only, then present the plan with exit_plan_mode.'
const BLOCKED = 'write_file is not available in plan mode; present your plan with exit_plan_mode first.'
const LOOPS: LoopKind[] = ['generateText', 'streamText']

const services: PlanMode[] = []
afterEach(async () => {
  await Promise.all(services.splice(0).map((service) => service.dispose()))
})

/**
 * An agent in plan mode with a guarded AI SDK loop: `write_file` (side-effecting, unclassified),
 * `read_file` (`readOnly: true`), `search` (an MCP-style tool with `readOnlyHint`), and
 * `stream_log` (a side-effecting streaming tool), each noting that it ran.
 */
async function setup(action: GuardAction | undefined) {
  const session = createMemorySessionLog()
  const planMode = createPlanMode({ section: SECTION })
  services.push(planMode)
  const agent: PlanAgent = { id: 'agent-1', session }
  const ran: string[] = []
  const input = jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] })
  const tools = {
    write_file: tool({ description: 'Write a file.', inputSchema: input, execute: async ({ path }) => (ran.push(`write ${path}`), 'written') }),
    read_file: readOnlyTool(tool({ description: 'Read a file.', inputSchema: input, execute: async ({ path }) => (ran.push(`read ${path}`), 'contents') })),
    // An MCP tool as a client hands it over: its server's annotations ride on the tool.
    search: Object.assign(tool({ description: 'Search.', inputSchema: input, execute: async ({ path }) => (ran.push(`search ${path}`), 'found') }), {
      annotations: { readOnlyHint: true },
    }),
    stream_log: tool({
      description: 'Stream a log.',
      inputSchema: input,
      async *execute({ path }) {
        ran.push(`stream ${path}`)
        yield 'streamed'
      },
    }),
    // The user's click, simulated as a tool: classified read-only, else the guard blocks it too.
    plan_off: readOnlyTool(
      tool({
        description: 'The user types /plan off.',
        inputSchema: jsonSchema<Record<string, never>>({ type: 'object', properties: {} }),
        execute: async () => (await planMode.command.run({ agent, rawInput: 'off' })).text,
      }),
    ),
  } satisfies ToolSet
  await planMode.set(agent, true)
  const guard = action === undefined ? undefined : createPlanGuard({ planMode, action })
  const plan = withPlanMode({ planMode, agent, tools, ...(guard ? { guard } : {}) })
  const violations = () => session.events.filter((e) => e.type === 'plan/violation').map((e) => e.data)
  return { plan, ran, violations, session }
}

/**
 * One streamText loop of an agent in plan mode whose model calls `name` once with `{ path: 'a.ts' }`,
 * then says Done.: the tools are made once plan mode is on (`tools(ran)`); what ran, what was
 * recorded, what the model saw and read.
 */
async function callOnce(name: string, action: GuardAction | undefined, tools: (ran: string[]) => ToolSet) {
  const session = createMemorySessionLog()
  const planMode = createPlanMode({ section: SECTION })
  services.push(planMode)
  const agent: PlanAgent = { id: 'agent-1', session }
  await planMode.set(agent, true)
  const ran: string[] = []
  const guard = action === undefined ? undefined : createPlanGuard({ planMode, action })
  const plan = withPlanMode({ planMode, agent, tools: tools(ran), ...(guard ? { guard } : {}) })
  const { model, requests } = scriptedModel([{ toolCalls: [{ name, input: { path: 'a.ts' } }] }, { text: 'Done.' }])
  await runLoop('streamText', plan, model, [{ role: 'user', content: 'Go.' }], 3)
  const violations = session.events.filter((e) => e.type === 'plan/violation').map((e) => e.data)
  return { ran, violations, plan, requests }
}

describe.each(LOOPS)('R89, R90: a guarded AI SDK agent whose model writes while planning (%s)', (loop) => {
  const writeThenRead = [
    { toolCalls: [{ name: 'write_file', input: { path: 'src/app.ts' } }] },
    { toolCalls: [{ name: 'read_file', input: { path: 'src/app.ts' } }, { name: 'search', input: { path: 'cache' } }] },
    { text: 'Done.' },
  ]

  it('R89, R90: observe: the write runs, recorded as observed; read-only tools run unrecorded', async () => {
    const { plan, ran, violations } = await setup('observe')
    const { model, requests } = scriptedModel(writeThenRead)
    const turn = await runLoop(loop, plan, model, [{ role: 'user', content: 'Add a cache.' }], 5)
    expect(ran).toEqual(['write src/app.ts', 'read src/app.ts', 'search cache'])
    expect(turn.toolErrors).toEqual([])
    expect(violations()).toEqual([{ tool: 'write_file', callId: expect.stringMatching(/^call-0-0-/), action: 'observed' }])
    expect(requests()[1]!.toolResults).toEqual([{ toolName: 'write_file', output: { type: 'text', value: 'written' } }])
  })

  it('R89, R90: block: the write does not run; the model receives exactly the blocked message', async () => {
    const { plan, ran, violations } = await setup('block')
    const { model, requests } = scriptedModel(writeThenRead)
    const turn = await runLoop(loop, plan, model, [{ role: 'user', content: 'Add a cache.' }], 5)
    expect(ran).toEqual(['read src/app.ts', 'search cache'])
    expect(turn.toolErrors).toEqual([BLOCKED])
    expect(requests()[1]!.toolResults).toEqual([{ toolName: 'write_file', output: { type: 'error-text', value: BLOCKED } }])
    expect(violations()).toEqual([{ tool: 'write_file', callId: expect.stringMatching(/^call-0-0-/), action: 'blocked' }])
  })

  it('R89: a streaming side-effecting tool is blocked before its first value', async () => {
    const { plan, ran, violations } = await setup('block')
    const { model, requests } = scriptedModel([{ toolCalls: [{ name: 'stream_log', input: { path: 'x' } }] }, { text: 'Done.' }])
    await runLoop(loop, plan, model, [{ role: 'user', content: 'Go.' }], 3)
    expect(ran).toEqual([])
    expect(requests()[1]!.toolResults).toEqual([
      { toolName: 'stream_log', output: { type: 'error-text', value: 'stream_log is not available in plan mode; present your plan with exit_plan_mode first.' } },
    ])
    expect(violations()).toEqual([{ tool: 'stream_log', callId: expect.stringMatching(/^call-0-0-/), action: 'blocked' }])
  })

  it('R89: after a mid-turn /plan off, the write of the next step runs: the guard follows the state in force', async () => {
    const { plan, ran, violations } = await setup('block')
    const { model } = scriptedModel([
      { toolCalls: [{ name: 'plan_off', input: {} }, { name: 'write_file', input: { path: 'a.ts' } }] },
      { toolCalls: [{ name: 'write_file', input: { path: 'b.ts' } }] },
      { text: 'Done.' },
    ])
    const turn = await runLoop(loop, plan, model, [{ role: 'user', content: 'Go.' }], 5)
    // Step 0's write ran while plan mode was still in force (the leave applies at the next step).
    expect(turn.toolErrors).toEqual([BLOCKED])
    expect(ran).toEqual(['write b.ts'])
    expect(violations()).toEqual([{ tool: 'write_file', callId: expect.stringMatching(/^call-0-1-/), action: 'blocked' }])
  })

  it('R88, R40: the model sees the same catalog with and without a guard, in both states', async () => {
    const catalogs: unknown[] = []
    for (const action of [undefined, 'block', 'observe'] as const) {
      const { plan } = await setup(action)
      const { model, requests } = scriptedModel([{ text: 'Hi.' }])
      await runLoop(loop, plan, model, [{ role: 'user', content: 'Hi.' }], 1)
      catalogs.push(requests()[0]!.tools)
    }
    expect(catalogs[1]).toEqual(catalogs[0])
    expect(catalogs[2]).toEqual(catalogs[0])
  })
})

describe('R88, R89: through withPlanMode, only a tool’s own readOnly keeps it out of the guard', () => {
  const input = jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] })

  /** A guarded loop in plan mode whose model calls write_file once: what ran, what was recorded, what the model read. */
  async function writeOnce(action: GuardAction, writeFile: (ran: string[]) => object) {
    const { ran, violations, requests } = await callOnce('write_file', action, (ran) => ({ write_file: writeFile(ran) as never }))
    return { ran, violations, toolResults: requests()[1]!.toolResults }
  }
  const write = (ran: string[]) => ({ description: 'Write a file.', inputSchema: input, execute: async ({ path }: { path: string }) => (ran.push(`write ${path}`), 'written') })

  /** Block: the write does not run, a violation is recorded, the model reads R89's message. */
  async function expectBlocked(writeFile: (ran: string[]) => object) {
    const { ran, violations, toolResults } = await writeOnce('block', writeFile)
    expect(ran).toEqual([])
    expect(violations).toEqual([{ tool: 'write_file', callId: expect.any(String), action: 'blocked' }])
    expect(toolResults).toEqual([{ toolName: 'write_file', output: { type: 'error-text', value: BLOCKED } }])
  }

  it('R88, R89: a tool inheriting readOnly: true (Object.create) is blocked and recorded under block', async () => {
    await expectBlocked((ran) => Object.assign(Object.create({ readOnly: true }), write(ran)))
  })

  it('R88, R89: a tool whose readOnly is a class getter is blocked and recorded under block', async () => {
    class WriteTool {
      description = 'Write a file.'
      inputSchema = input
      constructor(readonly execute: (args: { path: string }) => Promise<string>) {}
      get readOnly() {
        return true
      }
    }
    await expectBlocked((ran) => new WriteTool(write(ran).execute))
  })

  it('R88, R89: with Object.prototype.readOnly set, a plain tool is blocked and recorded under block', async () => {
    const polluted = Object.prototype as { readOnly?: unknown }
    try {
      // Set once the agent is attached (withPlanMode classifies the tools after that): XState's own
      // snapshot restore walks inherited enumerable keys and cannot attach under this pollution.
      await expectBlocked((ran) => ((polluted.readOnly = true), write(ran)))
    } finally {
      delete polluted.readOnly
    }
  })

  it('R88: withPlanMode keeps a tool whose readOnly or annotations getter throws, as side-effecting: blocked under block, recorded and run under observe', async () => {
    for (const key of ['readOnly', 'annotations']) {
      const throwing = (ran: string[]) =>
        Object.defineProperty(write(ran), key, { enumerable: true, get: () => { throw new Error(`no ${key}`) } })
      await expectBlocked(throwing)
      const observed = await writeOnce('observe', throwing)
      expect(observed.ran).toEqual(['write a.ts'])
      expect(observed.violations).toEqual([{ tool: 'write_file', callId: expect.any(String), action: 'observed' }])
    }
  })

  it('R88: a tool whose execute getter throws does not make withPlanMode throw: its call is guarded, blocked under block, and fails with the getter\'s error under observe (regression: withPlanMode threw)', async () => {
    const throwingExecute = () =>
      Object.defineProperty({ description: 'Write a file.', inputSchema: input }, 'execute', { enumerable: true, get: () => { throw new Error('no execute') } })
    await expectBlocked(throwingExecute)
    const observed = await writeOnce('observe', throwingExecute)
    expect(observed.violations).toEqual([{ tool: 'write_file', callId: expect.any(String), action: 'observed' }])
    expect(observed.toolResults).toEqual([{ toolName: 'write_file', output: { type: 'error-text', value: 'no execute' } }])
  })

  it('R88: a tool whose execute getter hands out a new function on each read is blocked, and none of them runs', async () => {
    let reads = 0
    await expectBlocked((ran) =>
      Object.defineProperty({ description: 'Write a file.', inputSchema: input }, 'execute', {
        enumerable: true,
        get: () => {
          const read = reads++
          return async () => (ran.push(`execute #${read}`), 'written')
        },
      }),
    )
  })

  it('R88: a Proxy tool that answers readOnly: true to a get but has no own readOnly is side-effecting: blocked under block', async () => {
    await expectBlocked((ran) => new Proxy(write(ran), { get: (target, key) => (key === 'readOnly' ? true : Reflect.get(target, key)) }))
  })

  it('R88, R89: a streaming tool whose execute is a Proxy of an async generator is blocked before its first value', async () => {
    await expectBlocked((ran) => ({
      description: 'Write a file.',
      inputSchema: input,
      execute: new Proxy(async function* ({ path }: { path: string }) {
        ran.push(`write ${path}`)
        yield 'written'
      }, {}),
    }))
  })

  it('R88: a tool whose execute is inherited from its class is guarded: blocked under block', async () => {
    class WriteTool {
      description = 'Write a file.'
      inputSchema = input
      constructor(private readonly ran: string[]) {}
      async execute({ path }: { path: string }) {
        this.ran.push(`write ${path}`)
        return 'written'
      }
    }
    await expectBlocked((ran) => new WriteTool(ran))
  })

  it('R88, R40: a frozen host tool is guarded like any other (its copy takes the guarded execute)', async () => {
    await expectBlocked((ran) => Object.freeze(write(ran)))
  })
})

describe('R40, R88: a host tool named "__proto__" (issue #23)', () => {
  const input = jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] })

  /** A tool set whose one tool is an own property named `__proto__`, as `JSON.parse` or a registry keyed by name makes it. */
  function protoNamedTools(ran: string[]): ToolSet {
    const tools = JSON.parse('{"__proto__": {"description": "A tool with an odd name."}}') as ToolSet
    Object.assign(Object.getOwnPropertyDescriptor(tools, '__proto__')!.value as object, {
      inputSchema: input,
      execute: async ({ path }: { path: string }) => (ran.push(`ran ${path}`), 'done'),
    })
    return tools
  }

  /** One loop in plan mode whose model calls `__proto__` once: the catalog the model saw, what ran, what it read. */
  async function callProtoTool(action: GuardAction | undefined) {
    const { ran, plan, requests } = await callOnce('__proto__', action, protoNamedTools)
    return { toolNames: requests()[0]!.toolNames, toolResults: requests()[1]?.toolResults, ran, ownKeys: Object.keys(plan.tools) }
  }

  it('R40, R88: with a guard, a host tool named "__proto__" stays in the catalog, as it is without one, and its call is blocked under block', async () => {
    const unguarded = await callProtoTool(undefined)
    const guarded = await callProtoTool('block')
    expect(guarded.ownKeys).toEqual(['__proto__', 'exit_plan_mode'])
    expect(guarded.toolNames).toEqual(unguarded.toolNames)
    expect(guarded.toolNames).toEqual(['__proto__', 'exit_plan_mode'])
    expect(guarded.ran).toEqual([])
    expect(guarded.toolResults).toEqual([
      { toolName: '__proto__', output: { type: 'error-text', value: '__proto__ is not available in plan mode; present your plan with exit_plan_mode first.' } },
    ])
  })
})
