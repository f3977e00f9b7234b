/**
 * The statechart drawing: a machine definition (as `@xstate.actor` carries it) becomes a graph of
 * state nodes and transitions, elkjs lays it out (compound nodes nested, parallel regions as
 * dashed regions), and the result is drawn as SVG whose state groups carry `data-state="<path>"`
 * so the live highlight is a class toggle, not a re-layout. Everything from the wire is set with
 * `textContent`/attributes, never parsed as markup.
 */
import type { ElkNode } from 'elkjs/lib/elk-api.js'
import type { StateNodeDefinition } from './model.js'
import { isRecord } from './protocol.js'

/** A state node of the chart. */
export interface ChartNode {
  /** Dotted path from the root (`''` for the root, `intent.pending.entering`). */
  path: string
  key: string
  kind: 'root' | 'parallel' | 'compound' | 'atomic' | 'final' | 'history'
  /** A child of a parallel node: drawn as a dashed region. */
  region: boolean
  /** The initial child of its (non-parallel) parent. */
  initial: boolean
  children: string[]
}

/** A transition: one arrow, with one label per event/guard that takes it. */
export interface ChartEdge {
  id: string
  source: string
  target: string
  labels: string[]
}

/** The chart of one definition. */
export interface ChartModel {
  machineId: string
  nodes: Map<string, ChartNode>
  edges: ChartEdge[]
}

/** Reads the states and the transitions that have targets (targetless ones move no state). */
export function chartModel(definition: StateNodeDefinition): ChartModel {
  const machineId = typeof definition.id === 'string' ? definition.id : '(machine)'
  const nodes = new Map<string, ChartNode>()
  const definitions = new Map<string, StateNodeDefinition>()
  const ids = new Map<string, string>()

  const visit = (path: string, key: string, node: StateNodeDefinition, parent: StateNodeDefinition | undefined) => {
    const children = Object.keys(node.states ?? {})
    const kind: ChartNode['kind'] = path === ''
      ? 'root'
      : node.type === 'parallel'
        ? 'parallel'
        : node.type === 'final'
          ? 'final'
          : node.type === 'history'
            ? 'history'
            : children.length > 0
              ? 'compound'
              : 'atomic'
    nodes.set(path, {
      path,
      key,
      kind,
      region: parent?.type === 'parallel',
      initial: parent !== undefined && parent.type !== 'parallel' && initialKey(parent) === key,
      children: children.map((child) => (path ? `${path}.${child}` : child)),
    })
    definitions.set(path, node)
    // XState's default id of a state node is its path under the machine's id.
    ids.set(path ? `${machineId}.${path}` : machineId, path)
    if (typeof node.id === 'string') ids.set(node.id, path)
    for (const child of children) visit(path ? `${path}.${child}` : child, child, node.states![child]!, node)
  }
  visit('', machineId, definition, undefined)

  const walk = (from: string, keys: string[]): string | undefined => {
    let path = from
    for (const key of keys) {
      path = path ? `${path}.${key}` : key
      if (!nodes.has(path)) return undefined
    }
    return path
  }
  const resolve = (source: string, target: string): string | undefined => {
    if (target.startsWith('#')) {
      const id = target.slice(1)
      const exact = ids.get(id)
      if (exact !== undefined) return exact
      // `#id.child` reaches into a node named by id.
      for (const [knownId, path] of ids) {
        if (id.startsWith(`${knownId}.`)) return walk(path, id.slice(knownId.length + 1).split('.'))
      }
      return undefined
    }
    if (target.startsWith('.')) return walk(source, target.slice(1).split('.'))
    // A plain target names a sibling (and may go deeper from there).
    const parent = source.includes('.') ? source.slice(0, source.lastIndexOf('.')) : ''
    return walk(source === '' ? '' : parent, target.split('.'))
  }

  const edgesByEnds = new Map<string, ChartEdge>()
  const addTransitions = (source: string, label: string, config: unknown) => {
    for (const candidate of toArray(config)) {
      const targets = typeof candidate === 'string' ? [candidate] : isRecord(candidate) ? toArray(candidate.target) : []
      const guard = isRecord(candidate) ? guardLabel(candidate.guard) : undefined
      const text = guard ? `${label} [${guard}]` : label
      for (const target of targets) {
        if (typeof target !== 'string') continue
        const resolved = resolve(source, target)
        if (resolved === undefined) continue
        const key = `${source}\u0000${resolved}`
        let edge = edgesByEnds.get(key)
        if (!edge) {
          edge = { id: `edge:${edgesByEnds.size}`, source, target: resolved, labels: [] }
          edgesByEnds.set(key, edge)
        }
        if (!edge.labels.includes(text)) edge.labels.push(text)
      }
    }
  }
  for (const [path, node] of definitions) {
    for (const [event, config] of Object.entries(node.on ?? {})) addTransitions(path, event, config)
    if (node.always !== undefined) addTransitions(path, 'always', node.always)
    for (const [delay, config] of Object.entries(node.after ?? {})) addTransitions(path, `after ${delay}`, config)
    for (const invoke of toArray(node.invoke)) {
      if (!isRecord(invoke)) continue
      const src = typeof invoke.src === 'string' ? invoke.src : isRecord(invoke.src) ? String(invoke.src.type ?? 'actor') : 'actor'
      if (invoke.onDone !== undefined) addTransitions(path, `done: ${src}`, invoke.onDone)
      if (invoke.onError !== undefined) addTransitions(path, `error: ${src}`, invoke.onError)
    }
    if (node.onDone !== undefined) addTransitions(path, 'done', node.onDone)
  }
  return { machineId, nodes, edges: [...edgesByEnds.values()] }
}

