/**
 * The page's model: folds the numbered inspection messages into agents, their actors, two
 * timelines (the session's story: what the user did, what the model was told, reviews, turns; and
 * the chart's internals: every XState event and snapshot) and the plan review history, and
 * answers "what did this agent look like at point N". Pure (no DOM), so it is tested in Node and
 * shared by the page.
 *
 * What a log event means to plan mode is the library's (its table of log event kinds): the server
 * sends each log event with the library's reading of it (`WireItem.log`: its line, F after it, its
 * story line, the plan it presents with its version and diff), and this model only shows it. It
 * reads events itself only where plan mode reads nothing: the notices and chat messages a host
 * logged, and the fields of other events. The chart tells one thing the log does not: when a
 * review opened.
 */
import type { PlanDiffLine, PlanLogLine, SessionEvent } from 'xstate-plan-mode'
import type { ActorMessage, InspectionMessage, SnapshotMessage } from 'xstate-plan-mode/inspect'
import { definitionOf, isRecord, type LogReading, type StoryLine, type WireItem } from './protocol.js'

/** A state node of a machine definition as it arrives (XState config, functions as `{type}`). */
export interface StateNodeDefinition {
  id?: string
  type?: string
  initial?: unknown
  states?: Record<string, StateNodeDefinition>
  on?: Record<string, unknown>
  always?: unknown
  after?: Record<string, unknown>
  invoke?: unknown
  onDone?: unknown
  description?: string
}

/** An actor seen on the wire. */
export interface ActorInfo {
  sessionId: string
  name: string
  parentId?: string
  /** The machine definition, when the actor is a machine. */
  definition?: StateNodeDefinition
  /** The definition's JSON text: the key of a cached layout. */
  definitionText?: string
  /** Seq of its `@xstate.actor` message. */
  seq: number
}

/** A root actor's snapshot at a point of the timeline. */
export interface SnapshotPoint {
  seq: number
  sessionId: string
  value: unknown
  status?: string
  context: unknown
}

/** What a timeline entry is about: the library's tones for log events, and the page's own. */
export type EntryTone = 'start' | 'transition' | 'notice' | PlanLogLine['tone'] | StoryLine['tone']

/**
 * Which timeline: `story` tells the session (what the user did, what the model was told, reviews,
 * turns); `internals` shows the chart at work (every XState event and snapshot) beside the log's
 * events as the library's table names them.
 */
export type TimelineLayer = 'story' | 'internals'

/** One line of an agent's timeline: a transition of its actor or an event of its log. */
export interface TimelineEntry {
  seq: number
  /** When it happened (ms since the epoch); absent when nothing tells (a replayed log without times). */
  at?: number
  /** For a log event: its seq in the agent's log. */
  logSeq?: number
  tone: EntryTone
  label: string
  /** Salient data (the event's fields, the notice's text), one line. */
  detail: string
  /** For transitions: whether the active states changed. */
  changed?: boolean
}

/** An agent's mode in words (SPEC: F, the pending selection P, an open review). */
export interface ModeSummary {
  /** F, the logged mode, or unknown when neither the chart nor the library's fold of the log tells. */
  logged: 'active' | 'inactive' | 'unknown'
  /** P, a selection waiting for a step boundary (or being appended). */
  pending?: 'entering' | 'leaving'
  /** A plan review is open. */
  reviewing: boolean
  /** e.g. `active · pending leaving · reviewing`. */
  label: string
}

/**
 * One presented version of a plan and how its review ended (R49, R96), as the server's reading of
 * the log tells it (`LogReading.plan`).
 */
export interface ReviewVersion {
  /** 1, 2, … within its planning episode (R96). */
  version: number
  /** When the record that presented it arrived (the timeline's clock). */
  seq: number
  /** The log seq of that record. */
  logSeq: number
  /** How its review ended, or `open` while a durable review waits. */
  outcome: string
  title: string
  plan: string
  feedback?: string
  /** Set when a headless policy decided the outcome (R94). */
  by?: 'policy'
  /** Set when the user approved it into a fresh context (R101). */
  fresh?: true
  /** For version 2 and later: its line diff from the previous version (R97). */
  diff?: PlanDiffLine[]
}

/** An agent as the page shows it at one point of its timeline. */
export interface AgentView {
  id: string
  actor?: ActorInfo
  snapshot?: SnapshotPoint
  /** Dotted paths of the active state nodes, ancestors included (`mode`, `mode.active`). */
  activePaths: Set<string>
  summary: ModeSummary
  reviews: ReviewVersion[]
  /** The plan under review at that point, when the chart's context tells it. */
  openReview?: { title: string; plan: string }
}

