import ELK from 'elkjs/lib/elk.bundled.js'
import type { ElkNode } from 'elkjs/lib/elk-api.js'
import { describe, expect, it } from 'vitest'
import { planModeMachine } from 'xstate-plan-mode/inspect'
import { BadWidths, chartLayouts, chartLayoutsOfText, labelsOf } from '../apps/shared/visualizer/chart-layout.js'
import { chartModel, layoutChart, type Measure } from '../apps/shared/visualizer/client/chart.js'
import type { StateNodeDefinition } from '../apps/shared/visualizer/client/model.js'

/** The definition the web chat's server sends the page (GET /api/chart). */
const definition = JSON.parse(JSON.stringify(planModeMachine.definition)) as StateNodeDefinition
const chart = chartModel(definition)

/** Widths as the page sends them (`{ widths }` of POST /api/chart/layout), from `measure`. */
function widthsOf(measure: Measure) {
  const widths: { state: Record<string, number>; edge: Record<string, number> } = { state: {}, edge: {} }
  for (const [kind, text] of labelsOf(chart)) widths[kind][text] = measure(text, kind)
  return widths
}

const sevenPx: Measure = (text) => text.length * 7

/** A chart of two states, and widths of `px` for each of its labels. */
const TINY = { id: 'tiny', initial: 'a', states: { a: { on: { GO: 'b' } }, b: {} } } as unknown as StateNodeDefinition
const tinyWidths = (px: number) => ({ state: { a: px, b: px, tiny: px }, edge: { GO: px } })

describe('chart layouts computed on the server, for the web chat and the visualizer (apps/shared/visualizer/chart-layout.ts)', () => {
  it('R178: answers elkjs\'s own layouts of the page\'s graphs, so the page places the chart exactly as when it ran elkjs itself', async () => {
    const layouts = await chartLayouts(definition).layoutsFor(widthsOf(sevenPx))
    const fit = { width: 400, height: 560, minScale: 0.75 }
    // What the page drew before: elkjs run in the page on the same graphs.
    const elk = new ELK()
    const asked: string[] = []
    const own = await layoutChart(chart, sevenPx, (graph) => (asked.push(graph.id!), elk.layout(graph)), fit)
    expect(Object.keys(layouts).sort()).toEqual([...asked].sort())
    const served = await layoutChart(chart, sevenPx, async (graph) => structuredClone(layouts[graph.id!]!) as ElkNode, fit)
    expect(served).toEqual(own)
    // The answer survives the wire as it is.
    expect(JSON.parse(JSON.stringify(layouts))).toEqual(layouts)
  })

  it('R178: lays one set of widths out once, and another set anew', async () => {
    // A chart of two states: how layouts are kept does not depend on the chart (the plan-mode
    // chart's layout is ~0.5 s of a core; the first test lays it out).
    const layouts = chartLayouts(TINY)
    const first = layouts.layoutsFor(tinyWidths(7))
    expect(layouts.layoutsFor(tinyWidths(7))).toBe(first)
    const other = layouts.layoutsFor(tinyWidths(8))
    expect(other).not.toBe(first)
    expect(await other).not.toEqual(await first)
  })

  it('R178: the visualizer\'s layouts by definition text: one per definition in the process, none for a text that is not a machine definition', () => {
    const text = JSON.stringify(definition)
    expect(chartLayoutsOfText(text)).toBe(chartLayoutsOfText(text))
    expect(chartLayoutsOfText(JSON.stringify({ ...definition, id: 'other' }))).not.toBe(chartLayoutsOfText(text))
    for (const bad of ['{ not json', 'null', '[]', '{"id":"m"}', '{"states":[]}', '{"states":{"a":null}}']) expect(chartLayoutsOfText(bad)).toBeUndefined()
  })

  it('R178: refuses widths that miss a label of the chart or are not a width in px, naming the label', () => {
    const layouts = chartLayouts(definition)
    const widths = widthsOf(sevenPx)
    const [kind, text] = [...labelsOf(chart)][0]!
    expect(() => layouts.layoutsFor(undefined)).toThrow(new BadWidths('widths must be { state: {…}, edge: {…} }'))
    expect(() => layouts.layoutsFor({ state: {}, edge: widths.edge })).toThrow(new BadWidths(`widths.${kind}[${JSON.stringify(text)}] must be a width in px (0–2000)`))
    for (const bad of [-1, 2001, Number.NaN, '80', null]) {
      expect(() => layouts.layoutsFor({ ...widths, state: { ...widths.state, [text]: bad } })).toThrow(BadWidths)
    }
    // A label's text that names an inherited property is not a width either.
    expect(() => layouts.layoutsFor({ state: Object.create({ [text]: 80 }), edge: widths.edge })).toThrow(BadWidths)
  })

  it('R178: keeps the layouts of the last 8 sets of widths asked for: one asked for again stays, the least recently asked for goes', async () => {
    const layouts = chartLayouts(TINY)
    // One at a time: one runs and two wait in the process (R178).
    const first = layouts.layoutsFor(tinyWidths(1))
    await first
    const second = layouts.layoutsFor(tinyWidths(2))
    for (let px = 2; px <= 8; px++) await layouts.layoutsFor(tinyWidths(px))
    expect(layouts.layoutsFor(tinyWidths(1))).toBe(first)
    await layouts.layoutsFor(tinyWidths(9))
    expect(layouts.layoutsFor(tinyWidths(1))).toBe(first)
    expect(layouts.layoutsFor(tinyWidths(2))).not.toBe(second)
  })

  it('R178: a waiting layout whose request closed is dropped, not run, and is laid out anew when asked again', async () => {
    const layouts = chartLayouts(TINY)
    const running = layouts.layoutsFor(tinyWidths(7.01))
    const closed = new AbortController()
    const dropped = layouts.layoutsFor(tinyWidths(7.02), closed.signal)
    closed.abort()
    await expect(dropped).rejects.toThrow('the request for this layout closed')
    const again = layouts.layoutsFor(tinyWidths(7.02))
    expect(again).not.toBe(dropped)
    expect(Object.keys(await again)).toEqual(Object.keys(await running))
  })
})
