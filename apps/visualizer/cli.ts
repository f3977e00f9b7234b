/**
 * `node apps/visualizer/cli.mjs [--port N] [--demo]`: starts the visualizer and prints where to point
 * a browser and the agents' inspectors. Ctrl-C closes it.
 */
import { parseArgs } from 'node:util'
import type { start as startVisualizer } from '../shared/visualizer/server.js'

const USAGE = `Usage: node apps/visualizer/cli.mjs [--port N] [--demo]

Serves the plan-mode visualizer on 127.0.0.1 until Ctrl-C.
  --port N   the port (default 5178; 0 picks a free one)
  --demo     also drive a simulated agent from the page
`

let values: { port: string; demo: boolean; help: boolean }
try {
  values = parseArgs({
    options: {
      port: { type: 'string', default: '5178' },
      demo: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }).values as typeof values
} catch (error) {
  console.error(`visualizer: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]} (see --help)`)
  process.exit(2)
}
if (values.help) {
  process.stdout.write(USAGE)
  process.exit(0)
}
const port = Number(values.port)
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`visualizer: --port must be 0..65535, not ${values.port}`)
  process.exit(2)
}
let visualizer: Awaited<ReturnType<typeof startVisualizer>>
try {
  // Loaded once the arguments are known good: `--help` and a bad option answer without it.
  const { start } = await import('../shared/visualizer/server.js')
  visualizer = await start({ port, demo: values.demo })
} catch (error) {
  // One line and exit code 2, as `plan-mode visualize` answers (apps/cli/visualize.ts).
  const code = (error as { code?: unknown }).code
  const message = code === 'EADDRINUSE' ? `port ${port} is in use; pick another with --port` : `the visualizer could not start: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`
  console.error(`plan-mode: ${message}`)
  process.exit(2)
}
console.log(`Plan-mode visualizer: ${visualizer.url}`)
console.log(`Inspectors: createPlanModeInspector({ url: '${visualizer.inspectUrl}' })`)
if (values.demo) console.log('Demo mode: the page drives a simulated agent.')
const stop = () => {
  void visualizer.close().then(() => process.exit(0))
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