/** Measures text in the chart's font: `kind` tells state names from transition labels. */
export type Measure = (text: string, kind: 'state' | 'edge') => number

/**
 * elkjs's `layout` of one graph: on a server, elkjs's own (`chart-layout.ts`); in a page, the
 * layouts the server answered for the page's label widths (R178).
 */
export type ElkLayout = (graph: ElkNode) => Promise<ElkNode>

/**
 * The chart's font sizes in px: state names and transition labels. style.css draws them with
 * these, the page measures labels with them, and Fit never scales the smallest below 10 px.
 */
export const CHART_FONTS = { state: 12, edge: 11 } as const

/**
 * Measures label widths with a canvas, in the fonts the page's style sheet draws them with (a
 * `system-ui` stack), so boxes fit their labels; without a canvas, 7 px a character.
 */
export function canvasMeasure(): Measure {
  const canvas = document.createElement('canvas').getContext('2d')
  return (text, kind) => {
    if (!canvas) return text.length * 7
    canvas.font = kind === 'state'
      ? `600 ${CHART_FONTS.state}px system-ui, -apple-system, 'Segoe UI', sans-serif`
      : `${CHART_FONTS.edge}px system-ui, -apple-system, 'Segoe UI', sans-serif`
    return Math.ceil(canvas.measureText(text).width)
  }
}

/** Label widths a page measured, by kind and text: what it posts for the server's layouts (R178). */
export type LabelWidths = { state: Record<string, number>; edge: Record<string, number> }

/** Every label `layoutChart` measures for `chart`, as `[kind, text]` in the order it measures them. */
export function labelsOf(chart: ChartModel): Set<[kind: 'state' | 'edge', text: string]> {
  const seen = new Map<string, [kind: 'state' | 'edge', text: string]>()
  for (const node of chart.nodes.values()) seen.set(`state:${node.key}`, ['state', node.key])
  for (const edge of chart.edges) for (const text of edge.labels) seen.set(`edge:${text}`, ['edge', text])
  return new Set(seen.values())
}

/** The width `measure` gives each label of `chart`. */
export function labelWidths(chart: ChartModel, measure: Measure): LabelWidths {
  // Without a prototype, a label named `__proto__` is a label like any other.
  const widths: LabelWidths = { state: Object.create(null) as Record<string, number>, edge: Object.create(null) as Record<string, number> }
  for (const [kind, text] of labelsOf(chart)) widths[kind][text] = measure(text, kind)
  return widths
}

/** Chart metrics shared by the layout and the drawing. */
export const METRICS = {
  stateHeight: 30,
  titleHeight: 24,
  labelHeight: 14,
  padding: 12,
  gap: 16,
} as const

const LAYERED = {
  'elk.algorithm': 'layered',
  // One layout over the nested states, so transitions into them are routed.
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.direction': 'DOWN',
  'elk.json.edgeCoords': 'ROOT',
  'elk.spacing.nodeNode': '24',
  'elk.layered.spacing.nodeNodeBetweenLayers': '36',
  'elk.spacing.edgeLabel': '4',
  'elk.edgeLabels.inline': 'false',
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
}