/** One log event as it arrived, with the library's reading of it. */
export interface LogRecord {
  seq: number
  event: SessionEvent
  reading: LogReading
}

interface AgentRecord {
  id: string
  log: LogRecord[]
  /** The log's events as the library's table names them (the internals timeline). */
  logEntries: TimelineEntry[]
  /** The same events as the story tells them. */
  storyEntries: TimelineEntry[]
}

interface SessionRecord {
  actor: ActorInfo
  snapshots: SnapshotPoint[]
  /** Its start and every transition (the internals timeline). */
  entries: TimelineEntry[]
  /** What the chart alone tells of the story: a review opened (the log records only its end). */
  storyEntries: TimelineEntry[]
}

/** Folds wire items; every query takes an optional cursor (a seq) to look into the past. */
export class VisualizerModel {
  private readonly sessions = new Map<string, SessionRecord>()
  private readonly links = new Map<string, string>()
  private readonly logs = new Map<string, AgentRecord>()
  /** Highest seq ingested. */
  lastSeq = 0

  /** Adds one wire item (items are expected in seq order; repeats are ignored). */
  ingest(item: WireItem): void {
    if (item.seq <= this.lastSeq) return
    this.lastSeq = item.seq
    const message: InspectionMessage = item.message
    switch (message.type) {
      case '@xstate.actor':
        this.addActor(item, message)
        break
      case '@xstate.snapshot':
        this.addSnapshot(item, message)
        break
      case 'plan-mode.agent':
        this.links.set(message.sessionId, message.agentId)
        break
      case 'plan-mode.log':
        this.addLog(item, message.agentId, message.event, item.log ?? {})
        break
      // `@xstate.event` adds nothing: the snapshot that follows carries the same event.
    }
  }

  /** The agents, in the order they appeared. */
  agentIds(): string[] {
    const ids: string[] = []
    const add = (id: string) => {
      if (!ids.includes(id)) ids.push(id)
    }
    // An agent is known by its root actors (a detach and re-attach makes a new one) or its log.
    const firstSeen: { id: string; seq: number }[] = []
    for (const record of this.sessions.values()) {
      if (record.actor.parentId === undefined) firstSeen.push({ id: this.agentOf(record.actor), seq: record.actor.seq })
    }
    for (const record of this.logs.values()) firstSeen.push({ id: record.id, seq: record.log[0]?.seq ?? Infinity })
    firstSeen.sort((a, b) => a.seq - b.seq).forEach(({ id }) => add(id))
    return ids
  }

  /**
   * The agent's timeline, in arrival order: by default its story (its log's events as the session
   * tells them, and the reviews its chart opened); with `internals`, its actors' start and every
   * transition beside its log events.
   */
  timeline(agentId: string, layer: TimelineLayer = 'story'): TimelineEntry[] {
    const story = layer === 'story'
    const entries: TimelineEntry[] = []
    for (const sessionId of this.rootsOf(agentId)) {
      const record = this.sessions.get(sessionId)
      if (record) entries.push(...(story ? record.storyEntries : record.entries))
    }
    const log = this.logs.get(agentId)
    if (log) entries.push(...(story ? log.storyEntries : log.logEntries))
    return entries.sort((a, b) => a.seq - b.seq)
  }

  /**
   * The seq the chart is shown at when entry `index` of `entries` (the agent's timeline of
   * `layer`) is selected. An internals line is one exact point. A story line stands for the
   * chart's moves until the next story line, except the chart's answer to the next line's log
   * event: the chart follows an event a host logs before the inspector forwards it, so that answer
   * (a `LOG.…` transition) comes just before the event. (An event the chart logged itself arrives
   * before the chart's answer to it, which the window then takes in.)
   */
  pointOf(agentId: string, entries: readonly TimelineEntry[], index: number, layer: TimelineLayer): number {
    const entry = entries[index]
    if (!entry) return Infinity
    const next = entries[index + 1]
    if (layer === 'internals' || !next) return next ? entry.seq : Infinity
    let lead: TimelineEntry | undefined
    for (const candidate of this.timeline(agentId, 'internals')) {
      if (candidate.seq >= next.seq) break
      lead = candidate
    }
    const answersNext = lead !== undefined && lead.seq > entry.seq && lead.tone === 'transition' && lead.label.startsWith('LOG.')
    return answersNext ? lead!.seq - 1 : next.seq - 1
  }

