#!/usr/bin/env node
/**
 * Draws the plan-mode statechart as a static SVG (docs/statechart.svg) from the built machine
 * definition: `npm run build && node scripts/statechart-svg.mjs`.
 *
 * The layout follows visualizer/client/chart.ts (which does the same in the browser): each region
 * of the parallel root is one layered elkjs layout with `INCLUDE_CHILDREN` (so transitions into
 * nested states are routed), wrapped in an invisible root because elkjs cannot route an edge
 * between a layout's root and its own children; the regions are then placed side by side in
 * definition order (`--fit 1600x1200` wraps them into rows to fit that box, as the visualizer
 * does). Only transitions with a target are drawn (targetless ones move no state).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ELK from 'elkjs/lib/elk.bundled.js'
import { planModeMachine } from '../dist/index.js'

const here = dirname(fileURLToPath(import.meta.url))
const output = resolve(here, '../docs/statechart.svg')

const FONT = 'sans-serif'
const STATE_FONT_SIZE = 12
const EDGE_FONT_SIZE = 11
const METRICS = { stateHeight: 30, titleHeight: 24, labelHeight: 14, padding: 12, gap: 24, margin: 16 }

/** Approximate advance widths of a sans-serif font, in ems (no DOM to measure with in Node). */
function textWidth(text, size) {
  let em = 0
  for (const ch of text) {
    if ('iljI.,:;|!\'` '.includes(ch)) em += 0.3
    else if ('ftr()[]{}-/'.includes(ch)) em += 0.38
    else if ('mwMW'.includes(ch)) em += 0.9
    else if (ch >= 'A' && ch <= 'Z') em += 0.7
    else if (ch === '_') em += 0.56
    else em += 0.57
  }
  return Math.ceil(em * size)
}
const measure = (text, kind) => textWidth(text, kind === 'state' ? STATE_FONT_SIZE : EDGE_FONT_SIZE)

// ---------------------------------------------------------------------------------------------
// The chart model, read from the machine's state nodes.

const pathOf = (node) => node.path.join('.')

/** The label of a guard: its name, `name(params)`, or `not`/`and`/`or` over its parts. */
function guardLabel(guard) {
  if (guard === undefined || guard === null) return undefined
  if (typeof guard === 'string') return guard
  if (typeof guard === 'function') {
    const parts = (guard.guards ?? []).map(guardLabel)
    switch (guard.name || guard.check?.name) {
      case 'not': return parts.length === 1 ? `!${parts[0]}` : `!(${parts.join(' && ')})`
      case 'and': return parts.map((part) => (/\s/.test(part) ? `(${part})` : part)).join(' && ')
      case 'or': return parts.map((part) => (/\s/.test(part) ? `(${part})` : part)).join(' || ')
      default: return guard.name || 'guard'
    }
  }
  if (typeof guard === 'object') {
    const type = typeof guard.type === 'string' && guard.type ? guard.type : 'guard'
    const params = guard.params && typeof guard.params === 'object' ? Object.values(guard.params).filter((value) => typeof value !== 'object') : []
    return params.length > 0 ? `${type}(${params.map(String).join(', ')})` : type
  }
  return 'guard'
}

/** The label of an event: invocation results and delays named after what they come from. */
function eventLabel(node, event) {
  const invoked = (prefix) => {
    const id = event.slice(prefix.length)
    const invoke = node.invoke?.find((candidate) => candidate.id === id)
    const src = invoke ? (typeof invoke.src === 'string' ? invoke.src : invoke.src?.type ?? invoke.src?.id ?? 'actor') : id
    return src
  }
  if (event.startsWith('xstate.done.actor.')) return `done: ${invoked('xstate.done.actor.')}`
  if (event.startsWith('xstate.error.actor.')) return `error: ${invoked('xstate.error.actor.')}`
  if (event.startsWith('xstate.done.state.')) return 'done'
  const after = /^xstate\.after\.([^.]+)\./.exec(event)
  if (after) return `after ${after[1]}`
  return event
}

