/**
 * `plan-mode visualize [file.jsonl] [--port N]`: serves the visualizer page; with a file, replays
 * its events so the page shows the agent's chart and log, under the agent id the log names (if
 * any) and with each event's own time (if it has one): a replay arrives all at once, so its
 * arrival times would tell nothing.
 */
import { basename } from 'node:path'
import { createMemorySessionLog, createPlanMode } from 'xstate-plan-mode'
import { createPlanModeInspector } from 'xstate-plan-mode/inspect'
import { logAgentId } from '../shared/visualizer/log-reading.js'
import type { Visualizer } from '../shared/visualizer/server.js'
import { loadLogFile } from './log-file.js'
import { CliError, untilAborted, yieldUnlessStopped, type CliIo } from './io.js'

/**
 * Starts the visualizer server on 127.0.0.1.
 * @throws CliError when the port is taken or the page's files cannot be found.
 */
export async function startVisualizer(port: number): Promise<Visualizer> {
  const { start } = await import('../shared/visualizer/server.js')
  try {
    return await start({ port })
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'EADDRINUSE') throw new CliError(`port ${port} is in use; pick another with --port`)
    throw new CliError(`the visualizer could not start: ${error instanceof Error ? error.message : String(error)}`)
  }
}

/** How many events are replayed between two turns of the event loop. */
const REPLAY_SLICE = 500

/** Options of {@link runVisualize}. */
export interface VisualizeOptions {
  file?: string
  port: number
}

/**
 * Serves the visualizer until `io.signal` aborts. With a file, its events are appended one by one
 * to a memory log watched by a plan-mode actor and an inspector: the page gets the chart's
 * moves and every event as a `plan-mode.log` message, through the visualizer's replay transport
 * (no arrival times). The agent is the one the log names (an `agentId` field), else the file.
 * @throws CliError for a missing or corrupt file, or a port in use; the stop's reason when
 *   `io.signal` aborts while the file is read or replayed.
 */
export async function runVisualize(options: VisualizeOptions, io: CliIo): Promise<number> {
  const loaded = options.file === undefined ? undefined : await loadLogFile(options.file, io.signal)
  const visualizer = await startVisualizer(options.port)
  const inspector = createPlanModeInspector(visualizer.replayTransport)
  const planMode = createPlanMode({ section: 'replay', inspect: inspector.inspect, logger: { warn: () => {} } })
  try {
    io.stdout.write(`Plan-mode visualizer: ${visualizer.url}\n`)
    io.stdout.write(`Inspectors: createPlanModeInspector({ url: '${visualizer.inspectUrl}' })\n`)
    if (loaded && options.file !== undefined) {
      const session = createMemorySessionLog()
      const named = logAgentId(loaded.events)
      // A log that names no agent is shown under its file's name, which says where it came from.
      const agent = { id: named ?? basename(options.file), session }
      inspector.watch(agent, planMode.actor(agent))
      for (const [i, event] of loaded.events.entries()) {
        // A long log replays for a while: the event loop runs between slices, so a stop is heard (R108).
        if (i % REPLAY_SLICE === 0) await yieldUnlessStopped(io.signal)
        await session.append(event.type, event.data)
      }
      const as = named === undefined ? `under its file name "${agent.id}" (the log names no agent)` : `as agent "${agent.id}"`
      io.stdout.write(`Replayed ${loaded.events.length} events of ${options.file} ${as}.\n`)
      if (loaded.tornLine !== undefined) io.stderr.write(`${options.file}:${loaded.tornLine}: torn last line skipped\n`)
    }
    io.stdout.write('Ctrl-C to stop.\n')
    await untilAborted(io.signal)
  } finally {
    await planMode.dispose()
    await inspector.stop()
    await visualizer.close()
  }
  return 0
}