  /** The agent at `cursor` (a seq; the latest when omitted). */
  view(agentId: string, cursor = Infinity): AgentView {
    let latest: SnapshotPoint | undefined
    let actor: ActorInfo | undefined
    for (const sessionId of this.rootsOf(agentId)) {
      const record = this.sessions.get(sessionId)
      if (!record || record.actor.seq > cursor) continue
      const point = lastAtOrBefore(record.snapshots, cursor)
      const candidate = point ?? { seq: record.actor.seq, sessionId, value: undefined, context: undefined }
      if (!latest || candidate.seq >= latest.seq) {
        latest = candidate
        actor = record.actor
      }
    }
    const log = (this.logs.get(agentId)?.log ?? []).filter((entry) => entry.seq <= cursor)
    const activePaths = activeStatePaths(latest?.value)
    const snapshot = latest?.value === undefined ? undefined : latest
    return {
      id: agentId,
      ...(actor ? { actor } : {}),
      ...(snapshot ? { snapshot } : {}),
      activePaths,
      summary: summarize(latest?.value, log[log.length - 1]?.reading.active),
      reviews: reviewHistory(log),
      ...openReviewOf(latest?.context, activePaths),
    }
  }

  private agentOf(actor: ActorInfo): string {
    return this.links.get(actor.sessionId) ?? actor.name
  }

  private rootsOf(agentId: string): string[] {
    const roots: string[] = []
    for (const [sessionId, record] of this.sessions) {
      if (record.actor.parentId === undefined && this.agentOf(record.actor) === agentId) roots.push(sessionId)
    }
    return roots
  }

  private addActor(item: WireItem, message: ActorMessage): void {
    // A definition that is not a machine's is shown as an actor without a chart.
    const definition = definitionOf(message.definition)
    const actor: ActorInfo = {
      sessionId: String(message.sessionId),
      name: String(message.name),
      ...(message.parentId ? { parentId: String(message.parentId) } : {}),
      ...(definition ? { definition, definitionText: message.definition } : {}),
      seq: item.seq,
    }
    const snapshot = isRecord(message.snapshot) ? message.snapshot : {}
    this.sessions.set(actor.sessionId, {
      actor,
      snapshots: 'value' in snapshot
        ? [{ seq: item.seq, sessionId: actor.sessionId, value: snapshot.value, status: stringOr(snapshot.status), context: snapshot.context }]
        : [],
      entries: actor.parentId === undefined
        ? [{ seq: item.seq, ...at(item.at), tone: 'start', label: `started ${actor.name}`, detail: actor.sessionId }]
        : [],
      storyEntries: [],
    })
  }

  private addSnapshot(item: WireItem, message: SnapshotMessage): void {
    const record = this.sessions.get(String(message.sessionId))
    // Child actors (the review's promise) are drawn through their parent's transitions.
    if (!record || record.actor.parentId !== undefined) return
    const previous = record.snapshots[record.snapshots.length - 1]
    const point: SnapshotPoint = {
      seq: item.seq,
      sessionId: record.actor.sessionId,
      value: message.snapshot?.value,
      status: stringOr(message.snapshot?.status),
      context: message.snapshot?.context,
    }
    record.snapshots.push(point)
    const changed = JSON.stringify(previous?.value) !== JSON.stringify(point.value)
    const { type, ...fields } = message.event ?? { type: '' }
    record.entries.push({
      seq: item.seq,
      ...at(item.at),
      tone: 'transition',
      label: eventLabel(String(type)),
      detail: summarizeFields(fields),
      changed,
    })
    // The log records a review when it ends (R49); its opening is the chart's to tell.
    if (changed && !activeStatePaths(previous?.value).has('review.open')) {
      const { openReview } = openReviewOf(point.context, activeStatePaths(point.value))
      if (openReview) {
        record.storyEntries.push({ seq: item.seq, ...at(item.at), tone: 'review', label: 'Review opened', detail: openReview.title ? `"${openReview.title}"` : '' })
      }
    }
  }

