/**
 * The statechart's elkjs layouts, computed on the server once per set of label widths and served
 * as data: the page measures its labels (a canvas, in its own fonts: cheap) and asks for the
 * layouts of those widths, instead of loading elkjs (1.4 MB) and running it on every load (over a
 * second of a core per load, most of the page's work). The layouts are what elkjs gives the page
 * for the same graphs, so the chart looks the same; the page still places them (`layoutChart`,
 * with the panel's width).
 *
 * `POST /api/chart/layout` `{ widths: { state: { [text]: px }, edge: { [text]: px } } }` →
 * `{ layouts: { [graphId]: ElkNode } }`, one per graph `layoutChart` lays out for the chart.
 */
import ELK from 'elkjs/lib/elk.bundled.js'
import type { ElkNode } from 'elkjs/lib/elk-api.js'
import { chartModel, layoutChart, type ChartModel, type Measure } from '../shared/visualizer/client/chart.js'
import type { StateNodeDefinition } from '../shared/visualizer/client/model.js'

/** Label widths the page measured, by kind and text. */
export type LabelWidths = { state: Record<string, number>; edge: Record<string, number> }

/** The widest label the server lays out, in px: a width beyond it is a bad request, not a label. */
const MAX_LABEL_WIDTH = 2000

/** How many sets of widths the server keeps the layouts of (a browser's fonts give one set). */
const KEPT = 8

/** Why a request for layouts was refused: a 400. */
export class BadWidths extends Error {}

/**
 * The layouts of one definition's chart: `layoutsFor(widths)` answers the elkjs layouts of every
 * graph `layoutChart` lays out for those label widths, computed once per set of widths (the last
 * {@link KEPT} are kept) and one set at a time (so requests take at most one core). Throws
 * {@link BadWidths} when the widths are not a width (0–2000 px) for each label of the chart.
 */
export function chartLayouts(definition: StateNodeDefinition): { layoutsFor(widths: unknown): Promise<Record<string, ElkNode>> } {
  const chart = chartModel(definition)
  const labels = labelsOf(chart)
  const elk = new ELK()
  const kept = new Map<string, Promise<Record<string, ElkNode>>>()
  let queue: Promise<unknown> = Promise.resolve()
  return {
    layoutsFor(widths) {
      const measure = measureOf(widths, labels)
      const key = JSON.stringify([...labels].map(([kind, text]) => measure(text, kind)))
      const known = kept.get(key)
      if (known) return known
      const layouts: Record<string, ElkNode> = {}
      const made = queue.then(() =>
        layoutChart(chart, measure, async (graph) => (layouts[graph.id] = await elk.layout(graph))).then(() => layouts),
      )
      queue = made.catch(() => undefined)
      kept.set(key, made)
      made.catch(() => kept.delete(key))
      if (kept.size > KEPT) kept.delete(kept.keys().next().value!)
      return made
    },
  }
}

/** Every label `layoutChart` measures for `chart`, as `[kind, text]` in the order it measures them. */
export function labelsOf(chart: ChartModel): Set<[kind: 'state' | 'edge', text: string]> {
  const seen = new Map<string, [kind: 'state' | 'edge', text: string]>()
  for (const node of chart.nodes.values()) seen.set(`state:${node.key}`, ['state', node.key])
  for (const edge of chart.edges) for (const text of edge.labels) seen.set(`edge:${text}`, ['edge', text])
  return new Set(seen.values())
}

/** The measure of the page's widths, checked to hold a width for every label of the chart. */
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
