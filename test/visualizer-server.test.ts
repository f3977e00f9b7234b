/**
 * The visualizer's server and page model, without a browser: what it serves, whom it accepts,
 * that it changes nothing, and how the page reads a plan-mode chart.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rename, rm, stat, utimes, writeFile } from 'node:fs/promises'
import http from 'node:http'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { createPlanModeInspector, type ActorMessage, type InspectionMessage } from '../src/adapters/inspect.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type ReviewAnswer } from '../src/index.js'
import { planModeMachine } from '../src/machines/planMode.machine.js'
import type { ElkNode } from 'elkjs/lib/elk-api.js'
import { chartModel, labelWidths, layoutChart, type ChartModel } from '../apps/shared/visualizer/client/chart.js'
import { chartLayoutsOfText } from '../apps/shared/visualizer/chart-layout.js'
import { VisualizerModel, describeLogEvent, lineQuote, storyOf, summarize } from '../apps/shared/visualizer/client/model.js'
import type { ServerMessage, WireItem } from '../apps/shared/visualizer/client/protocol.js'
import { createRetainedHistory } from '../apps/shared/visualizer/history.js'
import { createLogReader, eventTime, logAgentId } from '../apps/shared/visualizer/log-reading.js'
import { LAYOUT_REFUSALS, parseViewerMessage, start, transpiledOnce, type Visualizer } from '../apps/shared/visualizer/server.js'

let visualizer: Visualizer
beforeAll(async () => {
  visualizer = await start({ port: 0 })
})
afterAll(() => visualizer.close())

/** A raw HTTP request, so the Host header can be anything. */
function request(
  path: string,
  options: { method?: string; host?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: visualizer.port, path, method: options.method ?? 'GET', headers: { host: options.host ?? `127.0.0.1:${visualizer.port}`, ...options.headers } },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (body += chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

/** Opens a WebSocket; resolves with it once open, or with the HTTP status it was refused with. */
function connect(path: string, options: { origin?: string; host?: string } = {}): Promise<WebSocket | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${visualizer.port}${path}`, {
      ...(options.origin ? { origin: options.origin } : {}),
      ...(options.host ? { headers: { host: options.host } } : {}),
    })
    ws.once('open', () => resolve(ws))
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0)
      ws.terminate()
    })
    ws.once('error', (error) => {
      if (ws.readyState !== WebSocket.CLOSED) reject(error)
    })
  })
}

/** A page's view connection that collects every wire item and status it is sent. */
async function viewer(port = visualizer.port): Promise<{ ws: WebSocket; items: WireItem[]; messages: ServerMessage[] }> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/view`)
  const items: WireItem[] = []
  const messages: ServerMessage[] = []
  // Listening before `open`: the server's first messages may come in the same chunk as the handshake.
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as ServerMessage
    messages.push(message)
    if (message.kind === 'messages') items.push(...message.items)
  })
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  return { ws, items, messages }
}

describe('visualizer server: safety', () => {
  it('refuses WebSocket connections from a foreign Origin, on both endpoints', async () => {
    expect(await connect('/view', { origin: 'http://evil.example' })).toBe(403)
    expect(await connect('/inspect', { origin: 'http://evil.example' })).toBe(403)
    expect(await connect('/view', { origin: 'null' })).toBe(403)
    // Another port of the same host is another origin too.
    expect(await connect('/view', { origin: `http://127.0.0.1:${visualizer.port + 1}` })).toBe(403)
  })

  it('accepts the page’s own origin (either loopback name) and Node clients that send no Origin', async () => {
    for (const origin of [`http://127.0.0.1:${visualizer.port}`, undefined]) {
      const ws = await connect('/view', origin ? { origin } : {})
      expect(ws).toBeInstanceOf(WebSocket)
      ;(ws as WebSocket).close()
    }
    const local = await connect('/view', { origin: `http://localhost:${visualizer.port}`, host: `localhost:${visualizer.port}` })
    expect(local).toBeInstanceOf(WebSocket)
    ;(local as WebSocket).close()
  })

  it('answers only requests addressed to its own host (DNS rebinding), over HTTP and WebSocket', async () => {
    expect((await request('/', { host: `evil.example:${visualizer.port}` })).status).toBe(421)
    expect(await connect('/view', { host: `evil.example:${visualizer.port}`, origin: `http://evil.example:${visualizer.port}` })).toBe(421)
  })

  it('is read-only: no method but GET/HEAD, and a page’s commands change nothing without demo mode', async () => {
    expect((await request('/', { method: 'POST' })).status).toBe(405)
    expect((await request('/inspect', { method: 'PUT' })).status).toBe(405)
    const page = await viewer()
    await expect.poll(() => page.messages[0]).toEqual({ kind: 'hello', demo: false })
    const before = page.items.length
    page.ws.send(JSON.stringify({ kind: 'command', command: '/plan' }))
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(page.items.length).toBe(before)
    expect(page.messages.some((m) => m.kind === 'demo-status')).toBe(false)
    page.ws.close()
  })

  it('binds 127.0.0.1 only', async () => {
    expect(new URL(visualizer.url).hostname).toBe('127.0.0.1')
    const external = Object.values(networkInterfaces()).flat().find((address) => address && address.family === 'IPv4' && !address.internal)
    if (external) {
      // Any other interface of this machine refuses the connection.
      const refused = await new Promise<boolean>((resolve) => {
        const req = http.get({ host: external.address, port: visualizer.port, path: '/', timeout: 2000 }, () => resolve(false))
        req.on('error', () => resolve(true))
        req.on('timeout', () => {
          req.destroy()
          resolve(true)
        })
      })
      expect(refused).toBe(true)
    }
  })
})

