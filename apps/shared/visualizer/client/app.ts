/**
 * The visualizer page: connects to `/view`, folds what arrives into the model, and renders the
 * agents, the selected agent's statechart (at Fit its text is never below 10 px: a large chart
 * scrolls in its panel), its timeline (scrubbable into the past: the session's story by default,
 * the chart's internals behind "Show chart internals") and its plan review history (each version,
 * and from v2 on its change from the previous one). Every piece of data is written with
 * `textContent` or an attribute: a plan that contains markup shows it as text.
 *
 * In demo mode, the plan the demo agent has under review takes comments (R100): a click on one of
 * its lines opens a small box under it; the comments are listed under the plan and go with Keep
 * planning (a comment typed but not added yet too), each quoting its line without the line's
 * markdown marker (`lineQuote`: an exact excerpt of the plan). Approve waits while any is listed.
 * The review's buttons are the question's options (the demo's service offers all four, R101):
 * Approve, Approve in a fresh context, Keep planning, Leave plan mode, each labelled and described
 * as the question says; only Keep planning takes comments, so the others wait while any is listed.
 */
import type { ElkNode } from 'elkjs/lib/elk-api.js'
import { CHART_FONTS, canvasMeasure, chartModel, drawChart, highlight, labelWidths, layoutChart, type ChartFit, type ChartModel, type Measure } from './chart.js'
import { VisualizerModel, lineQuote, type AgentView, type TimelineEntry, type TimelineLayer } from './model.js'
import type { PlanDiffLine } from 'xstate-plan-mode'
import { DEMO_DECISION_LABELS, type DemoComment, type DemoCommand, type DemoDecision, type DemoOption, type ServerMessage, type ViewerMessage } from './protocol.js'

const $ = <T extends HTMLElement>(id: string): T => {
  const element = document.getElementById(id)
  if (!element) throw new Error(`the page lacks #${id}`)
  return element as T
}

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (text !== undefined) node.textContent = text
  return node
}

const ui = {
  connection: $('connection'),
  access: $('access'),
  demo: $('demo'),
  demoStatus: $<HTMLOutputElement>('demo-status'),
  feedback: $<HTMLInputElement>('feedback'),
  agents: $('agents'),
  noAgents: $('no-agents'),
  chartTitle: $('chart-title'),
  chartMode: $('chart-mode'),
  chart: $('chart'),
  banner: $('cursor-banner'),
  bannerText: $('cursor-text'),
  live: $<HTMLButtonElement>('live'),
  zoom: $<HTMLButtonElement>('zoom'),
  internals: $<HTMLInputElement>('internals'),
  scrub: $<HTMLInputElement>('scrub'),
  timeline: $('timeline'),
  openReview: $('open-review'),
  reviews: $('reviews'),
}

let model = new VisualizerModel()
let selected: string | undefined
/**
 * The seq of the timeline entry the page looks back to; undefined follows the live end. A seq,
 * not an index, so the cursor stays put when the timeline switches between story and internals.
 */
let cursor: number | undefined
/** The story by default; the chart's internals when the user asks. */
let layer: TimelineLayer = 'story'
let socket: WebSocket | undefined
let reconnectDelay = 500

/** Whether the demo agent's review is open (its buttons answer it), the plan under review and the question's options. */
let demoReview: { open: boolean; plan?: string; options?: DemoOption[] } = { open: false }
/** The user's comments on lines of that plan (R100), sent with Keep planning; `line` counts from 1. */
let comments: (DemoComment & { line: number })[] = []
/** The line whose comment box is open. */
let commenting: number | undefined
/** What the open review shows now: it is drawn again only when that changes (a box being typed in stays). */
let openReviewShown = ''

/** What the page says about comments on the plan (R100). */
const COMMENT_TEXTS = {
  hint: 'Click a line to comment on it. Comments go with Keep planning.',
  lineTitle: 'Comment on this line',
  placeholder: 'Your comment on this line',
  add: 'Add comment',
  cancel: 'Cancel',
  remove: 'Remove',
  approveBlocked: 'Comments go with Keep planning: remove them to approve.',
  leaveBlocked: 'Comments go with Keep planning: remove them to leave plan mode.',
} as const

