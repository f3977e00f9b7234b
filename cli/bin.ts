#!/usr/bin/env node
/**
 * The `plan-mode` executable: runs `main` on the process's arguments. SIGTERM stops the
 * long-running modes; so does Ctrl-C (SIGINT), unless a command took Ctrl-C for itself (`chat`
 * stops its running turn with it).
 */
import { main } from './main.js'

const controller = new AbortController()
const interruptListeners = new Set<() => void>()
let interrupted = false
const stop = () => {
  // A second stop does not wait for a graceful close.
  if (interrupted) process.exit(130)
  interrupted = true
  controller.abort()
}
const interrupt = () => {
  if (interruptListeners.size === 0) return stop()
  for (const listener of [...interruptListeners]) listener()
}
process.on('SIGINT', interrupt)
process.on('SIGTERM', stop)

const code = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  signal: controller.signal,
  onInterrupt(listener) {
    interruptListeners.add(listener)
    return () => void interruptListeners.delete(listener)
  },
})
process.exitCode = code
process.off('SIGINT', interrupt)
process.off('SIGTERM', stop)
