#!/usr/bin/env node
/**
 * Entry point: `node apps/visualizer/cli.mjs [--port N] [--demo]`. Registers the TypeScript hooks
 * (Node 20 cannot run .ts by itself), then runs cli.ts.
 */
import { register } from 'node:module'

register('../shared/ts-loader.mjs', import.meta.url)
await import('./cli.ts')
