/**
 * The visualizer's server: one local page that shows every agent's plan-mode statechart live.
 *
 * - `GET /` serves the page; its modules (`/app.js`, …) are the TypeScript sources of
 *   `apps/shared/visualizer/client/`, transpiled on request: no CDN and no build step.
 * - `POST /api/chart/layout` `{ definition, widths }` answers the elkjs layouts of a machine
 *   definition this server was sent (`definition`: the seq of the kept `@xstate.actor` message that
 *   carried it, never a graph of the page's) for the page's label widths (R178,
 *   `chart-layout.ts`): the page measures and places, the server runs elkjs, once per definition
 *   and set of widths, so the page neither loads nor runs it.
 * - `ws://…/inspect` receives inspection messages (the Stately protocol plus `plan-mode.agent` and
 *   `plan-mode.log`, see `xstate-plan-mode/inspect`) from any number of agents' inspectors.
 * - `ws://…/view` hands the page everything kept so far, then every new message; each log
 *   event comes with the library's reading of it (`log-reading.ts`), so the page shows what
 *   plan mode reads in the log without a second definition of it. What is kept is bounded
 *   (`history.ts`, R109), and a page is sent only a little more than its socket has taken: one
 *   that falls behind what is kept is closed, and reconnects.
 *
 * It binds 127.0.0.1 only, answers only requests addressed to that host (a DNS-rebinding page
 * cannot reach it), refuses WebSocket connections and layout requests from any other web origin,
 * and is read-only: nothing a page sends changes an agent, except the buttons of the simulated
 * agent in demo mode:
 * one of its four review answers (R101; only their names are accepted, and the demo answers with
 * the option's label), whose Keep planning carries the user's comments on the plan (R100:
 * shape-checked here, their quotes checked against the plan by the library).
 */
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { readFile, readdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { WebSocket, WebSocketServer } from 'ws'
import type { RawData } from 'ws'
import type { InspectionMessage, InspectionTransport } from 'xstate-plan-mode/inspect'
import { isRecord, type DemoComment, type DemoCommand, type ServerMessage, type ViewerMessage, type WireItem } from './client/protocol.js'
import { BadWidths, ChartTooLarge, LayoutBusy, chartLayoutsOfText, holdLayoutWorker, type ChartLayouts } from './chart-layout.js'
import type { DemoAgent, DemoOptions } from './demo.js'
import { createRetainedHistory } from './history.js'
import { createLogReader } from './log-reading.js'

/** Options of {@link start}. */
export interface VisualizerOptions {
  /** The port to listen on (127.0.0.1); 0, the default, picks a free one. */
  port?: number
  /**
   * Runs a simulated agent (the real library, a memory log, a review channel answered by the
   * page's buttons) and shows the buttons `/plan`, `/plan off` and the review's four options
   * (R101): Approve, Approve in a fresh context, Keep planning, Leave plan mode.
   */
  demo?: boolean | DemoOptions
  /** Most messages kept for late pages, actor definitions and agent links not counted (R109). Default 50 000. */
  maxMessages?: number
  /** Most actor definitions and agent links (`@xstate.actor`, `plan-mode.agent`) kept (R109). Default 1 000. */
  maxDefinitions?: number
  /** Most bytes of the kept messages' JSON, definitions counted (R109). Default 64 MiB. */
  maxBytes?: number
}

/** A running visualizer. */
export interface Visualizer {
  /** The page, e.g. `http://127.0.0.1:5178/`. */
  url: string
  port: number
  /** Where inspectors send messages: `createPlanModeInspector({ url: visualizer.inspectUrl })`. */
  inspectUrl: string
  /** An in-process transport to the same hub (no socket): `createPlanModeInspector(visualizer.transport)`. */
  transport: InspectionTransport
  /**
   * The same, for a log replayed from a file (`plan-mode visualize <file>`): its messages carry no
   * arrival time, since they arrive now but happened earlier. The page shows each log event's own
   * time when the log holds one, and none otherwise.
   */
  replayTransport: InspectionTransport
  /** Closes every connection and the server; resolves when the port is free. */
  close(): Promise<void>
}

const CLIENT_DIR = fileURLToPath(new URL('./client/', import.meta.url))
/**
 * The page prebuilt by the package build (`dist/visualizer-client/`: index.html, style.css, the
 * client modules as .js), next to the bundle that holds this module. When it is there, the server
 * does not need `typescript` (a devDependency) at run time; elkjs, which lays the charts out
 * here (R178), ships beside the bundle (`dist/elk.cjs`, tsup.config.ts).
 */
const PREBUILT_DIR = fileURLToPath(new URL('./visualizer-client/', import.meta.url))
const MESSAGE_TYPES = new Set(['@xstate.actor', '@xstate.event', '@xstate.snapshot', 'plan-mode.agent', 'plan-mode.log'])
const DEMO_COMMANDS = new Set<DemoCommand>(['/plan', '/plan off', 'approve', 'approve-fresh', 'keep-planning', 'leave'])
/** What a page may have waiting in its socket before it is sent more (R109). */
const VIEWER_HIGH_WATER = 2 ** 20
/** The most items and bytes of one frame to a page (one larger item goes alone). */
const FRAME_ITEMS = 2000
const FRAME_BYTES = 2 ** 20
/** How a page that fell behind what is kept is closed (R109): 1013 is "try again later". */
const FELL_BEHIND = { code: 1013, reason: 'fell behind; reconnect' } as const
/** The most comments one Keep planning carries, and the longest comment text (the page's box takes 2000). */
const MAX_COMMENTS = 100
const MAX_COMMENT_CHARS = 4000
/** The largest body of a layout request (label widths: a few KiB for a chart of a hundred states). */
const MAX_LAYOUT_BODY = 2 ** 20
/** What a layout request is answered when it is refused (R178). */
export const LAYOUT_REFUSALS = {
  crossOrigin: 'a page of another origin cannot ask for layouts',
  notJson: 'the body must be JSON (content-type: application/json)',
  tooLarge: `the body is over ${MAX_LAYOUT_BODY / 2 ** 20} MiB`,
  notObject: 'the body must be a JSON object',
  noDefinition: 'definition must be the seq of a kept @xstate.actor message that carries a machine definition',
  wrongHost: 'wrong host',
} as const

/**
 * Starts the visualizer on 127.0.0.1.
 * @returns once listening: its URLs, an in-process transport, and `close`.
 * @throws when the port is taken.
 */
export async function start(options: VisualizerOptions = {}): Promise<Visualizer> {
  const history = createRetainedHistory({
    maxMessages: options.maxMessages ?? 50_000,
    maxDefinitions: options.maxDefinitions ?? 1_000,
    maxBytes: options.maxBytes ?? 64 * 2 ** 20,
  })
  let seq = 0
  let flushScheduled = false
  const viewers = new Set<Viewer>()
  let port = 0
  let demo: DemoAgent | undefined
  let closing: Promise<void> | undefined
  const logReader = createLogReader()

  /**
   * Sends the page what it has not had yet, while less than VIEWER_HIGH_WATER waits in its socket;
   * each frame's write calls it again. A page that has not had a message that is no longer kept
   * has fallen behind: it is closed, and reconnects to start again from what is kept.
   */
  const pump = (viewer: Viewer) => {
    const { ws } = viewer
    if (ws.readyState !== WebSocket.OPEN || !viewers.has(viewer)) return
    if (history.highestDroppedSeq > Math.max(viewer.sentUpTo, viewer.missedUpTo)) {
      viewers.delete(viewer)
      ws.close(FELL_BEHIND.code, FELL_BEHIND.reason)
      return
    }
    const again = () => pump(viewer)
    while (ws.bufferedAmount < VIEWER_HIGH_WATER) {
      if (viewer.status !== undefined) {
        ws.send(viewer.status, again)
        viewer.status = undefined
        continue
      }
      const entries = history.after(viewer.sentUpTo, FRAME_ITEMS, FRAME_BYTES)
      if (entries.length === 0) return
      viewer.sentUpTo = entries[entries.length - 1]!.seq
      ws.send(`{"kind":"messages","items":[${entries.map((entry) => entry.json).join(',')}]}`, again)
    }
  }
  /** The demo's status is a state, not an event: a page that has not taken the last one gets only the newest. */
  const broadcastStatus = (message: ServerMessage) => {
    const json = JSON.stringify(message)
    for (const viewer of viewers) {
      viewer.status = json
      pump(viewer)
    }
  }
  // Messages come in bursts (one event is an event, a snapshot and log lines): pages get them
  // in one frame per burst.
  const flush = () => {
    flushScheduled = false
    for (const viewer of [...viewers]) pump(viewer)
  }
  const ingest = (message: InspectionMessage, replayed = false) => {
    if (closing) return
    const item: WireItem = {
      seq: seq + 1,
      ...(replayed ? {} : { at: Date.now() }),
      message,
      ...(message.type === 'plan-mode.log' ? { log: logReader.read(message.agentId, message.event) } : {}),
    }
    let json: string
    try {
      json = JSON.stringify(item)
    } catch {
      // An in-process message JSON cannot carry (a BigInt, a cycle): no page could read it.
      return
    }
    seq++
    history.add(item.seq, json, message.type === '@xstate.actor' || message.type === 'plan-mode.agent')
    if (!flushScheduled) {
      flushScheduled = true
      setImmediate(flush)
    }
  }

  const assets = await clientAssets()
  const server = http.createServer((request, response) => {
    void serve(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
      response.end('internal error')
    })
  })
  const serve = async (request: http.IncomingMessage, response: http.ServerResponse) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname
    if (!isOwnHost(request.headers.host, port)) {
      // R178: every refusal of the API is `{ "error": … }`; the page's files answer plain text.
      if (path.startsWith('/api/')) return answerJson(response, 421, { error: LAYOUT_REFUSALS.wrongHost })
      response.writeHead(421, { 'content-type': 'text/plain; charset=utf-8' }).end(LAYOUT_REFUSALS.wrongHost)
      return
    }
    if (path === '/api/chart/layout' && request.method === 'POST') return layout(request, response)
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      // Read-only: no other endpoint takes a body, and none changes an agent.
      if (path.startsWith('/api/')) return answerJson(response, 405, { error: 'read-only' })
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('read-only')
      return
    }
    if (path === '/favicon.ico') {
      response.writeHead(204).end()
      return
    }
    const asset = await assets.get(path)
    if (!asset) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found')
      return
    }
    response.writeHead(200, {
      'content-type': asset.type,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      // Only our own scripts run: even markup that slipped into the page could not execute.
      'content-security-policy': [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        `connect-src 'self' ws://127.0.0.1:${port} ws://localhost:${port}`,
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
      ].join('; '),
    })
    response.end(request.method === 'HEAD' ? undefined : asset.body)
  }

  /**
   * The layouts of the machine definition that the kept `@xstate.actor` message `seq` carried
   * (the page knows each actor's message by its seq), or undefined: a page names a definition an
   * inspector sent and this server still keeps, and never sends a graph of its own.
   */
  const layoutsOf = (seq: unknown): ChartLayouts | undefined => {
    const entry = typeof seq === 'number' && Number.isSafeInteger(seq) && seq > 0 ? history.get(seq) : undefined
    if (!entry) return undefined
    const { message } = JSON.parse(entry.json) as WireItem
    if (message.type !== '@xstate.actor' || typeof message.definition !== 'string') return undefined
    return chartLayoutsOfText(message.definition)
  }
  /** `POST /api/chart/layout` (R178): what the page sends is untrusted, and only this origin's pages may ask. */
  const layout = async (request: http.IncomingMessage, response: http.ServerResponse) => {
    const answer = (status: number, body: unknown) => answerJson(response, status, body)
    const origin = request.headers.origin
    if (origin !== undefined && origin !== `http://${request.headers.host}`) return answer(403, { error: LAYOUT_REFUSALS.crossOrigin })
    if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) return answer(415, { error: LAYOUT_REFUSALS.notJson })
    const text = await readBody(request, MAX_LAYOUT_BODY)
    if (text === undefined) return answer(413, { error: LAYOUT_REFUSALS.tooLarge })
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      // Not JSON: answered below, as any body that is not an object.
    }
    if (!isRecord(body)) return answer(400, { error: LAYOUT_REFUSALS.notObject })
    const layouts = layoutsOf(body.definition)
    if (!layouts) return answer(404, { error: LAYOUT_REFUSALS.noDefinition })
    // A page that closed (reloaded, went away) before its layout started drops it from the queue.
    const closed = new AbortController()
    response.once('close', () => closed.abort())
    try {
      return answer(200, { layouts: await layouts.layoutsFor(body.widths, closed.signal) })
    } catch (error) {
      if (error instanceof BadWidths) return answer(400, { error: error.message })
      if (error instanceof ChartTooLarge) return answer(413, { error: error.message })
      if (error instanceof LayoutBusy) return answer(503, { error: error.message })
      throw error
    }
  }

  const inspectServer = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 })
  const viewServer = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 })
  server.on('upgrade', (request: http.IncomingMessage, socket: Socket, head: Buffer) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname
    const target = path === '/inspect' ? inspectServer : path === '/view' ? viewServer : undefined
    if (!target) return refuse(socket, 404, 'Not Found')
    if (!isOwnHost(request.headers.host, port)) return refuse(socket, 421, 'Misdirected Request')
    // Browsers always send Origin; Node clients (inspectors) usually do not. A page of any other
    // origin must not read the agents' plans nor drive the demo agent.
    const origin = request.headers.origin
    if (origin !== undefined && origin !== `http://${request.headers.host}`) return refuse(socket, 403, 'Forbidden')
    target.handleUpgrade(request, socket, head, (ws) => target.emit('connection', ws, request))
  })

  inspectServer.on('connection', (ws: WebSocket) => {
    ws.on('error', () => {})
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (isBinary) return
      const message = parseInspectionMessage(data.toString())
      if (message) ingest(message)
    })
  })

  viewServer.on('connection', (ws: WebSocket) => {
    ws.on('error', () => {})
    // What was dropped before the page came is not its loss: the hello tells how much it is.
    const viewer: Viewer = { ws, sentUpTo: 0, missedUpTo: history.highestDroppedSeq }
    viewers.add(viewer)
    ws.on('close', () => viewers.delete(viewer))
    const hello: ServerMessage = { kind: 'hello', demo: demo !== undefined, ...(history.dropped > 0 ? { dropped: history.dropped } : {}) }
    ws.send(JSON.stringify(hello))
    if (demo) viewer.status = JSON.stringify(demo.status())
    // Everything kept so far, in frames, as fast as the page takes them.
    pump(viewer)
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (isBinary || !demo) return
      const command = parseViewerMessage(data.toString())
      if (command) void demo.command(command.command, command.feedback, command.comments)
    })
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  port = (server.address() as AddressInfo).port
  // The process's layout worker is ended when its last server closes (R178).
  const releaseLayoutWorker = holdLayoutWorker()

  if (options.demo) {
    const { startDemo } = await import('./demo.js')
    demo = startDemo({ ingest: (message) => ingest(message), onStatus: (status) => broadcastStatus(status) }, options.demo === true ? {} : options.demo)
  }

  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    inspectUrl: `ws://127.0.0.1:${port}/inspect`,
    transport: { send: (message) => ingest(message) },
    replayTransport: { send: (message) => ingest(message, true) },
    close() {
      closing ??= (async () => {
        releaseLayoutWorker()
        await demo?.close()
        for (const ws of [...inspectServer.clients, ...viewServer.clients]) ws.terminate()
        inspectServer.close()
        viewServer.close()
        await new Promise<void>((resolve) => {
          server.close(() => resolve())
          server.closeAllConnections()
        })
      })()
      return closing
    },
  }
}

