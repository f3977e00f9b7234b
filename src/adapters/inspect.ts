/**
 * `xstate-plan-mode/inspect`: plan-mode actors in the visualizer and in Stately's inspector
 * (`@statelyai/inspect` and `ws` are optional peers, loaded when first needed).
 *
 * @module xstate-plan-mode/inspect
 */
import { createRequire } from 'node:module'
import type * as StatelyInspect from '@statelyai/inspect'
import type { InspectionEvent, Observer } from 'xstate'
import type WebSocket from 'ws'
import type { SessionEvent, SessionLog } from '../types.js'

/**
 * The per-agent statechart, ports unbound (SPEC §1), with its context and event types: for tools
 * that draw or inspect the chart (`planModeMachine.definition`), not for running plan mode, which
 * `createPlanMode` does.
 */
export { planModeMachine } from '../machines/planMode.machine.js'
export type { PlanModeContext } from '../machines/planMode.setup.js'
export type { PlanModeEvent } from '../machines/planMode.events.js'

/**
 * Inspection for plan-mode actors, speaking the Stately inspection protocol (`@xstate.actor`,
 * `@xstate.event`, `@xstate.snapshot`, as produced by `@statelyai/inspect`), plus two plan-mode
 * messages on the same wire: `plan-mode.agent` (which actor is which agent) and `plan-mode.log`
 * (the agent's session-log events, the durable truth the chart only follows).
 *
 * Messages are plain JSON data: the machine definition arrives as a JSON string, everything else
 * as JSON values, so any transport (a WebSocket, `postMessage`, a file) can carry them.
 *
 * `@statelyai/inspect` and `ws` are optional peer dependencies of the package, loaded when first
 * needed (R110): the core installs without them, and a missing one is named by the error.
 */

/** Fields every Stately inspection message carries. */
interface StatelyMessageBase {
  /** The actor's session id (unique per actor run, e.g. `x:3`). */
  sessionId: string
  rootId?: string
  createdAt: string
  id: string | null
  _version: string
}

/** An actor started: its name, parent and whole machine definition (a JSON string). */
export interface ActorMessage extends StatelyMessageBase {
  type: '@xstate.actor'
  name: string
  parentId?: string
  definition?: string
  snapshot: unknown
}

/** An event was sent to an actor. */
export interface EventMessage extends StatelyMessageBase {
  type: '@xstate.event'
  event: { type: string; [key: string]: unknown }
  sourceId?: string
}

/** An actor has a new snapshot, and the event that produced it. */
export interface SnapshotMessage extends StatelyMessageBase {
  type: '@xstate.snapshot'
  event: { type: string; [key: string]: unknown }
  snapshot: { status?: string; value?: unknown; context?: unknown; [key: string]: unknown }
}

/** The Stately inspection protocol messages, as JSON data. */
export type StatelyMessage = ActorMessage | EventMessage | SnapshotMessage

/** Links an agent to the session id of its root actor, so a viewer can name the actor. */
export interface AgentMessage {
  type: 'plan-mode.agent'
  agentId: string
  sessionId: string
}

/** One event of an agent's session log (every event, not only plan-mode ones). */
export interface LogMessage {
  type: 'plan-mode.log'
  agentId: string
  event: SessionEvent
}

/** Everything a plan-mode inspector sends. */
export type InspectionMessage = StatelyMessage | AgentMessage | LogMessage

/** Where inspection messages go. `stop` (when present) releases whatever the transport holds. */
export interface InspectionTransport {
  send(message: InspectionMessage): void
  stop?(): void | Promise<void>
}

/** Options of {@link createPlanModeInspector}. */
export interface PlanModeInspectorOptions {
  /**
   * How deep messages are serialized before values are cut (`'[Object]'`). The default, 64, keeps
   * a whole plan-mode definition (states nest ~5 deep, i.e. ~15 JSON levels) with room to spare;
   * `@statelyai/inspect`'s own default (10) cuts it.
   */
  serializationDepthLimit?: number
  /** Options of the WebSocket transport made for `{ url }`. */
  webSocket?: WebSocketTransportOptions
}

/** An agent as the inspector sees it: an id and its session log. */
export interface InspectedAgent {
  id: string
  session: SessionLog
}