describe('visualizer server: comments on the plan from a page (R100)', () => {
  const command = (value: unknown) => parseViewerMessage(JSON.stringify(value))
  const keep = (comments: unknown) => command({ kind: 'command', command: 'keep-planning', comments })

  it('R100: a page’s comments are untrusted: only Keep planning carries them, as { quote, text } strings within bounds; anything else refuses the command', () => {
    expect(keep([{ quote: 'Do it.', text: 'How?', line: 3, extra: { deep: true } }])).toEqual({ kind: 'command', command: 'keep-planning', comments: [{ quote: 'Do it.', text: 'How?' }] })
    expect(keep([])).toEqual({ kind: 'command', command: 'keep-planning' })
    // Blank strings have the shape: whether they may be sent is the library's to say (R100).
    expect(keep([{ quote: ' ', text: '' }])).toEqual({ kind: 'command', command: 'keep-planning', comments: [{ quote: ' ', text: '' }] })
    for (const bad of [{}, 'Do it.', null, [null], [[]], ['Do it.'], [{ quote: 'Do it.' }], [{ quote: 1, text: 'x' }], [{ quote: 'x', text: ['x'] }], [{ quote: 'x', text: 'x'.repeat(4001) }], Array.from({ length: 101 }, () => ({ quote: 'x', text: 'y' }))]) {
      expect(keep(bad)).toBeUndefined()
    }
    expect(keep(Array.from({ length: 100 }, () => ({ quote: 'x', text: 'y'.repeat(4000) })))?.comments).toHaveLength(100)
    expect(command({ kind: 'command', command: 'approve', comments: [{ quote: 'Do it.', text: 'How?' }] })).toBeUndefined()
    expect(command({ kind: 'command', command: '/plan', comments: [] })).toBeUndefined()
  })

  it('R100: a comment quotes the clicked line without its markdown marker, an exact excerpt of it', () => {
    expect(['# Tidy the log (v1)', '2. Add a step that keeps `plan/*`.', '  - nested item  ', '> quoted', 'plain', '-'].map(lineQuote)).toEqual([
      'Tidy the log (v1)',
      'Add a step that keeps `plan/*`.',
      'nested item',
      'quoted',
      'plain',
      '-',
    ])
  })

  it('R100: the demo passes a page’s comments in its answer: the model is told them, the record keeps them; a quote off the plan comes back as the library’s exact message', async () => {
    const demo = await start({ port: 0, demo: { stepDelayMs: 5 } })
    const page = await viewer(demo.port)
    try {
      const statuses = () => page.messages.filter((m): m is Extract<ServerMessage, { kind: 'demo-status' }> => m.kind === 'demo-status')
      const openPlan = () => statuses().at(-1)?.plan
      const logged = (type: string) =>
        page.items.flatMap((item) => (item.message.type === 'plan-mode.log' && item.message.event.type === type ? [item.message.event.data as Record<string, unknown>] : []))
      const send = (value: unknown) => page.ws.send(JSON.stringify(value))

      send({ kind: 'command', command: '/plan' })
      await expect.poll(openPlan).toMatch(/^# Tidy the session log \(v1\)/)
      const v1 = openPlan()!
      expect(statuses().at(-1)).toMatchObject({ reviewOpen: true, tone: 'info' })
      const line = v1.split('\n')[3]!
      expect(line).toBe('2. Add a compaction step that keeps every `plan/*` event.')
      const comment = { quote: lineQuote(line), text: 'Keep them <b>in order</b>.' }

      // A malformed comment, or comments with Approve: refused, nothing changes.
      send({ kind: 'command', command: 'keep-planning', comments: [{ quote: comment.quote }] })
      send({ kind: 'command', command: 'approve', comments: [comment] })
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(logged('plan/review')).toEqual([])
      expect(openPlan()).toBe(v1)

      send({ kind: 'command', command: 'keep-planning', feedback: 'Mind resume.', comments: [{ ...comment, line: 4 }] })
      await expect.poll(() => logged('plan/review').length).toBe(1)
      const feedback = `Mind resume.\n\nComments on the plan:\n1. On "Add a compaction step that keeps every \`plan/*\` event.": Keep them <b>in order</b>.`
      expect(logged('plan/review')[0]).toEqual({ outcome: 'keep-planning', title: 'Tidy the session log (v1)', plan: v1, feedback, comments: [comment] })
      // What the demo's model is told: R45's message with that feedback.
      await expect.poll(() => logged('tool/result')[0]).toEqual({ tool: 'exit_plan_mode', error: `The user chose to keep planning; their feedback: ${feedback}` })

      await expect.poll(openPlan).toMatch(/^# Tidy the session log \(v2\)/)
      send({ kind: 'command', command: 'keep-planning', comments: [{ quote: 'Rewrite the log.', text: 'No.' }] })
      await expect.poll(() => statuses().at(-1)).toEqual({
        kind: 'demo-status',
        text: 'plan review comment 1 quotes text that is not in the plan: "Rewrite the log."',
        tone: 'error',
        reviewOpen: false,
      })
      // The status can reach the page before the failed review's record lands in the log: wait for it.
      await expect.poll(() => logged('plan/review').map((record) => record.outcome)).toEqual(['keep-planning', 'failed'])
    } finally {
      page.ws.close()
      await demo.close()
    }
  })
})

describe('visualizer server: the whole set of decisions in the demo (R101, R102)', () => {
  const command = (value: unknown) => parseViewerMessage(JSON.stringify(value))
  const OPTIONS = [
    { label: 'Approve', description: 'Leave plan mode; the plan is carried out from the next step.' },
    { label: 'Approve in a fresh context', description: 'Leave plan mode; the plan is carried out from the next step, in a fresh context that holds the plan and the decisions made.' },
    { label: 'Keep planning', description: 'Stay in plan mode; feedback goes back to the model.' },
    { label: 'Leave plan mode', description: 'Leave plan mode without carrying out the plan; the model stops and waits.' },
  ]

  it('R101: a page may send the four review answers by name only; labels, other names and comments with any answer but Keep planning are refused', () => {
    for (const name of ['approve', 'approve-fresh', 'keep-planning', 'leave']) expect(command({ kind: 'command', command: name })).toEqual({ kind: 'command', command: name })
    for (const name of ['Approve in a fresh context', 'Leave plan mode', 'fresh', 'left', 'APPROVE-FRESH', ['leave'], null]) expect(command({ kind: 'command', command: name })).toBeUndefined()
    expect(command({ kind: 'command', command: 'leave', comments: [{ quote: 'Do it.', text: 'How?' }] })).toBeUndefined()
    expect(command({ kind: 'command', command: 'approve-fresh', comments: [{ quote: 'Do it.', text: 'How?' }] })).toBeUndefined()
  })

  it('R101, R102: the demo offers all four options; Approve in a fresh context is recorded fresh and the plan is handed off once, in a fresh context; Leave plan mode is recorded left, the model is told so, plan mode is left at the next step and the agent stops', async () => {
    const demo = await start({ port: 0, demo: { stepDelayMs: 5 } })
    const page = await viewer(demo.port)
    try {
      const statuses = () => page.messages.filter((m): m is Extract<ServerMessage, { kind: 'demo-status' }> => m.kind === 'demo-status')
      const logged = (): Record<string, unknown>[] =>
        page.items.flatMap((item) => (item.message.type === 'plan-mode.log' ? [{ type: item.message.event.type, ...(item.message.event.data as Record<string, unknown>) }] : []))
      const records = (type: string) => logged().filter((event) => event.type === type)
      const send = (value: unknown) => page.ws.send(JSON.stringify(value))

      // v1: kept planning with feedback, so the handoff carries a decision.
      send({ kind: 'command', command: '/plan' })
      await expect.poll(() => statuses().at(-1)?.plan).toMatch(/^# Tidy the session log \(v1\)/)
      // The question's own options, in its order (R101): the page's buttons show them.
      const { options } = statuses().at(-1)!
      expect(options).toHaveLength(4)
      expect(options).toEqual(expect.arrayContaining(OPTIONS))
      const labels = options!.map((option) => option.label)
      expect(statuses().at(-1)).toMatchObject({ reviewOpen: true, text: `The plan waits for your review: ${labels.slice(0, 3).join(', ')} or ${labels[3]}.` })
      send({ kind: 'command', command: 'keep-planning', feedback: 'Mind resume.' })
      await expect.poll(() => statuses().at(-1)?.plan).toMatch(/^# Tidy the session log \(v2\)/)
      const v2 = statuses().at(-1)!.plan!
      send({ kind: 'command', command: 'approve-fresh' })
      await expect.poll(() => statuses().at(-1)?.text).toBe('Approved in a fresh context: the agent carries out plan v2 from a context that holds only the plan and the decisions made.')
      expect(records('plan/review').at(-1)).toEqual({ type: 'plan/review', outcome: 'approved', title: 'Tidy the session log (v2)', plan: v2, fresh: true })
      expect(records('tool/result').at(-1)).toEqual({ type: 'tool/result', tool: 'exit_plan_mode', text: 'Plan approved — plan mode exited; carry out the plan starting with your next step.' })
      // The fresh context's first message: the library's handoff text (R102), then the request it starts.
      const text = [
        'The user approved this plan (v2) to be carried out in a fresh context: the conversation that produced it was set aside. Carry it out, starting now.',
        'Decisions made while planning:\n- v1: Mind resume.',
        `The plan:\n\n${v2}`,
      ].join('\n\n')
      // The status comes with the review's record; the step that carries the plan out logs after it.
      const afterFresh = () => logged().slice(logged().findIndex((event) => event.type === 'plan/review' && event.fresh === true))
      await expect.poll(() => afterFresh().map((event) => event.type)).toEqual(['plan/review', 'tool/result', 'plan/mode', 'message', 'request/header', 'message', 'turn/end'])
      const after = afterFresh()
      expect(after[3]).toEqual({ type: 'message', role: 'user', text, handoff: { version: 2, decisions: 1 } })
      expect(after[5]).toEqual({ type: 'message', role: 'assistant', text: 'Carrying out plan v2 in a fresh context.' })
      expect(logged().filter((event) => event.type === 'message' && event.text === text)).toHaveLength(1)

      // Plan again, and leave without carrying it out.
      send({ kind: 'command', command: '/plan' })
      await expect.poll(() => statuses().at(-1)?.reviewOpen).toBe(true)
      const v1 = statuses().at(-1)!.plan!
      expect(v1).toMatch(/^# Tidy the session log \(v1\)/)
      send({ kind: 'command', command: 'leave' })
      await expect.poll(() => statuses().at(-1)?.text).toBe('Left plan mode: the plan is not carried out; the agent stops and waits for you.')
      // From the review's record on: the planning step's own events may reach the page after the
      // status that the review is open (a busy machine), so they are not counted as the leave's.
      const afterLeave = () => {
        const all = logged()
        return all.slice(all.map((event) => event.type).lastIndexOf('plan/review'))
      }
      await expect.poll(() => afterLeave().map((event) => event.type)).toEqual(['plan/review', 'tool/result', 'plan/mode', 'message', 'turn/end'])
      const leaving = afterLeave()
      expect(leaving[0]).toEqual({ type: 'plan/review', outcome: 'left', title: 'Tidy the session log (v1)', plan: v1 })
      expect(leaving[1]).toEqual({ type: 'tool/result', tool: 'exit_plan_mode', error: 'The user left plan mode without carrying out the plan; stop here and wait for their message.' })
      expect(leaving[2]).toEqual({ type: 'plan/mode', active: false })
      expect(leaving[3]).toEqual({ type: 'message', role: 'assistant', text: 'I left plan mode without carrying out the plan; I stop here and wait for your message.' })
      // The server's reading: the story tells both decisions, and the history's fresh approval says so.
      const stories = page.items.flatMap((item) => (item.log?.story?.tone === 'review' ? [item.log.story.label] : []))
      expect(stories).toEqual([
        'Review answered: keep planning',
        'Review answered: approved (fresh context)',
        'Review answered: left plan mode',
      ])
      const plans = page.items.flatMap((item) => (item.log?.plan ? [item.log.plan] : []))
      expect(plans.map(({ version, outcome, fresh }) => ({ version, outcome, ...(fresh ? { fresh } : {}) }))).toEqual([
        { version: 1, outcome: 'keep-planning' },
        { version: 2, outcome: 'approved', fresh: true },
        { version: 1, outcome: 'left' },
      ])
      // A decision with no review open changes nothing.
      send({ kind: 'command', command: 'leave' })
      await expect.poll(() => statuses().at(-1)).toEqual({ kind: 'demo-status', text: 'No plan is under review.', tone: 'error', reviewOpen: false })
    } finally {
      page.ws.close()
      await demo.close()
    }
  })
})

describe('visualizer server: the page, all local', () => {
  it('a client module is transpiled again when its text changed, also when its modification time did not (an edit within one tick of the clock, a file replaced by one with the same mtime)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'plan-mode-client-'))
    try {
      const file = join(dir, 'module.ts')
      // Every version of the file has this mtime.
      const tick = new Date(Math.floor(Date.now() / 1000) * 1000)
      await writeFile(file, 'export const version: number = 1\n')
      await utimes(file, tick, tick)
      expect(await transpiledOnce(file)).toBe('export const version = 1;\n')
      // Rewritten in place within the same tick of the filesystem's clock.
      await writeFile(file, 'export const version: number = 2\n')
      await utimes(file, tick, tick)
      expect((await stat(file)).mtimeMs).toBe(tick.getTime())
      expect(await transpiledOnce(file)).toBe('export const version = 2;\n')
      // Replaced by a rename of a file with the same mtime (`cp -p`, `rsync -t`).
      const next = join(dir, 'next.ts')
      await writeFile(next, 'export const version: number = 3\n')
      await utimes(next, tick, tick)
      await rename(next, file)
      expect(await transpiledOnce(file)).toBe('export const version = 3;\n')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('serves the page and everything it loads from itself (no CDN), under a strict CSP', async () => {
    const page = await request('/')
    expect(page.status).toBe(200)
    expect(page.headers['content-security-policy']).toContain("script-src 'self'")
    expect(page.headers['content-security-policy']).toContain("default-src 'none'")
    expect(page.headers['x-content-type-options']).toBe('nosniff')
    const references = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!)
    // No elkjs: the server lays the chart out (R178).
    expect(references).toEqual(['/style.css', '/app.js'])
    for (const reference of references) expect((await request(reference)).status).toBe(200)
    // The modules import each other by relative path only.
    for (const module of ['/app.js', '/chart.js', '/model.js']) {
      const { body, headers } = await request(module)
      expect(headers['content-type']).toContain('javascript')
      expect(body).not.toMatch(/\bELK\b|elk\.bundled/)
      expect(body).not.toMatch(/\bfrom\s+['"](?!\.\/)/)
      // (The SVG namespace is a name, not a URL that is fetched.)
      expect(body.replaceAll('http://www.w3.org/2000/svg', '')).not.toMatch(/https?:\/\//)
    }
    expect((await request('/vendor/elk.js')).status).toBe(404)
    expect((await request('/server.ts')).status).toBe(404)
    expect((await request('/../package.json')).status).toBe(404)
  })
})

/** The plan-mode actor's messages, as the page receives them. */
async function planModeMessages(): Promise<WireItem[]> {
  const messages: InspectionMessage[] = []
  const inspector = createPlanModeInspector({ send: (message) => messages.push(message) })
  const planMode = createPlanMode({ section: 'PLAN', inspect: inspector.inspect, review: { ask: () => new Promise(() => {}) } })
  const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog() }
  inspector.watch(agent, planMode.actor(agent))
  agent.session.append('turn/start', {})
  await planMode.set(agent, true)
  await planMode.stepBoundary(agent)
  void planMode.exitTool.execute({ plan: '# Plan\n1. Do it.' }, { agent }).catch(() => {})
  await new Promise((resolve) => setTimeout(resolve, 20))
  await planMode.dispose()
  await inspector.stop()
  // Numbered and read as the server does.
  const reader = createLogReader()
  return messages.map((message, i) => ({
    seq: i + 1,
    at: 1000 + i,
    message,
    ...(message.type === 'plan-mode.log' ? { log: reader.read(message.agentId, message.event) } : {}),
  }))
}

describe('visualizer server: the chart laid out on the server (R178)', () => {
  /** The plan-mode machine's definition as its inspector sends it: what the page draws. */
  let definition: string
  let chart: ChartModel
  beforeAll(async () => {
    const actor = (await planModeMessages()).find((item) => item.message.type === '@xstate.actor' && item.message.parentId === undefined)!.message as ActorMessage
    definition = actor.definition!
    chart = chartModel(JSON.parse(definition))
  })
  const sevenPx = (text: string) => text.length * 7
  /** Posts a layout request as the page does; `body` as it is when a string. */
  const post = async (body: unknown, headers: Record<string, string> = {}, host?: string) => {
    const answer = await request('/api/chart/layout', {
      method: 'POST',
      ...(host ? { host } : {}),
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
    return { status: answer.status, body: JSON.parse(answer.body) as { layouts?: Record<string, ElkNode>; error?: string }, headers: answer.headers }
  }
  /** Sends an actor message carrying `text` as its definition, and an event after it; resolves with their seqs. */
  const sendActor = async (text: string, to: Visualizer = visualizer) => {
    const sessionId = `layout:${Math.random()}`
    const page = await viewer(to.port)
    to.transport.send({ type: '@xstate.actor', sessionId, name: sessionId, definition: text, snapshot: { value: {} } } as unknown as InspectionMessage)
    to.transport.send({ type: '@xstate.event', sessionId, event: { type: 'PING' } } as unknown as InspectionMessage)
    const ours = () => page.items.filter((item) => (item.message as { sessionId?: string }).sessionId === sessionId)
    await expect.poll(() => ours().length).toBe(2)
    page.ws.close()
    const [actor, event] = ours()
    return { actor: actor!.seq, event: event!.seq }
  }

  it("R178: lays out a definition an inspector sent, named by its message's seq: elkjs's own layouts of the page's graphs for its label widths", async () => {
    const { actor } = await sendActor(definition)
    const widths = labelWidths(chart, sevenPx)
    const answer = await post({ definition: actor, widths })
    expect(answer.status).toBe(200)
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8')
    const { layouts } = answer.body as { layouts: Record<string, ElkNode> }
    // One per region of the parallel root, as the page lays them out; placed, they hold every state.
    // (That they are elkjs's own layouts of the page's graphs: test/web-chart-layout.test.ts.)
    expect(Object.keys(layouts)).toEqual(['wrap:mode', 'wrap:turn', 'wrap:review', 'wrap:intent', 'wrap:lifecycle'])
    const placed = await layoutChart(chart, sevenPx, async (graph) => layouts[graph.id]!, { width: 1200, height: 800 })
    expect(placed.nodes.map((node) => node.path).sort()).toEqual([...chart.nodes.keys()].sort())
    // The page's own origin may ask; so may a Node client that sends none.
    expect((await post({ definition: actor, widths }, { origin: `http://127.0.0.1:${visualizer.port}` })).status).toBe(200)
  })

  it('R178: a page names a kept definition and never sends a graph; anything else a page sends is refused with the reason', async () => {
    const { actor, event } = await sendActor(definition)
    const notJson = await sendActor('{ not json')
    const widths = labelWidths(chart, sevenPx)
    const root = chart.nodes.get('')!.key
    // Widths: one for each label, a number of px from 0 to 2000.
    expect(await post({ definition: actor, widths: { state: {}, edge: widths.edge } })).toMatchObject({ status: 400, body: { error: `widths.state[${JSON.stringify(root)}] must be a width in px (0–2000)` } })
    expect(await post({ definition: actor, widths: { ...widths, state: { ...widths.state, [root]: 2001 } } })).toMatchObject({ status: 400, body: { error: `widths.state[${JSON.stringify(root)}] must be a width in px (0–2000)` } })
    expect(await post({ definition: actor })).toMatchObject({ status: 400, body: { error: 'widths must be { state: {…}, edge: {…} }' } })
    // Only a kept @xstate.actor message's machine definition, named by its seq: never a graph of the page's.
    for (const named of [event, notJson.actor, 10 ** 9, 0, -1, 1.5, String(actor), null, undefined, JSON.parse(definition), { states: { a: {} } }]) {
      expect(await post({ definition: named, widths })).toMatchObject({ status: 404, body: { error: LAYOUT_REFUSALS.noDefinition } })
    }
    // The request itself.
    expect(await post({ definition: actor, widths }, { origin: 'http://evil.example' })).toMatchObject({ status: 403, body: { error: LAYOUT_REFUSALS.crossOrigin } })
    expect(await post({ definition: actor, widths }, { 'content-type': 'text/plain' })).toMatchObject({ status: 415, body: { error: LAYOUT_REFUSALS.notJson } })
    expect(await post(`{"widths":"${'x'.repeat(2 ** 20)}"}`)).toMatchObject({ status: 413, body: { error: LAYOUT_REFUSALS.tooLarge } })
    for (const body of ['not json', 'null', '[1]', '"text"']) expect(await post(body)).toMatchObject({ status: 400, body: { error: LAYOUT_REFUSALS.notObject } })
    for (const [answer, status, error] of [
      [await request('/api/chart/layout', { method: 'POST', host: `evil.example:${visualizer.port}` }), 421, LAYOUT_REFUSALS.wrongHost],
      [await request('/api/chart/layout', { method: 'PUT' }), 405, 'read-only'],
    ] as const) {
      expect({ status: answer.status, type: answer.headers['content-type'], body: JSON.parse(answer.body) }).toEqual({ status, type: 'application/json; charset=utf-8', body: { error } })
    }
    expect(LAYOUT_REFUSALS).toEqual({
      crossOrigin: 'a page of another origin cannot ask for layouts',
      notJson: 'the body must be JSON (content-type: application/json)',
      tooLarge: 'the body is over 1 MiB',
      notObject: 'the body must be a JSON object',
      noDefinition: 'definition must be the seq of a kept @xstate.actor message that carries a machine definition',
      wrongHost: 'wrong host',
    })
  })

  /** Posts a layout request to `to` with Node's client; resolves with its status and body, and its request to abort it. */
  const ask = (to: Visualizer, body: unknown) => {
    let req!: http.ClientRequest
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req = http.request(
        { host: '127.0.0.1', port: to.port, path: '/api/chart/layout', method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          let text = ''
          res.setEncoding('utf8')
          res.on('data', (chunk: string) => (text += chunk))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
        },
      )
      req.on('error', reject)
      req.end(JSON.stringify(body))
    })
    return { answered, req }
  }

  it('R178: elkjs runs beside the server, not on its thread: a page and its assets are answered while a chart is laid out', async () => {
    const { actor } = await sendActor(definition)
    let laidOut = false
    // Widths no other test asks for: a layout of its own (0.5–3 s of a core).
    const layout = ask(visualizer, { definition: actor, widths: labelWidths(chart, (text) => text.length * 6.5 + 1) })
    void layout.answered.then(() => (laidOut = true))
    const page = await request('/')
    expect(page.status).toBe(200)
    expect(laidOut).toBe(false)
    expect((await layout.answered).status).toBe(200)
  })

  it('R178: one layout runs and two wait; one more is refused as busy, and a chart of over 400 labels is not laid out', async () => {
    const { actor } = await sendActor(definition)
    const asks = [1, 2, 3, 4].map((n) => ask(visualizer, { definition: actor, widths: labelWidths(chart, (text) => text.length * 6 + n / 10) }).answered)
    const answers = await Promise.all(asks)
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 503])
    expect(JSON.parse(answers[3]!.body)).toEqual({ error: 'busy laying out other charts; try again' })
    const states = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`s${i}`, { on: { GO: `s${(i + 1) % 400}` } }]))
    const large = await sendActor(JSON.stringify({ id: 'large', initial: 's0', states }))
    const largeChart = chartModel({ id: 'large', initial: 's0', states } as never)
    const refused = await ask(visualizer, { definition: large.actor, widths: labelWidths(largeChart, sevenPx) }).answered
    expect({ status: refused.status, body: JSON.parse(refused.body) }).toEqual({ status: 413, body: { error: 'the chart has over 400 labels: too large to lay out' } })
  })

  it('R178, R108: closing the server while it lays a chart out ends promptly, the layout unanswered', async () => {
    const own = await start({ port: 0 })
    const { actor } = await sendActor(definition, own)
    const layout = ask(own, { definition: actor, widths: labelWidths(chart, (text) => text.length * 6.5 + 2) })
    let laidOut = false
    const settled = layout.answered.then(() => (laidOut = true), () => (laidOut = false))
    // The request has reached the server: its socket is open.
    await new Promise((resolve) => layout.req.once('socket', (socket: import('node:net').Socket) => (socket.connecting ? socket.once('connect', resolve) : resolve(undefined))))
    await own.close()
    expect(laidOut).toBe(false)
    await settled
  })

  it('R178, R109: a definition the server no longer keeps is not laid out', async () => {
    const small = await start({ port: 0, maxDefinitions: 1 })
    try {
      const first = await sendActor(definition, small)
      const second = await sendActor(definition, small)
      const widths = labelWidths(chart, sevenPx)
      const ask = (seq: number) =>
        new Promise<number>((resolve, reject) => {
          const req = http.request(
            { host: '127.0.0.1', port: small.port, path: '/api/chart/layout', method: 'POST', headers: { 'content-type': 'application/json' } },
            (res) => (res.resume(), resolve(res.statusCode ?? 0)),
          )
          req.on('error', reject)
          req.end(JSON.stringify({ definition: seq, widths }))
        })
      expect([await ask(first.actor), await ask(second.actor)]).toEqual([404, 200])
    } finally {
      await small.close()
    }
  })
})

describe('visualizer server: the inspection hub', () => {
  it('drops what is not the protocol, numbers the rest, and replays it all to a page that connects late', async () => {
    const producer = (await connect('/inspect')) as WebSocket
    producer.send('not json')
    producer.send(JSON.stringify({ type: 'something.else', sessionId: 'x' }))
    producer.send(JSON.stringify({ type: '@xstate.snapshot' }))
    producer.send(JSON.stringify({ type: 'plan-mode.log', agentId: 'hub-agent', event: { seq: 1, type: 'turn/start', data: {} } }))
    producer.send(JSON.stringify({ type: 'plan-mode.log', agentId: 'hub-agent', event: { seq: 2, type: 'turn/end', data: {} } }))
    const live = await viewer()
    await expect.poll(() => live.items.filter((item) => item.message.type === 'plan-mode.log').length).toBe(2)
    producer.close()

    const late = await viewer()
    await expect.poll(() => late.items.length).toBe(live.items.length)
    expect(late.items).toEqual(live.items)
    const seqs = late.items.map((item) => item.seq)
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b))
    expect(late.items.every((item) => ['@xstate.actor', '@xstate.event', '@xstate.snapshot', 'plan-mode.agent', 'plan-mode.log'].includes(item.message.type))).toBe(true)
    // Each log event comes with the library's reading of it.
    expect(late.items.filter((item) => item.message.type === 'plan-mode.log').map((item) => item.log)).toEqual([
      { line: { tone: 'turn', label: 'turn/start', detail: '' }, active: false, story: { tone: 'turn', label: 'Turn started', detail: '' } },
      { line: { tone: 'turn', label: 'turn/end', detail: '' }, active: false, story: { tone: 'turn', label: 'Turn ended', detail: '' } },
    ])
    // Live messages carry their arrival time.
    expect(late.items.every((item) => typeof item.at === 'number')).toBe(true)
    live.ws.close()
    late.ws.close()
  })

  it('a replayed log’s messages carry no arrival time: they happened before they arrived', async () => {
    const page = await viewer()
    visualizer.replayTransport.send({ type: 'plan-mode.log', agentId: 'replayed', event: { seq: 1, type: 'turn/start', data: {} } })
    visualizer.transport.send({ type: 'plan-mode.log', agentId: 'live', event: { seq: 1, type: 'turn/start', data: {} } })
    await expect.poll(() => page.items.filter((item) => item.message.type === 'plan-mode.log' && ['replayed', 'live'].includes(item.message.agentId)).length).toBe(2)
    const item = (agentId: string) => page.items.find((i) => i.message.type === 'plan-mode.log' && i.message.agentId === agentId)!
    expect(item('replayed')).not.toHaveProperty('at')
    expect(typeof item('live').at).toBe('number')
    page.ws.close()
  })

  it('close frees the port, and start takes a given port', async () => {
    const first = await start({ port: 0 })
    const port = first.port
    await first.close()
    const again = await start({ port })
    expect(again.port).toBe(port)
    expect(again.url).toBe(`http://127.0.0.1:${port}/`)
    await again.close()
  })
})

describe('visualizer server: bounded memory (R109)', () => {
  const actor = (i: number): InspectionMessage =>
    ({ type: '@xstate.actor', sessionId: `flood:${i}`, name: `flood-${i}`, definition: JSON.stringify({ id: `flood-${i}`, states: {} }), snapshot: { value: 'idle' } }) as unknown as InspectionMessage
  const logEvent = (agentId: string, seq: number, text = ''): InspectionMessage => ({ type: 'plan-mode.log', agentId, event: { seq, type: 'note', data: { text } } })

  it('R109: the retained history keeps the newest messages and definitions within their own bounds, and says what it dropped', () => {
    const history = createRetainedHistory({ maxMessages: 3, maxDefinitions: 2, maxBytes: 1_000 })
    // seq 1, 4, 7, … 100 000 are definitions: they outlive the messages around them, within their own bound.
    for (let seq = 1; seq <= 100_000; seq++) history.add(seq, `{"n":${seq}}`, seq % 3 === 1)
    const seqs = (entries: { seq: number }[]) => entries.map((entry) => entry.seq)
    expect(seqs(history.after(0, Infinity, Infinity))).toEqual([99_996, 99_997, 99_998, 99_999, 100_000])
    expect({ size: history.size, bytes: history.bytes, dropped: history.dropped, highestDroppedSeq: history.highestDroppedSeq }).toEqual({
      size: 5,
      bytes: 4 * '{"n":99996}'.length + '{"n":100000}'.length,
      dropped: 99_995,
      highestDroppedSeq: 99_995,
    })
    // What a page has not had yet, in frames of at most so many items and bytes (the first whatever its size).
    expect(seqs(history.after(99_997, 10, Infinity))).toEqual([99_998, 99_999, 100_000])
    expect(seqs(history.after(0, 2, Infinity))).toEqual([99_996, 99_997])
    expect(seqs(history.after(0, Infinity, 12))).toEqual([99_996])
    expect(seqs(history.after(0, Infinity, 0))).toEqual([99_996])
    expect(history.after(100_000, 10, Infinity)).toEqual([])
  })

  it('R109: the retained history keeps its bytes within the bound: other messages go first, then definitions', () => {
    const history = createRetainedHistory({ maxMessages: 100, maxDefinitions: 100, maxBytes: 30 })
    history.add(1, 'd'.repeat(10), true)
    history.add(2, 'm'.repeat(10), false)
    history.add(3, 'm'.repeat(10), false)
    history.add(4, 'm'.repeat(10), false)
    expect(history.after(0, Infinity, Infinity).map((entry) => entry.seq)).toEqual([1, 3, 4])
    history.add(5, 'd'.repeat(25), true)
    expect(history.after(0, Infinity, Infinity).map((entry) => entry.seq)).toEqual([5])
    expect({ bytes: history.bytes, dropped: history.dropped, highestDroppedSeq: history.highestDroppedSeq }).toEqual({ bytes: 25, dropped: 4, highestDroppedSeq: 4 })
  })

  it('R109: 20 000 actor definitions: a page that connects late gets the newest 1 000 and hears how many earlier messages were dropped', async () => {
    const server = await start({ port: 0 })
    try {
      for (let i = 1; i <= 20_000; i++) server.transport.send(actor(i))
      server.transport.send(logEvent('after-the-flood', 1))
      const page = await viewer(server.port)
      await expect.poll(() => page.items.some((item) => item.message.type === 'plan-mode.log')).toBe(true)
      const definitions = page.items.filter((item) => item.message.type === '@xstate.actor')
      expect(definitions).toHaveLength(1_000)
      expect(definitions[0]!.seq).toBe(19_001)
      expect(page.items).toHaveLength(1_001)
      expect(page.messages[0]).toEqual({ kind: 'hello', demo: false, dropped: 19_000 })
      page.ws.close()
    } finally {
      await server.close()
    }
  })

  it('R109: a page that stops reading is closed with 1013 "fell behind; reconnect" once what it has not had is dropped, and its socket does not hold what it was sent', async () => {
    const server = await start({ port: 0, maxMessages: 200 })
    try {
      const page = await viewer(server.port)
      await expect.poll(() => page.messages.length).toBeGreaterThan(0)
      const closed = new Promise<{ code: number; reason: string }>((resolve) => page.ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })))
      // The page stops reading: what the server sends piles up in its socket.
      const socket = (page.ws as unknown as { _socket: import('node:net').Socket })._socket
      socket.pause()
      const text = 'm'.repeat(64 * 1024)
      const pushed = 2_000
      for (let seq = 1; seq <= pushed; seq++) {
        server.transport.send(logEvent('firehose', seq, text))
        // Lets the server flush to its pages, as it would between an agent's messages.
        if (seq % 20 === 0) await new Promise((resolve) => setImmediate(resolve))
      }
      socket.resume()
      const received = await Promise.race([
        closed,
        expect.poll(() => page.items.some((item) => item.message.type === 'plan-mode.log' && item.message.event.seq === pushed)).toBe(true).then(() => 'got everything'),
      ])
      expect(received).toEqual({ code: 1013, reason: 'fell behind; reconnect' })
      // What the page gets after it reads again is what the server held for it: all of it was 125 MiB;
      // the server sends a page little more than 1 MiB ahead of what its socket took.
      console.info(`a page that stopped reading while ${pushed} messages of 64 KiB came was sent ${(socket.bytesRead / 2 ** 20).toFixed(1)} MiB`)
      expect(socket.bytesRead).toBeLessThan(32 * 2 ** 20)
      expect(page.items.length).toBeLessThan(pushed)
    } finally {
      await server.close()
    }
  })

  it('R109: a page that reads gets everything in order, also when far more is sent than its socket takes at once', async () => {
    const server = await start({ port: 0 })
    try {
      const page = await viewer(server.port)
      await expect.poll(() => page.messages.length).toBeGreaterThan(0)
      const text = 'r'.repeat(16 * 1024)
      for (let seq = 1; seq <= 1_000; seq++) server.transport.send(logEvent('reader', seq, text))
      await expect.poll(() => page.items.length).toBe(1_000)
      expect(page.items.map((item) => item.seq)).toEqual(Array.from({ length: 1_000 }, (_, i) => i + 1))
      expect(page.ws.readyState).toBe(WebSocket.OPEN)
      page.ws.close()
    } finally {
      await server.close()
    }
  })
})