/** A page's `/view` connection and how far it has been sent. */
interface Viewer {
  ws: WebSocket
  /** The seq of the last message sent to it. */
  sentUpTo: number
  /** The highest seq dropped before it connected: it never had those, and was told so. */
  missedUpTo: number
  /** The demo's newest status, not sent yet. */
  status?: string
}

function refuse(socket: Socket, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
}

/** A request's body as text, or undefined when it is over `max` bytes (the rest is not read). */
function readBody(request: http.IncomingMessage, max: number): Promise<string | undefined> {
  if (Number(request.headers['content-length']) > max) return Promise.resolve(undefined)
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= max) return void chunks.push(chunk)
      request.off('data', onData)
      request.resume()
      resolve(undefined)
    }
    request.on('data', onData)
    request.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    request.once('error', reject)
  })
}

/** A JSON answer of the API (R178), never cached nor sniffed. */
function answerJson(response: http.ServerResponse, status: number, body: unknown): void {
  response
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' })
    .end(JSON.stringify(body))
}

/** Only `127.0.0.1:<port>` and `localhost:<port>`: a rebound DNS name is refused. */
function isOwnHost(host: string | undefined, port: number): boolean {
  return host === `127.0.0.1:${port}` || host === `localhost:${port}`
}

/** Accepts the protocol's message types with the fields the page relies on; drops anything else. */
export function parseInspectionMessage(text: string): InspectionMessage | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const message = value as Record<string, unknown>
  if (typeof message.type !== 'string' || !MESSAGE_TYPES.has(message.type)) return undefined
  if (message.type.startsWith('@xstate.')) return typeof message.sessionId === 'string' ? (message as unknown as InspectionMessage) : undefined
  if (typeof message.agentId !== 'string') return undefined
  if (message.type === 'plan-mode.agent') return typeof message.sessionId === 'string' ? (message as unknown as InspectionMessage) : undefined
  const event = message.event as Record<string, unknown> | null | undefined
  if (typeof event !== 'object' || event === null || typeof event.type !== 'string') return undefined
  return message as unknown as InspectionMessage
}