/** What {@link createPlanModeInspector} returns. */
export interface PlanModeInspector {
  /**
   * The inspection observer: pass it to `createActor(machine, { inspect })` or to
   * `createPlanMode({ section, inspect })`.
   */
  readonly inspect: Observer<InspectionEvent>
  /**
   * Names an agent's actor and forwards the agent's session log: the events already logged, then
   * every appended one, as `plan-mode.log` messages. Returns a function that stops forwarding.
   * @param actor the agent's root actor (`planMode.actor(agent)`), to link it to the agent.
   */
  watch(agent: InspectedAgent, actor?: { sessionId: string }): () => void
  /**
   * Stops the inspector: messages already emitted are still delivered, later ones are dropped,
   * log subscriptions end, and a transport made from `{ url }` is closed. Afterwards the inspector
   * holds no socket or timer, so Node can exit. Idempotent.
   */
  stop(): Promise<void>
}

/** The optional peers this entry point loads, and what installs each. */
const PEERS = { '@statelyai/inspect': '@statelyai/inspect@0.7', ws: 'ws@8' } as const

/**
 * Loads an optional peer dependency (R110), from where this module is installed.
 * @throws Error `` xstate-plan-mode/inspect needs the `<name>` package (npm install <name>@<major>) ``
 *   (its `code` is `MODULE_NOT_FOUND`) when it is not installed.
 */
function peer<T>(name: keyof typeof PEERS): T {
  try {
    return createRequire(import.meta.url)(name) as T
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && String((error as Error).message).includes(`'${name}'`)) {
      throw Object.assign(new Error(`xstate-plan-mode/inspect needs the \`${name}\` package (npm install ${PEERS[name]})`), {
        code: 'MODULE_NOT_FOUND',
      })
    }
    throw error
  }
}

/** Our default: high enough that no machine definition of this library is cut. */
const DEFAULT_DEPTH_LIMIT = 64

/**
 * Creates an inspection observer for plan-mode actors, built on `@statelyai/inspect`'s
 * `createInspector`, so the messages are exactly the Stately protocol.
 *
 * @param target a transport (`{ send(message) }`, which stays yours: `stop` does not stop it) or
 *   `{ url }` of a WebSocket endpoint (the visualizer's `/inspect`, or `@statelyai/inspect/server`),
 *   for which a buffering client is made and closed by `stop`.
 * @returns the `inspect` observer, `watch` for session logs, and `stop`.
 * @throws TypeError when `target` has neither `send` nor `url`; Error when `@statelyai/inspect`
 *   (or, for `{ url }`, `ws`) is not installed (R110).
 */
