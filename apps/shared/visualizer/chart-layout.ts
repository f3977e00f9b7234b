/**
 * A statechart's elkjs layouts, computed on a server once per set of label widths and served as
 * data, for the web chat's page and the visualizer's (R178): a page measures its labels (a canvas,
 * in its own fonts: cheap), posts the widths, and places the layouts it is answered
 * (`layoutChart`, with its panel's size), instead of loading elkjs (1.4 MB) and running it on
 * every load (over a second of a core per load, most of the page's work). The layouts are what
 * elkjs gives the page for the same graphs, so the chart looks the same.
 *
 * `POST /api/chart/layout` `{ widths: { state: { [text]: px }, edge: { [text]: px } } }` (the
 * visualizer's also names the definition, R178) → `{ layouts: { [graphId]: ElkNode } }`, one per
 * graph `layoutChart` lays out for the chart.
 *
 * elkjs runs in a worker thread (one per process, started on the first layout, `unref`'d, ended
 * when the last server that holds it lets go): a layout takes 0.5–10 s of a core, and the server's
 * own thread keeps answering its pages, sockets and signals meanwhile. Layouts run one at a time;
 * at most {@link MAX_WAITING} more wait, a request that closed stops waiting, and a chart of over
 * {@link MAX_LABELS} labels is not laid out.
 */
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { ElkNode } from 'elkjs/lib/elk-api.js'
import { chartModel, labelsOf, layoutChart, type Measure } from './client/chart.js'
import type { StateNodeDefinition } from './client/model.js'
import { definitionOf } from './client/protocol.js'

export { labelsOf, type LabelWidths } from './client/chart.js'

/** The widest label a server lays out, in px: a width beyond it is a bad request, not a label. */
const MAX_LABEL_WIDTH = 2000

/** How many sets of widths the layouts of one definition are kept for (a browser's fonts give one set). */
const KEPT = 8

/** How many definitions' layouts {@link chartLayoutsOfText} keeps (the least recently asked for go first). */
const KEPT_DEFINITIONS = 8

/** The most labels (states and transition labels) of a chart a server lays out (R178). */
export const MAX_LABELS = 400

/** How many layouts wait behind the one that runs (R178); one more is refused as busy. */
export const MAX_WAITING = 2

/** Why a request for layouts was refused: a 400 with this message. */
export class BadWidths extends Error {}

/** A chart of over {@link MAX_LABELS} labels: a 413 with this message (R178). */
export class ChartTooLarge extends Error {
  constructor() {
    super(`the chart has over ${MAX_LABELS} labels: too large to lay out`)
  }
}

/** One layout runs and {@link MAX_WAITING} wait: a 503 with this message (R178). */
export class LayoutBusy extends Error {
  constructor() {
    super('busy laying out other charts; try again')
  }
}

/** The layouts of one definition's chart for a page's label widths. */
export interface ChartLayouts {
  /**
   * The elkjs layouts of every graph `layoutChart` lays out for `widths`, computed once per set
   * of widths (the last {@link KEPT} asked for are kept) in the process's layout worker, one
   * chart at a time. When `signal` aborts (the request closed) before the layout started, and no
   * other request waits for it, it is dropped and the promise rejects.
   * @throws {@link BadWidths} (synchronously) when `widths` is not a width (0–2000 px) for each
   * label of the chart; {@link ChartTooLarge} when it has over {@link MAX_LABELS} labels;
   * {@link LayoutBusy} when a layout runs and {@link MAX_WAITING} wait.
   */
  layoutsFor(widths: unknown, signal?: AbortSignal): Promise<Record<string, ElkNode>>
}

/** A chart's layout, asked for by one or more requests. */
interface Job {
  run(): Promise<void>
  /** Requests waiting for it; none left before it starts: it is dropped. */
  askers: number
  drop(): void
}

/** The job laying out now, and those waiting (at most {@link MAX_WAITING}). */
let running: Job | undefined
const waiting: Job[] = []

function next(): void {
  if (running) return
  running = waiting.shift()
  void running?.run().finally(() => {
    running = undefined
    next()
  })
}

/**
 * The layouts of one definition's chart (see {@link ChartLayouts}).
 * @example
 * const layouts = chartLayouts(definition)
 * const answer = { layouts: await layouts.layoutsFor(body.widths, signal) } // BadWidths → 400
 */
export function chartLayouts(definition: StateNodeDefinition): ChartLayouts {
  const chart = chartModel(definition)
  const labels = labelsOf(chart)
  /** The layouts by set of widths, least recently asked for first. */
  const kept = new Map<string, { layouts: Promise<Record<string, ElkNode>>; job: Job }>()
  return {
    layoutsFor(widths, signal) {
      if (labels.size > MAX_LABELS) throw new ChartTooLarge()
      const measure = measureOf(widths, labels)
      const key = JSON.stringify([...labels].map(([kind, text]) => measure(text, kind)))
      let known = kept.get(key)
      if (!known) {
        if (running && waiting.length >= MAX_WAITING) throw new LayoutBusy()
        let settle!: { resolve(layouts: Record<string, ElkNode>): void; reject(error: unknown): void }
        const layouts = new Promise<Record<string, ElkNode>>((resolve, reject) => (settle = { resolve, reject }))
        const job: Job = {
          askers: 0,
          run: async () => {
            try {
              const placed: Record<string, ElkNode> = {}
              await layoutChart(chart, measure, async (graph) => (placed[graph.id] = await layoutInWorker(graph)))
              settle.resolve(placed)
            } catch (error) {
              settle.reject(error)
            }
          },
          drop() {
            const at = waiting.indexOf(job)
            if (at < 0) return
            waiting.splice(at, 1)
            settle.reject(new Error('the request for this layout closed'))
          },
        }
        // A failed or dropped layout is not kept: the next request lays the chart out anew.
        layouts.catch(() => kept.get(key)?.job === job && kept.delete(key))
        known = { layouts, job }
        waiting.push(job)
        next()
      }
      kept.delete(key)
      kept.set(key, known)
      if (kept.size > KEPT) kept.delete(kept.keys().next().value!)
      const { job } = known
      if (signal) {
        job.askers++
        const closed = () => {
          if (--job.askers === 0) job.drop()
        }
        if (signal.aborted) closed()
        else {
          signal.addEventListener('abort', closed, { once: true })
          void known.layouts.then(() => signal.removeEventListener('abort', closed), () => signal.removeEventListener('abort', closed))
        }
      }
      return known.layouts
    },
  }
}