/**
 * A page's demo command, or undefined for anything else (dropped: nothing changes). What a page
 * sends is untrusted: comments (R100) go only with Keep planning, as an array of at most
 * MAX_COMMENTS `{ quote, text }` of strings, the text at most MAX_COMMENT_CHARS long; any other
 * `comments` refuses the command. Only `quote` and `text` are passed on. Whether a quote is in the
 * plan, and whether either is blank, is the library's to say (R100): its refusal comes back as the
 * demo's status.
 */
export function parseViewerMessage(text: string): ViewerMessage | undefined {
  try {
    const value = JSON.parse(text) as Partial<ViewerMessage> | null
    if (value?.kind !== 'command' || !DEMO_COMMANDS.has(value.command as DemoCommand)) return undefined
    const feedback = typeof value.feedback === 'string' ? value.feedback.slice(0, 4000) : undefined
    let comments: DemoComment[] | undefined
    if (value.comments !== undefined) {
      comments = value.command === 'keep-planning' ? readDemoComments(value.comments) : undefined
      if (comments === undefined) return undefined
    }
    return {
      kind: 'command',
      command: value.command as DemoCommand,
      ...(feedback !== undefined ? { feedback } : {}),
      ...(comments !== undefined && comments.length > 0 ? { comments } : {}),
    }
  } catch {
    return undefined
  }
}