export function createPlanModeInspector(
  target: InspectionTransport | { url: string },
  options: PlanModeInspectorOptions = {},
): PlanModeInspector {
  const { createInspector } = peer<typeof StatelyInspect>('@statelyai/inspect')
  const depthLimit = options.serializationDepthLimit ?? DEFAULT_DEPTH_LIMIT
  let transport: InspectionTransport
  let ownsTransport = false
  if ('send' in target && typeof target.send === 'function') {
    transport = target
  } else if ('url' in target && typeof target.url === 'string') {
    transport = createWebSocketTransport(target.url, options.webSocket)
    ownsTransport = true
  } else {
    throw new TypeError('createPlanModeInspector needs a transport ({ send }) or a WebSocket { url }')
  }

  let stopped = false
  const watches = new Set<() => void>()
  const deliver = (message: InspectionMessage): void => {
    if (stopped) return
    try {
      transport.send(message)
    } catch {
      // Inspection is an observer: a failing transport must never disturb the agents it watches.
    }
  }

  // `@statelyai/inspect` serializes a definition with sorted keys, which loses the order of the
  // states (a viewer draws regions in definition order). The same config is serialized again
  // here, order kept, and put in place of the sorted one: still the protocol's JSON string.
  const definitions = new Map<string, string>()
  // Likewise the actor's snapshot: `@statelyai/inspect` reads it when it sends the message, a
  // timer turn later, when the actor may have moved on. The actor appears before it has a
  // snapshot, so the first snapshot it reports (its start) is kept for the announcement.
  const announcing = new Set<string>()
  const snapshots = new Map<string, unknown>()
  const inspector = createInspector(
    {
      send: (event) => {
        if (event.type === '@xstate.actor') {
          const definition = definitions.get(event.sessionId)
          const snapshot = snapshots.get(event.sessionId)
          definitions.delete(event.sessionId)
          snapshots.delete(event.sessionId)
          announcing.delete(event.sessionId)
          if (definition !== undefined) event = { ...event, definition }
          if (snapshot !== undefined) event = { ...event, snapshot: snapshot as typeof event.snapshot }
        }
        // createInspector made the definition a string; the rest may still hold actor refs,
        // class instances or cycles, so it is made plain JSON here.
        deliver(toJson(event, depthLimit) as InspectionMessage)
      },
    },
    { serializationDepthLimit: depthLimit },
  )
  inspector.start()
  const inspect: Observer<InspectionEvent> = {
    next(event) {
      // After stop nothing is sent, so nothing needs converting (or a timer).
      if (stopped) return
      if (event.type === '@xstate.actor') {
        const config = (event.actorRef as { logic?: { config?: unknown } }).logic?.config
        if (typeof config === 'object' && config !== null) {
          definitions.set(event.actorRef.sessionId, JSON.stringify(toJson(config, depthLimit)))
        }
        announcing.add(event.actorRef.sessionId)
      }
      if (event.type === '@xstate.snapshot' && announcing.has(event.actorRef.sessionId) && !snapshots.has(event.actorRef.sessionId)) {
        snapshots.set(event.actorRef.sessionId, toJson(event.snapshot, depthLimit))
      }
      inspector.inspect.next?.(event)
    },
  }

  return {
    inspect,
    watch(agent, actor) {
      if (stopped) return () => {}
      // createInspector hands inspection events over on a zero-delay timer; log events take the
      // same path so that a viewer sees them in the order they happened.
      const later = (message: InspectionMessage) => {
        setTimeout(() => deliver(message), 0)
      }
      if (actor) later({ type: 'plan-mode.agent', agentId: agent.id, sessionId: actor.sessionId })
      let lastSeq = -Infinity
      const forward = (event: SessionEvent) => {
        // Seqs only grow: an event reported both in `events` and through `subscribe` goes once.
        if (event.seq <= lastSeq) return
        lastSeq = event.seq
        later({ type: 'plan-mode.log', agentId: agent.id, event: toJson(event, depthLimit) as SessionEvent })
      }
      const unsubscribe = agent.session.subscribe(forward)
      for (const event of agent.session.events) forward(event)
      const unwatch = () => {
        if (watches.delete(unwatch)) unsubscribe()
      }
      watches.add(unwatch)
      return unwatch
    },
    async stop() {
      if (stopped) return
      for (const unwatch of [...watches]) unwatch()
      // Inspection events emitted before stop wait on zero-delay timers (see `watch`); one more
      // timer turn lets them through before the door closes.
      await new Promise<void>((resolve) => setTimeout(resolve, 0))
      stopped = true
      definitions.clear()
      snapshots.clear()
      announcing.clear()
      inspector.stop()
      if (ownsTransport) await transport.stop?.()
    },
  }
}

/** Options of {@link createWebSocketTransport}. */
export interface WebSocketTransportOptions {
  /** Most messages held while the socket is not open; the oldest go first. Default 10 000. */
  maxBuffered?: number
  /** Delay before reconnecting after the connection failed or closed. Default 1000 ms. */
  reconnectDelayMs?: number
}

/** A WebSocket client transport: buffers until open, reconnects, and lets Node exit after `stop`. */
export interface WebSocketTransport extends InspectionTransport {
  /** `connecting` until the first open, `open`, `closed` between reconnects, `stopped` for good. */
  readonly state: 'connecting' | 'open' | 'closed' | 'stopped'
  /** How many messages were dropped because the buffer was full. */
  readonly dropped: number
  /**
   * Closes the socket after the messages already handed to it are sent, and drops the buffer of a
   * socket that never opened. Resolves when no socket or timer is left. Idempotent.
   */
  stop(): Promise<void>
}

/**
 * Creates a WebSocket client that sends inspection messages as JSON text to `url`.
 * Messages sent before the socket opens (or while it reconnects) are buffered and flushed in
 * order on open. Reconnect timers never keep Node alive, and after `stop` nothing does.
 * @param url a `ws://` or `wss://` URL.
 * @throws Error when `ws` is not installed (R110).
 */