function chartModel(machine) {
  const nodes = new Map()
  const edges = new Map()
  const visit = (node, parent) => {
    const path = pathOf(node)
    const children = Object.values(node.states ?? {})
    const kind = path === '' ? 'root' : node.type === 'compound' && children.length === 0 ? 'atomic' : node.type
    nodes.set(path, {
      path,
      key: node.key,
      kind,
      region: parent?.type === 'parallel',
      initial: parent !== undefined && parent.type !== 'parallel' && parent.initial?.target?.some((target) => target === node),
      children: children.map(pathOf),
    })
    const add = (label, transition) => {
      const guard = guardLabel(transition.guard)
      const text = guard ? `${label} [${guard}]` : label
      for (const target of transition.target ?? []) {
        const to = pathOf(target)
        const key = `${path}\u0000${to}`
        let edge = edges.get(key)
        if (!edge) {
          edge = { id: `edge${edges.size}`, source: path, target: to, labels: [] }
          edges.set(key, edge)
        }
        if (!edge.labels.includes(text)) edge.labels.push(text)
      }
    }
    for (const [event, transitions] of node.transitions) for (const transition of transitions) add(eventLabel(node, event), transition)
    for (const transition of node.always ?? []) add('always', transition)
    for (const child of children) visit(child, node)
  }
  visit(machine.root, undefined)
  return { machineId: machine.root.key, nodes, edges: [...edges.values()] }
}

// ---------------------------------------------------------------------------------------------
// Layout (the approach of visualizer/client/chart.ts).

const LAYERED = {
  'elk.algorithm': 'layered',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.direction': 'DOWN',
  'elk.json.edgeCoords': 'ROOT',
  'elk.spacing.nodeNode': '28',
  'elk.layered.spacing.nodeNodeBetweenLayers': '40',
  'elk.layered.spacing.edgeNodeBetweenLayers': '16',
  'elk.spacing.edgeNode': '16',
  'elk.spacing.edgeEdge': '12',
  'elk.spacing.edgeLabel': '4',
  'elk.edgeLabels.inline': 'false',
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
}

const nodeId = (path) => `state:${path}`
const within = (path, ancestor) => ancestor === '' || path === ancestor || path.startsWith(`${ancestor}.`)

function toElkGraph(chart, path) {
  const build = (at) => {
    const node = chart.nodes.get(at)
    const titleWidth = measure(node.key, 'state') + 2 * METRICS.padding
    if (node.children.length === 0) return { id: nodeId(at), width: Math.max(72, titleWidth), height: METRICS.stateHeight }
    const { padding, titleHeight } = METRICS
    return {
      id: nodeId(at),
      children: node.children.map(build),
      layoutOptions: {
        'elk.padding': `[top=${titleHeight + 8},left=${padding},bottom=${padding},right=${padding}]`,
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
        labels: edge.labels.map((text, i) => ({ id: `${edge.id}:label:${i}`, text, width: measure(text, 'edge') + 6, height: METRICS.labelHeight })),
      })),
    layoutOptions: { ...LAYERED, 'elk.padding': '[top=0,left=0,bottom=0,right=0]' },
  }
}

function placeLayout(chart, laidOut) {
  const nodes = []
  const visit = (elk, offsetX, offsetY) => {
    const node = elk.id.startsWith('state:') ? chart.nodes.get(elk.id.slice('state:'.length)) : undefined
    const x = offsetX + (elk.x ?? 0)
    const y = offsetY + (elk.y ?? 0)
    if (node) nodes.push({ ...node, x, y, width: elk.width ?? 0, height: elk.height ?? 0 })
    for (const child of elk.children ?? []) visit(child, x, y)
  }
  visit(laidOut, 0, 0)
  const edges = []
  for (const elk of laidOut.edges ?? []) {
    const edge = chart.edges.find((candidate) => candidate.id === elk.id)
    if (!edge) continue
    const points = []
    for (const section of elk.sections ?? []) points.push(section.startPoint, ...(section.bendPoints ?? []), section.endPoint)
    edges.push({
      ...edge,
      points,
      labels: (elk.labels ?? []).map((label) => ({ text: label.text ?? '', x: label.x ?? 0, y: label.y ?? 0, width: label.width ?? 0, height: label.height ?? 0 })),
    })
  }
  return { width: laidOut.width ?? 0, height: laidOut.height ?? 0, nodes, edges }
}