/** A page's comments, checked for shape only; undefined when they are not `{ quote, text }` strings within the bounds. */
function readDemoComments(value: unknown): DemoComment[] | undefined {
  if (!Array.isArray(value) || value.length > MAX_COMMENTS) return undefined
  const comments: DemoComment[] = []
  for (const item of value as unknown[]) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined
    const { quote, text } = item as Record<string, unknown>
    if (typeof quote !== 'string' || typeof text !== 'string' || text.length > MAX_COMMENT_CHARS) return undefined
    comments.push({ quote, text })
  }
  return comments
}

interface Asset {
  type: string
  body: string
}

/** The page's files by URL path; TypeScript modules are transpiled once, on first request. */
async function clientAssets(): Promise<{ get(path: string): Promise<Asset | undefined> }> {
  const files = new Map<string, () => Promise<Asset>>()
  const cache = new Map<string, Promise<Asset>>()
  const text = (file: string, type: string) => async () => ({ type, body: await readFile(file, 'utf8') })
  const prebuilt = await readdir(PREBUILT_DIR).catch(() => [] as string[])
  if (prebuilt.includes('index.html')) {
    files.set('/', text(`${PREBUILT_DIR}index.html`, 'text/html; charset=utf-8'))
    files.set('/style.css', text(`${PREBUILT_DIR}style.css`, 'text/css; charset=utf-8'))
    for (const name of prebuilt) {
      if (name.endsWith('.js')) files.set(`/${name}`, text(`${PREBUILT_DIR}${name}`, 'text/javascript; charset=utf-8'))
    }
  } else {
    files.set('/', text(`${CLIENT_DIR}index.html`, 'text/html; charset=utf-8'))
    files.set('/style.css', text(`${CLIENT_DIR}style.css`, 'text/css; charset=utf-8'))
    await addSourceModules(files)
  }
  return {
    get(path) {
      const load = files.get(path)
      if (!load) return Promise.resolve(undefined)
      let asset = cache.get(path)
      if (!asset) {
        asset = load()
        cache.set(path, asset)
        // A failed read is retried on the next request rather than cached.
        asset.catch(() => cache.delete(path))
      }
      return asset
    },
  }
}

