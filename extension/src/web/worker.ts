/**
 * Entry of the web worker that VS Code for the web starts for tpulint: instantiates the
 * WebAssembly build (bundled into this file by esbuild's `binary` loader, so no fetch and no
 * extra file to serve) and pumps LSP messages between the worker's message port and its
 * `LanguageServer` (`server.ts`). The rules' documentation, which the module leaves out, is
 * bundled from `rule-docs.json` beside it and handed to the server for its hovers.
 */
import { BrowserMessageReader, BrowserMessageWriter } from 'vscode-languageserver/browser';
import * as tpulint from 'tpulint-wasm-web';
import ruleDocs from 'tpulint-rule-docs';
import wasmBytes from 'tpulint-wasm-bytes';
import { startServer } from './server';

tpulint.initSync({ module: wasmBytes });

// The worker's global scope is the message port (a DedicatedWorkerGlobalScope). The extension's
// TypeScript settings have no WebWorker lib to name that type, hence the casts.
const port = globalThis as never;
const scope = globalThis as unknown as { close?: () => void };
startServer(new BrowserMessageReader(port), new BrowserMessageWriter(port), new tpulint.LanguageServer(JSON.stringify(ruleDocs)), () => scope.close?.());