const nodeId = (path: string) => `state:${path}`
const within = (path: string, ancestor: string) => ancestor === '' || path === ancestor || path.startsWith(`${ancestor}.`)

/**
 * The elkjs graph of the subtree at `path`: one layered layout, with the transitions whose both
 * ends are inside it. The subtree's own box is wrapped in an invisible root, because elkjs cannot
 * route a transition between a layout's root and its children (`review` → `review.open`).
 */
export function toElkGraph(chart: ChartModel, measure: Measure, path = ''): ElkNode {
  const build = (at: string): ElkNode => {
    const node = chart.nodes.get(at)!
    const titleWidth = measure(node.key, 'state') + 2 * METRICS.padding
    if (node.children.length === 0) {
      return { id: nodeId(at), width: Math.max(64, titleWidth), height: METRICS.stateHeight }
    }
    const { padding, titleHeight } = METRICS
    return {
      id: nodeId(at),
      children: node.children.map(build),
      layoutOptions: {
        'elk.padding': `[top=${titleHeight + 6},left=${padding},bottom=${padding},right=${padding}]`,
        'elk.nodeSize.constraints': 'MINIMUM_SIZE',
        'elk.nodeSize.minimum': `(${titleWidth + 16}, ${titleHeight + 20})`,
      },
    }
  }
  return {
    id: `wrap:${path}`,
    children: [build(path)],
    edges: chart.edges
      .filter((edge) => within(edge.source, path) && within(edge.target, path))
      .map((edge) => ({
        id: edge.id,
        sources: [nodeId(edge.source)],
        targets: [nodeId(edge.target)],
        labels: edge.labels.map((text, i) => ({
          id: `${edge.id}:label:${i}`,
          text,
          width: measure(text, 'edge') + 6,
          height: METRICS.labelHeight,
        })),
      })),
    layoutOptions: { ...LAYERED, 'elk.padding': '[top=0,left=0,bottom=0,right=0]' },
  }
}

/** A laid-out state node in absolute coordinates. */
export interface PlacedNode extends ChartNode {
  x: number
  y: number
  width: number
  height: number
}

/** A laid-out transition in absolute coordinates. */
export interface PlacedEdge {
  id: string
  source: string
  target: string
  points: { x: number; y: number }[]
  labels: { text: string; x: number; y: number; width: number; height: number }[]
}

/** The drawing's geometry. */
export interface ChartLayout {
  width: number
  height: number
  nodes: PlacedNode[]
  edges: PlacedEdge[]
}

/** The panel a chart is laid out for. */
export interface ChartFit {
  width: number
  height: number
  /**
   * The least the panel scales the chart down (so that its text stays readable). When the whole
   * chart cannot show at this scale, the panel scrolls: rows are then packed as wide as the panel
   * shows at this scale, so that regions stack down (scrolled naturally) rather than sideways.
   */
  minScale?: number
}

/**
 * Lays a chart out. A parallel root's regions are laid out one by one and placed in rows, in
 * definition order (the order a reader of the machine expects; elkjs's packers reorder), with
 * the row width that lets the whole chart show largest in a `fit`-sized panel, or, when even
 * that is below `fit.minScale`, as wide as the panel shows at that scale. Any other root is one
 * layered layout.
 */