async function layoutChart(chart, fit) {
  const elk = new ELK()
  const layout = async (graph) => placeLayout(chart, await elk.layout(graph))
  const root = chart.nodes.get('')
  const regions = root.children.filter((child) => chart.nodes.get(child)?.region)
  if (regions.length === 0 || regions.length !== root.children.length) return layout(toElkGraph(chart, ''))

  // A parallel root: its regions side by side, in definition order, top-aligned. With `--fit WxH`
  // they wrap into rows instead, at the row width that shows the whole chart largest in that box
  // (the visualizer's packing).
  const parts = await Promise.all(regions.map((region) => layout(toElkGraph(chart, region))))
  const { padding, titleHeight, gap } = METRICS
  const minWidth = measure(`${root.key} (parallel)`, 'state') + 2 * padding
  const pack = (rowWidth) => {
    const offsets = []
    let x = padding
    let y = titleHeight + 10
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
  let best = pack(Infinity)
  if (fit) {
    let bestScale = Math.min(1, fit.width / best.width, fit.height / best.height)
    for (let count = 1, sum = padding; count <= parts.length; count++) {
      sum += parts[count - 1].width + (count > 1 ? gap : 0)
      const candidate = pack(sum + padding)
      const scale = Math.min(1, fit.width / candidate.width, fit.height / candidate.height)
      if (scale > bestScale + 1e-6) {
        best = candidate
        bestScale = scale
      }
    }
  }
  const nodes = []
  const edges = []
  parts.forEach((part, i) => {
    const { x, y } = best.offsets[i]
    nodes.push(...part.nodes.map((node) => ({ ...node, x: node.x + x, y: node.y + y })))
    edges.push(...part.edges.map((edge) => ({
      ...edge,
      points: edge.points.map((point) => ({ x: point.x + x, y: point.y + y })),
      labels: edge.labels.map((label) => ({ ...label, x: label.x + x, y: label.y + y })),
    })))
  })
  const { width, height } = best
  nodes.unshift({ ...root, x: 0, y: 0, width, height })
  // Transitions between regions, or from the root, are not routed: straight lines between centres.
  const byPath = new Map(nodes.map((node) => [node.path, node]))
  for (const edge of chart.edges) {
    if (regions.some((region) => within(edge.source, region) && within(edge.target, region))) continue
    const from = byPath.get(edge.source)
    const to = byPath.get(edge.target)
    if (!from || !to) continue
    const a = { x: from.x + from.width / 2, y: from.y + from.height / 2 }
    const b = { x: to.x + to.width / 2, y: to.y + to.height / 2 }
    const mid = { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 }
    edges.push({
      ...edge,
      points: [a, b],
      labels: edge.labels.map((text, i) => ({ text, x: mid.x, y: mid.y + i * METRICS.labelHeight, width: measure(text, 'edge') + 6, height: METRICS.labelHeight })),
    })
  }
  return { width, height, nodes, edges }
}

// ---------------------------------------------------------------------------------------------
// SVG, emitted as text.

const escape = (text) => String(text).replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch])
const num = (value) => Number(value.toFixed(1))
const depth = (path) => (path === '' ? 0 : path.split('.').length)