/**
 * The worker's code: CommonJS (`eval`), so it runs as it is from a clone and from the package;
 * it loads the elkjs file it is given and answers each graph with its layout or its error.
 */
const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads')
const ELK = require(workerData.elk)
const elk = new ELK()
parentPort.on('message', ({ id, graph }) => {
  elk.layout(graph).then(
    (layout) => parentPort.postMessage({ id, layout }),
    (error) => parentPort.postMessage({ id, error: String((error && error.message) || error) }),
  )
})
`

/**
 * The elkjs file the worker loads: the one the CLI's bundle ships beside itself as `elk.cjs`
 * (tsup.config.ts copies it there), else the
 * installed package's (a clone, the tests).
 */
function elkFile(): string {
  const beside = fileURLToPath(new URL('./elk.cjs', import.meta.url))
  return existsSync(beside) ? beside : createRequire(import.meta.url).resolve('elkjs/lib/elk.bundled.js')
}

/** The process's layout worker and its graphs in flight by id; how many servers hold it. */
let worker: { thread: Worker; inFlight: Map<number, { resolve(layout: ElkNode): void; reject(error: Error): void }> } | undefined
let lastId = 0
let holders = 0

function layoutInWorker(graph: ElkNode): Promise<ElkNode> {
  if (!worker) {
    const started = { thread: new Worker(WORKER_CODE, { eval: true, workerData: { elk: elkFile() } }), inFlight: new Map() }
    // The worker never keeps a process alive: a server that closes, or a signal, ends it.
    started.thread.unref()
    const fail = (error: Error) => {
      if (worker === started) worker = undefined
      for (const pending of started.inFlight.values()) pending.reject(error)
      started.inFlight.clear()
    }
    started.thread.on('message', ({ id, layout, error }: { id: number; layout?: ElkNode; error?: string }) => {
      const pending = started.inFlight.get(id)
      started.inFlight.delete(id)
      if (error === undefined) pending?.resolve(layout!)
      else pending?.reject(new Error(error))
    })
    started.thread.on('error', fail)
    started.thread.on('exit', (code) => fail(new Error(`the layout worker exited (${code})`)))
    worker = started
  }
  const { thread, inFlight } = worker
  const id = ++lastId
  const answered = new Promise<ElkNode>((resolve, reject) => inFlight.set(id, { resolve, reject }))
  thread.postMessage({ id, graph })
  return answered
}

/**
 * Holds the process's layout worker for a server: the worker is ended (and a layout in it
 * fails) when the last server that holds it lets go, by calling the function returned.
 */
export function holdLayoutWorker(): () => void {
  holders++
  let held = true
  return () => {
    if (!held) return
    held = false
    if (--holders === 0 && worker) {
      const { thread } = worker
      worker = undefined
      void thread.terminate()
    }
  }
}

/** The layouts of the definitions asked for by text, by the text's SHA-256, for every server of the process. */
const byDefinition = new Map<string, ChartLayouts>()

/**
 * The layouts of the machine definition whose JSON text is `text` (as an `@xstate.actor` message
 * carries it; the visualizer's server), or undefined when the text is not a JSON object with
 * `states` (a page draws no chart of it) or its chart cannot be read. The layouts of the last
 * {@link KEPT_DEFINITIONS} definitions asked for are kept, shared by every server of the process
 * (several visualizers in one process, as in the tests, lay a definition out once).
 */
export function chartLayoutsOfText(text: string): ChartLayouts | undefined {
  const key = createHash('sha256').update(text).digest('base64')
  let layouts = byDefinition.get(key)
  if (!layouts) {
    const definition = definitionOf(text)
    if (!definition) return undefined
    try {
      layouts = chartLayouts(definition)
    } catch {
      return undefined
    }
  }
  byDefinition.delete(key)
  byDefinition.set(key, layouts)
  if (byDefinition.size > KEPT_DEFINITIONS) byDefinition.delete(byDefinition.keys().next().value!)
  return layouts
}

/** The measure of a page's widths, checked to hold a width for every label of the chart. */
function measureOf(widths: unknown, labels: Set<['state' | 'edge', string]>): Measure {
  if (typeof widths !== 'object' || widths === null) throw new BadWidths('widths must be { state: {…}, edge: {…} }')
  const byKind = widths as Partial<Record<'state' | 'edge', unknown>>
  for (const [kind, text] of labels) {
    const ofKind = byKind[kind]
    const width = typeof ofKind === 'object' && ofKind !== null && Object.hasOwn(ofKind, text) ? (ofKind as Record<string, unknown>)[text] : undefined
    if (typeof width !== 'number' || !Number.isFinite(width) || width < 0 || width > MAX_LABEL_WIDTH) {
      throw new BadWidths(`widths.${kind}[${JSON.stringify(text)}] must be a width in px (0–${MAX_LABEL_WIDTH})`)
    }
  }
  return (text, kind) => (byKind[kind] as Record<string, number>)[text] ?? 0
}
