/**
 * The language server of VS Code for the web: `tpulint server`'s own protocol logic, compiled to
 * WebAssembly (`LanguageServer`, server/wasm/src/lib.rs over tpulint_ide::server::session). This
 * file only moves JSON-RPC messages between the editor's message port and that object; it knows
 * no diagnostic, position, fix or rule. The reader and writer are passed in, so the Node tests
 * drive this over a MessageChannel exactly as the editor does.
 */
import type { Message, MessageReader, MessageWriter } from 'vscode-languageserver/browser';

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
 * Pumps messages between `reader`/`writer` and `server`. After each message, when the server
 * has documents to check, one `idle()` call is queued behind the messages already waiting, so a
 * burst of edits is checked once (pure scheduling: the server decides what to publish).
 * `onExit` runs after the client's `exit`.
 */
export function startServer(reader: MessageReader, writer: MessageWriter, server: WasmLanguageServer, onExit: () => void = () => undefined): void {
  let idleQueued = false;
  const send = (messages: string) => {
    for (const message of JSON.parse(messages) as Message[]) void writer.write(message);
  };
  const runIdle = () => {
    idleQueued = false;
    send(server.idle());
  };
  reader.listen((message) => {
    send(server.handle(JSON.stringify(message)));
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