describe('visualizer page model: reading the plan-mode chart', () => {

  it('the chart has every state of the machine, and transitions resolve #id, sibling and child targets', async () => {
    const items = await planModeMessages()
    const actor = items.find((item): item is WireItem & { message: ActorMessage } => item.message.type === '@xstate.actor' && item.message.parentId === undefined)!
    const chart = chartModel(JSON.parse(actor.message.definition!))
    const expected: string[] = []
    const walk = (node: { states: Record<string, unknown> }, prefix: string) => {
      for (const [key, child] of Object.entries(node.states)) {
        expected.push(prefix ? `${prefix}.${key}` : key)
        walk(child as { states: Record<string, unknown> }, prefix ? `${prefix}.${key}` : key)
      }
    }
    walk(planModeMachine.root, '')
    expect([...chart.nodes.keys()].filter(Boolean)).toEqual(expected)
    expect(['mode', 'turn', 'review', 'intent'].every((region) => chart.nodes.get(region)!.region)).toBe(true)
    const edge = (source: string, target: string) => chart.edges.find((e) => e.source === source && e.target === target)
    // Attach (R64) is the chart's own transition too: RESTORE.
    expect(edge('mode.inactive', 'mode.active')?.labels).toEqual(['LOG.PLAN_MODE [logsActive]', 'RESTORE [restoresActive]'])
    expect(edge('turn.idle', 'turn.open')?.labels).toEqual(['LOG.TURN_START', 'RESTORE [restoresOpenTurn]'])
    expect(edge('review.idle', 'review.open')?.labels).toContain('REVIEW.OPEN')
    expect(edge('intent.pending.entering.queued', 'intent.logged')).toBeDefined()
  })

  it('elkjs lays it out in Node too (as the server does, R178): regions in definition order, every state inside its parent', async () => {
    const items = await planModeMessages()
    const actor = items.find((item) => item.message.type === '@xstate.actor' && item.message.parentId === undefined)!.message as ActorMessage
    const chart = chartModel(JSON.parse(actor.definition!))
    const sevenPx = (text: string) => text.length * 7
    // The process's layouts of this definition for these widths (the R178 tests above asked for them first).
    const layouts = await chartLayoutsOfText(actor.definition!)!.layoutsFor(labelWidths(chart, sevenPx))
    const layout = await layoutChart(chart, sevenPx, async (graph) => layouts[graph.id]!, { width: 1200, height: 900 })
    const box = new Map(layout.nodes.map((node) => [node.path, node]))
    for (const node of layout.nodes) {
      if (node.path === '') continue
      const parent = box.get(node.path.includes('.') ? node.path.slice(0, node.path.lastIndexOf('.')) : '')!
      expect(node.x).toBeGreaterThanOrEqual(parent.x)
      expect(node.y).toBeGreaterThanOrEqual(parent.y)
      expect(node.x + node.width).toBeLessThanOrEqual(parent.x + parent.width + 0.5)
      expect(node.y + node.height).toBeLessThanOrEqual(parent.y + parent.height + 0.5)
    }
    const order = ['mode', 'turn', 'review', 'intent'].map((region) => box.get(region)!)
    for (let i = 1; i < order.length; i++) {
      const [before, after] = [order[i - 1]!, order[i]!]
      expect(after.y > before.y + 1 || (Math.abs(after.y - before.y) <= 1 && after.x > before.x)).toBe(true)
    }
    expect(layout.edges.every((edge) => edge.points.length >= 2)).toBe(true)
  })

  it('the model follows the agent over time: mode summary, active states and review at any point', async () => {
    const items = await planModeMessages()
    const model = new VisualizerModel()
    for (const item of items) model.ingest(item)
    expect(model.agentIds()).toEqual(['agent-1'])
    const timeline = model.timeline('agent-1', 'internals')
    expect(timeline[0]).toMatchObject({ tone: 'start', label: 'started agent-1' })
    expect(timeline.map((entry) => entry.label)).toEqual(expect.arrayContaining(['turn/start', 'plan/mode on', 'SELECT', 'REVIEW.OPEN']))
    const reviewing = model.view('agent-1', timeline.find((entry) => entry.label === 'REVIEW.OPEN')!.seq)
    expect(reviewing.summary.label).toBe('active · reviewing')
    expect(reviewing.openReview).toEqual({ title: 'Plan', plan: '# Plan\n1. Do it.' })
    const start = model.view('agent-1', timeline[0]!.seq)
    expect(start.summary.label).toBe('inactive')
    expect(start.activePaths.has('mode.inactive')).toBe(true)
    // After dispose the review was recorded as reloaded: the version history has it.
    expect(model.view('agent-1').reviews).toMatchObject([{ version: 1, outcome: 'reloaded', title: 'Plan' }])
  })

  it('the timeline tells the story by default (no chart internals), and the internals on demand', async () => {
    const items = await planModeMessages()
    const model = new VisualizerModel()
    for (const item of items) model.ingest(item)
    const story = model.timeline('agent-1')
    expect(story.map((entry) => [entry.label, entry.detail])).toEqual([
      ['Turn started', ''],
      ['Plan mode on', 'logged plan/mode {"active":true}'],
      ['Review opened', '"Plan"'],
      ['Review closed by a reload', '"Plan"'],
    ])
    const internals = model.timeline('agent-1', 'internals').map((entry) => entry.label)
    expect(internals).toEqual(expect.arrayContaining(['started agent-1', 'turn/start', 'LOG.TURN_START', 'SELECT', 'STEP_BOUNDARY', 'plan/mode on', 'REVIEW.OPEN']))
    // A log event keeps its place in the log, and a live one the time it arrived.
    expect(story[1]).toMatchObject({ logSeq: 2, at: expect.any(Number) })
  })

  it('a story line shows the chart’s answer to it: the chart after the line, before its answer to the next line', async () => {
    const messages: InspectionMessage[] = []
    const inspector = createPlanModeInspector({ send: (message) => messages.push(message) })
    let answer: (value: ReviewAnswer) => void = () => {}
    const planMode = createPlanMode({ section: 'PLAN', inspect: inspector.inspect, review: { ask: () => new Promise((resolve) => (answer = resolve)) } })
    const agent: PlanAgent = { id: 'agent-1', session: createMemorySessionLog() }
    inspector.watch(agent, planMode.actor(agent))
    await planMode.command.run({ agent, rawInput: '' })
    agent.session.append('turn/start', {})
    await planMode.stepBoundary(agent)
    agent.session.append('request/header', { step: 0 })
    const call = planMode.exitTool.execute({ plan: '# P\n1. Do it.' }, { agent })
    await new Promise((resolve) => setTimeout(resolve, 20))
    answer({ answers: [{ id: 'plan-review', selected: ['Approve'] }] })
    await call
    await planMode.stepBoundary(agent)
    agent.session.append('request/header', { step: 1 })
    agent.session.append('turn/end', {})
    await new Promise((resolve) => setTimeout(resolve, 20))
    await planMode.dispose()
    await inspector.stop()
    const reader = createLogReader()
    const model = new VisualizerModel()
    messages.forEach((message, i) => model.ingest({ seq: i + 1, at: 0, message, ...(message.type === 'plan-mode.log' ? { log: reader.read(message.agentId, message.event) } : {}) }))

    const story = model.timeline('agent-1')
    const states = story.map((entry, index) => {
      const view = model.view('agent-1', model.pointOf('agent-1', story, index, 'story'))
      const leaves = [...view.activePaths].filter((path) => /^(mode|turn|review|intent)\./.test(path) && ![...view.activePaths].some((other) => other.startsWith(`${path}.`)))
      return `${entry.label}: ${leaves.sort().join(' ')}`
    })
    expect(states).toEqual([
      'Plan mode on: intent.logged mode.active.headerTells review.idle turn.idle',
      'Turn started: intent.logged mode.active.headerTells review.idle turn.open',
      'Step 0: intent.logged mode.active.headerTells review.idle turn.open',
      'Review opened: intent.logged mode.active.headerTells review.open.undecided.reviewing turn.open',
      'Review answered: approved: intent.pending.leaving.queued mode.active.headerTells review.idle turn.open',
      'Plan mode off: intent.logged mode.inactive.headerTells review.idle turn.open',
      'Step 1: intent.logged mode.inactive.headerTells review.idle turn.open',
      'Turn ended: intent.logged mode.inactive.headerTells review.idle turn.idle',
    ])
    // The last line is the live end.
    expect(model.pointOf('agent-1', story, story.length - 1, 'story')).toBe(Infinity)
  })

  it("summaries name F, a pending selection and an open review; F falls back to the library's fold of the log", () => {
    expect(summarize({ mode: 'active', turn: 'open', review: 'idle', intent: { pending: { leaving: 'queued' } } }, undefined).label).toBe('active · pending leaving')
    expect(summarize({ mode: 'inactive', intent: { pending: { entering: 'flushing' } }, review: { open: { undecided: 'reviewing' } } }, undefined).label).toBe(
      'inactive · pending entering · reviewing',
    )
    expect(summarize(undefined, true).label).toBe('active')
    expect(summarize(undefined, undefined).label).toBe('unknown')
  })

  it("the server reads each log event with the library: its line and F after it (R2); an invalid plan/mode leaves F unread (R61)", () => {
    const reader = createLogReader()
    expect(reader.read('a', { seq: 1, type: 'turn/start', data: {} })).toMatchObject({ line: { tone: 'turn', label: 'turn/start', detail: '' }, active: false })
    expect(reader.read('a', { seq: 2, type: 'plan/mode', data: { active: true } })).toMatchObject({ line: { tone: 'mode', label: 'plan/mode on', detail: 'active: true' }, active: true })
    expect(reader.read('a', { seq: 3, type: 'message', data: { text: 'hi' } })).toEqual({ active: true })
    // A repeat (an inspector watching again sends the whole log) folds nothing.
    expect(reader.read('a', { seq: 2, type: 'plan/mode', data: { active: true } }).active).toBe(true)
    expect(reader.read('b', { seq: 1, type: 'plan/mode', data: { active: 'yes' } })).toEqual({
      line: { tone: 'mode', label: 'plan/mode ?', detail: 'active: yes' },
      story: { tone: 'mode', label: 'Plan mode: unreadable', detail: 'logged plan/mode {"active":"yes"}' },
    })
    expect(reader.read('b', { seq: 2, type: 'plan/mode', data: { active: false } })).not.toHaveProperty('active')
    expect(reader.read('a', { seq: 4, type: 'plan/mode', data: { active: false } }).active).toBe(false)
  })

  it('story lines: what the user did, what the model was told (R32 notices), reviews and turns, read from the log', () => {
    const reader = createLogReader()
    const events: [string, unknown][] = [
      ['turn/start', {}],
      ['request/header', { step: 0 }],
      ['turn/end', {}],
      ['command/run', { commandId: 'cmd-1', name: 'plan', args: 'Add a --json flag.' }],
      ['plan/mode', { active: true }],
      ['command/done', { commandId: 'cmd-1', kind: 'success', text: 'Plan mode on. Use /plan off to leave.' }],
      ['turn/start', {}],
      ['request/header', { step: 0 }],
      ['request/header', { step: 1 }],
      ['command/run', { commandId: 'cmd-2', name: 'plan', args: 'off' }],
      ['command/done', { commandId: 'cmd-2', kind: 'success', text: 'Leaving plan mode (applies from the next step).' }],
      ['command/run', { commandId: 'cmd-3', name: 'plan', args: '' }],
      ['command/done', { commandId: 'cmd-3', kind: 'success', text: 'Plan mode exit cancelled. Use /plan off to leave.' }],
      ['request/header', { step: 2 }],
      ['plan/review', { outcome: 'keep-planning', title: 'Add --json', plan: '# Add --json', feedback: 'Document it.' }],
      ['request/header', { step: 3 }],
      ['plan/review', { outcome: 'approved', title: 'Add --json (v2)', plan: '# Add --json (v2)' }],
      ['plan/mode', { active: false }],
      ['request/header', { step: 4 }],
      ['command/run', { commandId: 'cmd-4', name: 'plan', args: '' }],
      ['plan/mode', { active: true }],
      ['command/done', { commandId: 'cmd-4', kind: 'success', text: 'Plan mode on. Use /plan off to leave.' }],
      ['request/header', { step: 5 }],
      ['plan/mode', { active: false }],
      ['request/header', { step: 6 }],
      ['turn/end', {}],
      ['message/user', { text: 'thanks' }],
      ['message', { id: 'm1', role: 'user', content: [{ type: 'text', text: 'Ship it.' }], source: { kind: 'user' } }],
      ['message', { role: 'assistant', text: 'Done:\n  shipped.' }],
    ]
    const story = events.map(([type, data], i) => {
      const event = { seq: i + 1, type, data }
      const line = storyOf(event, reader.read('a', event))
      return `${line.tone} | ${line.label} | ${line.detail}`
    })
    expect(story).toEqual([
      'turn | Turn started | ',
      'turn | Step 0 | the model works in the default mode',
      'turn | Turn ended | ',
      'command | User: /plan Add a --json flag. | ',
      'mode | Plan mode on | logged plan/mode {"active":true}',
      'command | Plan mode on. Use /plan off to leave. | answer to /plan Add a --json flag.',
      'turn | Turn started | ',
      'notice | Notice: The user switched this session to plan mode. | step 0, the model now works in plan mode',
      'turn | Step 1 | the model works in plan mode',
      'command | User: /plan off | ',
      'command | Leaving plan mode (applies from the next step). | answer to /plan off',
      'command | User: /plan | ',
      'command | Plan mode exit cancelled. Use /plan off to leave. | answer to /plan',
      // A round trip before the step: nothing to tell (R32).
      'turn | Step 2 | the model works in plan mode',
      'review | Review answered: keep planning | "Add --json" — feedback: Document it.',
      'turn | Step 3 | the model works in plan mode',
      'review | Review answered: approved | "Add --json (v2)"',
      'mode | Plan mode off | logged plan/mode {"active":false}',
      // The approval told the model already (R35).
      'turn | Step 4 | the model works in the default mode',
      'command | User: /plan | ',
      'mode | Plan mode on | logged plan/mode {"active":true}',
      'command | Plan mode on. Use /plan off to leave. | answer to /plan',
      'notice | Notice: The user switched this session to plan mode. | step 5, the model now works in plan mode',
      'mode | Plan mode off | logged plan/mode {"active":false}',
      'notice | Notice: The user switched this session back to the default mode. | step 6, the model now works in the default mode',
      'turn | Turn ended | ',
      'log | message/user | text: thanks',
      'log | User: Ship it. | message',
      'log | Model: Done: shipped. | message',
    ])
  })

  it('a log tells its agent and each event’s time only when it holds them: agentId, and at/time/timestamp/ts', () => {
    expect(logAgentId([{ seq: 1, type: 'turn/start', data: {} }, { seq: 2, type: 'session/start', data: { agentId: 'agent-7' } }])).toBe('agent-7')
    expect(logAgentId([{ seq: 1, type: 'plan/mode', data: { active: true } }])).toBeUndefined()
    expect(eventTime({ seq: 1, type: 'turn/start', data: { at: '2026-12-01T09:00:01.250Z' } })).toBe(Date.UTC(2026, 11, 1, 9, 0, 1, 250))
    expect(eventTime({ seq: 1, type: 'turn/start', data: { timestamp: 1_796_115_601_250 } })).toBe(1_796_115_601_250)
    expect(eventTime({ seq: 1, type: 'turn/start', data: { ts: 1_796_115_601 } })).toBe(1_796_115_601_000)
    // The library's own events carry no time; a step number is not one either.
    expect(eventTime({ seq: 1, type: 'plan/mode', data: { active: true } })).toBeUndefined()
    expect(eventTime({ seq: 1, type: 'request/header', data: { step: 3, time: 12 } })).toBeUndefined()
    expect(createLogReader().read('a', { seq: 1, type: 'turn/start', data: { at: '2026-12-01T09:00:01.250Z' } }).at).toBe(Date.UTC(2026, 11, 1, 9, 0, 1, 250))
  })

  it("timeline lines: the library's line for the kinds plan mode reads; a logged notice (R34) or the fields otherwise", () => {
    const reader = createLogReader()
    const line = (event: { seq: number; type: string; data: unknown }) => describeLogEvent(event, reader.read('a', event).line)
    expect(line({ seq: 4, type: 'plan/mode', data: { active: false } })).toEqual({ tone: 'mode', label: 'plan/mode off', detail: 'active: false' })
    expect(line({ seq: 5, type: 'plan/review', data: { outcome: 'keep-planning', title: 'T', plan: '# T', feedback: 'More.' } })).toEqual({
      tone: 'review',
      label: 'plan/review keep-planning',
      detail: 'keep-planning "T" — More.',
    })
    const text = 'The user switched this session to plan mode.'
    const notice = { id: 'n1', role: 'user', content: [{ type: 'text', text }], source: { kind: 'plugin', plugin: 'plan-mode', form: 'notice', summary: text } }
    expect(line({ seq: 6, type: 'message', data: notice })).toEqual({ tone: 'notice', label: 'notice', detail: text })
    expect(line({ seq: 7, type: 'tool/result', data: { tool: 'read_file', text: 'ok' } })).toEqual({ tone: 'log', label: 'tool/result', detail: 'tool: read_file, text: ok' })
  })

  it('R96, R97: the server reads each presented plan with the library: its version in its planning episode and its line diff from the previous version', () => {
    const reader = createLogReader()
    const V1 = '# Add --json\n\n1. Parse the flag.\n2. Print JSON.'
    const V2 = '# Add --json\n\n1. Parse the flag.\n2. Print JSON.\n3. Document it.\n'
    const V3 = '# Add --json\n\n1. Parse the flag with a schema.\n2. Print JSON.\n3. Document it.'
    const events: [string, unknown][] = [
      ['plan/mode', { active: true }],
      ['plan/review', { outcome: 'keep-planning', title: 'Add --json', plan: V1, feedback: 'Document it.' }],
      ['request/header', { step: 1 }],
      ['plan/review', { outcome: 'keep-planning', title: 'Add --json', plan: V2 }],
      // A durable review: its request presents v3; its closing record presents nothing new (R79, R80).
      ['plan/review', { outcome: 'requested', reviewId: 'r1', title: 'Add --json', plan: V3 }],
      ['plan/review', { outcome: 'approved', reviewId: 'r1', title: 'Add --json', plan: V3, by: 'policy' }],
      ['plan/mode', { active: false }],
      ['plan/mode', { active: true }],
      // A new episode starts at version 1; a record whose plan is not a string presents nothing.
      ['plan/review', { outcome: 'approved', title: 'Again', plan: V3 }],
      ['plan/review', { outcome: 'approved', title: 'Broken', plan: 7 }],
      ['plan/review', { outcome: 'keep-planning', title: 'Again', plan: V3 }],
    ]
    const readings = events.map(([type, data], i) => reader.read('a', { seq: i + 1, type, data }).plan)
    expect(readings.map((plan) => plan && `v${plan.version} #${plan.seq} ${plan.outcome}${plan.by ? ' (by policy)' : ''}`)).toEqual([
      undefined,
      'v1 #2 keep-planning',
      undefined,
      'v2 #4 keep-planning',
      'v3 #5 open',
      'v3 #5 approved (by policy)',
      undefined,
      undefined,
      'v1 #9 approved',
      undefined,
      'v2 #11 keep-planning',
    ])
    expect(readings[1]).toEqual({ seq: 2, version: 1, title: 'Add --json', plan: V1, outcome: 'keep-planning', feedback: 'Document it.' })
    // A missing final newline is no change: only the added step (R97).
    expect(readings[3]!.diff).toEqual([
      { kind: 'same', text: '# Add --json' },
      { kind: 'same', text: '' },
      { kind: 'same', text: '1. Parse the flag.' },
      { kind: 'same', text: '2. Print JSON.' },
      { kind: 'added', text: '3. Document it.' },
    ])
    expect(readings[4]!.diff!.filter((line) => line.kind !== 'same')).toEqual([
      { kind: 'removed', text: '1. Parse the flag.' },
      { kind: 'added', text: '1. Parse the flag with a schema.' },
    ])
    // The closing record's reading is a copy: the request's reading still says open.
    expect(readings[4]!.outcome).toBe('open')
    expect(readings[8]).not.toHaveProperty('diff')
    expect(readings[10]!.diff!.every((line) => line.kind === 'same')).toBe(true)
    // Agents are read apart, and a repeat (an inspector watching again) presents nothing again.
    expect(reader.read('b', { seq: 1, type: 'plan/review', data: { outcome: 'approved', title: 'B', plan: V1 } }).plan).toMatchObject({ version: 1 })
    expect(reader.read('a', { seq: 11, type: 'plan/review', data: { outcome: 'keep-planning', title: 'Again', plan: V3 } })).not.toHaveProperty('plan')
    expect(reader.read('a', { seq: 12, type: 'plan/review', data: { outcome: 'approved', title: 'Again', plan: V2 } }).plan).toMatchObject({ version: 3 })
  })

  it('R96, R97: the page’s review history is the server’s reading: one entry per presented plan, a durable review’s close updating its request’s', () => {
    const reader = createLogReader()
    const model = new VisualizerModel()
    const events: [string, unknown][] = [
      ['plan/mode', { active: true }],
      ['plan/review', { outcome: 'keep-planning', title: 'P', plan: '# P\n1. A.', feedback: 'And B.' }],
      ['plan/review', { outcome: 'requested', reviewId: 'r1', title: 'P', plan: '# P\n1. A.\n2. B.' }],
      ['plan/review', { outcome: 'approved', reviewId: 'r1', title: 'P', plan: '# P\n1. A.\n2. B.' }],
    ]
    events.forEach(([type, data], i) => {
      const event = { seq: i + 1, type, data }
      model.ingest({ seq: 10 + i, at: 0, message: { type: 'plan-mode.log', agentId: 'a', event }, log: reader.read('a', event) })
    })
    const added = { kind: 'added', text: '2. B.' }
    expect(model.view('a').reviews).toEqual([
      { version: 1, seq: 11, logSeq: 2, outcome: 'keep-planning', title: 'P', plan: '# P\n1. A.', feedback: 'And B.' },
      { version: 2, seq: 12, logSeq: 3, outcome: 'approved', title: 'P', plan: '# P\n1. A.\n2. B.', diff: [{ kind: 'same', text: '# P' }, { kind: 'same', text: '1. A.' }, added] },
    ])
    // Before the close arrived, the version was open.
    expect(model.view('a', 12).reviews.map((review) => `v${review.version} ${review.outcome}`)).toEqual(['v1 keep-planning', 'v2 open'])
  })
})

describe('npm run visualizer', () => {
  const npm = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile('npm', ['run', '--silent', 'visualizer', '--', ...args], { cwd: new URL('..', import.meta.url), timeout: 100_000 } /* a hang guard, not a time limit */, (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      )
    })

  it('--help prints its usage and exits 0', async () => {
    const result = await npm(['--help'])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout).toMatch(/^Usage: node apps\/visualizer\/cli\.mjs \[--port N\] \[--demo\]\n/)
  })

  it('a port in use is one line, plan-mode: …, and exit code 2', async () => {
    const result = await npm(['--port', String(visualizer.port)])
    expect(result).toEqual({ code: 2, stdout: '', stderr: `plan-mode: port ${visualizer.port} is in use; pick another with --port\n` })
  })
})