export async function layoutChart(
  chart: ChartModel,
  measure: Measure,
  layout: ElkLayout,
  fit: ChartFit = { width: 1200, height: 800 },
): Promise<ChartLayout> {
  const root = chart.nodes.get('')!
  const regions = root.children.filter((child) => chart.nodes.get(child)?.region)
  if (regions.length === 0 || regions.length !== root.children.length) {
    return placeLayout(chart, await layout(toElkGraph(chart, measure)))
  }
  const parts = await Promise.all(regions.map(async (region) => placeLayout(chart, await layout(toElkGraph(chart, measure, region)))))
  const { padding, titleHeight, gap } = METRICS
  const minWidth = measure(root.key, 'state') + 2 * padding

  /** Where each part goes for rows at most `rowWidth` wide, and the size that makes. */
  const pack = (rowWidth: number) => {
    const offsets: { x: number; y: number }[] = []
    let x = padding
    let y = titleHeight + 6
    let rowHeight = 0
    let width = minWidth
    for (const part of parts) {
      if (x > padding && x + part.width + padding > rowWidth) {
        x = padding
        y += rowHeight + gap
        rowHeight = 0
      }
      offsets.push({ x, y })
      x += part.width + gap
      rowHeight = Math.max(rowHeight, part.height)
      width = Math.max(width, x - gap + padding)
    }
    return { offsets, width, height: y + rowHeight + padding }
  }
  // Every row width worth trying: each prefix of the parts on one row.
  let best = pack(Infinity)
  let bestScale = 0
  for (let count = 1, sum = padding; count <= parts.length; count++) {
    sum += parts[count - 1]!.width + (count > 1 ? gap : 0)
    const candidate = pack(sum + padding)
    const scale = Math.min(1, fit.width / candidate.width, fit.height / candidate.height)
    if (scale > bestScale + 1e-6) {
      best = candidate
      bestScale = scale
    }
  }
  if (fit.minScale !== undefined && bestScale < fit.minScale) best = pack(fit.width / fit.minScale)

  const nodes: PlacedNode[] = [{ ...root, x: 0, y: 0, width: best.width, height: best.height }]
  const edges: PlacedEdge[] = []
  parts.forEach((part, i) => {
    const { x: dx, y: dy } = best.offsets[i]!
    nodes.push(...part.nodes.map((node) => ({ ...node, x: node.x + dx, y: node.y + dy })))
    edges.push(...part.edges.map((edge) => ({
      ...edge,
      points: edge.points.map((point) => ({ x: point.x + dx, y: point.y + dy })),
      labels: edge.labels.map((label) => ({ ...label, x: label.x + dx, y: label.y + dy })),
    })))
  })
  // Transitions between regions or from the root are not routed: straight lines between boxes.
  const byPath = new Map(nodes.map((node) => [node.path, node]))
  for (const edge of chart.edges) {
    if (regions.some((region) => within(edge.source, region) && within(edge.target, region))) continue
    const from = byPath.get(edge.source)
    const to = byPath.get(edge.target)
    if (!from || !to) continue
    const points = [center(from), center(to)]
    const middle = { x: (points[0]!.x + points[1]!.x) / 2, y: (points[0]!.y + points[1]!.y) / 2 }
    edges.push({
      id: edge.id,
      source: edge.source,
      target: edge.target,
      points,
      labels: edge.labels.map((text, i) => ({ text, x: middle.x, y: middle.y + i * METRICS.labelHeight, width: measure(text, 'edge') + 6, height: METRICS.labelHeight })),
    })
  }
  return { width: best.width, height: best.height, nodes, edges }
}

/** Turns elkjs's result (nodes relative to their parent, edges to the root) into absolute geometry. */
export function placeLayout(chart: ChartModel, laidOut: ElkNode): ChartLayout {
  const nodes: PlacedNode[] = []
  const visit = (elk: ElkNode, offsetX: number, offsetY: number) => {
    // The wrapper only offsets its child.
    const node = elk.id.startsWith('state:') ? chart.nodes.get(elk.id.slice('state:'.length)) : undefined
    const x = offsetX + (elk.x ?? 0)
    const y = offsetY + (elk.y ?? 0)
    if (node) nodes.push({ ...node, x, y, width: elk.width ?? 0, height: elk.height ?? 0 })
    for (const child of elk.children ?? []) visit(child, x, y)
  }
  visit(laidOut, 0, 0)
  const edges: PlacedEdge[] = []
  for (const elk of laidOut.edges ?? []) {
    const edge = chart.edges.find((candidate) => candidate.id === elk.id)
    if (!edge) continue
    const points: { x: number; y: number }[] = []
    for (const section of elk.sections ?? []) points.push(section.startPoint, ...(section.bendPoints ?? []), section.endPoint)
    edges.push({
      id: edge.id,
      source: edge.source,
      target: edge.target,
      points,
      labels: (elk.labels ?? []).map((label) => ({
        text: label.text ?? '',
        x: label.x ?? 0,
        y: label.y ?? 0,
        width: label.width ?? 0,
        height: label.height ?? 0,
      })),
    })
  }
  return { width: laidOut.width ?? 0, height: laidOut.height ?? 0, nodes, edges }
}