/** The client's TypeScript modules, transpiled on first request (development, tests). */
async function addSourceModules(files: Map<string, () => Promise<Asset>>): Promise<void> {
  for (const name of await readdir(CLIENT_DIR)) {
    if (!name.endsWith('.ts')) continue
    files.set(`/${name.slice(0, -3)}.js`, async () => ({
      type: 'text/javascript; charset=utf-8',
      body: await transpiledOnce(`${CLIENT_DIR}${name}`),
    }))
  }
}

/**
 * The client modules this process transpiled, by file, with the text they were transpiled from:
 * the servers of one process (a test file starts several) transpile a module once, and again only
 * when its text changed (test/visualizer.test.ts: 2.8 s of CPU in TypeScript for seven servers'
 * four modules each, ~0.4 s once). Reading a module is cheap beside transpiling it; its
 * modification time would not do: a second write within a tick of the filesystem's clock, or a
 * file renamed over it with the same time, keeps it.
 */
const transpiled = new Map<string, { source: string; body: Promise<string> }>()

/** The module `file` transpiled (types dropped), from its text on disk now; exported for its test. */
export async function transpiledOnce(file: string): Promise<string> {
  const source = await readFile(file, 'utf8')
  const known = transpiled.get(file)
  if (known?.source === source) return known.body
  const body = transpile(file, source)
  transpiled.set(file, { source, body })
  // A failed transpile is tried again on the next server's request.
  body.catch(() => transpiled.get(file)?.body === body && transpiled.delete(file))
  return body
}

/** Types dropped, nothing else: `tsc --noEmit` checks these files with the rest. */
async function transpile(file: string, source: string): Promise<string> {
  // Loaded on first use: TypeScript is big and only the page's modules need it.
  const { default: ts } = await import('typescript')
  return ts.transpileModule(source, {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText
}