/** The smallest text a chart is drawn with at Fit: below it, labels cannot be read. */
const MIN_TEXT_PX = 10
/** The least Fit scales a chart: its smallest font at MIN_TEXT_PX. */
const MIN_FIT_SCALE = MIN_TEXT_PX / Math.min(CHART_FONTS.state, CHART_FONTS.edge)
/** The most a small chart is enlarged. */
const MAX_FIT_SCALE = 1.5
/** Fit: readable, the panel scrolls when needed; whole: all of the chart, however small. */
let zoom: 'fit' | 'whole' = 'fit'

const measure: Measure = canvasMeasure()

/** Charts by definition text: laid out once, then only their highlight changes. */
const charts = new Map<string, Promise<SVGSVGElement>>()
/** The definition shown now (so a late layout of another one is not put in). */
let shownDefinition: string | undefined

function chartFor(definitionText: string, view: AgentView): Promise<SVGSVGElement> {
  let chart = charts.get(definitionText)
  if (!chart) {
    const definition = view.actor?.definition
    if (!definition) return Promise.reject(new Error('no machine definition'))
    // Regions are packed to the panel's proportions, so the whole chart shows as large as it can,
    // or, for a chart too large to show whole at a readable size, to the panel's width.
    const fit = { width: Math.max(300, ui.chart.clientWidth - 4), height: Math.max(300, ui.chart.clientHeight - 4), minScale: MIN_FIT_SCALE }
    chart = laidOut(chartModel(definition), view.actor!.seq, fit).then(drawChart)
    charts.set(definitionText, chart)
    // A failed layout (the server busy, restarted, unreachable) is asked for again on the next render.
    chart.catch(() => charts.get(definitionText) === chart && charts.delete(definitionText))
  }
  return chart
}

/**
 * The chart laid out for the panel: its labels measured here, the elkjs layouts of those widths
 * from the server (R178: `definition` names the `@xstate.actor` message that carried the
 * definition, by its seq), placed here. The page neither loads nor runs elkjs.
 */
