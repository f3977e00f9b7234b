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
 * elkjs is loaded on the first layout, not on import: a server that is never asked for one does
 * not load it. Layouts run one at a time in the process, whichever server and definition asks.
 */
import { createHash } from 'node:crypto'
import type { ElkNode } from 'elkjs/lib/elk-api.js'
import { chartModel, labelsOf, layoutChart, type Measure } from './client/chart.js'
import type { StateNodeDefinition } from './client/model.js'

export { labelsOf, type LabelWidths } from './client/chart.js'

/** The widest label a server lays out, in px: a width beyond it is a bad request, not a label. */
const MAX_LABEL_WIDTH = 2000

/** How many sets of widths the layouts of one definition are kept for (a browser's fonts give one set). */
const KEPT = 8

/** How many definitions' layouts {@link chartLayoutsOfText} keeps (the least recently asked for go first). */
const KEPT_DEFINITIONS = 8

/** Why a request for layouts was refused: a 400 with this message. */
export class BadWidths extends Error {}

/** The layouts of one definition's chart for a page's label widths. */
export interface ChartLayouts {
  /**
   * The elkjs layouts of every graph `layoutChart` lays out for `widths`, computed once per set
   * of widths (the last {@link KEPT} are kept) and one layout at a time in the process.
   * @throws {@link BadWidths} (synchronously) when `widths` is not a width (0–2000 px) for each
   * label of the chart.
   */
  layoutsFor(widths: unknown): Promise<Record<string, ElkNode>>
}

/** Layouts run one after another, for every definition and server of the process: at most one core. */
let queue: Promise<unknown> = Promise.resolve()
/** elkjs, loaded on the first layout. */
let elk: Promise<{ layout(graph: ElkNode): Promise<ElkNode> }> | undefined

function elkjs(): Promise<{ layout(graph: ElkNode): Promise<ElkNode> }> {
  if (!elk) {
    elk = import('elkjs/lib/elk.bundled.js').then(({ default: ELK }) => new ELK())
    // A failed load is tried again on the next layout.
    elk.catch(() => (elk = undefined))
  }
  return elk
}

/**
 * The layouts of one definition's chart (see {@link ChartLayouts}).
 * @example
 * const layouts = chartLayouts(definition)
 * const answer = { layouts: await layouts.layoutsFor(body.widths) } // BadWidths → 400
 */
export function chartLayouts(definition: StateNodeDefinition): ChartLayouts {
  const chart = chartModel(definition)
  const labels = labelsOf(chart)
  const kept = new Map<string, Promise<Record<string, ElkNode>>>()
  return {
    layoutsFor(widths) {
      const measure = measureOf(widths, labels)
      const key = JSON.stringify([...labels].map(([kind, text]) => measure(text, kind)))
      const known = kept.get(key)
      if (known) return known
      const layouts: Record<string, ElkNode> = {}
      const made = queue.then(async () => {
        const elk = await elkjs()
        await layoutChart(chart, measure, async (graph) => (layouts[graph.id] = await elk.layout(graph)))
        return layouts
      })
      queue = made.catch(() => undefined)
      kept.set(key, made)
      made.catch(() => kept.delete(key))
      if (kept.size > KEPT) kept.delete(kept.keys().next().value!)
      return made
    },
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
    try {
      const definition: unknown = JSON.parse(text)
      if (!isRecord(definition) || !isRecord(definition.states)) return undefined
      layouts = chartLayouts(definition as StateNodeDefinition)
    } catch {
      return undefined
    }
  }
  byDefinition.delete(key)
  byDefinition.set(key, layouts)
  if (byDefinition.size > KEPT_DEFINITIONS) byDefinition.delete(byDefinition.keys().next().value!)
  return layouts
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
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
