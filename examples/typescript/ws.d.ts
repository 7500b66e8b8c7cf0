// The part of ws 8 (Debian: node-ws, /usr/share/nodejs/ws) that fulltime_client.ts uses.
// Debian ships @types/ws with node-ws, but it needs @types/node, which Debian 12 does not ship;
// this file (with node.d.ts) stands in for both. tests/e2e/test_examples_ts.py runs the
// client on the real ws, so a declaration here that ws does not honour fails there.

declare module "ws" {
  class WebSocket {
    static readonly CONNECTING: 0;
    static readonly OPEN: 1;
    static readonly CLOSING: 2;
    static readonly CLOSED: 3;

    constructor(address: string, options?: WebSocket.ClientOptions);

    readonly readyState: 0 | 1 | 2 | 3;

    send(data: string, callback?: (error?: Error) => void): void;
    ping(): void;
    close(code?: number, reason?: string): void;
    terminate(): void;

    on(event: "open" | "pong", listener: () => void): this;
    on(event: "message", listener: (data: WebSocket.RawData, isBinary: boolean) => void): this;
    on(event: "close", listener: (code: number, reason: WebSocket.RawData) => void): this;
    on(event: "error", listener: (error: Error) => void): this;
    // With a listener, a handshake answered other than 101 is not an "error" of its own:
    // the listener ends it (terminate()), and "error" and "close" follow.
    on(event: "unexpected-response",
       listener: (request: unknown, response: WebSocket.IncomingMessage) => void): this;
  }

  namespace WebSocket {
    interface ClientOptions {
      headers?: { [name: string]: string };
      handshakeTimeout?: number; // milliseconds
    }
    // A Buffer (or Buffer[] / ArrayBuffer with other binaryType settings); text frames here.
    interface RawData {
      toString(encoding?: "utf8"): string;
    }
    interface IncomingMessage {
      statusCode?: number;
    }
  }

  export = WebSocket;
}
