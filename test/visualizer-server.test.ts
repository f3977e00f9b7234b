/**
 * The visualizer's server and page model, without a browser: what it serves, whom it accepts,
 * that it changes nothing, and how the page reads a plan-mode chart.
 */
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import { createRequire } from 'node:module'
import { networkInterfaces } from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { createPlanModeInspector, type ActorMessage, type InspectionMessage } from '../src/adapters/inspect.js'
import { createMemorySessionLog, createPlanMode, planModeMachine, type PlanAgent } from '../src/index.js'
import { chartModel, layoutChart, type ElkLayout } from '../visualizer/client/chart.js'
import { VisualizerModel, describeLogEvent, summarize } from '../visualizer/client/model.js'
import type { ServerMessage, WireItem } from '../visualizer/client/protocol.js'
import { createLogReader } from '../visualizer/log-reading.js'
import { start, type Visualizer } from '../visualizer/server.js'

let visualizer: Visualizer
beforeAll(async () => {
  visualizer = await start({ port: 0 })
})
afterAll(() => visualizer.close())

/** A raw HTTP request, so the Host header can be anything. */
function request(path: string, options: { method?: string; host?: string } = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: visualizer.port, path, method: options.method ?? 'GET', headers: { host: options.host ?? `127.0.0.1:${visualizer.port}` } },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (body += chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.on('error', reject)
    req.end()
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
async function viewer(): Promise<{ ws: WebSocket; items: WireItem[]; messages: ServerMessage[] }> {
  const ws = new WebSocket(`ws://127.0.0.1:${visualizer.port}/view`)
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

describe('visualizer server: the page, all local', () => {
  it('serves the page and everything it loads from itself (no CDN), under a strict CSP', async () => {
    const page = await request('/')
    expect(page.status).toBe(200)
    expect(page.headers['content-security-policy']).toContain("script-src 'self'")
    expect(page.headers['content-security-policy']).toContain("default-src 'none'")
    expect(page.headers['x-content-type-options']).toBe('nosniff')
    const references = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!)
    expect(references).toEqual(['/style.css', '/vendor/elk.js', '/app.js'])
    for (const reference of references) expect((await request(reference)).status).toBe(200)
    // The modules import each other by relative path only.
    for (const module of ['/app.js', '/chart.js', '/model.js']) {
      const { body, headers } = await request(module)
      expect(headers['content-type']).toContain('javascript')
      expect(body).not.toMatch(/\bfrom\s+['"](?!\.\/)/)
      // (The SVG namespace is a name, not a URL that is fetched.)
      expect(body.replaceAll('http://www.w3.org/2000/svg', '')).not.toMatch(/https?:\/\//)
    }
    const elk = await readFile(createRequire(import.meta.url).resolve('elkjs/lib/elk.bundled.js'), 'utf8')
    expect((await request('/vendor/elk.js')).body).toBe(elk)
    expect((await request('/server.ts')).status).toBe(404)
    expect((await request('/../package.json')).status).toBe(404)
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
      { line: { tone: 'turn', label: 'turn/start', detail: '' }, active: false },
      { line: { tone: 'turn', label: 'turn/end', detail: '' }, active: false },
    ])
    live.ws.close()
    late.ws.close()
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

describe('visualizer page model: reading the plan-mode chart', () => {
  /** The plan-mode actor's messages, as the page receives them. */
  async function planModeMessages(): Promise<WireItem[]> {
    const messages: InspectionMessage[] = []
    const inspector = createPlanModeInspector({ send: (message) => messages.push(message) })
    const planMode = createPlanMode({ section: 'PLAN' }, { inspect: inspector.inspect, review: { ask: () => new Promise(() => {}) } })
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
    expect(edge('mode.inactive', 'mode.active')?.labels).toEqual(['LOG.PLAN_MODE [logsActive]'])
    expect(edge('turn.idle', 'turn.open')?.labels).toEqual(['LOG.TURN_START'])
    expect(edge('review.idle', 'review.open')?.labels).toContain('REVIEW.OPEN')
    expect(edge('intent.pending.entering.queued', 'intent.logged')).toBeDefined()
  })

  it('elkjs lays it out in Node too: regions in definition order, every state inside its parent', async () => {
    const items = await planModeMessages()
    const actor = items.find((item) => item.message.type === '@xstate.actor' && item.message.parentId === undefined)!.message as ActorMessage
    const chart = chartModel(JSON.parse(actor.definition!))
    const ELK = createRequire(import.meta.url)('elkjs/lib/elk.bundled.js') as new () => { layout: ElkLayout }
    const elk = new ELK()
    const layout = await layoutChart(chart, (text) => text.length * 7, (graph) => elk.layout(graph), { width: 1200, height: 900 })
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
    const timeline = model.timeline('agent-1')
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
    expect(reader.read('a', { seq: 1, type: 'turn/start', data: {} })).toEqual({ line: { tone: 'turn', label: 'turn/start', detail: '' }, active: false })
    expect(reader.read('a', { seq: 2, type: 'plan/mode', data: { active: true } })).toEqual({ line: { tone: 'mode', label: 'plan/mode on', detail: 'active: true' }, active: true })
    expect(reader.read('a', { seq: 3, type: 'message', data: { text: 'hi' } })).toEqual({ active: true })
    // A repeat (an inspector watching again sends the whole log) folds nothing.
    expect(reader.read('a', { seq: 2, type: 'plan/mode', data: { active: true } }).active).toBe(true)
    expect(reader.read('b', { seq: 1, type: 'plan/mode', data: { active: 'yes' } })).toEqual({ line: { tone: 'mode', label: 'plan/mode ?', detail: 'active: yes' } })
    expect(reader.read('b', { seq: 2, type: 'plan/mode', data: { active: false } })).not.toHaveProperty('active')
    expect(reader.read('a', { seq: 4, type: 'plan/mode', data: { active: false } }).active).toBe(false)
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
})
