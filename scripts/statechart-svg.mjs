#!/usr/bin/env node
/**
 * Draws the plan-mode statechart as a static SVG (docs/statechart.svg) from the built machine:
 * `npm run statechart` (`npm run build && node --import ./apps/shared/register.mjs
 * scripts/statechart-svg.mjs --fit 1600x1200`).
 *
 * The layout is the visualizer's own (apps/shared/visualizer/client/chart.ts, `layoutChart`): each region of
 * the parallel root one layered elkjs layout, the regions packed into rows that show the chart
 * largest in the `--fit` box. The chart model is read here from the live machine rather than from
 * its JSON definition (what the page receives), because only the live state nodes still carry
 * the names of inline guards (`and`, `not`, params) and of invoked actors. Only transitions with
 * a target are drawn (targetless ones move no state).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ELK from 'elkjs/lib/elk.bundled.js'
import { planModeMachine } from '../dist/inspect.js'
import { METRICS, layoutChart } from '../apps/shared/visualizer/client/chart.ts'

const here = dirname(fileURLToPath(import.meta.url))
const output = resolve(here, '../docs/statechart.svg')

const FONT = 'sans-serif'
const STATE_FONT_SIZE = 12
const EDGE_FONT_SIZE = 11
/** White space around the drawing. */
const MARGIN = 16

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
// SVG, emitted as text.

const escape = (text) => String(text).replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch])
const num = (value) => Number(value.toFixed(1))
const depth = (path) => (path === '' ? 0 : path.split('.').length)

function drawChart(layout, title) {
  const margin = MARGIN
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
const elk = new ELK()
const fit = fitMatch ? { width: Number(fitMatch[1]), height: Number(fitMatch[2]) } : undefined
const layout = await layoutChart(chart, measure, (graph) => elk.layout(graph), fit)
await mkdir(dirname(output), { recursive: true })
await writeFile(output, drawChart(layout, `${chart.machineId} statechart`))
console.log(`wrote ${output} (${chart.nodes.size} states, ${chart.edges.length} transitions)`)
