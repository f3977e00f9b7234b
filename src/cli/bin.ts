#!/usr/bin/env node
/** The `plan-mode` executable: runs `main` on the process's arguments; Ctrl-C stops serving. */
import { main } from './main.js'

const controller = new AbortController()
let interrupted = false
const stop = () => {
  // A second Ctrl-C does not wait for a graceful close.
  if (interrupted) process.exit(130)
  interrupted = true
  controller.abort()
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)

const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, signal: controller.signal })
process.exitCode = code
process.off('SIGINT', stop)
process.off('SIGTERM', stop)
