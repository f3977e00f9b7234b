/**
 * `node --import ./visualizer/register.mjs file.ts`: lets Node 20 import the visualizer's and the
 * library's TypeScript sources directly (see ts-loader.mjs).
 */
import { register } from 'node:module'

register('./ts-loader.mjs', import.meta.url)