export function createWebSocketTransport(url: string, options: WebSocketTransportOptions = {}): WebSocketTransport {
  const Socket = peer<typeof WebSocket>('ws')
  const maxBuffered = options.maxBuffered ?? 10_000
  const reconnectDelayMs = options.reconnectDelayMs ?? 1000
  const buffer: string[] = []
  let socket: WebSocket | undefined
  let state: WebSocketTransport['state'] = 'connecting'
  let dropped = 0
  let reconnectTimer: ReturnType<typeof setTimeout> | undefined
  let closed: Promise<void> | undefined

  const connect = () => {
    reconnectTimer = undefined
    // A short close timeout: ws waits 30 s for the peer's close frame by default, and that timer
    // would keep Node alive after stop. (ws 8.23 has the option; @types/ws 8.18 does not list it.)
    const clientOptions: WebSocket.ClientOptions & { closeTimeout: number } = { closeTimeout: 1000 }
    const ws = new Socket(url, clientOptions)
    socket = ws
    ws.on('open', () => {
      if (socket !== ws) return
      state = 'open'
      for (const text of buffer.splice(0)) ws.send(text)
    })
    // Without an error listener, a refused connection would be an uncaught exception.
    ws.on('error', () => {})
    ws.on('close', () => {
      if (socket !== ws || state === 'stopped') return
      socket = undefined
      state = 'closed'
      reconnectTimer = setTimeout(connect, reconnectDelayMs)
      // Reconnecting is best effort: it alone must not keep the process running.
      reconnectTimer.unref()
    })
  }
  connect()

  return {
    get state() {
      return state
    },
    get dropped() {
      return dropped
    },
    send(message) {
      if (state === 'stopped') return
      const text = JSON.stringify(message)
      if (state === 'open' && socket?.readyState === Socket.OPEN) {
        socket.send(text)
        return
      }
      buffer.push(text)
      if (buffer.length > maxBuffered) {
        buffer.shift()
        dropped++
      }
    },
    stop() {
      if (closed) return closed
      state = 'stopped'
      if (reconnectTimer) clearTimeout(reconnectTimer)
      buffer.length = 0
      const ws = socket
      socket = undefined
      closed = new Promise<void>((resolve) => {
        if (!ws || ws.readyState === Socket.CLOSED) return resolve()
        if (ws.readyState === Socket.OPEN) {
          ws.once('close', () => resolve())
          // A graceful close: ws sends the queued messages before the close frame.
          ws.close(1000, 'inspector stopped')
          // A peer that never answers the close frame is cut off (the timer must not hold Node).
          setTimeout(() => ws.terminate(), 1500).unref()
        } else {
          // A socket cut off while connecting emits 'close' before Node has released its handle
          // and its connect request (that happens in the loop's next close phase): two turns
          // through the loop's check phase pass one, so `stop` resolves when nothing is left.
          ws.once('close', () => setImmediate(() => setImmediate(resolve)))
          ws.terminate()
        }
      })
      return closed
    },
  }
}

/**
 * Turns any value into plain JSON data: `toJSON` is honoured (XState snapshots and actor refs have
 * one), functions become `{ type: name }` (as `@statelyai/inspect` does), cycles become
 * `'[Circular]'`, and values deeper than `depthLimit` become `'[Object]'`/`'[Array]'`.
 */
function toJson(value: unknown, depthLimit: number): unknown {
  const ancestors: object[] = []
  const walk = (input: unknown, depth: number): unknown => {
    let value = input
    if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
      value = (value as { toJSON(): unknown }).toJSON()
    }
    switch (typeof value) {
      case 'string':
      case 'boolean':
        return value
      case 'number':
        return Number.isFinite(value) ? value : null
      case 'bigint':
        return value.toString()
      case 'function':
        return { type: value.name }
      case 'undefined':
      case 'symbol':
        return undefined
    }
    if (value === null) return null
    const object = value as object
    if (ancestors.includes(object)) return '[Circular]'
    if (depth >= depthLimit) return Array.isArray(object) ? '[Array]' : '[Object]'
    ancestors.push(object)
    try {
      if (object instanceof Error) return { name: object.name, message: object.message }
      if (Array.isArray(object)) return object.map((item) => walk(item, depth + 1) ?? null)
      if (object instanceof Map) return [...object].map((entry) => walk(entry, depth + 1))
      if (object instanceof Set) return [...object].map((item) => walk(item, depth + 1) ?? null)
      const result: Record<string, unknown> = {}
      for (const [key, item] of Object.entries(object)) {
        const plain = walk(item, depth + 1)
        if (plain !== undefined) result[key] = plain
      }
      return result
    } finally {
      ancestors.pop()
    }
  }
  return walk(value, 0)
}
