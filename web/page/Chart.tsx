/**
 * The agent's statechart, drawn by the visualizer's own chart module (`visualizer/client/chart.ts`:
 * elkjs layout, SVG, a class toggle for the live states), from the definition the server sends,
 * highlighted with the state value of the agent's actor on the instance that answered.
 */
import ELK from 'elkjs/lib/elk.bundled.js'
import { useEffect, useRef, useState } from 'react'
import { CHART_FONTS, canvasMeasure, chartModel, drawChart, highlight, layoutChart } from '../../visualizer/client/chart.js'
import { activeStatePaths, type StateNodeDefinition } from '../../visualizer/client/model.js'

/** The least the chart is scaled down: its smallest text stays at 9 px; the panel scrolls instead. */
const MIN_SCALE = 9 / Math.min(CHART_FONTS.state, CHART_FONTS.edge)

export function Chart({ value }: { value: unknown }) {
  const host = useRef<HTMLDivElement>(null)
  const [chart, setChart] = useState<SVGSVGElement | null>(null)
  const [failed, setFailed] = useState<string | null>(null)
  /** The whole chart in the panel (small), or at its drawn size (the panel scrolls). */
  const [full, setFull] = useState(false)

  useEffect(() => {
    const elk = new ELK()
    const width = Math.max(320, host.current?.clientWidth ?? 400)
    fetch('/api/chart')
      .then((response) => response.json() as Promise<StateNodeDefinition>)
      .then((definition) => layoutChart(chartModel(definition), canvasMeasure(), (graph) => elk.layout(graph), { width, height: width * 1.4, minScale: MIN_SCALE }))
      .then((layout) => setChart(drawChart(layout)))
      .catch((error: unknown) => setFailed(error instanceof Error ? error.message : String(error)))
  }, [])

  useEffect(() => {
    if (chart === null || host.current === null) return
    if (chart.parentElement !== host.current) host.current.replaceChildren(chart)
    highlight(chart, activeStatePaths(value))
  }, [chart, value])

  // The SVG goes into a node React renders no children into, so React never meets it.
  return (
    <div className="chart" data-testid="chart" data-zoom={full ? 'full' : 'fit'} data-layout={failed ? 'failed' : chart ? 'done' : 'pending'} data-active={[...activeStatePaths(value)].sort().join(' ')}>
      <button type="button" className="zoom" onClick={() => setFull((f) => !f)}>
        {full ? 'Fit the panel' : 'Full size'}
      </button>
      {failed ? <p className="hint">The chart could not be drawn: {failed}</p> : chart ? null : <p className="hint">Drawing the chart…</p>}
      <div className="chart-canvas" ref={host} />
    </div>
  )
}