async function laidOut(chart: ChartModel, definition: number, fit: ChartFit) {
  const widths = labelWidths(chart, measure)
  const response = await fetch('/api/chart/layout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ definition, widths }) })
  // Read as text: a proxy's or a crashed server's answer need not be JSON.
  const text = await response.text()
  let answer: { layouts?: Record<string, ElkNode>; error?: string } | undefined
  try {
    answer = JSON.parse(text) as typeof answer
  } catch {
    answer = undefined
  }
  if (!response.ok || answer?.layouts === undefined) {
    throw new Error(answer?.error ?? `the server answered ${response.status}${answer === undefined ? ' (not JSON)' : ''}`)
  }
  const { layouts } = answer
  const layout = async (graph: ElkNode) => layouts[graph.id] ?? Promise.reject(new Error(`no layout for ${graph.id}`))
  // The widths of every label were measured above: a label without one is a bug, not a fallback.
  const measured: Measure = (text, kind) => {
    const width = widths[kind][text]
    if (width === undefined) throw new Error(`no width measured for the ${kind} label ${JSON.stringify(text)}`)
    return width
  }
  return layoutChart(chart, measured, layout, fit)
}

let renderScheduled = false
function scheduleRender(): void {
  if (renderScheduled) return
  renderScheduled = true
  setTimeout(() => {
    renderScheduled = false
    render()
  }, 0)
}

function render(): void {
  const agentIds = model.agentIds()
  if (selected === undefined || !agentIds.includes(selected)) {
    selected = agentIds[0]
    cursor = undefined
  }
  renderAgents(agentIds)
  if (selected === undefined) return
  const entries = model.timeline(selected, layer)
  const index = cursorIndex(entries)
  if (index === undefined || index >= entries.length - 1) cursor = undefined
  const at = cursor === undefined ? undefined : entries[index!]
  const view = model.view(selected, at === undefined ? undefined : model.pointOf(selected, entries, index!, layer))
  renderCursor(entries, index, at)
  renderChart(view)
  renderTimeline(entries, index)
  renderReviews(view)
}

/** The entry the cursor is on: the last one at or before its seq (the first when none is). */
function cursorIndex(entries: TimelineEntry[]): number | undefined {
  if (cursor === undefined) return undefined
  let index = 0
  for (let i = 0; i < entries.length && entries[i]!.seq <= cursor; i++) index = i
  return index
}

/** Looks back to entry `index` of `entries` (the last one follows the live end). */
function moveCursor(entries: TimelineEntry[], index: number): void {
  cursor = index >= entries.length - 1 ? undefined : entries[index]?.seq
  render()
}

function renderAgents(agentIds: string[]): void {
  ui.noAgents.hidden = agentIds.length > 0
  ui.agents.replaceChildren(
    ...agentIds.map((id) => {
      const summary = model.view(id).summary
      const item = element('li')
      const button = element('button')
      button.type = 'button'
      button.dataset.agentId = id
      button.setAttribute('aria-current', String(id === selected))
      button.append(element('span', 'agent-name', id), modeLabel(summary))
      button.addEventListener('click', () => {
        selected = id
        cursor = undefined
        render()
      })
      item.append(button)
      return item
    }),
  )
}

function modeLabel(summary: AgentView['summary']): HTMLElement {
  const label = element('span', 'mode-label', summary.label)
  label.dataset.logged = summary.logged
  label.dataset.pending = summary.pending ?? 'none'
  label.dataset.reviewing = String(summary.reviewing)
  return label
}

function renderCursor(entries: TimelineEntry[], index: number | undefined, at: TimelineEntry | undefined): void {
  ui.scrub.max = String(Math.max(0, entries.length - 1))
  ui.scrub.value = String(at === undefined ? Math.max(0, entries.length - 1) : index!)
  ui.scrub.disabled = entries.length < 2
  ui.banner.hidden = at === undefined
  if (at) {
    const when = at.at === undefined ? '' : ` at ${clock(at.at)}`
    ui.bannerText.textContent = `Viewing the past: entry ${index! + 1} of ${entries.length}, ${at.label}${when}`
  }
}

function renderChart(view: AgentView): void {
  const name = view.actor && view.actor.name !== view.id ? ` · ${view.actor.name}` : ''
  ui.chartTitle.textContent = view.actor ? `${view.id}${name} (actor ${view.actor.sessionId})` : view.id
  ui.chartMode.replaceChildren(modeLabel(view.summary))
  ui.chart.dataset.active = [...view.activePaths].sort().join(' ')
  const definitionText = view.actor?.definitionText
  if (!definitionText) {
    shownDefinition = undefined
    ui.chart.dataset.layout = 'none'
    ui.chart.replaceChildren(element('p', 'hint', view.actor ? 'This actor has no machine definition.' : 'No actor seen for this agent yet.'))
    return
  }
  const paths = view.activePaths
  if (shownDefinition !== definitionText) {
    shownDefinition = definitionText
    ui.chart.dataset.layout = 'pending'
  }
  void chartFor(definitionText, view).then(
    (chart) => {
      if (shownDefinition !== definitionText) return
      if (chart.parentElement !== ui.chart) {
        ui.chart.replaceChildren(chart)
        sizeChart()
      }
      highlight(chart, paths)
      ui.chart.dataset.layout = 'done'
    },
    (error: unknown) => {
      ui.chart.dataset.layout = 'failed'
      ui.chart.replaceChildren(element('p', 'hint', `The chart could not be drawn: ${error instanceof Error ? error.message : String(error)}`))
    },
  )
}

function renderTimeline(entries: TimelineEntry[], index: number | undefined): void {
  const current = cursor === undefined || index === undefined ? entries.length - 1 : index
  const follow = cursor === undefined
  ui.timeline.dataset.layer = layer
  // A long session shows the entries around the cursor; the slider still reaches every one.
  const first = Math.max(0, Math.min(current - 400, entries.length - 600))
  ui.timeline.replaceChildren(
    ...entries.slice(first, first + 600).map((entry, offset) => {
      const index = first + offset
      const item = element('li', entry.tone)
      if (entry.changed === false) item.classList.add('unchanged')
      if (index === current) item.classList.add('current')
      if (index > current) item.classList.add('future')
      const button = element('button')
      button.type = 'button'
      button.dataset.index = String(index)
      button.dataset.tone = entry.tone
      button.append(timeOf(entry), element('span', 'label', entry.label))
      if (entry.detail) button.append(element('span', 'detail', entry.detail))
      button.addEventListener('click', () => moveCursor(entries, index))
      item.append(button)
      return item
    }),
  )
  if (follow) ui.timeline.scrollTop = ui.timeline.scrollHeight
}

function renderReviews(view: AgentView): void {
  renderOpenReview(view.openReview)
  ui.reviews.replaceChildren(
    ...view.reviews.map((review, index) => {
      const item = element('li', 'review')
      item.dataset.outcome = review.outcome
      item.dataset.version = String(review.version)
      const head = element('div', 'review-head')
      const outcome = review.by === 'policy' ? `${review.outcome} (by policy)` : review.outcome
      if (review.fresh) item.dataset.fresh = 'true'
      // R101: an approval into a fresh context, and a leave, say so.
      const shown = review.fresh ? `${outcome} (fresh context)` : review.outcome === 'left' ? `${outcome}: plan not carried out` : outcome
      head.append(element('span', 'version', `v${review.version}`), element('span', 'outcome', shown), element('span', 'title', review.title))
      item.append(head)
      if (review.feedback !== undefined) item.append(element('p', 'feedback', `Feedback: ${review.feedback}`))
      if (review.diff !== undefined) item.append(diffView(review.diff, review.version - 1))
      const details = element('details', 'plan-text')
      // The newest plan shows open, unless its change from the previous version shows instead.
      details.open = index === view.reviews.length - 1 && review.diff === undefined
      details.append(element('summary', undefined, 'Plan'), element('pre', 'plan', review.plan))
      item.append(details)
      return item
    }),
  )
}

/**
 * The plan under review. The demo agent's (the plan its status names) takes comments: each line
 * with text is a button that opens a comment box under it, and the comments are listed below.
 */
function renderOpenReview(open: AgentView['openReview']): void {
  const commentable = open !== undefined && demoReview.open && demoReview.plan === open.plan
  const shown = JSON.stringify([open?.title, open?.plan, commentable, comments, commenting])
  if (shown === openReviewShown) return
  openReviewShown = shown
  if (!open) return void ui.openReview.replaceChildren()
  const head = element('div', 'review-head', `Under review: ${open.title || '(untitled)'}`)
  if (!commentable) return void ui.openReview.replaceChildren(head, element('pre', 'plan', open.plan))
  const lines = element('div', 'plan plan-lines')
  open.plan.split('\n').forEach((text, i) => {
    const number = i + 1
    if (text.trim() === '') return void lines.append(element('span', 'plan-line blank'))
    const line = element('button', 'plan-line', text)
    line.type = 'button'
    line.title = COMMENT_TEXTS.lineTitle
    line.dataset.line = String(number)
    if (comments.some((comment) => comment.line === number)) line.classList.add('commented')
    line.addEventListener('click', () => {
      commenting = commenting === number ? undefined : number
      scheduleRender()
    })
    lines.append(line)
    if (commenting === number) lines.append(commentBox(number, text))
  })
  const parts: HTMLElement[] = [head, element('p', 'comment-hint', COMMENT_TEXTS.hint), lines]
  if (comments.length > 0) {
    const list = element('ol', 'comments')
    comments.forEach((comment, i) => {
      const item = element('li', 'comment')
      item.dataset.line = String(comment.line)
      const remove = element('button', 'remove-comment', COMMENT_TEXTS.remove)
      remove.type = 'button'
      remove.addEventListener('click', () => {
        comments = comments.filter((_, j) => j !== i)
        updateReviewButtons()
        scheduleRender()
      })
      item.append(element('span', 'comment-text', `On ${JSON.stringify(comment.quote)}: ${comment.text}`), remove)
      list.append(item)
    })
    parts.push(list)
  }
  ui.openReview.replaceChildren(...parts)
  ui.openReview.querySelector<HTMLInputElement>('.comment-box input')?.focus()
}

/** The box that adds a comment on line `number` of the plan under review. */
function commentBox(number: number, text: string): HTMLElement {
  const box = element('div', 'comment-box')
  const input = element('input')
  input.type = 'text'
  input.maxLength = 2000
  input.placeholder = COMMENT_TEXTS.placeholder
  input.setAttribute('aria-label', `Comment on line ${number}`)
  const add = element('button', 'add-comment', COMMENT_TEXTS.add)
  add.type = 'button'
  const cancel = element('button', 'cancel-comment', COMMENT_TEXTS.cancel)
  cancel.type = 'button'
  const close = () => {
    commenting = undefined
    scheduleRender()
  }
  const save = () => {
    const said = input.value.trim()
    if (said === '') return
    comments = [...comments, { line: number, quote: lineQuote(text), text: said }]
    updateReviewButtons()
    close()
  }
  add.addEventListener('click', save)
  cancel.addEventListener('click', close)
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') save()
    else if (event.key === 'Escape') close()
  })
  box.append(input, add, cancel)
  return box
}

