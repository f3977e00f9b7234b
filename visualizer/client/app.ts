/**
 * The visualizer page: connects to `/view`, folds what arrives into the model, and renders the
 * agents, the selected agent's statechart, its timeline (scrubbable into the past) and its plan
 * review history. Every piece of data is written with `textContent` or an attribute: a plan that
 * contains markup shows it as text.
 */
import type { ELK as ElkApi } from 'elkjs/lib/elk-api.js'
import { chartModel, drawChart, highlight, layoutChart, type Measure } from './chart.js'
import { VisualizerModel, type AgentView, type TimelineEntry } from './model.js'
import type { DemoCommand, ServerMessage, ViewerMessage } from './protocol.js'

declare global {
  interface Window {
    /** elkjs's bundled build (`/vendor/elk.js`) defines this global. */
    ELK?: new () => ElkApi
  }
}

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
  scrub: $<HTMLInputElement>('scrub'),
  timeline: $('timeline'),
  openReview: $('open-review'),
  reviews: $('reviews'),
}

let model = new VisualizerModel()
let selected: string | undefined
/** Index into the selected agent's timeline; undefined follows the live end. */
let cursor: number | undefined
let socket: WebSocket | undefined
let reconnectDelay = 500

const elk = window.ELK ? new window.ELK() : undefined
const canvas = document.createElement('canvas').getContext('2d')
const measure: Measure = (text, kind) => {
  if (!canvas) return text.length * 7
  // The same fonts as style.css, so boxes fit their labels.
  canvas.font = kind === 'state' ? "600 12px system-ui, -apple-system, 'Segoe UI', sans-serif" : "11px system-ui, -apple-system, 'Segoe UI', sans-serif"
  return Math.ceil(canvas.measureText(text).width)
}

/** Charts by definition text: laid out once, then only their highlight changes. */
const charts = new Map<string, Promise<SVGSVGElement>>()
/** The definition shown now (so a late layout of another one is not put in). */
let shownDefinition: string | undefined

function chartFor(definitionText: string, view: AgentView): Promise<SVGSVGElement> {
  let chart = charts.get(definitionText)
  if (!chart) {
    const definition = view.actor?.definition
    if (!definition || !elk) return Promise.reject(new Error(elk ? 'no machine definition' : 'elkjs did not load'))
    const shape = chartModel(definition)
    // Regions are packed to the panel's proportions, so the whole chart shows as large as it can.
    const fit = { width: Math.max(400, ui.chart.clientWidth - 4), height: Math.max(300, ui.chart.clientHeight - 4) }
    chart = layoutChart(shape, measure, (graph) => elk.layout(graph), fit).then(drawChart)
    charts.set(definitionText, chart)
  }
  return chart
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
  const entries = model.timeline(selected)
  if (cursor !== undefined && cursor >= entries.length) cursor = undefined
  const at = cursor === undefined ? undefined : entries[cursor]
  const view = model.view(selected, at?.seq)
  renderCursor(entries, at)
  renderChart(view)
  renderTimeline(entries)
  renderReviews(view)
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

function renderCursor(entries: TimelineEntry[], at: TimelineEntry | undefined): void {
  ui.scrub.max = String(Math.max(0, entries.length - 1))
  ui.scrub.value = String(cursor ?? Math.max(0, entries.length - 1))
  ui.scrub.disabled = entries.length < 2
  ui.banner.hidden = at === undefined
  if (at) ui.bannerText.textContent = `Viewing the past: entry ${cursor! + 1} of ${entries.length}, ${at.label} at ${clock(at.at)}`
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
      if (chart.parentElement !== ui.chart) ui.chart.replaceChildren(chart)
      highlight(chart, paths)
      ui.chart.dataset.layout = 'done'
    },
    (error: unknown) => {
      ui.chart.dataset.layout = 'failed'
      ui.chart.replaceChildren(element('p', 'hint', `The chart could not be drawn: ${error instanceof Error ? error.message : String(error)}`))
    },
  )
}

function renderTimeline(entries: TimelineEntry[]): void {
  const current = cursor ?? entries.length - 1
  const follow = cursor === undefined
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
      button.append(element('span', 'time', clock(entry.at)), element('span', 'label', entry.label))
      if (entry.detail) button.append(element('span', 'detail', entry.detail))
      button.addEventListener('click', () => {
        cursor = index === entries.length - 1 ? undefined : index
        render()
      })
      item.append(button)
      return item
    }),
  )
  if (follow) ui.timeline.scrollTop = ui.timeline.scrollHeight
}

function renderReviews(view: AgentView): void {
  if (view.openReview) {
    const { title, plan } = view.openReview
    ui.openReview.replaceChildren(element('div', 'review-head', `Under review: ${title || '(untitled)'}`), element('pre', 'plan', plan))
  } else {
    ui.openReview.replaceChildren()
  }
  ui.reviews.replaceChildren(
    ...view.reviews.map((review, index) => {
      const item = element('li', 'review')
      item.dataset.outcome = review.outcome
      item.dataset.version = String(review.version)
      const head = element('div', 'review-head')
      head.append(element('span', 'version', `v${review.version}`), element('span', 'outcome', review.outcome), element('span', 'title', review.title))
      item.append(head)
      if (review.feedback !== undefined) item.append(element('p', 'feedback', `Feedback: ${review.feedback}`))
      const details = element('details')
      details.open = index === view.reviews.length - 1
      details.append(element('summary', undefined, 'Plan'), element('pre', 'plan', review.plan))
      item.append(details)
      return item
    }),
  )
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
      return
    case 'messages':
      for (const item of message.items) model.ingest(item)
      scheduleRender()
      return
    case 'demo-status':
      ui.demoStatus.textContent = message.text
      ui.demoStatus.classList.toggle('error', message.tone === 'error')
      for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>('.review-button'))) button.disabled = !message.reviewOpen
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
      // The server replays its whole history to a new connection: start from a clean model.
      model = new VisualizerModel()
      connect()
    }, reconnectDelay)
    reconnectDelay = Math.min(reconnectDelay * 2, 8000)
  })
}

ui.scrub.addEventListener('input', () => {
  const value = Number(ui.scrub.value)
  cursor = value >= Number(ui.scrub.max) ? undefined : value
  render()
})
ui.zoom.addEventListener('click', () => {
  // Fit shows the whole chart; actual size reads small labels (the panel scrolls).
  const fit = ui.chart.classList.toggle('fit')
  ui.zoom.textContent = fit ? 'Actual size' : 'Fit'
})
ui.live.addEventListener('click', () => {
  cursor = undefined
  render()
})
for (const button of Array.from(ui.demo.querySelectorAll<HTMLButtonElement>('button[data-command]'))) {
  button.addEventListener('click', () => {
    const command = button.dataset.command as DemoCommand
    const message: ViewerMessage = { kind: 'command', command, ...(command === 'keep-planning' && ui.feedback.value.trim() ? { feedback: ui.feedback.value } : {}) }
    if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message))
    if (command === 'keep-planning') ui.feedback.value = ''
  })
}

connect()
