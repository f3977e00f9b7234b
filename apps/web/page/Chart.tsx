/**
 * The agent's statechart, drawn by the visualizer's own chart module (`apps/shared/visualizer/client/chart.ts`:
 * elkjs layout, SVG, a class toggle for the live states), from the definition the server sends,
 * highlighted with the state value of the agent's actor on the instance that answered. The page
 * measures the labels and the server runs elkjs for those widths (`apps/shared/visualizer/chart-layout.ts`), once
 * per set of widths instead of in every page load.
 *
 * Readable (R116): the panel draws the chart at its own size in a box that scrolls, scrolls to
 * the state just entered, and lists each region's active state in words; `Full size` shows the
 * whole chart over the page.
 */
import { useEffect, useMemo, useRef, useState } from 'react'
import type { ElkNode } from 'elkjs/lib/elk-api.js'
import { CHART_FONTS, canvasMeasure, chartModel, drawChart, highlight, layoutChart, type ChartModel } from '../../shared/visualizer/client/chart.js'
import { activeStatePaths, type StateNodeDefinition } from '../../shared/visualizer/client/model.js'

/** The least the chart is scaled down: its smallest text stays at 9 px; the panel scrolls instead. */
const MIN_SCALE = 9 / Math.min(CHART_FONTS.state, CHART_FONTS.edge)

/**
 * The chart laid out for a panel of `width`: the labels measured here, the elkjs layouts of those
 * widths from the server (`POST /api/chart/layout`), placed here.
 */
async function laidOut(chart: ChartModel, width: number) {
  const measure = canvasMeasure()
  const widths: Record<'state' | 'edge', Record<string, number>> = { state: {}, edge: {} }
  for (const node of chart.nodes.values()) widths.state[node.key] = measure(node.key, 'state')
  for (const edge of chart.edges) for (const text of edge.labels) widths.edge[text] = measure(text, 'edge')
  const response = await fetch('/api/chart/layout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ widths }) })
  const answer = (await response.json()) as { layouts?: Record<string, ElkNode>; error?: string }
  if (!response.ok || answer.layouts === undefined) throw new Error(answer.error ?? `the layout request answered ${response.status}`)
  const { layouts } = answer
  const layout = async (graph: ElkNode) => layouts[graph.id] ?? Promise.reject(new Error(`no layout for ${graph.id}`))
  return layoutChart(chart, (text, kind) => widths[kind][text] ?? measure(text, kind), layout, { width, height: width * 1.4, minScale: MIN_SCALE })
}

/** Each region (the value's top level) with its active path below it: `[['review', ['open', 'undecided', 'awaiting']], …]`. */
function activeRegions(value: unknown): [string, string[]][] {
  const paths = [...activeStatePaths(value)]
  const leaves = paths.filter((path) => !paths.some((other) => other.startsWith(`${path}.`)))
  return leaves.map((leaf) => {
    const [region, ...rest] = leaf.split('.')
    return [region!, rest]
  })
}

/** Scrolls `box` so that the chart's state `path` is in its middle (unless it is in view already and `always` is false). */
function focusState(box: HTMLElement, path: string, always = true): void {
  const node = box.querySelector(`g.state[data-state="${CSS.escape(path)}"] > rect`)
  if (node === null) return
  const area = box.getBoundingClientRect()
  const own = node.getBoundingClientRect()
  const shown = own.left >= area.left && own.right <= area.right && own.top >= area.top && own.bottom <= area.bottom
  if (shown && !always) return
  box.scrollTo({
    left: box.scrollLeft + own.left - area.left - (area.width - own.width) / 2,
    top: box.scrollTop + own.top - area.top - (area.height - own.height) / 2,
  })
}

export function Chart({ value }: { value: unknown }) {
  const host = useRef<HTMLDivElement>(null)
  const whole = useRef<HTMLDivElement>(null)
  const dialog = useRef<HTMLDialogElement>(null)
  /** The chart copied into the dialog while it is open. */
  const copy = useRef<SVGSVGElement | null>(null)
  const [chart, setChart] = useState<SVGSVGElement | null>(null)
  const [failed, setFailed] = useState<string | null>(null)
  const [full, setFull] = useState(false)
  const previous = useRef<Set<string>>(new Set())
  const regions = useMemo(() => activeRegions(value), [value])

  useEffect(() => {
    const width = Math.max(320, host.current?.clientWidth ?? 400)
    fetch('/api/chart')
      .then((response) => response.json() as Promise<StateNodeDefinition>)
      .then((definition) => laidOut(chartModel(definition), width))
      .then((layout) => setChart(drawChart(layout)))
      .catch((error: unknown) => setFailed(error instanceof Error ? error.message : String(error)))
  }, [])

  // The panel's chart: highlighted, and scrolled to the state just entered (the first, in the chart's order).
  useEffect(() => {
    if (chart === null || host.current === null) return
    if (chart.parentElement !== host.current) host.current.replaceChildren(chart)
    const active = activeStatePaths(value)
    highlight(chart, active)
    const entered = Array.from(chart.querySelectorAll<SVGGElement>('g.state.active'))
      .map((group) => group.dataset.state ?? '')
      .filter((path) => path !== '' && !previous.current.has(path))
    const deepest = entered.filter((path) => !entered.some((other) => other.startsWith(`${path}.`)))[0]
    if (deepest !== undefined && previous.current.size > 0) focusState(host.current, deepest, false)
    previous.current = active
  }, [chart, value])

  // The whole chart over the page: a copy of the panel's, made once it is opened (so that where
  // the reader scrolled it stays), and kept highlighted while it is open.
  useEffect(() => {
    if (!full || chart === null || whole.current === null) return
    copy.current = chart.cloneNode(true) as SVGSVGElement
    whole.current.replaceChildren(copy.current)
    if (dialog.current?.open === false) dialog.current.showModal()
    return () => {
      copy.current = null
    }
  }, [full, chart])
  useEffect(() => {
    if (copy.current !== null) highlight(copy.current, activeStatePaths(value))
  }, [full, chart, value])

  const focus = (region: string, rest: string[]) => {
    if (host.current !== null) focusState(host.current, [region, ...rest].join('.'))
  }

  // The SVGs go into nodes React renders no children into, so React never meets them.
  return (
    <div className="chart" data-testid="chart" data-layout={failed ? 'failed' : chart ? 'done' : 'pending'} data-active={[...activeStatePaths(value)].sort().join(' ')}>
      <div className="chart-tools">
        <ul className="chart-regions" data-testid="chart-regions" aria-label="Active states">
          {regions.map(([region, rest]) => (
            <li key={region}>
              <button type="button" title="Show it in the chart" onClick={() => focus(region, rest)}>
                <span className="chart-region">{region}:</span> {rest.join(' › ')}
              </button>
            </li>
          ))}
        </ul>
        <button type="button" className="zoom" data-testid="chart-full" disabled={chart === null} onClick={() => setFull(true)}>
          Full size
        </button>
      </div>
      {failed ? <p className="hint">The chart could not be drawn: {failed}</p> : chart ? null : <p className="hint">Drawing the chart…</p>}
      <div className="chart-canvas" data-testid="chart-canvas" ref={host} />
      <dialog className="chart-dialog" data-testid="chart-dialog" ref={dialog} onClose={() => setFull(false)} aria-label="The statechart, full size">
        <div className="chart-dialog-bar">
          <strong>Statechart (this agent, live)</strong>
          <button type="button" data-testid="chart-close" onClick={() => dialog.current?.close()}>
            Close
          </button>
        </div>
        <div className="chart-whole" ref={whole} />
      </dialog>
    </div>
  )
}