/** A comment typed in the open box but not added yet goes with Keep planning too. */
function addDraftComment(): void {
  const said = ui.openReview.querySelector<HTMLInputElement>('.comment-box input')?.value.trim() ?? ''
  const text = commenting === undefined ? undefined : demoReview.plan?.split('\n')[commenting - 1]
  if (said === '' || text === undefined || text.trim() === '') return
  comments = [...comments, { line: commenting!, quote: lineQuote(text), text: said }]
}

/**
 * The demo's review buttons: enabled while its review is open; each says what the question's option
 * says (its label, its description as the tooltip), and one the question does not offer is hidden.
 * Comments go with Keep planning only (R100, R101): the other options wait while any is listed.
 */
function updateReviewButtons(): void {
  for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>('.review-button'))) {
    const command = button.dataset.command as DemoDecision
    const option = demoReview.options?.find((candidate) => candidate.label === DEMO_DECISION_LABELS[command])
    if (demoReview.options !== undefined) {
      button.hidden = option === undefined
      if (option !== undefined) button.textContent = option.label
    }
    const blocked = command !== 'keep-planning' && comments.length > 0
    button.disabled = !demoReview.open || blocked
    button.title = blocked ? (command === 'leave' ? COMMENT_TEXTS.leaveBlocked : COMMENT_TEXTS.approveBlocked) : (option?.description ?? '')
  }
}