  private addLog(item: WireItem, agentId: string, event: SessionEvent, reading: LogReading): void {
    let record = this.logs.get(agentId)
    if (!record) {
      record = { id: agentId, log: [], logEntries: [], storyEntries: [] }
      this.logs.set(agentId, record)
    }
    // An inspector that watches the agent again sends its whole log again: seqs only grow.
    const last = record.log[record.log.length - 1]
    if (last && !(event.seq > last.event.seq)) return
    record.log.push({ seq: item.seq, event, reading })
    // The event's own time when the log holds one; else when it arrived, if it arrived live.
    const when = { ...at(reading.at ?? item.at), logSeq: event.seq }
    record.logEntries.push({ seq: item.seq, ...when, ...describeLogEvent(event, reading.line) })
    record.storyEntries.push({ seq: item.seq, ...when, ...storyOf(event, reading) })
  }
}

function lastAtOrBefore(points: SnapshotPoint[], cursor: number): SnapshotPoint | undefined {
  for (let i = points.length - 1; i >= 0; i--) {
    const point = points[i]
    if (point && point.seq <= cursor) return point
  }
  return undefined
}

/** `{ mode: 'active', intent: { pending: 'entering' } }` → mode, mode.active, intent, intent.pending, … */
export function activeStatePaths(value: unknown, prefix = ''): Set<string> {
  const paths = new Set<string>()
  const walk = (node: unknown, path: string) => {
    if (typeof node === 'string') {
      paths.add(path ? `${path}.${node}` : node)
      return
    }
    if (!isRecord(node)) return
    for (const [key, child] of Object.entries(node)) {
      const childPath = path ? `${path}.${key}` : key
      paths.add(childPath)
      walk(child, childPath)
    }
  }
  walk(value, prefix)
  return paths
}

/**
 * The mode in words. The chart's regions tell F (`mode`), P (`intent.pending.*`, or an idle
 * selection being appended) and an open review (`review` not idle); for an agent whose chart has
 * not been seen, F is `loggedActive`, the library's fold of its log (R2, `LogReading.active`).
 */
export function summarize(value: unknown, loggedActive: boolean | undefined): ModeSummary {
  const paths = activeStatePaths(value)
  let logged: ModeSummary['logged'] = paths.has('mode.active') ? 'active' : paths.has('mode.inactive') ? 'inactive' : 'unknown'
  if (logged === 'unknown' && loggedActive !== undefined) logged = loggedActive ? 'active' : 'inactive'
  let pending: ModeSummary['pending']
  for (const path of paths) {
    if (!path.startsWith('intent.')) continue
    if (/\.(pending|committing)\.entering$/.test(path)) pending = 'entering'
    if (/\.(pending|committing)\.leaving$/.test(path)) pending = 'leaving'
  }
  const reviewing = [...paths].some((path) => path.startsWith('review.') && path !== 'review.idle')
  const parts: string[] = [logged]
  if (pending) parts.push(`pending ${pending}`)
  if (reviewing) parts.push('reviewing')
  return { logged, ...(pending ? { pending } : {}), reviewing, label: parts.join(' · ') }
}

/**
 * Every plan presented, in order, with its version and how its review ended: the plan's version
 * history (R49, R96). What a log event presents, its version and its change from the previous
 * version are the library's reading (`LogReading.plan`, made by the server); a durable review's
 * closing record updates the version its request presented.
 */
export function reviewHistory(log: readonly LogRecord[]): ReviewVersion[] {
  const versions = new Map<number, ReviewVersion>()
  for (const { seq, reading } of log) {
    const presented = reading.plan
    if (presented === undefined) continue
    const { seq: logSeq, version, title, plan, outcome, feedback, by, fresh, diff } = presented
    versions.set(logSeq, {
      version,
      seq: versions.get(logSeq)?.seq ?? seq,
      logSeq,
      outcome,
      title,
      plan,
      ...(feedback !== undefined ? { feedback } : {}),
      ...(by !== undefined ? { by } : {}),
      ...(fresh === true ? { fresh } : {}),
      ...(diff !== undefined ? { diff } : {}),
    })
  }
  return [...versions.values()]
}

function openReviewOf(context: unknown, activePaths: Set<string>): { openReview?: { title: string; plan: string } } {
  if (!activePaths.has('review.open') || !isRecord(context) || !isRecord(context.review)) return {}
  const { plan, title } = context.review
  if (typeof plan !== 'string') return {}
  return { openReview: { plan, title: typeof title === 'string' ? title : '' } }
}

/**
 * A log event as a timeline line: `line`, the library's (`describePlanLogEvent`, sent by the
 * server), for the kinds plan mode reads; for any other event, a logged notice's text or the
 * event's fields.
 */