const SVG = 'http://www.w3.org/2000/svg'

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number> = {}): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value))
  return element
}

/** Draws a layout. States are `<g class="state" data-state="path">`, transitions `<g class="transition">`. */
export function drawChart(layout: ChartLayout): SVGSVGElement {
  const margin = 8
  const root = svg('svg', {
    class: 'chart',
    width: Math.ceil(layout.width + 2 * margin),
    height: Math.ceil(layout.height + 2 * margin),
    viewBox: `${-margin} ${-margin} ${Math.ceil(layout.width + 2 * margin)} ${Math.ceil(layout.height + 2 * margin)}`,
    role: 'img',
  })
  const defs = svg('defs')
  const marker = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' })
  marker.append(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' }))
  defs.append(marker)
  root.append(defs)

  // Outer states first, so inner ones paint over them.
  const byDepth = [...layout.nodes].sort((a, b) => depth(a.path) - depth(b.path))
  for (const node of byDepth) {
    const group = svg('g', { class: `state ${node.kind}${node.region ? ' region' : ''}${node.initial ? ' initial' : ''}`, 'data-state': node.path })
    const title = svg('title')
    title.textContent = node.path || node.key
    group.append(title)
    group.append(svg('rect', { x: node.x, y: node.y, width: node.width, height: node.height, rx: node.region ? 4 : 8 }))
    const label = svg('text', node.children.length > 0
      ? { x: node.x + METRICS.padding, y: node.y + METRICS.titleHeight - 7, class: 'state-name compound-name' }
      : { x: node.x + node.width / 2, y: node.y + node.height / 2 + 4, 'text-anchor': 'middle', class: 'state-name' })
    label.textContent = node.key
    group.append(label)
    if (node.initial) group.append(svg('circle', { cx: node.x + 6, cy: node.y + 6, r: 3, class: 'initial-dot' }))
    root.append(group)
  }
  for (const edge of layout.edges) {
    const group = svg('g', { class: 'transition', 'data-source': edge.source, 'data-target': edge.target })
    if (edge.points.length > 1) {
      const d = edge.points.map((point, i) => `${i === 0 ? 'M' : 'L'} ${point.x} ${point.y}`).join(' ')
      group.append(svg('path', { d, 'marker-end': 'url(#arrow)' }))
    }
    for (const label of edge.labels) {
      const text = svg('text', { x: label.x + 3, y: label.y + label.height - 3, class: 'edge-label' })
      text.textContent = label.text
      group.append(text)
    }
    root.append(group)
  }
  return root
}

/** Marks the active states (`.active`) and the transitions leaving them (`.enabled`). */
export function highlight(chart: SVGSVGElement, activePaths: ReadonlySet<string>): void {
  for (const group of Array.from(chart.querySelectorAll<SVGGElement>('g.state'))) {
    const path = group.dataset.state ?? ''
    group.classList.toggle('active', path === '' ? activePaths.size > 0 : activePaths.has(path))
  }
  for (const group of Array.from(chart.querySelectorAll<SVGGElement>('g.transition'))) {
    const source = group.dataset.source ?? ''
    group.classList.toggle('enabled', source === '' ? activePaths.size > 0 : activePaths.has(source))
  }
}

function center(node: PlacedNode): { x: number; y: number } {
  return { x: node.x + node.width / 2, y: node.y + node.height / 2 }
}

function depth(path: string): number {
  return path === '' ? 0 : path.split('.').length
}

function initialKey(node: StateNodeDefinition): string | undefined {
  const initial = node.initial
  if (typeof initial === 'string') return initial
  if (isRecord(initial) && typeof initial.target === 'string') return initial.target
  return undefined
}

function guardLabel(guard: unknown): string | undefined {
  if (typeof guard === 'string') return guard
  if (!isRecord(guard)) return undefined
  const type = typeof guard.type === 'string' && guard.type ? guard.type : 'guard'
  if (isRecord(guard.params)) {
    const values = Object.values(guard.params).filter((value) => typeof value !== 'object')
    if (values.length > 0) return `${type}(${values.map(String).join(', ')})`
  }
  return type
}

function toArray(value: unknown): unknown[] {
  if (value === undefined || value === null) return []
  return Array.isArray(value) ? value : [value]
}