/** How a line of a diff starts (R97): added, removed, kept. */
const DIFF_MARKS: Record<PlanDiffLine['kind'], string> = { added: '+ ', removed: '- ', same: '  ' }

/**
 * A version's change from the previous one (R97): the diff's lines as the server sent them, each
 * marked and coloured by its kind, as text.
 */
function diffView(diff: readonly PlanDiffLine[], previous: number): HTMLElement {
  if (!diff.some((line) => line.kind !== 'same')) return element('p', 'diff-none', `No change from v${previous}`)
  const details = element('details', 'diff')
  details.open = true
  const lines = element('pre', 'diff-lines')
  for (const line of diff) {
    const shown = element('span', `diff-line ${line.kind}`, `${DIFF_MARKS[line.kind]}${line.text}`)
    shown.dataset.kind = line.kind
    lines.append(shown)
  }
  details.append(element('summary', undefined, `Changes from v${previous}`), lines)
  return details
}

/**
 * An entry's time: when it happened, if known. A replayed log's event that carries no time shows
 * its place in the log (`#6`) instead: never a time it does not have.
 */
function timeOf(entry: TimelineEntry): HTMLElement {
  if (entry.at !== undefined) return element('span', 'time', clock(entry.at))
  const time = element('span', 'time no-time', entry.logSeq === undefined ? '' : `#${entry.logSeq}`)
  time.title = entry.logSeq === undefined ? 'no time recorded' : `event ${entry.logSeq} of the log; the log records no time for it`
  return time
}

