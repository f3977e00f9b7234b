/**
 * `node visualizer/cli.mjs [--port N] [--demo]`: starts the visualizer and prints where to point
 * a browser and the agents' inspectors. Ctrl-C closes it.
 */
import { parseArgs } from 'node:util'
import { start } from './server.js'

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '5178' },
    demo: { type: 'boolean', default: false },
  },
})
const port = Number(values.port)
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`visualizer: --port must be 0..65535, not ${values.port}`)
  process.exit(2)
}
const visualizer = await start({ port, demo: values.demo })
console.log(`Plan-mode visualizer: ${visualizer.url}`)
console.log(`Inspectors: createPlanModeInspector({ url: '${visualizer.inspectUrl}' })`)
if (values.demo) console.log('Demo mode: the page drives a simulated agent.')
const stop = () => {
  void visualizer.close().then(() => process.exit(0))
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