export function describeLogEvent(event: SessionEvent, line: PlanLogLine | undefined): Pick<TimelineEntry, 'tone' | 'label' | 'detail'> {
  if (line !== undefined) return { tone: line.tone, label: line.label, detail: line.detail }
  const data = isRecord(event.data) ? event.data : {}
  const notice = noticeText(data)
  if (notice !== undefined) return { tone: 'notice', label: 'notice', detail: notice }
  return { tone: 'log', label: event.type, detail: summarizeFields(data) }
}

/**
 * A log event as a line of the session's story: the server's reading for the kinds plan mode
 * reads; a logged notice's text, or the event's type and fields, for any other.
 */
export function storyOf(event: SessionEvent, reading: LogReading): Pick<TimelineEntry, 'tone' | 'label' | 'detail'> {
  if (reading.story) return { tone: reading.story.tone, label: reading.story.label, detail: reading.story.detail }
  const line = describeLogEvent(event, reading.line)
  if (line.tone === 'notice') return { tone: 'notice', label: `Notice: ${line.detail}`, detail: 'logged by the host' }
  // A chat message the host logged (`{ role, content | text }`): who said what.
  const data = isRecord(event.data) ? event.data : {}
  const message = isRecord(data.message) ? data.message : data
  const text = messageText(message)
  if (text !== undefined && (message.role === 'user' || message.role === 'assistant')) {
    const said = text.replace(/\s+/g, ' ')
    return { tone: 'log', label: `${message.role === 'user' ? 'User' : 'Model'}: ${said.length > 120 ? `${said.slice(0, 117)}…` : said}`, detail: event.type }
  }
  return line
}

/** The text of a message: its `text`, or the text parts of its `content`. */
function messageText(message: Record<string, unknown>): string | undefined {
  if (typeof message.text === 'string') return message.text
  if (typeof message.content === 'string') return message.content
  if (!Array.isArray(message.content)) return undefined
  const parts = message.content.filter((part): part is { type: 'text'; text: string } => isRecord(part) && part.type === 'text' && typeof part.text === 'string')
  return parts.length > 0 ? parts.map((part) => part.text).join(' ') : undefined
}

/** `{ at }` when known, else nothing (no made-up time). */
function at(time: number | undefined): { at?: number } {
  return typeof time === 'number' ? { at: time } : {}
}

/** The text of a plan-mode notice message (R34), wherever the host logged it. */
function noticeText(data: Record<string, unknown>): string | undefined {
  const message = isRecord(data.message) ? data.message : data
  const source = message.source
  if (!isRecord(source) || source.plugin !== 'plan-mode' || source.form !== 'notice') return undefined
  return stringOr(source.summary) ?? ''
}

function eventLabel(type: string): string {
  if (type === 'xstate.init') return 'init'
  // Invoked actors are named `<index>.<machine>.<state path>`: the state path says enough.
  const actor = (id: string) => id.replace(/^\d+\.[^.]+\./, '')
  if (type.startsWith('xstate.done.actor.')) return `done: ${actor(type.slice('xstate.done.actor.'.length))}`
  if (type.startsWith('xstate.error.actor.')) return `error: ${actor(type.slice('xstate.error.actor.'.length))}`
  return type || '(snapshot)'
}

/** A short one-line rendering of an event's fields (long values cut). */
function summarizeFields(fields: Record<string, unknown>): string {
  const parts: string[] = []
  for (const [key, value] of Object.entries(fields)) {
    let text = typeof value === 'string' ? value : JSON.stringify(value)
    if (text === undefined) continue
    text = text.replace(/\s+/g, ' ')
    parts.push(`${key}: ${text.length > 60 ? `${text.slice(0, 57)}…` : text}`)
  }
  return parts.join(', ')
}

function stringOr(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/**
 * The quote a comment on `line` is anchored to (R100): the line without its indentation, its
 * markdown heading, list or block-quote marker and its trailing spaces, so that the model reads
 * the words rather than the markup; the trimmed line when nothing but a marker is left. Always an
 * exact excerpt of the line, hence of the plan. The CLI chat's review quotes lines by it too.
 */
export function lineQuote(line: string): string {
  const marker = /^\s*(?:#{1,6}\s+|>\s*|(?:[-*+]|\d{1,9}[.)])\s+)?/.exec(line)![0]
  const quote = line.slice(marker.length).trimEnd()
  return quote === '' ? line.trim() : quote
}