function clock(at: number): string {
  const date = new Date(at)
  const pad = (value: number, width = 2) => String(value).padStart(width, '0')
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`
}

function receive(message: ServerMessage): void {
  switch (message.kind) {
    case 'hello':
      ui.demo.hidden = !message.demo
      ui.access.textContent = message.demo ? 'demo: the buttons drive a simulated agent' : 'read-only'
      // The server keeps a bounded history (R109): say that the timeline starts later than the agents did.
      if (message.dropped) ui.connection.textContent = `live · ${message.dropped} earlier messages not kept`
      return
    case 'messages':
      for (const item of message.items) model.ingest(item)
      scheduleRender()
      return
    case 'demo-status':
      ui.demoStatus.textContent = message.text
      ui.demoStatus.classList.toggle('error', message.tone === 'error')
      // Comments belong to the plan they quote: another plan under review, or none, drops them.
      if (!message.reviewOpen || message.plan !== demoReview.plan) {
        comments = []
        commenting = undefined
      }
      // The buttons keep the last question's options while no review is open.
      demoReview = message.reviewOpen
        ? { open: true, ...(message.plan !== undefined ? { plan: message.plan } : {}), ...(message.options ? { options: message.options } : {}) }
        : { open: false, ...(demoReview.options ? { options: demoReview.options } : {}) }
      updateReviewButtons()
      scheduleRender()
      return
  }
}

function connect(): void {
  const ws = new WebSocket(`ws://${location.host}/view`)
  socket = ws
  ws.addEventListener('open', () => {
    reconnectDelay = 500
    ui.connection.textContent = 'live'
    ui.connection.className = 'badge open'
  })
  ws.addEventListener('message', (event: MessageEvent) => {
    if (typeof event.data !== 'string') return
    try {
      receive(JSON.parse(event.data) as ServerMessage)
    } catch (error) {
      console.error('visualizer: bad message', error)
    }
  })
  ws.addEventListener('close', () => {
    if (socket !== ws) return
    ui.connection.textContent = 'disconnected'
    ui.connection.className = 'badge closed'
    setTimeout(() => {
      // The server replays what it keeps to a new connection: start from a clean model.
      model = new VisualizerModel()
      connect()
    }, reconnectDelay)
    reconnectDelay = Math.min(reconnectDelay * 2, 8000)
  })
}

/**
 * Sizes the chart. Fit (the default) shows the whole chart when its smallest text stays at least
 * MIN_TEXT_PX tall, and otherwise fits the panel's width as far as that allows: the panel scrolls.
 * Whole chart shows all of it however small its text gets, an overview of where the active
 * states are.
 */
function sizeChart(): void {
  const chart = ui.chart.querySelector<SVGSVGElement>('svg.chart')
  if (!chart) return
  const width = Number(chart.getAttribute('width'))
  const height = Number(chart.getAttribute('height'))
  if (!(width > 0 && height > 0)) return
  const across = ui.chart.clientWidth / width
  const whole = Math.min(across, ui.chart.clientHeight / height)
  const scale = zoom === 'whole'
    ? Math.min(whole, MAX_FIT_SCALE)
    : whole >= MIN_FIT_SCALE ? Math.min(whole, MAX_FIT_SCALE) : Math.max(MIN_FIT_SCALE, Math.min(across, 1))
  // Fit rounds up (text never below its floor), the whole chart down (never a scrollbar).
  const round = zoom === 'whole' ? Math.floor : Math.ceil
  chart.style.width = `${round(width * scale)}px`
  chart.style.height = `${round(height * scale)}px`
  ui.chart.dataset.zoom = zoom
  ui.chart.dataset.scale = scale.toFixed(3)
}

new ResizeObserver(() => sizeChart()).observe(ui.chart)

ui.scrub.addEventListener('input', () => {
  if (selected === undefined) return
  moveCursor(model.timeline(selected, layer), Number(ui.scrub.value))
})
ui.zoom.addEventListener('click', () => {
  zoom = zoom === 'fit' ? 'whole' : 'fit'
  ui.zoom.textContent = zoom === 'fit' ? 'Whole chart' : 'Fit'
  sizeChart()
})
ui.internals.addEventListener('change', () => {
  layer = ui.internals.checked ? 'internals' : 'story'
  render()
})
ui.live.addEventListener('click', () => {
  cursor = undefined
  render()
})
for (const button of Array.from(ui.demo.querySelectorAll<HTMLButtonElement>('button[data-command]'))) {
  button.addEventListener('click', () => {
    const command = button.dataset.command as DemoCommand
    const keepPlanning = command === 'keep-planning'
    if (keepPlanning) addDraftComment()
    const message: ViewerMessage = {
      kind: 'command',
      command,
      ...(keepPlanning && ui.feedback.value.trim() ? { feedback: ui.feedback.value } : {}),
      ...(keepPlanning && comments.length > 0 ? { comments: comments.map(({ quote, text }) => ({ quote, text })) } : {}),
    }
    if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message))
    if (keepPlanning) {
      ui.feedback.value = ''
      comments = []
      commenting = undefined
      updateReviewButtons()
      scheduleRender()
    }
  })
}

connect()
