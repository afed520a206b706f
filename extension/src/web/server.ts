/**
 * The language server of VS Code for the web: `tpulint server`'s own protocol logic, compiled to
 * WebAssembly (`LanguageServer`, server/wasm/src/lib.rs over tpulint_ide::server::session). This
 * file only moves JSON-RPC messages between the editor's message port and that object; it knows
 * no diagnostic, position, fix or rule. The reader and writer are passed in, so the Node tests
 * drive this over a MessageChannel exactly as the editor does.
 */
import type { Message, MessageReader, MessageWriter, NotificationMessage } from 'vscode-languageserver/browser';

/** The `LanguageServer` class the WebAssembly build exports. */
export interface WasmLanguageServer {
  /** Applies one client message (JSON); returns the messages to send (a JSON array). */
  handle(message: string): string;
  /** Checks and publishes what changed (push mode); returns the messages to send. */
  idle(): string;
  hasPendingWork(): boolean;
  isShuttingDown(): boolean;
}

/**
 * Sent to the client when a call into the server threw: the module is built with
 * `panic=immediate-abort`, so a panic traps, the instance's state is lost and every later call
 * would fail. The extension answers by starting a new worker, to which the client replays the
 * open documents (`extension.ts`). Params: `{ message }`, the error's text.
 */
export const SERVER_CRASHED = 'tpulint/serverCrashed';

/**
 * Pumps messages between `reader`/`writer` and `server`. After each message, when the server
 * has documents to check, one `idle()` call is queued behind the messages already waiting, so a
 * burst of edits is checked once (pure scheduling: the server decides what to publish).
 * `onExit` runs after the client's `exit`. When a call throws, the pump stops reading and sends
 * one `SERVER_CRASHED` notification.
 */
export function startServer(reader: MessageReader, writer: MessageWriter, server: WasmLanguageServer, onExit: () => void = () => undefined): void {
  let idleQueued = false;
  let crashed = false;
  /** Runs one call into the server and sends what it returns; `false` once it has thrown. */
  const call = (work: () => string): boolean => {
    if (crashed) return false;
    let messages: string;
    try {
      messages = work();
    } catch (error) {
      crashed = true;
      reader.dispose();
      const crash: NotificationMessage = { jsonrpc: '2.0', method: SERVER_CRASHED, params: { message: error instanceof Error ? error.message : String(error) } };
      void writer.write(crash);
      return false;
    }
    for (const message of JSON.parse(messages) as Message[]) void writer.write(message);
    return true;
  };
  const runIdle = () => {
    idleQueued = false;
    call(() => server.idle());
  };
  reader.listen((message) => {
    if (!call(() => server.handle(JSON.stringify(message)))) return;
    if (server.isShuttingDown()) {
      reader.dispose();
      onExit();
      return;
    }
    if (server.hasPendingWork() && !idleQueued) {
      idleQueued = true;
      setTimeout(runIdle, 0);
    }
  });
}