function drawChart(layout, title) {
  const { margin } = METRICS
  const width = Math.ceil(layout.width + 2 * margin)
  const height = Math.ceil(layout.height + 2 * margin)
  const out = []
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="${-margin} ${-margin} ${width} ${height}" font-family="${FONT}" role="img" aria-label="${escape(title)}">`)
  out.push(`  <title>${escape(title)}</title>`)
  out.push('  <defs>')
  out.push('    <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#444"/></marker>')
  out.push('  </defs>')
  out.push(`  <rect x="${-margin}" y="${-margin}" width="${width}" height="${height}" fill="#ffffff"/>`)

  // Outer states first, so inner ones paint over them.
  const fills = ['#f7f9fc', '#eef3fa', '#e4ecf7', '#dae5f3', '#d0def0']
  for (const node of [...layout.nodes].sort((a, b) => depth(a.path) - depth(b.path))) {
    const d = depth(node.path)
    const compound = node.children.length > 0
    const dashed = node.region || node.kind === 'root' ? ' stroke-dasharray="6 4"' : ''
    const fill = compound ? fills[Math.min(d, fills.length - 1)] : '#ffffff'
    out.push(`  <g class="state ${node.kind}${node.region ? ' region' : ''}" data-state="${escape(node.path)}">`)
    out.push(`    <title>${escape(node.path || node.key)}${node.kind === 'parallel' || node.kind === 'root' ? ' (parallel)' : ''}</title>`)
    out.push(`    <rect x="${num(node.x)}" y="${num(node.y)}" width="${num(node.width)}" height="${num(node.height)}" rx="${node.region ? 4 : 8}" fill="${fill}" stroke="${compound ? '#7a8ca8' : '#4a5a75'}" stroke-width="${compound ? 1 : 1.3}"${dashed}/>`)
    if (compound) {
      const label = node.kind === 'root' ? `${node.key} (parallel)` : node.kind === 'parallel' ? `${node.key} (parallel)` : node.key
      out.push(`    <text x="${num(node.x + METRICS.padding + (node.initial ? 8 : 0))}" y="${num(node.y + METRICS.titleHeight - 7)}" font-size="${STATE_FONT_SIZE}" font-weight="bold" fill="#1f2a3d">${escape(label)}</text>`)
    } else {
      out.push(`    <text x="${num(node.x + node.width / 2)}" y="${num(node.y + node.height / 2 + 4)}" font-size="${STATE_FONT_SIZE}" text-anchor="middle" fill="#1f2a3d">${escape(node.key)}</text>`)
    }
    if (node.initial) out.push(`    <circle cx="${num(node.x + 7)}" cy="${num(node.y + 7)}" r="3.5" fill="#1f2a3d"><title>initial state</title></circle>`)
    out.push('  </g>')
  }
  for (const edge of layout.edges) {
    out.push(`  <g class="transition" data-source="${escape(edge.source)}" data-target="${escape(edge.target)}">`)
    if (edge.points.length > 1) {
      const d = edge.points.map((point, i) => `${i === 0 ? 'M' : 'L'} ${num(point.x)} ${num(point.y)}`).join(' ')
      out.push(`    <path d="${d}" fill="none" stroke="#444" stroke-width="1.2" marker-end="url(#arrow)"/>`)
    }
    for (const label of edge.labels) {
      out.push(`    <rect x="${num(label.x)}" y="${num(label.y)}" width="${num(label.width)}" height="${num(label.height)}" fill="#ffffff" fill-opacity="0.85"/>`)
      out.push(`    <text x="${num(label.x + 3)}" y="${num(label.y + label.height - 3)}" font-size="${EDGE_FONT_SIZE}" fill="#333">${escape(label.text)}</text>`)
    }
    out.push('  </g>')
  }
  out.push('</svg>')
  return `${out.join('\n')}\n`
}

const chart = chartModel(planModeMachine)
const fitArg = process.argv.indexOf('--fit')
const fitMatch = fitArg >= 0 ? /^(\d+)x(\d+)$/.exec(process.argv[fitArg + 1] ?? '') : null
if (fitArg >= 0 && !fitMatch) throw new Error('usage: node scripts/statechart-svg.mjs [--fit WIDTHxHEIGHT]')
const layout = await layoutChart(chart, fitMatch ? { width: Number(fitMatch[1]), height: Number(fitMatch[2]) } : undefined)
await mkdir(dirname(output), { recursive: true })
await writeFile(output, drawChart(layout, `${chart.machineId} statechart`))
console.log(`wrote ${output} (${chart.nodes.size} states, ${chart.edges.length} transitions)`)
