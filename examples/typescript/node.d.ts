// The part of Node.js that the example client uses: Debian 12 has no @types/node package.

// An interface, so that a program with more needs (tests/e2e/ts) adds to it by merging.
interface NodeProcess {
  argv: string[];
  env: { [name: string]: string | undefined };
  exitCode: number | undefined;
  stdout: { write(text: string): boolean };
  stderr: { write(text: string): boolean };
  once(signal: "SIGINT" | "SIGTERM", listener: () => void): void;
  removeAllListeners(signal: "SIGINT" | "SIGTERM"): void;
}
declare var process: NodeProcess;

interface TimerHandle { ref(): this; unref(): this } // a Timeout object
declare function setTimeout(callback: () => void, ms: number): TimerHandle;
declare function clearTimeout(handle: TimerHandle | undefined): void;
declare function setInterval(callback: () => void, ms: number): TimerHandle;
declare function clearInterval(handle: TimerHandle | undefined): void;

declare module "crypto" {
  export function randomUUID(): string;
}

